"""The measurement phase is not silent: while the harness waits for the GEs
a progress bar names the current span and the time left (on a terminal),
or one line per span change goes to the log; either stops with the wait."""

from __future__ import annotations

import io
import re
import time

import pytest

from wotbench.execution.phases._measure import ticker, timeline

WINDOWS = {"warmup": [0, 1_000_000], "measure": [1_000_000, 61_000_000], "cooldown": [61_000_000, 62_000_000]}


def test_timeline_names_every_span_and_skips_empty_ones() -> None:
    spans = timeline(10_000_000, {**WINDOWS, "cooldown": [62_000_000, 62_000_000]}, 1.0)
    assert [s[0] for s in spans] == ["CD calibration", "warm-up", "measure", "drain"]
    assert spans[0][1:] == (-10_000_000, 0) and spans[-1][1:] == (62_000_000, 63_000_000)


def test_the_bar_shows_the_span_and_time_left_and_stops_with_the_wait() -> None:
    out, said = io.StringIO(), list[str]()
    t0 = time.time_ns() // 1000 - 2_000_000                  # 2 s in: the measure span
    with ticker(timeline(1_000_000, WINDOWS, 1.0), t0, True, out, said.append) as th:
        time.sleep(1.2)                                      # the wait for the GEs: two ticks
    assert not th.is_alive()
    text = out.getvalue()
    assert "measure:" in text
    assert re.search(r"\d+/64 s \[\d\d:\d\d<(\d\d:\d\d|\?)\]", text), text
    assert said == []


def test_without_a_terminal_one_line_per_span_and_stopped_on_an_error() -> None:
    out, said = io.StringIO(), list[str]()
    t0 = time.time_ns() // 1000 + 5_000_000                  # the GEs start in 5 s
    with pytest.raises(KeyboardInterrupt), ticker(timeline(0, WINDOWS, 1.0), t0, False, out, said.append) as th:
        raise KeyboardInterrupt
    assert not th.is_alive()
    assert said == ["phase: starting the GEs"] and out.getvalue() == ""
    clock = iter(range(0, 70_000_000, 500_000))              # a clock 0.5 s on per tick, from t0
    with ticker(timeline(0, WINDOWS, 1.0), 0, False, out, said.append, clock_us=lambda: next(clock)) as th:
        th.join(0.01)
    assert said[1] == "phase: warm-up (1 s)"
