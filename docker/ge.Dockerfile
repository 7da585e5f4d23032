# Gateway emulator (also the CD-GE): the static wotbench-ge binary alone.
FROM scratch
COPY wotbench-ge /wotbench-ge
LABEL org.wotbench.role="ge"
ENTRYPOINT ["/wotbench-ge"]
