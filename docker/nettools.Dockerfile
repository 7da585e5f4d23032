# Tools image on the debootstrap base made by build-images.sh: tc, iptables
# and tail (the impairment sidecar and Pumba's helper containers), and
# collectl (the resource monitor of a swarm node other than the manager,
# docs/multi-host.md), and tcpdump (a run's `capture:`, docs/capture.md; its
# user's uid:gid is harness/engine/netcapture.py's TCPDUMP_UID/GID).
# The apt layer is cached by the builder.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="nettools" org.wotbench.tcpdump="yes"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends collectl tcpdump >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /usr/share/doc /usr/share/man
RUN tc -V && iptables --version && iptables-legacy --version && tail --version >/dev/null && collectl --version && tcpdump --version \
 && test "$(id -u tcpdump):$(id -g tcpdump)" = 100:101
CMD ["/bin/sh"]
