# Network-tools sidecar: tc, iptables and tail (what Pumba's helper
# containers need), on the debootstrap base made by build-images.sh.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="nettools"
RUN tc -V && iptables --version && iptables-legacy --version && tail --version >/dev/null
CMD ["/bin/sh"]
