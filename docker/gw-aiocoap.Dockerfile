# Gateway under test: aiocoap's CoAP forward proxy (aiocoap 0.4.17 from
# PyPI, a pure-Python wheel with no required dependencies) on Debian's
# python3, on the debootstrap base made by build-images.sh (make
# images-gateways). North side: CoAP on UDP 5683.
#
# The wheel is fetched on the host (docker/gateways/aiocoap/requirements.txt,
# hash-checked) and unpacked into dist-packages here, so the build itself
# needs no PyPI access. `python3 -m aiocoap.cli.proxy` is the aiocoap-proxy
# command: --forward (a forward proxy), --bind 0.0.0.0:5683 (every IPv4
# address: `--bind :5683` binds loopback only, and `[::]:5683` fails in a
# container without an IPv6 address, since aiocoap resolves the bind address
# with AI_ADDRCONFIG; on an IPv6 network give `--bind [::]:5683` as the
# command's arguments). Devices may be IPv4 or IPv6 either way. UDP only, in
# and out (AIOCOAP_*_TRANSPORT=udp6: no TCP/TLS/WS listeners); Python logs
# warnings and errors only.
# Known behaviour of aiocoap 0.4.17's ForwardProxy: Proxy-Scheme coap +
# Uri-Host (+ Uri-Port) only; a request with Proxy-Uri is answered 5.01
# "URI splitting not implemented, please use Proxy-Scheme". A request the
# device does not answer in time gets 5.04.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="gateway" \
      org.wotbench.gateway.name="aiocoap" \
      org.wotbench.gateway.north="coap" \
      org.wotbench.gateway.port="5683" \
      org.wotbench.gateway.modes="coap-scheme"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3 >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man
COPY aiocoap-0.4.17-py3-none-any.whl /tmp/
RUN python3 -m zipfile -e /tmp/aiocoap-0.4.17-py3-none-any.whl /usr/local/lib/python3.11/dist-packages/ \
 && rm /tmp/aiocoap-0.4.17-py3-none-any.whl \
 && python3 -m compileall -q /usr/local/lib/python3.11/dist-packages/aiocoap \
 && python3 -m aiocoap.cli.proxy --help | grep -q -- --forward
ENV PYTHONDONTWRITEBYTECODE=1 \
    AIOCOAP_SERVER_TRANSPORT=udp6 \
    AIOCOAP_CLIENT_TRANSPORT=udp6
USER 65534:65534
EXPOSE 5683/udp
CMD ["python3", "-m", "aiocoap.cli.proxy", "--forward", "--bind", "0.0.0.0:5683"]
