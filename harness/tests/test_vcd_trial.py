"""validate-cd's trial records (harness/studies/vcd_trial.py): a record holds
what the analysis reads of a trial's run folder, so a batch reanalysed from
its records alone gives the same validation as from its run folders, and a
bad record is refused in one line naming the file and the field."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wotbench.base.errors import UserError
from wotbench.studies import validate_cd as vcd
from wotbench.studies import vcd_trial

from .test_validate_cd import _batches, _fake_trial


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    _fake_trial(root, "hog", 12.0)
    _fake_trial(root, "q", None)
    return root


def _same(a: vcd_trial.TrialData, b: vcd_trial.TrialData) -> None:
    assert a.cd is not None and b.cd is not None
    for x, y in ((a.cd.t_us, b.cd.t_us), (a.cd.rd, b.cd.rd), (a.rs.t_us, b.rs.t_us), (a.rs.rs_us, b.rs.rs_us)):
        assert x.size > 0 and np.array_equal(x, y, equal_nan=True)
    assert (a.cd.phases, a.cd.th, a.cd.service_us) == (b.cd.phases, b.cd.th, b.cd.service_us)
    assert (a.measure, a.mode, a.verdict, a.injected, a.seed) == (b.measure, b.mode, b.verdict, b.injected, b.seed)


def test_a_record_reads_back_what_the_run_folder_gives(tmp_path, runs):
    for name in ("hog", "q"):
        data = vcd_trial.trial_data(runs / name)
        vcd_trial.write_record(tmp_path / f"{name}.npz", data, {"cls": name})
        _same(data, vcd_trial.read_record(tmp_path / f"{name}.npz"))
    hog = vcd_trial.read_record(tmp_path / "hog.npz")
    assert hog.verdict == "valid" and hog.injected == (12e6, 32e6, True) and hog.mode == "busy"
    assert vcd_trial.read_record(tmp_path / "q.npz").injected == (None, None, False)
    assert hog.seed == 1                    # the trace's workload.seed (the spec's)
    assert (tmp_path / "hog.npz").stat().st_size < 100_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hog.npz", "q.npz"]     # nothing half-written beside


def test_batches_reanalysed_from_their_records_alone_give_the_same_validation(tmp_path, capsys, runs):
    from wotbench.commands.main import main

    (tmp_path / "x").mkdir()
    a, b = _batches(tmp_path / "x", runs, ("q", "q"))
    # In place: a folder without records gets them.
    for f in (a, b):
        vcd.reanalyze(f)
    v_a = json.loads((a / "validation.json").read_text())
    assert [t["record"] for t in v_a["trials"]] == ["records/0001-hog.npz", "records/0002-q.npz"]
    assert main(["validate-cd", "--reanalyze", str(a), str(b), "--results", str(tmp_path / "c1")]) == 0
    full = Path(capsys.readouterr().out.strip().splitlines()[-1])
    # The same folders exported without their runs: records only.
    for f in (a, b):
        shutil.copytree(f, tmp_path / "export" / f.name)
    moved = tmp_path / "moved"                 # the runs parked in this test's own folder meanwhile
    shutil.move(runs, moved)
    try:
        exported = [tmp_path / "export" / f.name for f in (a, b)]
        assert main(["validate-cd", "--reanalyze", *map(str, exported), "--results", str(tmp_path / "c2")]) == 0
        thin = Path(capsys.readouterr().out.strip().splitlines()[-1])
        # Without its run and its record a trial counts as failed, as before.
        (tmp_path / "export" / "b" / "records" / "0002-q.npz").unlink()
        doc = json.loads((tmp_path / "export" / "b" / "validation.json").read_text())
        doc["trials"][1].pop("record")
        (tmp_path / "export" / "b" / "validation.json").write_text(json.dumps(doc))
        vcd.reanalyze(tmp_path / "export" / "b")
        v = json.loads((tmp_path / "export" / "b" / "validation.json").read_text())
        assert [t["status"] for t in v["trials"]] == ["contention", "failed"]
    finally:
        shutil.move(moved, runs)
    v1, v2 = (json.loads((d / "validation.json").read_text()) for d in (full, thin))
    keep = ("status", "onset_us", "distortion", "set", "verdict", "injected_start_us", "mode")
    assert [{k: t[k] for k in keep} for t in v1["trials"]] == [{k: t[k] for k in keep} for t in v2["trials"]]
    assert [t["status"] for t in v2["trials"]] == ["contention", "none", "contention", "none"]
    assert v1["selection"]["chosen"] == v2["selection"]["chosen"] and v1["agreement"] == v2["agreement"]


def _npz(path: Path, **members: Any) -> Path:
    buf = io.BytesIO()
    np.savez_compressed(buf, **members)
    path.write_bytes(buf.getvalue())
    return path


def _members(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory, runs: Path) -> Path:
    p = tmp_path_factory.mktemp("rec") / "good.npz"
    vcd_trial.write_record(p, vcd_trial.trial_data(runs / "hog"), {"cls": "cpu2-20s"})
    return p


def _meta_edit(edit):
    def apply(m: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        meta = json.loads(str(m["meta"]))
        edit(meta)
        return {**m, "meta": np.array(json.dumps(meta))}
    return apply


@pytest.mark.parametrize("change, field", [
    (lambda m: {k: v for k, v in m.items() if k != "rs_us"}, "rs_us"),
    (lambda m: {**m, "cd_rd": m["cd_rd"].astype(np.float32)}, "cd_rd"),
    (lambda m: {**m, "cd_rd": m["cd_rd"][:-1]}, "cd_rd"),
    (lambda m: {**m, "meta": np.array(b"{}")}, "meta"),
    (lambda m: {**m, "meta": np.array("not json")}, "meta"),
    (_meta_edit(lambda d: d.update(format=99)), "format"),
    (_meta_edit(lambda d: d.update(measure=[0, "x"])), "measure"),
    (_meta_edit(lambda d: d.update(injected=[1.0, 2.0])), "injected"),
    (_meta_edit(lambda d: d["cd"]["phases"].update(warmup=[0, float("nan")])), "cd.phases.warmup"),
    (_meta_edit(lambda d: d["cd"]["thresholds"].update(cd_alpha=-1)), "cd.thresholds"),
    (_meta_edit(lambda d: d["cd"]["thresholds"].update(nope=1)), "cd.thresholds.nope"),
    (_meta_edit(lambda d: d["cd"]["thresholds"].clear()), "cd.thresholds."),
    (_meta_edit(lambda d: d["cd"].pop("service_us")), "cd.service_us"),
    (_meta_edit(lambda d: d.pop("verdict")), "verdict"),
    (_meta_edit(lambda d: d.update(format=True)), "format"),
    (_meta_edit(lambda d: d.update(extra=1)), "extra"),
    (_meta_edit(lambda d: d.update(seed="1")), "seed"),
    (_meta_edit(lambda d: d.update(seed=True)), "seed"),
    (_meta_edit(lambda d: d.update(seed=-1)), "seed"),
    (_meta_edit(lambda d: d.update(seed=2**63)), "seed"),
    (lambda m: {**m, "rs_t_us": m["rs_t_us"].reshape(-1, 1)}, "rs_t_us"),
    (lambda m: {**m, "bare": np.zeros(1)}, "(members)"),
])
def test_a_bad_record_is_refused_naming_file_and_field(tmp_path, good, change, field):
    bad = _npz(tmp_path / "bad.npz", **change(_members(good)))
    with pytest.raises(UserError) as exc:
        vcd_trial.read_record(bad)
    assert exc.value.file == str(bad) and exc.value.field is not None and exc.value.field.startswith(field)
    assert "\n" not in str(exc.value)


def test_a_record_that_is_not_one_or_too_big_is_refused(tmp_path, good, monkeypatch):
    (tmp_path / "text.npz").write_text("device_id,secret\n")
    zipfile.ZipFile(tmp_path / "empty.npz", "w").close()
    _npz(tmp_path / "one.npz", x=np.zeros(3))
    for name, field in (("text.npz", "(file)"), ("empty.npz", "cd_t_us"), ("one.npz", "cd_t_us"),
                        ("missing.npz", None)):
        with pytest.raises(UserError) as exc:
            vcd_trial.read_record(tmp_path / name)
        assert exc.value.field == field and "secret" not in str(exc.value), (name, str(exc.value))
    np.save(tmp_path / "array.npy", np.zeros(3))
    with pytest.raises(UserError, match="not an .npz archive"):
        vcd_trial.read_record(tmp_path / "array.npy")
    os.mkfifo(tmp_path / "fifo.npz")          # refused without blocking on a writer
    with pytest.raises(UserError, match="not a regular file"):
        vcd_trial.read_record(tmp_path / "fifo.npz")
    monkeypatch.setattr(vcd_trial, "RECORD_MAX_BYTES", 1000)
    with pytest.raises(UserError, match="larger than the 1000 bytes"):
        vcd_trial.read_record(good)


def _rezip(src: Path, dst: Path, edit) -> Path:
    """``src``'s members, ``edit(name, data) -> [(name, data), ...]`` each, stored to ``dst``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            for name, data in edit(info.filename, zin.read(info)):
                zout.writestr(name, data)
    return dst


