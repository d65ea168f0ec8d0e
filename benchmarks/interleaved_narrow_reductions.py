"""PyTorch's time / ours for the reductions around the sweep's shapes that
interleaved_reduce_rows.py does not time: sum(0) and mean(0) of 100000 x c float32 and
float64 (c from 2 to 64: the columns of strided rows below 16, Note [Sums of narrow columns];
one column unit from 16), norm(dim=1) of 65536 x c (runs of 15 to 128 values) and float32
prod(1) of rows with a 0 in each; the two libraries alternating call by call in one process,
fastest of --reps each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_narrow_reductions.py [--only "norm"] [--reps 20]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402
from benchmarks.interleaved_prod_rows import case  # noqa: E402

COLUMNS = [2, 3, 4, 5, 6, 8, 12, 15, 16, 17, 24, 32, 33, 64]
RUNS = [15, 16, 17, 20, 24, 31, 32, 33, 48, 64, 100, 128]
ZERO_ROWS = [(100000, 5), (20000, 33), (10000, 64), (10000, 100), (5000, 128), (1000, 1000)]


def rows():
    g = np.random.default_rng(0)
    out = []
    for c in COLUMNS:
        for dt in ("float32", "float64"):
            a = g.standard_normal((100000, c)).astype(dt)
            out.append(case(f"sum(0) {dt} 100000x{c}", lambda x: x.sum(0), a))
            out.append(case(f"mean(0) {dt} 100000x{c}", lambda x: x.mean(0), a))
    for c in RUNS:
        for dt in ("float32", "float64"):
            a = g.standard_normal((65536, c)).astype(dt)
            out.append(case(f"norm(dim=1) {dt} 65536x{c}", lambda x: x.norm(dim=1), a))
    for r, c in ZERO_ROWS:
        a = g.uniform(0.6, 1.4, (r, c)).astype(np.float32)
        a[np.arange(r), g.integers(0, c, r)] = 0
        out.append(case(f"prod(1) float32 with a 0 {r}x{c}", lambda x: x.prod(1), a))
    return out


def main(argv=None):
    calls_main(__doc__, rows, 20, 40, argv)


if __name__ == "__main__":
    main()
