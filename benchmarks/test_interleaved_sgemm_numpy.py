"""interleaved_sgemm_numpy.py still runs: one round of its smaller shapes prints a ratio for
each."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import interleaved_sgemm_numpy as sgemm  # noqa: E402


def test_one_round_of_the_small_shapes(capsys):
    sgemm.main(["--rounds", "1", "--max-flops", str(256 ** 3)])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("one thread")
    rows = [ln.split() for ln in lines[1:]]
    assert [r[0] for r in rows] == ["128x128", "256x256"]
    assert all(float(r[-1]) > 0 for r in rows)
