# Tools image on the debootstrap base made by build-images.sh: tc, iptables
# and tail (the impairment sidecar and Pumba's helper containers), and
# collectl (the resource monitor of a swarm node other than the manager,
# docs/multi-host.md). The apt layer is cached by the builder.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="nettools"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends collectl >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /usr/share/doc /usr/share/man
RUN tc -V && iptables --version && iptables-legacy --version && tail --version >/dev/null && collectl --version
CMD ["/bin/sh"]
