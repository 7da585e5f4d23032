"""docs/formats.md, wotbench.base.formats (harness/base/formats.py) and the C headers
(gateway-emulator/ge_format.h, device/dev_format.h, device/counters.h) say
the same thing.

Each check is a function of the file texts and the Python constants that
returns what disagrees. The real files must give nothing; a parametrized
set of in-memory edits (one drift each) must each trip its check, so no
check can pass vacuously."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from wotbench.base import formats

REPO = Path(__file__).resolve().parents[2]
THIS = "harness/tests/test_formats.py"
DOC = "docs/formats.md"
PY = "harness/base/formats.py"
GE_H = "gateway-emulator/ge_format.h"
DEV_H = "device/dev_format.h"
COUNTERS_H = "device/counters.h"
FILES = (DOC, PY, GE_H, DEV_H, COUNTERS_H)

#: (header, C name, Python name): every #define of a format header but the
#: device's response codes (checked against the document instead).
C_MIRRORS: tuple[tuple[str, str, str], ...] = (
    (GE_H, "GE_TRACE_COLUMNS", "TRACE_COLUMNS"),
    (GE_H, "GE_TRACE_OPTIONAL_COLUMNS", "TRACE_OPTIONAL_COLUMNS"),
    (GE_H, "GE_HOSTS_COLUMNS", "HOSTS_COLUMNS"),
    (GE_H, "GE_OUTPUT_COLUMNS", "GE_OUTPUT_COLUMNS"),
    (GE_H, "GE_STATUSES", "GE_STATUSES"),
    (GE_H, "GE_TX_STAMP_COUNTERS", "GE_TX_STAMP_COUNTERS"),
    (GE_H, "GE_RTO_COLUMNS", "GE_RTO_COLUMNS"),
    (GE_H, "GE_RTO_EVENTS", "GE_RTO_EVENTS"),
    (GE_H, "GE_RTO_KINDS", "GE_RTO_KINDS"),
    (GE_H, "GE_METHODS", "METHODS"),
    (GE_H, "GE_OBSERVE_METHODS", "OBSERVE_METHODS"),
    (GE_H, "GE_NOTIFY_COLUMNS", "NOTIFY_COLUMNS"),
    (GE_H, "GE_NOTIFY_STATUSES", "NOTIFY_STATUSES"),
    (GE_H, "GE_OBS_LAST_SEQ_OPTION", "LAST_SEQ_OPTION"),
    (GE_H, "GE_SERVICE_TIME_OPTION", "SERVICE_TIME_OPTION"),
    (GE_H, "GE_DEFAULT_COAP_PORT", "DEFAULT_COAP_PORT"),
    (GE_H, "GE_MAX_PAYLOAD_BYTES", "MAX_PAYLOAD_BYTES"),
    (GE_H, "GE_MAX_PATH_BYTES", "MAX_PATH_BYTES"),
    (GE_H, "GE_MAX_DEVICE_ID", "MAX_DEVICE_ID"),
    (GE_H, "GE_MAX_SEND_TS_US", "MAX_SEND_TS_US"),
    (GE_H, "GE_SUMMARY_FORMAT", "GE_SUMMARY_FORMAT"),
    (DEV_H, "DEV_RESOURCE_COLUMNS", "RESOURCE_COLUMNS"),
    (DEV_H, "DEV_RESOURCE_OPTIONAL_COLUMNS", "RESOURCE_OPTIONAL_COLUMNS"),
    (DEV_H, "DEV_RESOURCE_OBSERVE_COLUMNS", "RESOURCE_OBSERVE_COLUMNS"),
    (DEV_H, "DEV_LAST_SEQ_OPTION", "LAST_SEQ_OPTION"),
    (DEV_H, "DEV_METHODS", "METHODS"),
    (DEV_H, "DEV_SERVICE_TIME_OPTION", "SERVICE_TIME_OPTION"),
    (DEV_H, "DEV_DEFAULT_COAP_PORT", "DEFAULT_COAP_PORT"),
    (DEV_H, "DEV_MAX_SERVICE_US", "MAX_SERVICE_US"),
    (DEV_H, "DEV_MAX_PAYLOAD_BYTES", "MAX_PAYLOAD_BYTES"),
    (DEV_H, "DEV_MAX_PATH_BYTES", "MAX_PATH_BYTES"),
    (DEV_H, "DEV_STATS_FORMAT", "DEVICE_STATS_FORMAT"),
)

#: Document sections with a CSV header line -> (required, optional) constants.
DOC_CSV = {
    "Trace CSV": ("TRACE_COLUMNS", "TRACE_OPTIONAL_COLUMNS"),
    "Hosts CSV": ("HOSTS_COLUMNS", None),
    "Resource CSV": ("RESOURCE_COLUMNS", "RESOURCE_OPTIONAL_COLUMNS"),
    "GE per-request output CSV": ("GE_OUTPUT_COLUMNS", None),
    "GE RTO log CSV": ("GE_RTO_COLUMNS", None),
    "GE notify CSV": ("NOTIFY_COLUMNS", None),
}


@dataclass(frozen=True)
class Sources:
    text: dict[str, str]  # repo-relative path -> content
    py: dict[str, object]  # the public constants of wotbench.base.formats


def real_sources() -> Sources:
    return Sources({f: (REPO / f).read_text() for f in FILES},
                   {k: v for k, v in vars(formats).items() if k.isupper()})


# ---- parsing ------------------------------------------------------------

def c_defines(text: str) -> dict[str, str]:
    """Object-like #defines: continuation lines joined, comments dropped,
    C string literals concatenated (quotes removed), else the bare token."""
    out = {}
    for m in re.finditer(r"^#define (\w+)[ \t]((?:.*\\\n)*.*)$", text, re.M):
        body = re.sub(r"/\*.*?\*/", "", m.group(2).replace("\\\n", " ")).strip()
        strings = re.findall(r'"([^"]*)"', body)
        out[m.group(1)] = "".join(strings) if strings else body
    return out


def c_int(value: str) -> int | None:
    m = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", value)
    return int(m.group(1), 0) if m else None


def x_macro(text: str, name: str) -> list[str] | None:
    """The X(...) entries of `#define NAME(X)`, comments dropped."""
    m = re.search(rf"^#define {name}\(X\)((?:.*\\\n)*.*)$", text, re.M)
    if not m:
        return None
    body = re.sub(r"/\*.*?\*/", "", m.group(1).replace("\\\n", " "), flags=re.S)
    return re.findall(r"\bX\((\w+)\)", body)


def doc_sections(doc: str) -> dict[str, str]:
    """'## Title (note)' -> the section's text, keyed by the title alone."""
    parts = re.split(r"^## (.+)$", doc, flags=re.M)
    return {re.sub(r"\s*\(.*\)$", "", parts[i]).strip(): parts[i + 1]
            for i in range(1, len(parts) - 1, 2)}


