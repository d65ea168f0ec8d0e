"""PyTorch's time / ours for float32 prod of short rows (prod(1) of 2 to 1000 columns) and of
few rows (prod(0) of 2 to 32 rows), docs/performance.md's "Float32 prod of short rows and of
few rows", the two libraries alternating call by call in one process, fastest of --reps each
in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_prod_rows.py [--only "prod(1)"] [--reps 40]

Run it once with main's build on PYTHONPATH and once with a branch's, alternately, to compare
builds.  Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402

SHORT_ROWS = [(100000, 2), (100000, 5), (100000, 8), (20000, 33), (10000, 64), (10000, 65),
              (10000, 100), (5000, 128), (5000, 129), (5000, 150), (1000, 1000)]
FEW_ROWS = [(2, 100000), (4, 100000), (8, 65536), (16, 65536), (32, 4000)]


def case(name, f, a):
    def make(L):
        x = L.from_numpy(a.copy())
        return lambda: f(x)
    return name, make


def rows():
    g = np.random.default_rng(0)
    out = [case(f"prod(1) {r}x{c}", lambda x: x.prod(1),
                g.uniform(0.9, 1.1, (r, c)).astype(np.float32)) for r, c in SHORT_ROWS]
    out += [case(f"prod(0) {r}x{c}", lambda x: x.prod(0),
                 (1 + g.standard_normal((r, c)) / 1000).astype(np.float32)) for r, c in FEW_ROWS]
    return out


def main(argv=None):
    calls_main(__doc__, rows, 40, 20, argv)


if __name__ == "__main__":
    main()
