# WoT-device: the static wotbench-device binary alone (a few MB).
FROM scratch
COPY wotbench-device /wotbench-device
LABEL org.wotbench.role="device"
USER 65534:65534
EXPOSE 5683/udp
ENTRYPOINT ["/wotbench-device"]
