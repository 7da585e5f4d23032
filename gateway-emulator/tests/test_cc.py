"""cc.c, the congestion-control strategies, against the test vectors of
the design (README.md, "Congestion control"; V1..V9), through the replay
driver tests/cc_vectors.c (release and ASan/UBSan builds).

Expected values, and where each comes from:
- rfc7252, cocoa, cocoa-strong: the draft's numbers computed exactly
  (Fraction arithmetic, the design's draft.py); every one is a dyadic
  rational that is exact as a double in ns, so they are compared EXACTLY
  (Fraction(float(printed %.17g)) == the exact value).
- basic-rto, linux-rto, peakhopper-rto: Californium 3.14.0's own output
  (its RemoteEndpoint objects fed the same samples, the design's
  cf-vectors.txt), whole ms, compared exactly. Where the GE deviates from
  Californium a comment says so and the GE's documented choice is asserted.

Each vector is a function that takes the driver binary, so that
test_a_wrong_constant_breaks_a_vector can run all of them against a
driver built from a mutated cc.c and see at least one fail."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from gehelpers import ROOT, SAN_ENV, make

VEC = ROOT / "build" / "test" / "ge-cc-vectors"
VEC_ASAN = ROOT / "build" / "asan" / "ge-cc-vectors"
GE_DIR = ROOT / "gateway-emulator"
DRAFT = ("cocoa", "cocoa-strong")
CALIFORNIUM = ("basic-rto", "linux-rto", "peakhopper-rto")
ALL = ("rfc7252", *DRAFT, *CALIFORNIUM)


def ns(ms: str | int | Fraction) -> int:
    """A time in ms (a decimal string is exact) as integer ns."""
    v = Fraction(ms) * 10**6
    assert v.denominator == 1, ms
    return int(v)


def exact_ms(text: str) -> Fraction:
    """A printed double (ns) as an exact Fraction of ms."""
    return Fraction(float(text)) / 10**6


class Driver:
    """One cc_vectors process, fed one event at a time."""

    def __init__(self, binary: Path, strategy: str, now_ms: str | int = 0, *extra: str):
        env = SAN_ENV if binary.parent.name == "asan" else None
        self.p = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env)
        self.first = 0
        self.ev("init", strategy, ns(now_ms), *extra)

    def ev(self, *words: object) -> dict[str, str]:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.write(" ".join(map(str, words)) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline().split()
        assert line, f"driver said nothing to {words}: {self.close()}"
        return dict(zip(line[::2], line[1::2], strict=False))

    def exchange(self, t_ms: str | int, u: float = 0.0, inflight: int = 0) -> dict[str, str]:
        self.first = ns(t_ms)
        return self.ev("exchange", ns(t_ms), repr(u), inflight)

    def timers(self, t_ms: str | int, u: float = 0.0, n: int = 4) -> list[Fraction]:
        """T0..Tn of an exchange that is never answered."""
        out = [exact_ms(self.exchange(t_ms, u)["timer"])]
        out += [exact_ms(self.ev("retransmit")["timer"]) for _ in range(n)]
        return out

    def ack(self, t_ms: str | int | Fraction) -> dict[str, str]:
        return self.ev("ack", ns(t_ms))

    def state(self) -> list[str]:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.write("state\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def close(self) -> str:
        out, err = self.p.communicate(timeout=10)
        return err

    def __enter__(self) -> Driver:
        return self

    def __exit__(self, *exc: object) -> None:
        err = self.close()
        assert self.p.returncode == 0 and "runtime error" not in err, err


def F(*vals: str | int) -> list[Fraction]:
    return [Fraction(v) for v in vals]


# ---- the vectors; each asserts, for every strategy ----

def v1_to_v4(binary: Path, s: str) -> None:
    """V1 clean (S100, S120, S80), V2 weak (T0 lost, ACK 100 ms after the
    retransmission), V3 aging (idle until 45 s, S100), V4 give-up."""
    t0s = {"rfc7252": F(2000, 2000, 2000, 2000, 2000),
           "cocoa": F(2000, 1150, "711.25", "480.46875", "1156.0546875"),
           "cocoa-strong": F(2000, 1150, "711.25", "480.46875", "1921.875"),
           # Californium: T0 = clamp(getRTO(), 500, 60000), no dithering
           "basic-rto": F(2000, 500, 500, 500, 900),
           "linux-rto": F(2000, 500, 500, 500, 500),
           "peakhopper-rto": F(2000, 500, 500, 500, 500)}[s]
    rtos = {"rfc7252": F(2000, 2000, 2000, 2000, 2000),
            "cocoa": F(1150, "711.25", "480.46875", "578.02734375", "684.296875"),
            "cocoa-strong": F(1150, "711.25", "480.46875", "480.46875", "1067.20703125"),
            "basic-rto": F(150, 180, 120, 900, 150),
            "linux-rto": F(300, 303, 300, 300, 300),
            "peakhopper-rto": F(175, 240, 234, 234, 224)}[s]
    v4 = {"rfc7252": F(2000, 4000, 8000, 16000, 32000),
          "cocoa": F("684.296875", "2052.890625", "6158.671875", "18476.015625", 32000),
          "cocoa-strong": F("1067.20703125", "2134.4140625", "4268.828125", "8537.65625",
                            "17075.3125")}.get(s, F(500, 1000, 2000, 4000, 8000))
    with Driver(binary, s) as d:
        for i, (t, r) in enumerate(((0, 100), (1000, 120), (2000, 80))):
            assert exact_ms(d.exchange(t)["timer"]) == t0s[i], (s, "V1", i)
            got = d.ack(t + r)
            assert got["kind"] == "strong"
            assert exact_ms(got["rto"]) == rtos[i], (s, "V1", i)
        # V2: the first transmission is lost, the retransmission (T0 later)
        # is answered 100 ms after it: r = 1, a weak sample of T0 + 100.
        assert exact_ms(d.exchange(3000)["timer"]) == t0s[3], (s, "V2 T0")
        d.ev("retransmit")
        got = d.ack(3000 + t0s[3] + 100)
        assert got["kind"] == "weak" and exact_ms(got["rtt"]) == t0s[3] + 100
        assert exact_ms(got["rto"]) == rtos[3], (s, "V2")
        # weak samples: used by cocoa and basic-rto only
        assert got["used"] == ("1" if s in ("cocoa", "basic-rto") else "0"), s
        x = d.exchange(45000)
        assert exact_ms(x["timer"]) == t0s[4], (s, "V3 T0")
        assert x["aged"] == {"cocoa": "1", "cocoa-strong": "2"}.get(s, "0"), s
        assert exact_ms(d.ack(45100)["rto"]) == rtos[4], (s, "V3")
        v3_state(d, s)
        timers = d.timers(46000)
        assert timers == v4, (s, "V4", timers)
        if s == "cocoa":  # the give-up instant of the design's V4
            assert 46000 + sum(timers) == Fraction("105371.875")


def v3_state(d: Driver, s: str) -> None:
    """The estimators' state after V3, where the design lists it."""
    st = d.state()
    if s == "cocoa":  # S srtt / rttvar / E_s, W srtt / rttvar / E_w, last
        assert [exact_ms(v) for v in st[1:4]] == F("99.7265625", "28.203125", "212.5390625")
        assert [exact_ms(v) for v in st[5:8]] == F("580.46875", "290.234375", "870.703125")
        assert exact_ms(st[9]) == 45100
    elif s == "cocoa-strong":
        assert [exact_ms(v) for v in st[1:4]] == F("99.7265625", "28.203125", "212.5390625")
        assert st[4:8] == ["w", "0", "0", "2000000000"]  # weak estimator never fed
    elif s == "linux-rto":
        assert st == ["srtt", "100", "rttvar", "50", "mdev", "28"]
    elif s == "peakhopper-rto":
        assert np.float32(float(st[1])) == np.float32("0.91840273")  # Californium's float32
        assert st[2:] == ["hist", "80", "100", "prev", "100"]


