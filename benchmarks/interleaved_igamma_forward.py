"""PyTorch's time / ours for gammainc's and gammaincc's forward (igamma, igammac) over a grid
of a (0.5 .. 1e6) and x / a (0.5 .. 2), x = a * ratio * U(0.95, 1.05) on 16K elements, float32
and float64, the two libraries alternating call by call in one process on one thread, fastest
of --reps each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_igamma_forward.py [--only float64] [--reps 40]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402

A = (0.5, 5.0, 20.0, 100.0, 1e3, 1e4, 1e6)
X_OVER_A = (0.5, 0.9, 1.0, 1.1, 2.0)


def case(name, a, x, fn):
    """A row: fn(a, x) in each library"""
    def make(L):
        ta, tx = L.from_numpy(a.copy()), L.from_numpy(x.copy())
        f = getattr(L.special, fn)
        return lambda: f(ta, tx)
    return name, make


def rows():
    out = []
    rng = np.random.default_rng(0)
    u = rng.uniform(0.95, 1.05, 1 << 14)
    for dt in (np.float64, np.float32):
        for a0 in A:
            for k in X_OVER_A:
                a = np.full(1 << 14, a0, dtype=dt)
                x = (a0 * k * u).astype(dt)
                for fn in ("gammainc", "gammaincc"):
                    out.append(case(f"{fn} {np.dtype(dt).name} a={a0:g} x/a={k:g}", a, x, fn))
    return out


def main(argv=None):
    calls_main(__doc__, rows, 40, 40, argv)


if __name__ == "__main__":
    main()
