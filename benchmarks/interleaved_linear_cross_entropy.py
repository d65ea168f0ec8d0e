"""F.linear_cross_entropy forward+backward, ours and PyTorch's: an LM head's loss (rows x 64
features over a vocabulary), on the reference path (options=None: cross_entropy(linear(...)))
and the chunked one (LinearCrossEntropyOptions(): never the whole [rows, vocabulary] logits).
The calls alternate, the fastest of --reps of each counts (thread CPU time on one thread):

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_linear_cross_entropy.py

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402

SHAPES = [(256, 64, 8192), (1024, 64, 32000)]


def loss_step(rows, features, classes, path):
    """make(lib): one forward+backward of lib's linear_cross_entropy on fixed data."""
    def make(lib):
        rng = np.random.default_rng(0)
        x = lib.tensor(rng.standard_normal((rows, features), dtype=np.float32),
                       requires_grad=True)
        w = lib.tensor(0.1 * rng.standard_normal((classes, features), dtype=np.float32),
                       requires_grad=True)
        t = lib.tensor(rng.integers(0, classes, rows))
        options = lib.nn.LinearCrossEntropyOptions() if path == "chunked" else None

        def run():
            x.grad = w.grad = None
            lib.nn.functional.linear_cross_entropy(x, w, t, options=options).backward()
        return run
    return make


def rows():
    return [(f"{r}x{f} -> {c}, {path}", loss_step(r, f, c, path))
            for r, f, c in SHAPES for path in ("reference", "chunked")]


if __name__ == "__main__":
    calls_main(__doc__, rows, 8, 32)
