"""How many GEs a run whose GE fell behind would have needed (reporting._gesneeded)."""

from __future__ import annotations

import numpy as np

from wotbench.reporting import analyze_run
from wotbench.reporting._gesneeded import behind_rate, ges_needed, peak_rps


def test_peak_is_the_busiest_sliding_window() -> None:
    quiet = np.arange(0, 1_000_000, 1000.0)                 # 1,000 req/s for 1 s
    burst = 2_050_000 + np.arange(300) * 100.0              # 300 requests in 30 ms, off the 100 ms grid
    t = np.concatenate([quiet, burst])
    assert peak_rps(t) == 3000.0                            # 300 in one 100 ms window
    assert peak_rps(quiet) == 1000.0
    assert peak_rps(np.zeros(0)) == 0.0


def test_behind_rate_counts_only_bins_wholly_behind() -> None:
    sent = np.arange(0, 1_000_000, 50.0)                     # 20,000 sends/s
    lag = np.where(sent >= 500_000, 5000.0, 10.0)            # behind in the second half only
    assert behind_rate(sent, lag, (0, 1_000_000), 1000.0) == 20_000.0
    assert behind_rate(sent, np.full(sent.size, 10.0), (0, 1_000_000), 1000.0) is None


def test_sentence_names_the_need_or_clears_the_rate() -> None:
    t = np.arange(0, 1_000_000, 10.0)                        # peak 100,000 req/s
    need = ges_needed([t], [30_000.0])
    assert need is not None and need["needed"] == 4
    assert need["sentence"] == ("would have needed 4 GEs (trace peak 100,000 req/s in 100 ms windows, "
                                "one GE kept up to 30,000 req/s)")
    ok = ges_needed([t[::2], t[1::2]], [80_000.0, None])
    assert ok is not None and ok["needed"] == 2 and "the rate was not the cause" in ok["sentence"]
    assert ges_needed([t], [None]) is None


def test_a_slow_ge_run_says_how_many_it_would_have_needed(make_run) -> None:
    # 10 devices at 200 us each: ~50,000 req/s; the GE sends at most one per 40 us (25,000/s).
    run = make_run("slow", devices=10, rit_us=200.0, ge_floor_us=40.0, measure_s=2.0, warmup_s=0.5,
                   cooldown_s=0.0, calibration_s=2.0)
    s = analyze_run(run)
    need = s["ges_needed"]
    assert need["needed"] == 3 and round(need["kept_up_rps"]) == 25_000
    reason = next(r for r in s["reasons"] if "send lag" in r)
    assert reason.endswith(need["sentence"]) and "would have needed 3 GEs" in reason


def test_a_ge_that_kept_up_has_no_need(make_run) -> None:
    s = analyze_run(make_run("fine"))
    assert s["ges_needed"] is None
    assert not any("would have needed" in r for r in s["reasons"])
