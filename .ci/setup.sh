#!/usr/bin/env bash
# Installs and starts everything WoTbench needs on a fresh Debian 12 machine
# (run as root). Idempotent: a second run only checks.
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(gcc make pkg-config libcoap3-dev libcoap3-bin clang libclang-rt-14-dev clang-format
      clang-tidy docker.io collectl iptables debootstrap python3-venv python3-pip chromium wrk)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Real time for the GEs (SCHED_FIFO inside a budget): dockerd's cgroup
# gets an RT runtime (cgroup v1, RT_GROUP_SCHED), 950 ms per second or the
# kernel's own limit when lower; -1 (unlimited RT) or no RT groups: none.
rt_runtime=$(cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null || echo -1)
rt_flag=()
if [ "$rt_runtime" != "-1" ] && [ -e /sys/fs/cgroup/cpu/cpu.rt_runtime_us ]; then
  ((rt_runtime > 950000)) && rt_runtime=950000
  rt_flag=(--cpu-rt-runtime="$rt_runtime")
fi

# Docker: no init system starts the engine on these machines.
if ! docker info >/dev/null 2>&1; then
  echo "setup: starting dockerd"
  # Every inherited descriptor above 2 closed: dockerd outlives this script,
  # and must not hold a lock (flock) or pipe of whoever ran `make setup`.
  (setsid bash -c 'for fd in /proc/$$/fd/*; do n=${fd##*/}; if [ "$n" -gt 2 ] && [ "$n" -lt 255 ]; then eval "exec $n>&-"; fi; done 2>/dev/null; exec dockerd "$@"' dockerd ${rt_flag[@]+"${rt_flag[@]}"} </dev/null >/var/log/dockerd.log 2>&1 &)
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 0.5; done
  docker info >/dev/null 2>&1 || { echo "setup: dockerd did not start (see /var/log/dockerd.log)" >&2; exit 1; }
fi
# A dockerd started without --cpu-rt-runtime leaves its cgroup no RT time.
docker_rt=/sys/fs/cgroup/cpu/docker/cpu.rt_runtime_us
if ((${#rt_flag[@]})) && [ -w "$docker_rt" ] && [ "$(cat "$docker_rt")" = 0 ]; then
  if echo "$rt_runtime" >"$docker_rt" 2>/dev/null; then
    echo "setup: dockerd runs without --cpu-rt-runtime: wrote $rt_runtime into $docker_rt (GEs can run SCHED_FIFO)"
  else
    echo "setup: could not write $rt_runtime into $docker_rt: GEs will run under the normal scheduler" >&2
  fi
fi

make --no-print-directory venv
