# Swarm lab node (harness/engine/swarmlab.py): a container that runs its own
# dockerd, so that one machine holds a real multi-node Docker Swarm. The
# debootstrap base plus Debian's docker.io; built by
# `docker/build-images.sh BIN --swarm-node` (make images-swarm).
#
# Run it as the lab does (the measured recipe; --privileged is refused on
# kernels whose capability bounding set lacks CAP_SYS_RESOURCE):
#   docker run -d --cap-add ALL --cap-drop SYS_RESOURCE \
#     --security-opt seccomp=unconfined --security-opt apparmor=unconfined \
#     --security-opt systempaths=unconfined --cgroupns=private \
#     --tmpfs /run:rw,exec --tmpfs /var/lib/docker:rw,exec \
#     wotbench/swarm-node [DOCKERD ARGS...]
# The entrypoint mounts the cgroup v1 hierarchies read-write (the engine
# gives a container read-only ones), then runs dockerd with vfs storage
# (no overlayfs inside overlayfs) and the given arguments.
FROM wotbench/base:bookworm
LABEL org.wotbench.role="swarm-node"
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /usr/share/doc /usr/share/man \
 && dockerd --version
RUN printf '%s\n' \
  '#!/bin/sh' \
  '# wotbench swarm node: cgroup v1 hierarchies read-write, then dockerd.' \
  'set -eu' \
  'if ! grep -qv "^0::" /proc/self/cgroup; then' \
  '  echo "wotbench-swarm-node: cgroup v2 only (no v1 hierarchy): not supported" >&2; exit 1' \
  'fi' \
  'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup' \
  'while IFS=: read -r _id ctrls _path; do' \
  '  case "$ctrls" in' \
  '    "") mkdir -p /sys/fs/cgroup/unified' \
  '        mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified ;;' \
  '    name=*) mkdir -p "/sys/fs/cgroup/${ctrls#name=}"' \
  '        mount -t cgroup -o "none,$ctrls" cgroup "/sys/fs/cgroup/${ctrls#name=}" ;;' \
  '    *) mkdir -p "/sys/fs/cgroup/$ctrls"' \
  '       mount -t cgroup -o "$ctrls" cgroup "/sys/fs/cgroup/$ctrls"' \
  '       for c in $(echo "$ctrls" | tr , " "); do' \
  '         [ "$c" = "$ctrls" ] || ln -sfn "$ctrls" "/sys/fs/cgroup/$c"' \
  '       done ;;' \
  '  esac' \
  'done < /proc/self/cgroup' \
  'exec dockerd --storage-driver=vfs "$@"' \
  > /usr/local/sbin/wotbench-swarm-node \
 && chmod 755 /usr/local/sbin/wotbench-swarm-node \
 && sh -n /usr/local/sbin/wotbench-swarm-node
ENTRYPOINT ["/usr/local/sbin/wotbench-swarm-node"]
