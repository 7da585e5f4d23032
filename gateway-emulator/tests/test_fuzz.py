"""Each libFuzzer harness runs briefly over its seeds without a finding."""

from __future__ import annotations

import subprocess

import pytest
from gehelpers import SEEDS


@pytest.mark.parametrize("which", ["trace", "datagram", "http", "obs"])
def test_fuzzer_runs_clean(which, ge_fuzzers, tmp_path):
    fuzzer = next(f for f in ge_fuzzers if f.name.endswith(which))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    p = subprocess.run([str(fuzzer), "-runs=20000", "-max_len=2048", "-seed=1", str(corpus),
                        str(SEEDS / fuzzer.name)], capture_output=True, text=True, timeout=600,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "Done 20000 runs" in p.stderr
