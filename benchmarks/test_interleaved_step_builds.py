"""interleaved_step_builds.py still runs: the MLP step of this tree imported a second time
under the base's package name is a step of that separate package with this tree's loss, and
one round prints a speed-up for it."""
import os
import sys

import numpy as np

import pytorchlite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import interleaved_step_builds as steps  # noqa: E402
import test_bench_training as training  # noqa: E402


def test_base_step_is_the_same_step_in_a_separate_package(tmp_path, capsys):
    base = steps.import_base(ROOT, str(tmp_path))
    assert base is not pytorchlite
    old = base.get_num_threads(), pytorchlite.get_num_threads()
    try:
        losses = []
        for lib in (base, pytorchlite):
            loss = training.setup(lib, "mlp")()
            assert type(loss).__module__.split(".")[0] == lib.__name__
            losses.append(loss.item())
        assert np.isfinite(losses[0]) and losses[0] == losses[1], losses

        steps.main([ROOT, "--rounds", "1", "--steps", "mlp"])
    finally:
        base.set_num_threads(old[0])
        pytorchlite.set_num_threads(old[1])
    lines = capsys.readouterr().out.splitlines()
    rows = [line for line in lines if line.startswith("mlp")]
    assert len(rows) == 1, lines
    assert float(rows[0].split()[3]) > 0, rows