def v5(binary: Path, s: str) -> None:
    """V5 large: fresh, S1800, then an exchange at 10 s (V5a) or 20 s (V5b),
    all of it lost."""
    rto = {"rfc7252": 2000, "cocoa": 3700, "cocoa-strong": 3700, "basic-rto": 2700,
           "linux-rto": 5400, "peakhopper-rto": 3150}[s]
    draft_a = F(3700, 5550, 8325, "12487.5", "18731.25")  # VBF 1.5 (B > 3 s)
    draft_b = F(2850, 5700, 11400, 22800, 32000)  # aged to 1 s + 3700/2, VBF 2
    cf = {"basic-rto": F(2700, 5400, 10800, 21600, 43200),
          "linux-rto": F(5400, 10800, 21600, 43200, 60000),  # Californium's 60 s cap
          "peakhopper-rto": F(3150, 6300, 12600, 25200, 50400),
          "rfc7252": F(2000, 4000, 8000, 16000, 32000)}
    for when, expect in ((10000, draft_a), (20000, draft_b)):
        with Driver(binary, s) as d:
            d.exchange(0)
            assert exact_ms(d.ack(1800)["rto"]) == rto, (s, "V5")
            timers = d.timers(when)
            assert timers == (expect if s in DRAFT else cf[s]), (s, when, timers)
            if s in DRAFT:
                assert sum(timers) == {10000: Fraction("48793.75"), 20000: 74750}[when]