def doc_item(section: str, field: str) -> str | None:
    """The text of the list item `- `field`: ...` (continuation lines joined)."""
    m = re.search(rf"^- `{re.escape(field)}`:(.*(?:\n  .*)*)", section, re.M)
    return m.group(1) if m else None


def doc_table(section: str) -> list[list[str]]:
    """Body rows of the section's Markdown table, cells stripped."""
    rows = [ln.strip() for ln in section.splitlines() if ln.strip().startswith("|")]
    cells = [[c.strip() for c in r.strip("|").split("|")] for r in rows]
    return [c for c in cells[1:] if not all(set(x) <= set("-: ") for x in c)]


def code(cell: str) -> str | None:
    m = re.fullmatch(r"`([^`]+)`", cell)
    return m.group(1) if m else None


# ---- checks: each returns what disagrees ---------------------------------

def check_headers(s: Sources) -> list[str]:
    """Every C format constant equals its Python mirror, and has one."""
    problems = []
    mirrored = {(h, c) for h, c, _ in C_MIRRORS}
    defines = {h: c_defines(s.text[h]) for h in (GE_H, DEV_H)}
    for h, d in defines.items():
        for name in d:
            if (h, name) not in mirrored and not name.startswith("DEV_CODE_"):
                problems.append(f"{h}: {name} has no Python mirror in C_MIRRORS")
    for h, cname, pyname in C_MIRRORS:
        if cname not in defines[h]:
            problems.append(f"{h}: {cname} is not defined")
            continue
        value, want = defines[h][cname], s.py.get(pyname)
        got: object = tuple(value.split(",")) if isinstance(want, tuple) else c_int(value)
        if got != want:
            problems.append(f"{h}: {cname} = {value!r}, formats.{pyname} = {want!r}")
    return problems


