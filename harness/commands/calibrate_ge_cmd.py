"""`wotbench calibrate-ge`: measure (or show) one GE's capacity on this host."""

from __future__ import annotations

import argparse
import os
import sys


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("calibrate-ge", help="measure one GE's capacity on this host (cached)")
    p.add_argument("--force", action="store_true", help="measure again even if cached")
    p.add_argument("--sched", choices=["normal", "fifo"], default="normal",
                   help="scheduler policy of the GE and the device (default normal)")
    p.add_argument("--send-lag", type=float, default=1000.0,
                   help="p99 send-lag limit in us the capacity is read for (default 1000)")
    p.set_defaults(func=cmd_calibrate_ge)


def cmd_calibrate_ge(args: argparse.Namespace) -> int:
    from wotbench.host.gecap import MARGIN, CalibrationSetup, capacity_for

    own = sorted(os.sched_getaffinity(0))
    setup = CalibrationSetup(ge_core=own[-1], device_core=own[0], sched=args.sched)
    cap = capacity_for(setup, force=args.force, say=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"GE capacity: {cap.capacity(args.send_lag):,.0f} req/s with p99 send lag <= "
          f"{args.send_lag * MARGIN:.0f} us ({MARGIN:.0%} of {args.send_lag:.0f} us)")
    print(f"measured {cap.measured_at} in {cap.seconds:.1f} s, GE on core {cap.ge_core}, device on core "
          f"{cap.device_core}, {cap.fingerprint.sched} scheduler; cache {cap.path} (key {cap.fingerprint.key})")
    for rate, p99 in cap.points:
        print(f"  {rate:>10,.0f} req/s  p99 send lag {p99:>9,.1f} us")
    return 0