def v6(binary: Path, s: str) -> None:
    """V6 fresh loss, with u = 0 and u = 0.5 (f = 1.25)."""
    with Driver(binary, s) as d:
        assert d.timers(0) == F(2000, 4000, 8000, 16000, 32000), s
    with Driver(binary, s) as d:
        timers = d.timers(0, u=0.5)
    expect = {"rfc7252": F(2500, 5000, 10000, 20000, 40000),  # 77.5 s in all
              # VBF from the undithered B = 2 s (D5), backoff truncated at 32 s
              "cocoa": F(2500, 5000, 10000, 20000, 32000),
              "cocoa-strong": F(2500, 5000, 10000, 20000, 32000)}
    # The Californium family does not dither (its base layer's setDithering(false)).
    assert timers == expect.get(s, F(2000, 4000, 8000, 16000, 32000)), (s, timers)
    if s == "rfc7252":  # f = 1 + 0.5 u -> 1.5: the give-up -> 93 s (MAX_TRANSMIT_WAIT)
        with Driver(binary, s) as d:
            assert sum(d.timers(0, u=0.75)) == 62000 * Fraction("1.375")


def v7(binary: Path, s: str) -> None:
    """V7 weak classes, fresh state: r = 1 R = 3500, r = 2 R = 6300, r = 3."""
    for r, rtt, kind in ((1, 3500, "weak"), (2, 6300, "weak"), (3, 6300, "none")):
        with Driver(binary, s) as d:
            d.exchange(0)
            for _ in range(r):
                d.ev("retransmit")
            got = d.ack(rtt)
            assert got["kind"] == kind
            expect = {"cocoa": {1: Fraction("2812.5"), 2: Fraction("3862.5")},
                      # basic-rto takes weak samples: R + R/2 (BasicRto source; the
                      # design lists no fresh V7 for it, this is its formula)
                      "basic-rto": {1: Fraction(5250), 2: Fraction(9450)}}.get(s, {})
            assert exact_ms(got["rto"]) == expect.get(r, 2000), (s, r)
            assert got["used"] == ("1" if r in expect else "0"), (s, r)
            if s == "cocoa" and r == 1:
                st = d.state()
                assert [exact_ms(v) for v in st[5:8]] == F(3500, 1750, 5250)
            if s in DRAFT and r == 3:
                assert d.state()[-3:] == ["0", "sampled", "0"]  # last unchanged