def _npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_a_hostile_record_is_refused_in_bounded_memory(tmp_path, good):
    """Headers that claim more than the member holds, members under two
    names, a corrupt stream, deep or huge JSON: each one line, none read
    into memory beyond the archive's declared sizes."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": (10 ** 12,)})
    huge = head.getvalue() + bytes(24)        # a 1e12-element header over 24 bytes of data
    deep = np.array("[" * 100_000 + "]" * 100_000)
    big_int = json.loads(str(_members(good)["meta"]))
    big_int["measure"] = [0, 10 ** 400]
    cases = {
        "huge-header": (lambda n, d: [(n, huge if n == "cd_rd.npy" else d)], "cd_rd"),
        "bad-header": (lambda n, d: [(n, d.replace(b"'shape'", b"'shape\\'", 1) if n == "rs_us.npy" else d)], None),
        "bare-twin": (lambda n, d: [(n, d), (n.removesuffix(".npy"), b"x" * 10)], "(members)"),
        "duplicate": (lambda n, d: [(n, d), (n, d)] if n == "meta.npy" else [(n, d)], "(members)"),
        "deep-json": (lambda n, d: [(n, _npy(deep) if n == "meta.npy" else d)], None),
        "huge-int": (lambda n, d: [(n, _npy(np.array(json.dumps(big_int))) if n == "meta.npy" else d)], None),
    }
    for name, (edit, field) in cases.items():
        with pytest.warns(UserWarning) if name == "duplicate" else contextlib.nullcontext():
            bad = _rezip(good, tmp_path / f"{name}.npz", edit)
        with pytest.raises(UserError) as exc:
            vcd_trial.read_record(bad)
        assert exc.value.field == field and "\n" not in str(exc.value), (name, str(exc.value))
    # A corrupt deflate stream: flip bytes in the middle of the archive's data.
    raw = bytearray(good.read_bytes())
    raw[200:260] = bytes(60)
    (tmp_path / "corrupt.npz").write_bytes(bytes(raw))
    with pytest.raises(UserError, match="unreadable trial record|bad trial record"):
        vcd_trial.read_record(tmp_path / "corrupt.npz")


def test_a_run_folder_that_can_no_longer_be_read_falls_back_to_its_record(tmp_path, capsys, runs):
    (tmp_path / "x").mkdir()
    a, _ = _batches(tmp_path / "x", runs, ("q", "q"))
    vcd.reanalyze(a)                                   # records written from the runs
    before = [t["status"] for t in json.loads((a / "validation.json").read_text())["trials"]]
    damaged = tmp_path / "damaged"
    shutil.copytree(runs, damaged)
    (damaged / "hog" / "spec.yaml").write_text("devices: [unclosed\n")
    doc = json.loads((a / "validation.json").read_text())
    for t in doc["trials"]:
        t["run_dir"] = os.path.relpath(damaged / Path(t["run_dir"]).name, a)
    (a / "validation.json").write_text(json.dumps(doc))
    with pytest.raises(UserError):                     # the damaged run alone is refused, as before
        vcd_trial.trial_data(damaged / "hog")
    vcd.reanalyze(a)
    assert [t["status"] for t in json.loads((a / "validation.json").read_text())["trials"]] == before


def test_a_record_written_before_seeds_were_kept_reads_with_no_seed(tmp_path, good):
    old = _npz(tmp_path / "old.npz", **_meta_edit(lambda d: d.pop("seed"))(_members(good)))
    data = vcd_trial.read_record(old)
    assert data.seed is None and data.cd is not None and vcd_trial.read_record(good).seed == 1