def check_doc_columns(s: Sources) -> list[str]:
    """The header line of each CSV section lists formats' columns."""
    problems = []
    sections = doc_sections(s.text[DOC])
    for title in sections:
        if "CSV" in title and title not in DOC_CSV:
            problems.append(f"{DOC}: section {title!r} has no columns in DOC_CSV")
    for title, (req, opt) in DOC_CSV.items():
        if title not in sections:
            problems.append(f"{DOC}: no section {title!r}")
            continue
        m = re.search(r"^    (\S+)$", sections[title], re.M)
        if not m:
            problems.append(f"{DOC}: {title}: no indented header line")
            continue
        line = m.group(1)
        got_req = tuple(line.split("[")[0].split(","))
        got_opt = tuple(re.findall(r"\[,(\w+)\]", line))
        if got_req != s.py.get(req):
            problems.append(f"{DOC}: {title}: {got_req} != formats.{req}")
        if got_opt != (s.py.get(opt) if opt else ()):
            problems.append(f"{DOC}: {title}: optional {got_opt} != formats.{opt}")
    res = re.search(r"^    (\S+)$", sections.get("Resource CSV", ""), re.M)
    cols = s.py.get("RESOURCE_OBSERVE_COLUMNS")
    group = "[," + ",".join(str(c) for c in cols) + "]" if isinstance(cols, tuple) else "[,]"
    if res and group not in res.group(1):
        problems.append(f"{DOC}: Resource CSV: no {group} (formats.RESOURCE_OBSERVE_COLUMNS)")
    return problems


def check_doc_values(s: Sources) -> list[str]:
    """The `method`, `status`, `event` and `kind` items list formats.METHODS,
    GE_STATUSES, GE_RTO_EVENTS, GE_RTO_KINDS."""
    problems = []
    sections = doc_sections(s.text[DOC])
    for title, field, name in (("Trace CSV", "method", "METHODS"),
                               ("GE per-request output CSV", "status", "GE_STATUSES"),
                               ("GE summary JSON", "tx_stamps", "GE_TX_STAMP_COUNTERS"),
                               ("GE RTO log CSV", "event", "GE_RTO_EVENTS"),
                               ("GE RTO log CSV", "kind", "GE_RTO_KINDS"),
                               ("GE notify CSV", "status", "NOTIFY_STATUSES")):
        item = doc_item(sections.get(title, ""), field)
        got = tuple(re.findall(r"`([^`]+)`", item)) if item is not None else None
        if got != s.py.get(name):
            problems.append(f"{DOC}: {title}: `{field}` lists {got}, formats.{name} = "
                            f"{s.py.get(name)!r}")
    return problems


def check_doc_constants(s: Sources) -> list[str]:
    """The Constants table has exactly formats' integer constants."""
    rows = doc_table(doc_sections(s.text[DOC]).get("Constants", ""))
    got = {code(r[0]): r[1] for r in rows if len(r) >= 2}
    want = {k: v for k, v in s.py.items() if type(v) is int}
    problems = [f"{DOC}: Constants: formats.{k} is missing" for k in want if k not in got]
    problems += [f"{DOC}: Constants: {k} is not in formats" for k in got if k not in want]
    problems += [f"{DOC}: Constants: {k} = {got[k]}, formats says {v}"
                 for k, v in want.items() if k in got and got[k] != str(v)]
    return problems


