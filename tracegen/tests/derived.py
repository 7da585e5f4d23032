"""A folder as ``wotbench tracegen --from-pcap`` writes it, written by hand
for the replay tests: trace.csv, resources/, service/, devices.csv,
capture.json and the marker (tracegen/README.md, "From a packet capture")."""

from __future__ import annotations

import json
from pathlib import Path

#: (device, time us, method, path): two captured devices, the second with an observation.
ROWS = [(0, 0, "GET", "/a"), (1, 50, "PUT", "/b"), (0, 100, "GET", "/a"), (0, 200, "GET", "/c"),
        (1, 250, "GET", "/b")]
OBS_ROWS = [(1, 20, "OBS", "/o"), (1, 120, "UNOBS", "/o")]
#: Each device's resources (path, median service us) and service samples (path, us).
RESOURCES = {0: [("/a", 100), ("/c", 300)], 1: [("/b", 1000), ("/o", 10)]}
SAMPLES = {0: [("/a", 50), ("/a", 100), ("/a", 150), ("/c", 300)], 1: [("/b", 1000), ("/b", 1000)]}


def write_derived(folder: Path, rows: list[tuple[int, int, str, str]] | None = None, *,
                  payload: bool = True, observe_rit: str | None = None) -> Path:
    """The folder, with ``rows`` (default ROWS) as its trace; PUT rows carry a 3-byte payload;
    ``observe_rit``: the resource files get the Observe columns, and the observed paths
    (of the OBS rows) that process (as tracegen --from-pcap writes them, docs/formats.md)."""
    rows = sorted(ROWS if rows is None else rows, key=lambda r: (r[1], r[0]))
    devices = max(r[0] for r in rows) + 1
    (folder / "resources").mkdir(parents=True)
    (folder / "service").mkdir()
    head = "device_id,send_ts_us,method,uri" + (",payload" if payload else "")
    lines = [f"{d},{t},{m},coap://dev-{d}{p}" + ((",xxx" if m == "PUT" else ",") if payload else "")
             for d, t, m, p in rows]
    (folder / "trace.csv").write_text("\n".join([head] + lines) + "\n")
    observed = {(d, p.partition("?")[0]) for d, _, m, p in rows if m == "OBS"}     # a resource has no query
    for d in range(devices):
        res = RESOURCES.get(d, [(p, 10) for dd, _, _, p in rows if dd == d][:1])
        res = res + sorted({(p, 10) for dd, p in observed if dd == d and p not in dict(res)})
        if observe_rit is None:
            text = "path,service_us\n" + "".join(f"{p},{v}\n" for p, v in res)
        else:
            text = "path,service_us,observe_rit,notify_type,max_age,observe_seed\n" + "".join(
                f"{p},{v}," + (f"{observe_rit},non,," if (d, p) in observed else ",,,") + "\n" for p, v in res)
        (folder / "resources" / f"dev-{d}.csv").write_text(text)
        (folder / "service" / f"dev-{d}.csv").write_text(
            "path,service_us\n" + "".join(f"{p},{v}\n" for p, v in SAMPLES.get(d, [])))
    (folder / "devices.csv").write_text("device_id,group,host,resource_file\n" + "".join(
        f"{d},capture,dev-{d},resources/dev-{d}.csv\n" for d in range(devices)))
    polling = [r for r in rows if r[2] not in ("OBS", "UNOBS")]
    samples = [v for d in range(devices) for _, v in SAMPLES.get(d, [])]
    summary = {"format": 1, "devices": devices, "requests_in_trace": len(polling),
               "duration_us": polling[-1][1] - polling[0][1],
               "service": {"mean_us": sum(samples) / len(samples) if samples else None}}
    (folder / "capture.json").write_text(json.dumps(summary))
    (folder / ".wotbench-made").write_text("wotbench tracegen\n")
    return folder
