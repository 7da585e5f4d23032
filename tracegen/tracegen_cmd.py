"""``wotbench tracegen``: generate a workload from a spec file or from flags."""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wotbench.base.errors import UserError

if TYPE_CHECKING:
    from wotbench.spec import WorkloadSpec

__all__ = ["register", "cmd_tracegen", "spec_from_args"]

# Flags that describe a workload (the flags form); --spec excludes them.
_WORKLOAD_FLAGS = ("devices", "duration", "requests", "rit", "rit_scope", "service", "methods",
                   "payload_bytes", "resources", "cd_rit", "cd_service", "cd_calibration")
_GROUP_FLAG = {"count": "--devices", "rit": "--rit", "service": "--service", "methods": "--methods",
               "payload_bytes": "--payload-bytes", "resources": "--resources"}
_SPEC_FLAG = {"workload.duration": "--duration", "workload.requests": "--requests",
              "workload.rit": "--rit", "workload.rit_scope": "--rit-scope", "workload.seed": "--seed",
              "devices": "--devices", "devices[0].rit": "--rit", "cd.rit": "--cd-rit",
              "cd.service": "--cd-service", "cd.calibration": "--cd-calibration"}


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "tracegen", help="generate a synthetic workload (trace, resources, expected.json)",
        description="Generate the trace, per-device resource files, expected.json and the CD "
                    "workload, from a spec's workload section (--spec) or from flags. "
                    "Example: wotbench tracegen --devices 10 --duration 60s --rit exp:100ms "
                    "--service exp:5ms --seed 1 --out wl/")
    p.add_argument("--spec", type=Path, metavar="FILE",
                   help="experiment spec (YAML); its workload and devices are used")
    p.add_argument("--from-pcap", type=Path, nargs="+", metavar="FILE",
                   help="derive the workload from a packet capture (pcap or pcapng, CoAP over UDP): "
                        "trace, per-device resources with captured service times, capture.json; "
                        "several files (a ring, several GEs) or a run's capture/ folder are merged in time order")
    p.add_argument("--max-packets", metavar="N",
                   help="with --from-pcap: read only the first N packets of each capture file (default: all)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (must not exist or be empty)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing output directory that tracegen made (nothing else in it)")
    p.add_argument("--per-device-traces", action="store_true", help="also write traces/dev-<id>.csv")
    p.add_argument("--seed", metavar="N", help="random seed (default 1; overrides the spec's)")
    g = p.add_argument_group("flags form (one group of identical devices)")
    g.add_argument("--devices", metavar="N", help="number of devices")
    g.add_argument("--duration", metavar="TIME", help="trace length, e.g. 60s")
    g.add_argument("--requests", metavar="N", help="trace length as a request count (instead of --duration)")
    g.add_argument("--rit", metavar="DIST",
                   help="RIT distribution, e.g. exp:100ms (per device unless --rit-scope gateway)")
    g.add_argument("--rit-scope", choices=("device", "gateway"), help="device (default) or gateway")
    g.add_argument("--service", metavar="DIST", help="service-time distribution, e.g. exp:5ms")
    g.add_argument("--methods", metavar="SHARES", help="method shares, e.g. GET=0.9,PUT=0.1 (default GET)")
    g.add_argument("--payload-bytes", metavar="N", help="request payload bytes for PUT/POST (default 0)")
    g.add_argument("--resources", metavar="K", help="resources per device (default 64)")
    g.add_argument("--cd-rit", metavar="TIME", help="CD-GE inter-arrival time (default 1s)")
    g.add_argument("--cd-service", metavar="TIME", help="CD node service time, or auto (default: devices' mean)")
    g.add_argument("--cd-calibration", metavar="TIME", help="CD-only period before the devices start (default 0s)")
    p.set_defaults(func=cmd_tracegen)


