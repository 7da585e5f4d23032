"""What validate-cd's analysis reads of one finished trial, and its record.

A trial's analysis needs the CD node's R_d series (with the phases, the
run's validity thresholds and the service time the CD node echoed), the
devices' R - S of the measurement phase (the truth, vcd_truth), their
mode, the run's verdict and the hogs' interval (interference.json). It
reads them from the trial's run folder (:func:`trial_data`) or from the
trial's *record* (:func:`write_record` / :func:`read_record`): one small
NumPy ``.npz`` file holding exactly those, so that a batch of trials
outlives its run folders (a few hundred KB each, lost with the machine)
and batches from several sessions or machines combine (``--reanalyze``).
A record holds four float64 arrays and one JSON document with exactly
the keys :func:`write_record` writes; it is read without pickle, as a
regular file of bounded size, each member's ``.npy`` header checked
(dtype, shape, size) before its data is read, and anything missing,
extra or malformed is refused in one line naming the file and the field.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import tokenize
import zipfile
import zlib
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wotbench.base import inputfile
from wotbench.base import results as res
from wotbench.base import rundir as layout
from wotbench.base.errors import UserError
from wotbench.spec import SEED_MAX, Thresholds, load_saved, spec_mode
from wotbench.studies import vcd_truth as truth

if TYPE_CHECKING:
    from wotbench.reporting import Phases

__all__ = ["CdData", "TrialData", "injected_interval", "trial_data", "write_record", "read_record",
           "RECORD_FORMAT", "RECORD_MAX_BYTES"]

#: The record's format number (its JSON's ``format``).
RECORD_FORMAT = 1
#: The most a record's arrays may hold once read (from the archive's header):
#: a trial at the ci scale needs under 100 KB.
RECORD_MAX_BYTES = 64 << 20
_ARRAYS = ("cd_t_us", "cd_rd", "rs_t_us", "rs_us")
_META = "meta"


@dataclass(frozen=True)
class CdData:
    """A run's CD series and what the detector needs besides."""

    t_us: np.ndarray
    rd: np.ndarray
    phases: Phases
    th: Thresholds
    service_us: float | None = None
    """S the CD node echoed (median): its baseline is checked against it."""

    def tests(self, alpha: float | None = None, min_effect: float | None = None, describe: bool = True) -> Any:
        """The run's contention tests (wotbench.reporting.CdTests: the paper's,
        the change test and their verdict), as its report made them, or at
        ``alpha`` and ``min_effect`` (``describe=False``: status and onset only)."""
        from wotbench.reporting import cd_tests

        th = self.th if min_effect is None else dataclasses.replace(self.th, cd_min_effect=min_effect)
        return cd_tests(self.t_us, self.rd, self.phases, th, alpha, self.service_us, describe)

    def detect(self, alpha: float | None = None, min_effect: float | None = None, describe: bool = True) -> Any:
        """The run's verdict of the two tests (:meth:`tests`)."""
        return self.tests(alpha, min_effect, describe).verdict

    def change(self, alpha: float | None = None, exceed: float | None = None, describe: bool = True) -> Any:
        """The change test alone (against the warm-up), at the run's thresholds
        or at ``alpha`` and design exceedance ``exceed``."""
        from wotbench.reporting import cd_change

        return cd_change(self.t_us, self.rd, self.phases, self.th, alpha, exceed, describe)


@dataclass(frozen=True)
class TrialData:
    """What a finished trial's analysis reads (its run folder or its record)."""

    cd: CdData | None
    rs: truth.DeviceRS
    """The devices' R - S of the measurement phase."""
    measure: tuple[float, float]
    mode: str
    verdict: str | None = None
    """The run's verdict (summary.json)."""
    injected: tuple[float | None, float | None, bool] = (None, None, False)
    """The hogs' [first start, last end] on t0 and whether it was observed (:func:`injected_interval`)."""
    seed: int | None = None
    """The trace's ``workload.seed`` (None: a record written before seeds were kept, or a replayed capture)."""


def injected_interval(run_dir: Path) -> tuple[float | None, float | None, bool]:
    """[first hog start, last hog end] on t0 from interference.json: observed
    where every hog reported, else planned (and ``False``)."""
    from wotbench.reporting import read_interference

    eps = read_interference(run_dir)
    if not eps:
        return None, None, False
    observed = all(e.get("start_us") is not None and e.get("end_us") is not None for e in eps)
    ks = ("start_us", "end_us") if observed else ("planned_start_us", "planned_end_us")
    return float(min(e[ks[0]] for e in eps)), float(max(e[ks[1]] for e in eps)), observed


