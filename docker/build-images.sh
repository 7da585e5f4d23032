#!/usr/bin/env bash
# Builds the WoTbench images with no registry (see docs in harness/README.md):
#   wotbench/device, wotbench/ge   FROM scratch + one static binary
#   wotbench/base:bookworm         debootstrap minbase (+ iproute2, iptables), docker import
#   wotbench/nettools              the impairment sidecar, FROM the base
# Usage: docker/build-images.sh [BIN_DIR]   (default build/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-build/bin}
tag=${WOTBENCH_IMAGE_TAG:-latest}
rootfs=${WOTBENCH_ROOTFS:-/var/tmp/wotbench-rootfs/bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
export DOCKER_BUILDKIT=0

for b in wotbench-device wotbench-ge; do
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
build() {  # build NAME DOCKERFILE [BINARY]
  rm -rf "${ctx:?}"/*
  [[ -n ${3:-} ]] && strip -o "$ctx/$(basename "$3")" "$3"
  # The legacy builder warns on stderr about itself: show output only on failure.
  if ! out=$(docker build -q -f "docker/$2" -t "wotbench/$1:$tag" "$ctx" 2>&1); then
    echo "$out" >&2; exit 1
  fi
  printf 'images: wotbench/%-9s %s\n' "$1:$tag" "$(docker image inspect -f '{{.Size}}' "wotbench/$1:$tag" | numfmt --to=iec)"
}
build device device.Dockerfile "$bin/wotbench-device"
build ge ge.Dockerfile "$bin/wotbench-ge"
build nettools nettools.Dockerfile