def spec_from_args(args: argparse.Namespace) -> WorkloadSpec:
    """The WorkloadSpec described by the parsed arguments: the spec file's
    (its first test, at scale full) or the flags'."""
    # Imported here, not at the top: `wotbench --help` loads this module and needs no NumPy.
    from wotbench.base.units import parse_count
    from wotbench.spec import SEED_MAX, load

    seed = None if args.seed is None else parse_count(args.seed, "--seed", minimum=0, maximum=SEED_MAX)
    if args.spec is not None:
        given = [f for f in _WORKLOAD_FLAGS if getattr(args, f) is not None]
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise UserError("cannot be combined with --spec (edit the spec instead)", field=flag)
        spec = load(args.spec)[0].spec.workload
        assert spec is not None  # Spec.build always reads one from the file
        return spec if seed is None else dataclasses.replace(spec, seed=seed)
    return _spec_from_flags(args, 1 if seed is None else seed)


def _spec_from_flags(args: argparse.Namespace, seed: int) -> WorkloadSpec:
    from wotbench.base.units import parse_count
    from wotbench.spec import GroupWorkload, WorkloadSpec
    from wotbench.tracegen._distribution import parse_distribution

    cwd = Path.cwd()
    if args.devices is None:
        raise UserError("missing (number of devices; or give --spec)", field="--devices")
    count = parse_count(args.devices, "--devices", minimum=1)
    if args.service is None:
        raise UserError("missing (service-time distribution, e.g. exp:5ms)", field="--service")
    if args.rit is None:
        raise UserError("missing (RIT distribution, e.g. exp:100ms)", field="--rit")
    scope = args.rit_scope or "device"
    rit = parse_distribution(args.rit, "--rit", role="rit", base_dir=cwd)
    service = parse_distribution(args.service, "--service", role="service", base_dir=cwd)
    group_kw = _group_flags(args)
    kw: dict[str, Any] = {"seed": seed, "rit_scope": scope, **_length_flags(args), **_cd_flags(args)}
    try:
        group = GroupWorkload("default", count, service, rit if scope == "device" else None, **group_kw)
        if scope == "gateway":
            kw["rit"] = rit
        return WorkloadSpec((group,), **kw)
    except UserError as err:
        err.field = _GROUP_FLAG.get(err.field or "", _SPEC_FLAG.get(err.field or "", err.field))
        raise


def _group_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The group's keywords from --methods, --payload-bytes and --resources."""
    from wotbench.base.units import parse_count, parse_number
    from wotbench.spec import parse_methods, parse_payload

    methods: tuple[tuple[str, float], ...] = (("GET", 1.0),)
    if args.methods is not None:
        shares: dict[str, object] = {}
        for part in args.methods.split(","):
            m, sep, v = part.partition("=")
            shares[m.strip()] = parse_number(v, "--methods") if sep else 1.0
        methods = parse_methods(shares, "--methods")
    group_kw: dict[str, Any] = {"methods": methods}
    if args.payload_bytes is not None:
        group_kw["payload_bytes"] = parse_payload(args.payload_bytes, "--payload-bytes")
    if args.resources is not None:
        group_kw["resources"] = parse_count(args.resources, "--resources", minimum=1)
    return group_kw


def _length_flags(args: argparse.Namespace) -> dict[str, int]:
    """The trace's length: --duration or --requests, exactly one."""
    from wotbench.base.units import parse_count, parse_duration

    if args.duration is not None and args.requests is not None:
        raise UserError("give --duration or --requests, not both", field="--requests")
    if args.duration is not None:
        return {"duration_us": parse_duration(args.duration, "--duration")}
    if args.requests is not None:
        return {"requests": parse_count(args.requests, "--requests", minimum=1)}
    raise UserError("missing (trace length, e.g. 60s; or --requests N)", field="--duration")


def _cd_flags(args: argparse.Namespace) -> dict[str, int]:
    """The CD workload's keywords from --cd-rit, --cd-service (auto: none) and --cd-calibration."""
    from wotbench.base.units import parse_duration

    kw: dict[str, int] = {}
    if args.cd_rit is not None:
        kw["cd_rit_us"] = parse_duration(args.cd_rit, "--cd-rit")
    if args.cd_service is not None and args.cd_service != "auto":
        kw["cd_service_us"] = parse_duration(args.cd_service, "--cd-service")
    if args.cd_calibration is not None:
        kw["cd_calibration_us"] = parse_duration(args.cd_calibration, "--cd-calibration")
    return kw


