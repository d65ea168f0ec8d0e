"""tools/bench_sweep.py's rerun step still runs: a sweep's JSON of one einsum group, replayed
alone (its plugin in place of pytest-benchmark's fixture), one pass of one round, against
PyTorch."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import bench_sweep  # noqa: E402

GROUP = "einsum bij,bjk->bik (64, 64, 64) float32"
NODE = "benchmarks/test_bench_einsum.py::test_einsum[bij,bjk->bik-shapes0-{}]"


def test_rerun_replays_a_group(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="the sweep compares with PyTorch: pip install "
                        "torch==2.13.0")
    out = str(tmp_path / "sweep")
    rows = [{"group": GROUP, "params": {"impl": impl}, "stats": {"min": t},
             "fullname": NODE.format(impl)} for impl, t in (("pytorchlite", 2.0), ("torch", 1.0))]
    with open(out + "_raw.json", "w") as f:
        json.dump({"benchmarks": rows}, f)
    monkeypatch.setattr(sys, "argv", ["bench_sweep.py", "rerun", "--out", out, "--passes", "1",
                                      "--rounds", "1"])
    bench_sweep.main()
    with open(out + "_rerun0.json") as f:
        got = json.load(f)
    assert list(got) == [GROUP] and got[GROUP] > 0, got
    lines = open(out + "_rerun.txt").read().splitlines()
    assert lines[1].endswith(GROUP) and " 0.50 |" in lines[1], lines