def trial_data(run_dir: Path) -> TrialData:
    """A finished run's CD series, its devices' R - S, mode, verdict and injected interval."""
    from wotbench.reporting import cd_series, load_run

    run = load_run(run_dir)
    saved = load_saved(run_dir / layout.SPEC)
    cd = None
    cd_csv = run_dir / layout.CD / layout.CD_OUTPUT
    if cd_csv.is_file():
        t, _, rd = cd_series(cd_csv)
        svc = t.service[np.isfinite(t.service)]
        cd = CdData(t.intended, rd, run.phases, saved.validity, float(np.median(svc)) if svc.size else None)
    summary = run_dir / layout.SUMMARY
    verdict = json.loads(summary.read_text()).get("verdict") if summary.is_file() else None
    seed = None if saved.workload is None or saved.workload.replay is not None else saved.workload.seed
    return TrialData(cd, truth.device_rs(run), run.phases.measure, spec_mode(saved),
                     verdict if isinstance(verdict, str) else None, injected_interval(run_dir), seed)


# --- the record -----------------------------------------------------------------------------------

def write_record(path: Path, data: TrialData, about: dict[str, Any]) -> None:
    """Writes ``data`` to ``path`` atomically; ``about`` (the trial's class,
    run id, ...) is kept beside it for a reader, never read back into the analysis."""
    cd = data.cd
    meta = {"format": RECORD_FORMAT, "about": about, "mode": data.mode, "measure": list(data.measure),
            "verdict": data.verdict, "injected": list(data.injected), "seed": data.seed,
            "cd": None if cd is None else {"phases": asdict(cd.phases), "thresholds": asdict(cd.th),
                                           "service_us": cd.service_us}}
    empty = np.zeros(0)
    arrays = {"cd_t_us": empty if cd is None else cd.t_us, "cd_rd": empty if cd is None else cd.rd,
              "rs_t_us": data.rs.t_us, "rs_us": data.rs.rs_us}
    members: dict[str, Any] = {k: np.asarray(v, dtype=np.float64) for k, v in arrays.items()}
    members[_META] = np.array(json.dumps(meta))
    buf = io.BytesIO()
    np.savez_compressed(buf, **members)
    res.write_atomic(path, buf.getvalue())


class _Bad(Exception):
    def __init__(self, field: str, what: str) -> None:
        super().__init__(what)
        self.field = field


def _pair(v: Any, field: str, optional: bool = False) -> tuple[float, float] | None:
    if v is None and optional:
        return None
    if (not isinstance(v, list) or len(v) != 2
            or not all(isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x) for x in v)):
        raise _Bad(field, "expected a pair of finite numbers")
    return float(v[0]), float(v[1])


def _number(v: Any, field: str) -> float | None:
    if v is None:
        return None
    if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
        raise _Bad(field, "expected a finite number or null")
    return float(v)


def _phases(m: Any) -> Phases:
    from wotbench.reporting import Phases

    if not isinstance(m, dict):
        raise _Bad("cd.phases", "expected a mapping")
    _keys(m, {f.name for f in fields(Phases)}, "cd.phases.")
    measure = _pair(m.get("measure"), "cd.phases.measure")
    assert measure is not None
    t0 = m.get("t0_epoch_us")
    if t0 is not None and (not isinstance(t0, int) or isinstance(t0, bool)):
        raise _Bad("cd.phases.t0_epoch_us", "expected an integer or null")
    if not isinstance(m.get("inferred", False), bool):
        raise _Bad("cd.phases.inferred", "expected true or false")
    return Phases(measure, calibration=_pair(m.get("calibration"), "cd.phases.calibration", True),
                  warmup=_pair(m.get("warmup"), "cd.phases.warmup", True),
                  cooldown=_pair(m.get("cooldown"), "cd.phases.cooldown", True),
                  t0_epoch_us=t0, inferred=m.get("inferred", False))


#: Thresholds added after records were first kept: a record without one
#: was made before it existed and gets its default.
LATER_THRESHOLDS = frozenset({"cd_change_exceed", "cd_min_duration_us"})


def _thresholds(m: Any) -> Thresholds:
    if not isinstance(m, dict):
        raise _Bad("cd.thresholds", "expected a mapping")
    names = {f.name for f in fields(Thresholds)}
    _keys(m, names - LATER_THRESHOLDS, "cd.thresholds.", optional=LATER_THRESHOLDS)
    try:
        return Thresholds(**m)
    except UserError as exc:
        raise _Bad(f"cd.thresholds ({exc.field})", exc.what) from None
    except TypeError as exc:
        raise _Bad("cd.thresholds", str(exc)) from None


def _keys(m: dict[str, Any], want: set[str], field: str, optional: frozenset[str] = frozenset()) -> None:
    """A mapping of the record holds exactly the keys ``write_record`` writes
    (``optional``: keys that records written before them lack)."""
    if missing := sorted(want - set(m)):
        raise _Bad(f"{field}{missing[0]}", "missing")
    if unknown := sorted(set(m) - want - optional):
        raise _Bad(f"{field}{unknown[0]}", "unknown key")


