# WoT-device: the static wotbench-device binary (a few MB), and wotbench-hog,
# the noisy neighbour of `interference:` (run with --entrypoint /wotbench-hog).
FROM scratch
COPY wotbench-device /wotbench-device
COPY wotbench-hog /wotbench-hog
LABEL org.wotbench.role="device"
USER 65534:65534
EXPOSE 5683/udp
ENTRYPOINT ["/wotbench-device"]