def _check_budget(spec: WorkloadSpec, args: argparse.Namespace) -> None:
    """The pre-flight budget (harness/spec/budget.py), before anything is allocated or written."""
    from wotbench.spec import budget

    try:
        budget.check_trace(spec, Path(args.out))
    except UserError as err:
        if args.spec is not None:
            err.file = str(args.spec)
        else:
            f = err.field or ""
            err.field = "--devices" if f == "devices[0].count" else _SPEC_FLAG.get(f, err.field)
        raise


def _from_pcap(args: argparse.Namespace) -> int:
    """``--from-pcap FILE``: the workload of a capture, and a short table of what was found."""
    from tabulate import tabulate

    from wotbench.tracegen._fromcapture import from_capture

    given = [f for f in ("spec", *_WORKLOAD_FLAGS, "seed") if getattr(args, f) is not None]
    given += ["per_device_traces"] if args.per_device_traces else []
    if given:
        raise UserError("cannot be combined with --from-pcap (the capture is the workload)",
                        field="--" + given[0].replace("_", "-"))
    from wotbench.base.units import parse_count

    limit = None if args.max_packets is None else parse_count(args.max_packets, "--max-packets", minimum=1)
    start = time.perf_counter()
    out = from_capture(args.from_pcap, args.out, overwrite=args.force, max_packets=limit)
    s: dict[str, Any] = out.summary
    m, sv = s["matched"], s["service"]
    rate = "-" if s["rate_per_s"] is None else f"{s['rate_per_s']:.1f}/s"
    files = s["files"]
    what = f"{s['file']}" if len(files) < 2 else f"{s['file']}: {len(files)} files"
    obs = s["observe"]
    rows = [("capture", f"{what} ({s['capture_format']}, {s['linktype_name']})"),
            ("packets / CoAP messages", f"{s['packets']} / {s['coap_messages']}"
             + (" (stopped at --max-packets)" if s["stopped_early"] else "")),
            ("requests (in the trace)", f"{s['requests']} ({s['requests_in_trace']}), {rate}"),
            ("devices / resources", f"{s['devices']} / {s['resources']}"),
            ("answered / unanswered", f"{m['requests_answered']} / {m['requests_unanswered']}"),
            ("responses unmatched / extra", f"{m['responses_unmatched']} / {m['responses_extra']}"),
            ("retransmissions", s["retransmissions"]),
            ("observations / dropped", f"{obs['observations']} / {obs['overlapping'] + obs['over_limit']}"
             " (overlapping or over the limit)"),
            ("queries dropped", f"{s['queries_dropped']} of {s['requests_with_query']}"),
            ("CON / NON", f"{s['types']['CON']} / {s['types']['NON']}"),
            ("service p50 (p5-p95)", "-" if sv["p50_us"] is None
             else f"{sv['p50_us']:.0f} us ({sv['p5_us']:.0f}-{sv['p95_us']:.0f})"),
            ("skipped", ", ".join(f"{k} {v}" for k, v in s["skipped"].items() if v) or "none")]
    print(tabulate(rows, tablefmt="plain"))
    print(f"tracegen: {s['requests_in_trace']} requests to {s['devices']} devices from {what} -> "
          f"{out.outdir} in {time.perf_counter() - start:.2f} s ({sv['note']})")
    return 0


def cmd_tracegen(args: argparse.Namespace) -> int:
    from wotbench.tracegen._generate import check_out, generate

    if args.from_pcap is not None:
        return _from_pcap(args)
    if args.max_packets is not None:
        raise UserError("only with --from-pcap", field="--max-packets")
    start = time.perf_counter()
    check_out(args.out, args.force)      # a bad --out is refused before any work
    spec = spec_from_args(args)
    _check_budget(spec, args)
    out = generate(spec, args.out, per_device_traces=args.per_device_traces, overwrite=args.force)
    took = time.perf_counter() - start
    print(f"tracegen: {out.requests} requests to {len(out.device_ids)} devices over "
          f"{out.duration_us / 1e6:g} s (CD: {out.cd_rit_us} us RIT, {out.cd_service_us} us service) "
          f"-> {out.outdir} in {took:.2f} s")
    return 0