#: The keys of the device stats JSON that are not counters, named here too:
#: a new one must be added on purpose, not slip in by editing formats alone.
DEVICE_STATS_FIELDS = ("format", "cpus")
#: ... and the time histograms after the counters (JSON only).
DEVICE_STATS_HISTOGRAMS = ("residence_us", "queue_wait_us", "notify_lag_us")


def check_device_stats(s: Sources) -> list[str]:
    """The device stats keys: formats' fields (exactly "format", "cpus"),
    then counters.h's DEV_COUNTERS, formats and the document's table, in
    the same order, then the histograms (counters.h's DEV_HISTOGRAMS,
    formats' DEVICE_STATS_HISTOGRAMS). Only the counters are counters: a
    field or a histogram is not in DEV_COUNTERS (nor on the stderr line)."""
    problems = []
    header = x_macro(s.text[COUNTERS_H], "DEV_COUNTERS")
    hists = s.py.get("DEVICE_STATS_HISTOGRAMS")
    if hists != DEVICE_STATS_HISTOGRAMS or x_macro(s.text[COUNTERS_H], "DEV_HISTOGRAMS") != list(
            DEVICE_STATS_HISTOGRAMS):
        problems.append(f"histograms: formats {hists}, {COUNTERS_H} "
                        f"{x_macro(s.text[COUNTERS_H], 'DEV_HISTOGRAMS')} != {DEVICE_STATS_HISTOGRAMS}")
    fields = s.py.get("DEVICE_STATS_FIELDS")
    py = s.py.get("DEVICE_STATS_COUNTERS")
    counters = list(py) if isinstance(py, tuple) else []
    rows = doc_table(doc_sections(s.text[DOC]).get("Device stats JSON", ""))
    keys = [code(r[0]) for r in rows]
    if fields != DEVICE_STATS_FIELDS:
        problems.append(f"formats.DEVICE_STATS_FIELDS {fields} != {DEVICE_STATS_FIELDS}")
    if header is None or counters != header:
        problems.append(f"{COUNTERS_H}: DEV_COUNTERS {header} != formats {py}")
    if keys != [*DEVICE_STATS_FIELDS, *counters, *DEVICE_STATS_HISTOGRAMS]:
        problems.append(f"{DOC}: Device stats JSON keys {keys} != {DEVICE_STATS_FIELDS} "
                        f"+ formats {py} + {DEVICE_STATS_HISTOGRAMS}")
    if rows and rows[0][1:2] != [str(s.py.get("DEVICE_STATS_FORMAT"))]:
        problems.append(f"{DOC}: Device stats JSON: format {rows[0][1:2]}")
    return problems


def check_response_codes(s: Sources) -> list[str]:
    """The wire convention's response codes are dev_format.h's DEV_CODE_*."""
    section = doc_sections(s.text[DOC]).get("Wire convention", "")
    m = re.search(r"^- Response codes:(.*(?:\n  .*)*)", section, re.M)
    doc = sorted(re.findall(r"\b\d\.\d\d\b", m.group(1))) if m else []
    header = []
    for name, value in c_defines(s.text[DEV_H]).items():
        if name.startswith("DEV_CODE_"):
            v = c_int(value)
            header.append(f"{v >> 5}.{v & 31:02d}" if v is not None else value)
    if not doc or doc != sorted(header):
        return [f"{DOC}: response codes {doc} != {DEV_H} {sorted(header)}"]
    return []


PATH = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.(?:py|md|h|c)\b")


