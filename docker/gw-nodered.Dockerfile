# Gateway under test: Node-RED 4.1.15 with node-red-contrib-coap 0.6.0, an
# HTTP-to-CoAP flow (docker/gateways/nodered/flow.json), on Debian's nodejs
# 18 (Node-RED 5 needs Node >= 22.9, which bookworm does not have), on the
# debootstrap base made by build-images.sh (make images-gateways). North
# side: HTTP/1.1 on TCP 1880.
#
# Flow: http in (GET, PUT, POST, DELETE on /proxy/*) -> function (the part
# after /proxy/ is the CoAP URI coap://ADDR:PORT/PATH[?QUERY]) -> coap
# request (node-red-contrib-coap, CON, text/plain) -> function (status: 2.xx
# 200, 4.04 404 and the other RFC 8075 4.xx, 5.04 504, other 5.xx 502) ->
# http response. No CoAP response within WOTBENCH_COAP_TIMEOUT_MS (default
# 5000): 504. Known behaviour of node-red-contrib-coap 0.6.0: it passes a
# response on only when the response has a payload (its 'data' event), so a
# response with none (e.g. an empty 4.04) also ends as that 504.
#
# node_modules comes from the host (build-images.sh runs `npm ci` on
# docker/gateways/nodered/package-lock.json with the host's npm and its
# registry settings; no optional or native modules), so the build itself
# needs no npm access. Runs with a read-only root filesystem: settings and
# flow are baked read-only, Node-RED's user dir is /tmp/node-red (tmpfs);
# no editor, no admin API, warnings and errors only.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="gateway" \
      org.wotbench.gateway.name="nodered" \
      org.wotbench.gateway.north="http" \
      org.wotbench.gateway.port="1880" \
      org.wotbench.gateway.modes="http" \
      org.wotbench.gateway.http-path="/proxy/{coap_uri}"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /usr/share/doc /usr/share/man
COPY nodered/ /opt/wotbench-nodered/
RUN node -e 'require("/opt/wotbench-nodered/node_modules/node-red/package.json").version === "4.1.15" || process.exit(1)' \
 && node -e 'require("/opt/wotbench-nodered/settings.js"); JSON.parse(require("fs").readFileSync("/opt/wotbench-nodered/flow.json"))'
ENV HOME=/tmp NODE_ENV=production
USER 65534:65534
EXPOSE 1880/tcp
CMD ["node", "/opt/wotbench-nodered/node_modules/node-red/red.js", "--settings", "/opt/wotbench-nodered/settings.js"]