def v8(binary: Path, s: str) -> None:
    """V8 spike (the Californium family; the design gives no draft values for
    it): V1..V3 without V4, then W3000 (r = 1), S400, S100."""
    if s not in (*CALIFORNIUM, "rfc7252"):
        return
    expect = {"basic-rto": ([4500, 600, 150], [4500, 600]),
              "linux-rto": ([300, 486, 469], [500, 500]),
              "peakhopper-rto": ([224, 752, 800], [500, 752]),
              "rfc7252": ([2000, 2000, 2000], [2000, 2000])}[s]
    with Driver(binary, s) as d:
        for t, r in ((0, 100), (1000, 120), (2000, 80)):
            d.exchange(t)
            d.ack(t + r)
        d.exchange(3000)
        d.ev("retransmit")
        d.ack(3000 + (2000 if s == "rfc7252" else 500) + 100)
        d.exchange(45000)
        d.ack(45100)
        d.exchange(50000)
        d.ev("retransmit")
        assert exact_ms(d.ack(53000)["rto"]) == expect[0][0], s  # W3000
        for i, (t, r) in enumerate(((60000, 400), (70000, 100))):
            assert exact_ms(d.exchange(t)["timer"]) == expect[1][i], (s, "V8 T0", i)
            assert exact_ms(d.ack(t + r)["rto"]) == expect[0][i + 1], (s, "V8", i)
            st = d.state()
            if s == "linux-rto":
                assert st == ["srtt", *[["138", "rttvar", "87", "mdev", "87"],
                                        ["133", "rttvar", "84", "mdev", "73"]][i]]
            if s == "peakhopper-rto":
                b = ("0.88013595", "1.0")[i]  # the second: delta = 3 (integer division)
                assert np.float32(float(st[1])) == np.float32(b)
                assert st[2:] == ["hist", "400", "100", "prev", str(r)]


def v9(binary: Path, s: str) -> None:
    """V9 blind (NSTART 3): three exchanges at 0, 10, 20 ms, none answered."""
    # cocoa: the draft's 2 s x n, n including the new exchange (D4);
    # linux/peakhopper: Californium's rto x in-flight count without the new
    # one, when > 1; basic-rto and rfc7252: no blind factor.
    expect = {"cocoa": F(2000, 4000, 6000), "cocoa-strong": F(2000, 4000, 6000),
              "linux-rto": F(2000, 2000, 4000),
              "peakhopper-rto": F(2000, 2000, 4000)}.get(s, F(2000, 2000, 2000))
    with Driver(binary, s) as d:
        got = [exact_ms(d.exchange(t, 0.0, n)["timer"]) for n, t in enumerate((0, 10, 20))]
    assert got == expect, (s, got)
    if s in DRAFT:  # the GE's choice: the blind B is capped at 32 s too (D6)
        with Driver(binary, s) as d:
            x = d.exchange(0, 0.0, 20)
            assert (exact_ms(x["base"]), x["vbf"]) == (Fraction(32000), "1.5")
            assert exact_ms(d.ev("retransmit")["timer"]) == 32000


def v10_g_binds(binary: Path, s: str) -> None:
    """Not in the design: four strong samples of 100 ms, so that 4 RTTVAR
    falls below G = 100 ms (E_s = 200 at the fourth), the only vector where
    G binds (hand-computed: rttvar 50, 37.5, 28.125, 21.09375)."""
    if s not in DRAFT:
        return
    with Driver(binary, s) as d:
        rtos = []
        for t in (0, 1000, 2000, 3000):
            d.exchange(t)
            rtos.append(exact_ms(d.ack(t + 100)["rto"]))
        assert rtos == F(1150, 700, "456.25", "328.125"), rtos
        assert exact_ms(d.state()[3]) == 200


def v11_high_band(binary: Path, s: str) -> None:
    """Not in the design: an RTO between 3 and 3.5 s, hand-computed, so that
    the 3 s threshold (VBF 1.5, aging to 1 s + RTO/2) is pinned, and the
    aging interval's strict ">" at exactly 4 RTO. S1600: E_s = 1600 + 4 x 800,
    rto = 0.5 x 4800 + 0.5 x 2000 = 3400, last = 1600; 4 rto = 13600."""
    if s not in DRAFT:
        return
    for when, aged, expect in ((5000, "0", F(3400, 5100, 7650, 11475, "17212.5")),
                               (15200, "0", F(3400, 5100, 7650, 11475, "17212.5")),
                               (15201, "1", F(2700, 5400, 10800, 21600, 32000))):
        with Driver(binary, s) as d:
            d.exchange(0)
            assert exact_ms(d.ack(1600)["rto"]) == 3400
            assert d.exchange(when)["aged"] == aged, (s, when)
            assert d.timers(when) == expect, (s, when)


VECTORS: list[Callable[[Path, str], None]] = [v1_to_v4, v5, v6, v7, v8, v9, v10_g_binds,
                                              v11_high_band]


