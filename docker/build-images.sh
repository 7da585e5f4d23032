#!/usr/bin/env bash
# Builds the WoTbench images with no registry (see docs in harness/README.md):
#   wotbench/device, wotbench/ge   FROM scratch + static binaries (the device image
#                                  also carries wotbench-hog, the noisy neighbour)
#   wotbench/base:bookworm         debootstrap minbase (+ iproute2, iptables), docker import
#   wotbench/nettools              the impairment sidecar, FROM the base
#   wotbench/swarm-node            opt-in (--swarm-node, alone): the base + docker.io,
#                                  a Swarm lab node (harness/engine/swarmlab.py)
#   wotbench/gw-libcoap, gw-aiocoap, gw-nodered
#                                  opt-in (--gateways, alone): the shipped gateways
#                                  under test, FROM the base (docker/gw-*.Dockerfile)
# Usage: docker/build-images.sh [BIN_DIR] [--swarm-node | --gateways]   (default build/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/bin swarm_node=false gateways=false
for arg in "$@"; do
  case $arg in
    --swarm-node) swarm_node=true ;;
    --gateways) gateways=true ;;
    -*) echo "usage: $0 [BIN_DIR] [--swarm-node | --gateways]" >&2; exit 2 ;;
    *) bin=$arg ;;
  esac
done
tag=${WOTBENCH_IMAGE_TAG:-latest}
rootfs=${WOTBENCH_ROOTFS:-/var/tmp/wotbench-rootfs/bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export DOCKER_BUILDKIT=0

$swarm_node || $gateways || for b in wotbench-device wotbench-hog wotbench-ge; do
  [[ -x $bin/$b ]] || { echo "images: $bin/$b is missing (run: make build)" >&2; exit 1; }
done

if ! docker image inspect wotbench/base:bookworm >/dev/null 2>&1; then
  if [[ ! -x $rootfs/usr/sbin/tc ]]; then
    echo "images: debootstrap bookworm into $rootfs (about a minute)"
    rm -rf "$rootfs.tmp"
    mkdir -p "$(dirname "$rootfs")"
    debootstrap --variant=minbase --include=iproute2,iptables bookworm "$rootfs.tmp" "$mirror" >/dev/null
    # Docs, man pages and apt caches are dead weight in a sidecar image.
    rm -rf "$rootfs.tmp"/usr/share/{doc,man,info,locale} "$rootfs.tmp"/var/cache/apt/archives/*.deb \
           "$rootfs.tmp"/var/lib/apt/lists/*
    rm -rf "$rootfs" && mv "$rootfs.tmp" "$rootfs"
  fi
  echo "images: importing wotbench/base:bookworm"
  tar -C "$rootfs" -c . | docker import -c 'CMD ["/bin/sh"]' - wotbench/base:bookworm >/dev/null
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

# The Swarm lab node, only with --swarm-node. apt-get install docker.io in
# the build (the Debian mirror answers builds); rebuilt only when its
# Dockerfile or the base changed (the key is a label of the image).
if $swarm_node; then
  node=wotbench/swarm-node:$tag
  key=$( { cat docker/swarm-node.Dockerfile; docker image inspect -f '{{.Id}}' wotbench/base:bookworm; } | sha256sum | cut -c1-16)
  if [[ $(docker image inspect -f '{{index .Config.Labels "org.wotbench.build-key"}}' "$node" 2>/dev/null) == "$key" ]]; then
    echo "images: $node up to date"
    exit 0
  fi
  echo "images: building $node (apt-get install docker.io, about 15 s)"
  if ! out=$(docker build -q -f docker/swarm-node.Dockerfile --label "org.wotbench.build-key=$key" \
                -t "$node" "$ctx" 2>&1); then
    echo "$out" >&2; exit 1
  fi
  printf 'images: %s %s\n' "$node" "$(docker image inspect -f '{{.Size}}' "$node" | numfmt --to=iec)"
  exit 0
fi

# The gateways under test, only with --gateways. Each is rebuilt only when
# its Dockerfile, its files under docker/gateways/NAME/ or the base changed
# (the key is a label of the image). Packages from PyPI and npm are fetched
# here on the host, with the host's own pip and npm and so their index,
# proxy and certificate settings, and checked against the hashes pinned in
# docker/gateways/NAME/ (requirements.txt, package-lock.json); the build
# itself reaches only the Debian mirror, as the other images' do.
gw_fetch() {  # gw_fetch NAME: what the build of wotbench/gw-NAME needs in $ctx
  case $1 in
    aiocoap)
      python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --require-hashes -r docker/gateways/aiocoap/requirements.txt -d "$ctx" ;;
    nodered)
      command -v npm >/dev/null || { echo "images: npm is needed on the host to fetch Node-RED" >&2; return 1; }
      mkdir "$ctx/nodered"
      cp docker/gateways/nodered/{package.json,package-lock.json,settings.js,flow.json} "$ctx/nodered/"
      (cd "$ctx/nodered" && npm ci --omit=optional --omit=dev --ignore-scripts --no-audit --no-fund \
         --loglevel=error >/dev/null) ;;
  esac
}
gateway() {  # gateway NAME
  local img=wotbench/gw-$1:$tag df=docker/gw-$1.Dockerfile key t0 out
  key=$( { cat "$df"; [[ ! -d docker/gateways/$1 ]] || cat "docker/gateways/$1"/*; \
           docker image inspect -f '{{.Id}}' wotbench/base:bookworm; } | sha256sum | cut -c1-16)
  if [[ $(docker image inspect -f '{{index .Config.Labels "org.wotbench.build-key"}}' "$img" 2>/dev/null) == "$key" ]]; then
    echo "images: $img up to date"
    return 0
  fi
  t0=$SECONDS
  rm -rf "${ctx:?}"/*
  gw_fetch "$1" || exit 1
  if ! out=$(docker build -q -f "$df" --label "org.wotbench.build-key=$key" -t "$img" "$ctx" 2>&1); then
    echo "$out" >&2; exit 1
  fi
  printf 'images: %s %s (built in %d s)\n' "$img" \
    "$(docker image inspect -f '{{.Size}}' "$img" | numfmt --to=iec)" $((SECONDS - t0))
}
if $gateways; then
  for g in libcoap aiocoap nodered; do gateway "$g"; done
  exit 0
fi

build() {  # build NAME DOCKERFILE [BINARY...]
  rm -rf "${ctx:?}"/*
  local b labels=()
  for b in "${@:3}"; do strip -o "$ctx/$(basename "$b")" "$b"; done
  # The first binary's own --build-info (compiler, flags, git commit), as a
  # label that a run's manifest.json records (harness/host/disclosure.py).
  if [[ $# -ge 3 ]]; then
    labels=(--label "org.wotbench.build-info=$("$3" --build-info)") || exit 1
  fi
  # The legacy builder warns on stderr about itself: show output only on failure.
  if ! out=$(docker build -q -f "docker/$2" "${labels[@]}" -t "wotbench/$1:$tag" "$ctx" 2>&1); then
    echo "$out" >&2; exit 1
  fi
  printf 'images: wotbench/%-9s %s\n' "$1:$tag" "$(docker image inspect -f '{{.Size}}' "wotbench/$1:$tag" | numfmt --to=iec)"
}
build device device.Dockerfile "$bin/wotbench-device" "$bin/wotbench-hog"
build ge ge.Dockerfile "$bin/wotbench-ge"
build nettools nettools.Dockerfile