def check_mentioned_files(s: Sources) -> list[str]:
    """Every file a contract file names exists, and each names the others
    it is mirrored by or checked by."""
    problems = []
    for f, text in s.text.items():
        for p in sorted(set(PATH.findall(text))):
            if not ((REPO / p).exists() or (REPO / f).parent.joinpath(p).exists()):
                problems.append(f"{f} names {p}, which does not exist")
        wanted = [DOC, THIS] if f != DOC else [PY, GE_H, DEV_H, COUNTERS_H, THIS]
        problems += [f"{f} does not name {w}" for w in wanted if w not in text]
    return problems


CHECKS = (check_headers, check_doc_columns, check_doc_values, check_doc_constants,
          check_device_stats, check_response_codes, check_mentioned_files)


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_sources_agree(check: Callable[[Sources], list[str]]) -> None:
    assert check(real_sources()) == []


def test_this_file_is_where_the_sources_say() -> None:
    assert Path(__file__).resolve() == REPO / THIS


# ---- each check catches drift ---------------------------------------------

def edit(path: str, old: str, new: str) -> Callable[[Sources], Sources]:
    def apply(s: Sources) -> Sources:
        assert s.text[path].count(old) >= 1, f"the edit does not apply to {path}: {old!r}"
        return replace(s, text={**s.text, path: s.text[path].replace(old, new, 1)})
    return apply


def py_set(name: str, value: object) -> Callable[[Sources], Sources]:
    return lambda s: replace(s, py={**s.py, name: value})


def py_del(name: str) -> Callable[[Sources], Sources]:
    return lambda s: replace(s, py={k: v for k, v in s.py.items() if k != name})


def drift_define(header: str, name: str) -> Callable[[Sources], Sources]:
    """Changes one #define's value: a number by one, a string's first column."""
    def apply(s: Sources) -> Sources:
        pat = rf'(^#define {name}[ \t]+(?:\\\n[ \t]*)?)(?:"|(\d+))'
        m = re.search(pat, s.text[header], re.M)
        assert m, f"{name} not found in {header}"
        new = f'{m.group(1)}"x' if m.group(2) is None else f"{m.group(1)}{int(m.group(2)) + 1}"
        text = s.text[header][:m.start()] + new + s.text[header][m.end():]
        return replace(s, text={**s.text, header: text})
    return apply


Drift = Callable[[Sources], Sources]
OUT = formats.GE_OUTPUT_COLUMNS

