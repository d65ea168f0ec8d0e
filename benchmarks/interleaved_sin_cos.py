"""PyTorch's time / ours for float32 sin and cos in float lanes (Note [Vector float32 sin, cos]
in src/aten/native/vec_math.h) on 3 * randn of 1e3, 1e5 and 1e6 values, and on 1e6 values up to
1e5 in magnitude, the two libraries alternating call by call in one process, fastest of --reps
each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_sin_cos.py [--only "sin"] [--reps 60]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402


def unary(op, n, scale):
    def make(L):
        a = np.random.default_rng(0).standard_normal(n) * scale
        x = L.from_numpy(a.astype(np.float32))
        f = getattr(L, op)
        return lambda: f(x)
    return f"{op} {n:.0e} float32 (randn * {scale:g})", make


def rows():
    return [unary(op, n, scale) for op in ("sin", "cos")
            for n, scale in ((10**3, 3), (10**5, 3), (10**6, 3), (10**6, 3e4))]


def main(argv=None):
    calls_main(__doc__, rows, 60, 36, argv)


if __name__ == "__main__":
    main()
