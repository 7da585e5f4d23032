"""The GE's counters are one table (GE_COUNTERS and GE_GARBAGE_COUNTERS in
counters.h): the struct, the summary JSON, the stderr line and README.md follow
it, so adding a counter is one line."""

from __future__ import annotations

import json
import re
import subprocess

from gehelpers import ROOT, free_port, write_trace

GE_H = (ROOT / "gateway-emulator" / "counters.h").read_text()
README = (ROOT / "gateway-emulator" / "README.md").read_text()


def xmacro(name: str) -> list[str]:
    """The X(...) entries of a `#define NAME(X)` list, comments dropped."""
    m = re.search(rf"^#define {name}\(X\)((?:.*\\\n)*.*)$", GE_H, re.M)
    assert m, name
    body = re.sub(r"/\*.*?\*/", "", m.group(1).replace("\\\n", " "), flags=re.S)
    return re.findall(r"\bX\((\w+)\)", body)


TOP = xmacro("GE_COUNTERS")
GARBAGE = xmacro("GE_GARBAGE_COUNTERS")


def test_tables_are_read():
    # Guards the parser: a list it cannot read would make the checks below vacuous.
    assert TOP[:3] == ["ok", "timeouts", "errors"] and len(TOP) >= 11
    assert "duplicate_response" in GARBAGE and len(GARBAGE) >= 10
    assert not set(TOP) & set(GARBAGE)


def test_struct_is_generated_from_the_table():
    m = re.search(r"^struct ge_counters \{(.*?)^\};", GE_H, re.M | re.S)
    assert m
    body = [ln.strip() for ln in m.group(1).strip().splitlines()]
    assert body == ["#define GE_COUNTER_FIELD(name) uint64_t name;",
                    "GE_COUNTERS(GE_COUNTER_FIELD)",
                    "GE_GARBAGE_COUNTERS(GE_COUNTER_FIELD)",
                    "#undef GE_COUNTER_FIELD"]


def test_summary_and_stderr_line_follow_the_table(ge_bin, tmp_path):
    port = free_port()  # nothing listens: every request times out
    trace = write_trace(tmp_path / "t.csv",
                        [(0, i * 1000, "GET", f"coap://127.0.0.1:{port}/a") for i in range(3)])
    out, summary = tmp_path / "o.csv", tmp_path / "s.json"
    p = subprocess.run([str(ge_bin), "--trace", str(trace), "--out", str(out),
                        "--summary", str(summary), "--type", "non", "--timeout-ms", "100"],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    s = json.loads(summary.read_text())
    keys = list(s)
    i = keys.index("requests") + 1
    assert keys[i:i + len(TOP) + 1] == [*TOP, "garbage"]
    assert list(s["garbage"]) == ["total", *GARBAGE]
    assert s["timeouts"] == 3 and s["ok"] == 0
    assert s["garbage"]["total"] == sum(s["garbage"][k] for k in GARBAGE)

    last = p.stderr.strip().splitlines()[-1]
    m = re.fullmatch(r"wotbench-ge: 3 requests in \d+\.\d{3} s:((?: \w+=\d+)+)", last)
    assert m, last
    pairs = [kv.split("=") for kv in m.group(1).split()]
    assert [(k, int(v)) for k, v in pairs] == \
        [(k, s[k]) for k in TOP] + [("garbage", s["garbage"]["total"])]


def test_readme_documents_every_counter():
    table = README[README.index("## Summary JSON"):README.index("## Design")]
    missing = [k for k in [*TOP, *GARBAGE] if f"`{k}`" not in table]
    assert not missing, missing
