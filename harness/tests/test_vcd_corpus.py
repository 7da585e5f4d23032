"""The validate-cd trials kept in the repository (experiments/validate-cd/):
each batch's records reproduce, with today's code, the statuses, onsets
and distortions it measured from its run folders, and each scale's
combined folder, which docs/validate-cd.md quotes, is what its batches
combine into. A change
of the detector or of the truth that moves a kept result fails here, with
the command that refreshes them (experiments/validate-cd/README.md)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from wotbench.studies import validate_cd as vcd

pytestmark = pytest.mark.slow    # reanalyses ~60 trials (about 40 s)

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "experiments" / "validate-cd"
#: What must reproduce per trial.
KEEP = ("cls", "mode", "status", "onset_us", "window_us", "verdict", "injected_start_us", "injected_end_us",
        "set", "distortion", "device_scan", "change")
REFRESH = "experiments/validate-cd/README.md says how to refresh the kept results"


def _scale(folder: Path) -> str:
    return str(json.loads((folder / "validation.json").read_text())["scale"])


def _groups() -> dict[str, tuple[list[Path], Path]]:
    """Per scale: its batches (``batch-*``, in name order) and its ``combined-<scale>``."""
    batches = sorted(p for p in CORPUS.glob("batch-*") if (p / "validation.json").is_file())
    assert batches, f"no kept batches under {CORPUS}"
    groups: dict[str, tuple[list[Path], Path]] = {}
    for b in batches:
        groups.setdefault(_scale(b), ([], CORPUS / f"combined-{_scale(b)}"))[0].append(b)
    for scale, (_, combined) in groups.items():
        assert (combined / "validation.json").is_file() and _scale(combined) == scale, combined
    assert sorted(p.name for p in CORPUS.glob("combined-*")) == sorted(f"combined-{s}" for s in groups)
    return groups


def _plain(obj: object) -> object:
    """``obj`` through JSON, NaN as the text "NaN" (so that it equals itself)."""
    return json.loads(json.dumps(obj), parse_constant=str)


def _rows(doc: dict[str, Any]) -> object:
    """The trials' fields that must reproduce."""
    return _plain([{k: t.get(k) for k in KEEP} for t in doc["trials"]])


def _approx(obj: object) -> object:
    """``obj`` with every float a tight pytest.approx (a record's floats go through JSON)."""
    return json.loads(json.dumps(obj), parse_constant=str,
                      parse_float=lambda s: pytest.approx(float(s), rel=1e-9, abs=1e-9))


def test_every_kept_batch_reproduces_from_its_records_alone(tmp_path):
    for b in (b for batches, _ in _groups().values() for b in batches):
        kept = json.loads((b / "validation.json").read_text())
        assert kept["complete"] and all(t.get("record") for t in kept["trials"] if t["status"] != "failed"), b
        copy = tmp_path / b.name
        shutil.copytree(b, copy)          # reanalysing in place writes; the kept folder stays as it is
        assert not (copy / "trials").exists()
        vcd.reanalyze(copy)
        again = json.loads((copy / "validation.json").read_text())
        assert _rows(again) == _approx(_rows(kept)), f"{b.name}: {REFRESH}"


def test_each_combined_folder_is_what_its_kept_batches_combine_into(tmp_path):
    for scale, (batches, combined) in _groups().items():
        kept = json.loads((combined / "validation.json").read_text())
        assert kept["combined_from"] == [f"../{b.name}" for b in batches], scale
        work = tmp_path / scale
        for b in batches:
            shutil.copytree(b, work / b.name)
        out = vcd.reanalyze([work / b.name for b in batches], work)
        again = json.loads((out / "validation.json").read_text())
        assert _rows(again) == _approx(_rows(kept)), f"{combined.name}: {REFRESH}"
        assert again["selection"]["chosen"] == kept["selection"]["chosen"], f"{combined.name}: {REFRESH}"
        assert _plain(again["agreement"]) == _approx(kept["agreement"]), f"{combined.name}: {REFRESH}"
        assert _plain(again["device_scan"]) == _approx(kept["device_scan"]), f"{combined.name}: {REFRESH}"
        assert _plain(again["change"]) == _approx(kept["change"]), f"{combined.name}: {REFRESH}"
