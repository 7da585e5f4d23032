# Gateway under test: libcoap 4.3.1's CoAP forward proxy, coap-server-notls
# from Debian's libcoap3-bin, on the debootstrap base made by build-images.sh
# (make images-gateways). North side: CoAP on UDP 5683, Proxy-Uri
# (coap://ADDR:PORT/PATH) or Proxy-Scheme coap + Uri-Host (+ Uri-Port).
#
# -P ,wotbench-gateway: no upstream proxy (nothing before the comma: the
#   gateway talks to the URI's host itself) and one name for itself. A name
#   is needed: an empty list ("-P ,") makes the server the endpoint of every
#   proxy request, answered locally instead of forwarded.
# -v 3: errors only (nothing per request).
# Known behaviour of this proxy (examples/coap-server.c of 4.3.1): it keeps
# ONE upstream session per client session, made for the first request's
# host; later requests of the same client source address/port go to that
# first host whatever their URI names. A CON request gets an empty ACK at
# once and a separate CON response (the client must ACK it); a NON one a
# NON response.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="gateway" \
      org.wotbench.gateway.name="libcoap" \
      org.wotbench.gateway.north="coap" \
      org.wotbench.gateway.port="5683" \
      org.wotbench.gateway.modes="coap-uri coap-scheme"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libcoap3-bin >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man \
 && coap-server-notls -h 2>&1 | grep -q 'v4.3.1'
USER 65534:65534
EXPOSE 5683/udp
CMD ["coap-server-notls", "-p", "5683", "-v", "3", "-P", ",wotbench-gateway"]