#: check -> the drifts it must catch, by name.
DRIFTS: dict[Callable[[Sources], list[str]], dict[str, Drift]] = {
    # the former test_format_header.py files' assertions, and more
    check_headers: {
        **{f"{c} changed": drift_define(h, c) for h, c, _ in C_MIRRORS},
        "ge define removed": edit(GE_H, "#define GE_MAX_PATH_BYTES 255\n", ""),
        "ge define without mirror": edit(GE_H, "#define GE_SUMMARY_FORMAT 1",
                                         "#define GE_SUMMARY_FORMAT 1\n#define GE_NEW 3"),
        "python output columns": py_set("GE_OUTPUT_COLUMNS", OUT[:-1]),
        "python methods": py_set("METHODS", ("GET",)),
        "python max service": py_set("MAX_SERVICE_US", 10**8),
    },
    check_doc_columns: {
        "doc trace header": edit(DOC, "device_id,send_ts_us,method,uri[",
                                 "device_id,send_ts,method,uri["),
        "doc trace optional": edit(DOC, "method,uri[,payload]", "method,uri"),
        "doc hosts header": edit(DOC, "    host,address", "    host,address,port"),
        "doc resource header": edit(DOC, "service_us[,payload_bytes]", "service_us[,size]"),
        "doc resource observe columns": edit(DOC, "notify_type,max_age", "max_age,notify_type"),
        "doc output order": edit(DOC, "response_us,latency_intended_us",
                                 "latency_intended_us,response_us"),
        "doc output header gone": edit(DOC, "    " + ",".join(OUT), ""),
        "doc new CSV section": edit(DOC, "## Hosts CSV", "## Pinning CSV\n\n## Hosts CSV"),
        "python trace columns": py_set("TRACE_COLUMNS", ("device_id", "uri")),
    },
    check_doc_values: {
        "doc methods": edit(DOC, "`POST` or `DELETE`", "`POST`, `PATCH` or `DELETE`"),
        "doc statuses": edit(DOC, "`timeout` (no response in time)", "`late` (no response)"),
    },
    check_doc_constants: {
        "doc constant value": edit(DOC, "| `MAX_PATH_BYTES` | 255 |", "| `MAX_PATH_BYTES` | 2 |"),
        "doc constant row gone": edit(DOC, "| `DEFAULT_COAP_PORT` |", "| x |"),
        "doc constant not in python": py_del("MAX_SEND_TS_US"),
        "python constant not in doc": py_set("MAX_TOKEN_BYTES", 8),
    },
    check_device_stats: {
        "counters.h counter added": edit(COUNTERS_H, "  X(wkc)", "  X(wkc) X(new_counter)"),
        "counters.h counter renamed": edit(COUNTERS_H, "X(datagrams)", "X(received)"),
        "python stats keys": py_set("DEVICE_STATS_COUNTERS", formats.DEVICE_STATS_COUNTERS[1:]),
        "doc stats row gone": edit(DOC, "| `overflow` |", "| overflow |"),
        "doc stats format": edit(DOC, "| `format` | 1 |", "| `format` | 2 |"),
        "doc stats cpus row gone": edit(DOC, "| `cpus` |", "| cpus |"),
        "doc stats cpus listed twice": edit(
            DOC, "| `datagrams` |", "| `cpus` | x |\n| `datagrams` |"),
        "python stats fields": py_set("DEVICE_STATS_FIELDS", ("format",)),
        "python stats field added": py_set("DEVICE_STATS_FIELDS", ("format", "cpus", "host")),
        "counters.h cpus as a counter": edit(COUNTERS_H, "X(datagrams)", "X(cpus) X(datagrams)"),
        "counters.h histogram as a counter": edit(COUNTERS_H, "X(datagrams)", "X(residence_us) X(datagrams)"),
        "counters.h histogram renamed": edit(COUNTERS_H, "X(queue_wait_us)", "X(wait_us)"),
        "python histogram gone": py_set("DEVICE_STATS_HISTOGRAMS", ("residence_us",)),
        "doc histogram row gone": edit(DOC, "| `queue_wait_us` |", "| queue_wait_us |"),
    },
    check_response_codes: {
        "doc response code": edit(DOC, "(queue full) 5.03", "(queue full) 5.00"),
        "dev response code": edit(DEV_H, "UNAVAILABLE 0xa3", "UNAVAILABLE 0xa4"),
        "doc response code gone": edit(DOC, "unrecognised critical option 4.02;", ""),
    },
    check_mentioned_files: {
        "doc names a missing test": edit(DOC, "/test_formats.py`)", "/test_format.py`)"),
        "header names a missing file": edit(GE_H, "by harness/base/formats.py", "by harness/f.py"),
        "header no longer names the test": edit(DEV_H, "harness/tests/test_formats.py", "a"),
        "python names a missing header": edit(PY, "device/counters.h", "device/count.h"),
    },
}
CASES = [(check, name, drift) for check, drifts in DRIFTS.items()
         for name, drift in drifts.items()]


@pytest.mark.parametrize("check,drift", [(c, d) for c, _, d in CASES],
                         ids=[f"{c.__name__}: {n}" for c, n, _ in CASES])
def test_each_check_catches_drift(check: Callable[[Sources], list[str]], drift: Drift) -> None:
    real = real_sources()
    assert check(real) == []
    assert check(drift(real)) != []


def test_every_check_has_a_drift() -> None:
    assert set(DRIFTS) == set(CHECKS) and all(DRIFTS.values())