def _member(zf: zipfile.ZipFile, name: str, budget: int) -> tuple[np.ndarray, int]:
    """One ``.npy`` member, its header checked before its data is read:
    1-D float64 (``meta``: one string), at most ``budget`` bytes; and the
    budget left."""
    info = zf.getinfo(f"{name}.npy")
    if info.file_size > budget:
        raise _Bad(name, f"the members hold more than {RECORD_MAX_BYTES} bytes")
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, _, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise _Bad(name, f"unsupported .npy version {version}")
        if name == _META:
            if shape != () or dtype.kind != "U":
                raise _Bad(name, "expected one string")
        elif len(shape) != 1 or dtype != np.dtype("<f8"):
            raise _Bad(name, "expected a 1-D float64 array")
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > info.file_size:
            raise _Bad(name, "its header claims more data than the member holds")
        data = f.read(nbytes)
    if len(data) != nbytes:
        raise _Bad(name, "truncated")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy(), budget - info.file_size


def _members(zf: zipfile.ZipFile) -> dict[str, np.ndarray]:
    names = zf.namelist()
    want = [f"{k}.npy" for k in (*_ARRAYS, _META)]
    if missing := [n for n in want if n not in names]:
        raise _Bad(missing[0].removesuffix(".npy"), "missing")
    if len(names) != len(want):
        raise _Bad("(members)", f"expected exactly {', '.join(want)}")
    out, budget = {}, RECORD_MAX_BYTES
    for k in (*_ARRAYS, _META):
        out[k], budget = _member(zf, k, budget)
    return out


def _meta(m: np.ndarray) -> dict[str, Any]:
    try:
        meta = json.loads(str(m))
    except ValueError:
        raise _Bad(_META, "not JSON") from None
    if not isinstance(meta, dict):
        raise _Bad(_META, "expected a JSON object")
    if type(meta.get("format")) is not int or meta["format"] != RECORD_FORMAT:
        raise _Bad("format", f"expected {RECORD_FORMAT} (a record of another version of wotbench)")
    _keys(meta, {"format", "about", "mode", "measure", "verdict", "injected", "cd"}, "", frozenset({"seed"}))
    return meta


def _decode(zf: zipfile.ZipFile) -> TrialData:
    a = _members(zf)
    meta = _meta(a[_META])
    if a["cd_t_us"].size != a["cd_rd"].size:
        raise _Bad("cd_rd", "not as long as cd_t_us")
    if a["rs_t_us"].size != a["rs_us"].size:
        raise _Bad("rs_us", "not as long as rs_t_us")
    mode = meta.get("mode")
    if not isinstance(mode, str):
        raise _Bad("mode", "expected a string")
    measure = _pair(meta.get("measure"), "measure")
    assert measure is not None
    verdict = meta.get("verdict")
    if verdict is not None and not isinstance(verdict, str):
        raise _Bad("verdict", "expected a string or null")
    inj = meta.get("injected")
    if not isinstance(inj, list) or len(inj) != 3 or not isinstance(inj[2], bool):
        raise _Bad("injected", "expected [start_us, end_us, observed]")
    injected = (_number(inj[0], "injected"), _number(inj[1], "injected"), inj[2])
    seed = meta.get("seed")             # absent in records written before seeds were kept
    if seed is not None and (not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed <= SEED_MAX):
        raise _Bad("seed", "expected an integer >= 0 or null")
    cd = None
    if (c := meta.get("cd")) is not None:
        if not isinstance(c, dict):
            raise _Bad("cd", "expected a mapping or null")
        _keys(c, {"phases", "thresholds", "service_us"}, "cd.")
        cd = CdData(a["cd_t_us"], a["cd_rd"], _phases(c.get("phases")), _thresholds(c.get("thresholds")),
                    _number(c.get("service_us"), "cd.service_us"))
    return TrialData(cd, truth.DeviceRS(a["rs_t_us"], a["rs_us"]), measure, mode, verdict, injected, seed)


def read_record(path: Path) -> TrialData:
    """A trial's record (:func:`write_record`); a bad one is refused with a
    :class:`UserError` naming the file and the field. The file is read by
    the project's one bounded reader (:func:`wotbench.base.inputfile.read_bytes`:
    a regular file of at most ``RECORD_MAX_BYTES``, a FIFO or device refused
    without blocking); each member's header is checked before its data is
    read, and no member is read past the size the archive declares."""
    raw = inputfile.read_bytes(path, RECORD_MAX_BYTES, what="a trial record")
    try:
        try:
            zf = zipfile.ZipFile(io.BytesIO(raw))
        except zipfile.BadZipFile:
            raise _Bad("(file)", "not an .npz archive") from None
        with zf:
            return _decode(zf)
    except _Bad as exc:
        raise UserError(f"bad trial record: {exc}", file=os.fspath(path), field=exc.field) from None
    except (OSError, ValueError, EOFError, KeyError, RuntimeError, MemoryError,  # RuntimeError: an odd zip
            RecursionError, OverflowError, SyntaxError, tokenize.TokenError, zipfile.BadZipFile, zlib.error) as exc:
        raise UserError(f"unreadable trial record ({type(exc).__name__})", file=os.fspath(path)) from None