@pytest.fixture(scope="module")
def vec_bin() -> Path:
    make([VEC])
    return VEC


@pytest.fixture(scope="module")
def vec_asan_bin() -> Path:
    make([VEC_ASAN])
    return VEC_ASAN


@pytest.mark.parametrize("strategy", ALL)
@pytest.mark.parametrize("vector", VECTORS, ids=lambda f: f.__name__)
def test_vector(vector, strategy, vec_bin):
    vector(vec_bin, strategy)


@pytest.mark.parametrize("strategy", ALL)
def test_vectors_under_asan(strategy, vec_asan_bin):
    for vector in VECTORS:
        vector(vec_asan_bin, strategy)


def test_bad_input_is_refused(vec_bin):
    for script in ("exchange 0 0\n", "init nosuch 0\n", "init cocoa 0\nexchange 0 1.5\n",
                   "init cocoa 0\nack 5\n", "init cocoa 0\nsample maybe 1 1\n"):
        p = subprocess.run([str(vec_bin)], input=script, capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.startswith("error: "), (script, p.stderr)


def build_driver(tmp_path: Path, cc_src: str) -> Path:
    """The driver linked with a given cc.c text (the real header)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "no C compiler"
    (tmp_path / "cc.c").write_text(cc_src)
    shutil.copy(GE_DIR / "cc.h", tmp_path / "cc.h")
    out = tmp_path / "drv"
    subprocess.run([cc, "-std=c11", "-D_GNU_SOURCE", "-O2", "-I", str(tmp_path), "-o", str(out),
                    str(GE_DIR / "tests" / "cc_vectors.c"), str(tmp_path / "cc.c"), "-lm"],
                   check=True)
    return out


MUTATIONS = [
    ("#define CO_G (100 * MS)", "#define CO_G (50 * MS)"),
    ("#define CO_ALPHA 0.125", "#define CO_ALPHA 0.25"),  # Californium's swapped gains (D2)
    ("#define CO_BETA 0.25", "#define CO_BETA 0.125"),
    ("#define CO_K_WEAK 1.0", "#define CO_K_WEAK 4.0"),
    ("#define CO_W_WEAK 0.25", "#define CO_W_WEAK 0.5"),
    ("#define CO_HIGH (3000 * MS)", "#define CO_HIGH (3500 * MS)"),
    ("#define CO_CAP (32000 * MS)", "#define CO_CAP (60000 * MS)"),
    ("#define CO_LOW (1000 * MS)", "#define CO_LOW (1200 * MS)"),
    ("now - co->last > 4 * co->rto", "now - co->last >= 4 * co->rto"),
    ("#define CF_MIN_RTO 500", "#define CF_MIN_RTO 400"),
    ("#define CF_MAX_RTO 60000", "#define CF_MAX_RTO 64000"),
    ("#define CF_MDEV_MIN 50", "#define CF_MDEV_MIN 40"),
    ("#define PH_F 24.0f", "#define PH_F 16.0f"),
    ("co->rto = 2 * co->rto;", "co->rto = 3 * co->rto;"),
    ("return 1.5;", "return 2;"),
    ("return (int64_t)floor(x + 0.5);", "return (int64_t)x;"),
]


def run_all(binary: Path) -> list[str]:
    """The vectors that fail with this driver."""
    failed = []
    for vector in VECTORS:
        for s in ALL:
            try:
                vector(binary, s)
            except AssertionError:
                failed.append(f"{vector.__name__}:{s}")
    return failed


# Both below ask for vec_bin only for its tier: they need the C compiler
# that builds it (native tier, beside the other C tests).
def test_the_unmutated_copy_passes(tmp_path, vec_bin):
    assert run_all(build_driver(tmp_path, (GE_DIR / "cc.c").read_text())) == []


@pytest.mark.parametrize("old,new", MUTATIONS, ids=[m[1] for m in MUTATIONS])
def test_a_wrong_constant_breaks_a_vector(old, new, tmp_path, vec_bin):
    src = (GE_DIR / "cc.c").read_text()
    assert src.count(old) == 1, old
    assert run_all(build_driver(tmp_path, src.replace(old, new))), f"no vector noticed {new}"
