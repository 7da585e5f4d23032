"""Validity thresholds: the one documented place for every limit a run is
judged by (the verdict itself is reporting's). Defaults below; a spec
overrides any of them under ``validity:`` (docs/spec.md), e.g.
``validity: {rate_tolerance: 2%, min_measure: 60s}``.

Each key, its default, and when the run is invalid (in parentheses: what a
key that is not itself a limit sets).

- ``min_measure`` = ``30s``: the measurement phase is shorter
- ``min_requests`` = ``1000``: fewer requests were intended in the measurement phase
- ``min_notifications`` = ``1000``: an observe-only run (no polling ``rit``) received fewer
  notifications in the measurement phase
- ``rate_tolerance`` = ``5%``: a GE's achieved send rate deviates more from its target
- ``rit_mean_tolerance`` = ``5%``: submitted mean RIT deviates more from the expected (per GE and
  per device)
- ``rit_p5_tolerance`` = ``10%``: submitted 5th-percentile RIT deviates more (beyond ``rit_slack``)
- ``rit_slack`` = ``2us``: absolute deviation always tolerated (clock granularity)
- ``rit_ks_max`` = ``0.05``: the two-sample KS distance between expected and submitted RITs is
  larger (and significant, below)
- ``rit_ks_alpha`` = ``0.01``: (the KS distance counts only when the test rejects "same
  distribution" at this level: a device with a handful of requests cannot show a deviation, yet one
  jittered RIT of two gives D = 0.5)
- ``send_lag_p99_max`` = ``1ms``: a GE's 99th-percentile send lag is larger
- ``late_send`` = ``1ms``: (a send later than this after its intended instant counts as late; the
  GE's ``--late-us``)
- ``max_late_sends`` = ``1%``: a GE's late sends are a larger share of its requests
- ``max_send_errors`` = ``0``: a GE counted more send errors
- ``max_error_rate`` = ``1%``: more requests timed out or failed (timeouts of devices under a
  configured loss or rate limit are results, not counted, as far as the impairment explains them)
- ``allow_overload`` = ``false``: (when false) a device answered 5.03 (overload) in the measurement
  phase
- ``cd_alpha`` = ``0.01``: (false-alarm probability of each contention test over the measurement
  phase: the verdict's two tests together at most 2 x this)
- ``cd_min_effect`` = ``0.1``: (smallest R_d shift over the baseline that counts as contention: 10 %
  of the CD node's S; cd-module/README.md)
- ``cd_change_exceed`` = ``3%``: (design exceedance of the change test, the CD node's R_d in the
  measurement against the warm-up's q99: the share of CD requests above it that a neighbour arriving
  during the measurement is assumed to cause; cd-module/README.md)
- ``cd_min_duration`` = ``1s``: (an alarmed episode of either contention test shorter than this, first
  to last sample, does not count, at every cd.rit: at 2 ms a blip of 5-34 samples, 10-68 ms, otherwise
  alarms, at 100 ms an episode needs 11 samples; docs/validate-cd.md)
- ``cd_window`` = ``5s``: (descriptive window of the R_d time series; grows to hold ~10 CD requests)
- ``cd_min_samples`` = ``10``: (fewer CD samples in calibration (warm-up, for the change test) or
  measurement: that test's result is unknown)
- ``cd_baseline_rd_max`` = ``1.0``: (the CD baseline is disturbed, and contention cannot be judged,
  when its q95 of R - S exceeds max(this x S, ``cd_baseline_excess``): the detector is for
  contention that doubles the CD node's response time, R_d +0.8..+1.2 in docs/validate-cd.md, which
  a baseline tau above 1 would hide)
- ``cd_baseline_excess`` = ``5ms``: (the floor of that bound in time, for a small S whose R_d the
  path dominates: a quiet CD pair answers in S plus a few hundred us, q95 R - S 0.5 ms in the
  quickstart on a 2-core host)
- ``cd_baseline_max_lost`` = ``5%``: (the CD baseline is disturbed when a larger share of the
  calibration requests got no answer: a quiet CD pair answers all)
- ``require_cd`` = ``true``: contention could not be tested (no CD data)
- ``allow_inconclusive`` = ``false``: (when false) the contention test lacked the power to decide
  (``inconclusive``)
- ``require_monitor`` = ``true``: monitor data is missing
- ``instability_cv`` = ``10%``: (warning only: spread of per-window mean response times vs their
  mean)
- ``min_device_samples`` = ``100``: (warning only: a device has fewer measured requests)
- ``max_repetition_spread`` = ``20%``: (across the repetitions of one test (``repetitions: N``):
  the spread (max - min) / median of throughput or of response time p50, p95, p99 beyond this is
  named in the sweep report; a warning unless ``repetition_spread_invalid``)
- ``repetition_spread_invalid`` = ``false``: (when true) a repetition set whose spread is beyond
  ``max_repetition_spread`` is invalid

Fractions accept ``5%`` or ``0.05``; durations need a unit (``wotbench.base.units``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, fields
from typing import Any

from wotbench.base import units
from wotbench.base.errors import UserError
from wotbench.spec import _read as read
from wotbench.spec._yaml import KeyPath, YamlSource

#: Thresholds that are shares (at most 100 %).
_FRACTIONS = ("rate_tolerance", "rit_mean_tolerance", "rit_p5_tolerance", "rit_ks_max", "max_late_sends",
              "max_error_rate", "instability_cv", "cd_baseline_max_lost", "max_repetition_spread",
              "cd_change_exceed")
#: Thresholds that are plain numbers (no percent sign).
_NUMBERS = ("cd_alpha", "cd_min_effect", "rit_ks_alpha", "cd_baseline_rd_max")


@dataclass(frozen=True)
class Thresholds:
    """Every limit the run verdict uses (see the module docstring for the table)."""

    min_measure_us: float = 30e6
    min_requests: int = 1000
    min_notifications: int = 1000
    rate_tolerance: float = 0.05
    rit_mean_tolerance: float = 0.05
    rit_p5_tolerance: float = 0.10
    rit_slack_us: float = 2.0
    rit_ks_max: float = 0.05
    rit_ks_alpha: float = 0.01
    send_lag_p99_max_us: float = 1000.0
    late_send_us: float = 1000.0
    max_late_sends: float = 0.01
    max_send_errors: int = 0
    max_error_rate: float = 0.01
    allow_overload: bool = False
    cd_alpha: float = 0.01
    cd_min_effect: float = 0.1
    cd_change_exceed: float = 0.03
    cd_min_duration_us: float = 1e6
    cd_window_us: float = 5e6
    cd_min_samples: int = 10
    cd_baseline_rd_max: float = 1.0
    cd_baseline_excess_us: float = 5_000.0
    cd_baseline_max_lost: float = 0.05
    require_cd: bool = True
    allow_inconclusive: bool = False
    require_monitor: bool = True
    instability_cv: float = 0.10
    min_device_samples: int = 100
    max_repetition_spread: float = 0.20
    repetition_spread_invalid: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            key = f"validity.{spec_key(f.name)}"
            if f.type == "bool":
                if not isinstance(v, bool):
                    raise UserError(f"expected true or false, got {units.short(v)}", field=key)
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise UserError(f"expected a non-negative number, got {units.short(v)}", field=key)
            if f.type == "int" and int(v) != v:
                raise UserError(f"expected an integer, got {units.short(v)}", field=key)
        for name in _FRACTIONS:
            if getattr(self, name) > 1:
                raise UserError(f"must be at most 100%, got {getattr(self, name)!r}",
                                field=f"validity.{spec_key(name)}")
        for name in ("cd_alpha", "rit_ks_alpha", "cd_change_exceed"):
            if not 0 < getattr(self, name) < 1:
                raise UserError(f"must be between 0 and 1 (exclusive), got {getattr(self, name)!r}",
                                field=f"validity.{name}")
        for name in ("cd_window_us", "late_send_us"):
            if getattr(self, name) <= 0:
                raise UserError("must be positive", field=f"validity.{spec_key(name)}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def spec_key(attr: str) -> str:
    """Dataclass attribute -> spec key: durations drop their ``_us`` suffix."""
    return attr[:-3] if attr.endswith("_us") else attr


def _time_us(v: Any, field: str) -> float:
    return units.parse_time_us(v, field, what="duration")


def _threshold(attr: str, typ: str, v: Any, src: YamlSource, at: KeyPath) -> Any:
    """One spec value of a threshold, read with the units of docs/spec.md."""
    if typ == "bool":
        return read.boolean(v, src, at)
    if typ == "int":
        return read.integer(v, src, at, 0)
    if attr.endswith("_us"):
        return read.value(_time_us, v, src, at)
    if attr in _NUMBERS:
        return float(read.number(v, src, at))
    return read.value(units.parse_fraction, v, src, at)


def parse_validity(v: Any, src: YamlSource, at: KeyPath = ("validity",)) -> Thresholds:
    """Thresholds from a spec's ``validity:`` mapping (absent = the defaults)."""
    attrs = {spec_key(f.name): f for f in fields(Thresholds)}
    m = read.mapping(v, src, at, attrs)
    values = {attrs[k].name: _threshold(attrs[k].name, str(attrs[k].type), raw, src, at + (k,))
              for k, raw in m.items()}
    try:
        return Thresholds(**values)
    except UserError as err:
        raise src.locate(err) from None
