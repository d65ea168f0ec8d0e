"""PyTorch's time / ours for the reductions of short rows (dim 1 of 65536 x c) and of the
columns of few rows (dim 0 of r x 65536), c and r in --sizes (2, 4, 8, 16 unless told), for
sum, mean, amax, amin, argmax, any, all, var and norm in int8, int32, int64, float16,
bfloat16, float32 and float64 (the pairs PyTorch refuses left out); the two libraries
alternating call by call in one process, fastest of --reps each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_reduce_rows.py [--only "sum int8"] [--reps 20]

A line of its own for each row below --below (1.0) with --below-only.  Needs PyTorch
(pip install torch==2.13.0)."""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import run_calls  # noqa: E402

OPS = {
    "sum": lambda x, d: x.sum(d),
    "mean": lambda x, d: x.mean(d),
    "amax": lambda x, d: x.amax(d),
    "amin": lambda x, d: x.amin(d),
    "argmax": lambda x, d: x.argmax(d),
    "any": lambda x, d: x.any(d),
    "all": lambda x, d: x.all(d),
    "var": lambda x, d: x.var(d),
    "norm": lambda x, d: x.norm(dim=d),
}
DTYPES = ["int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS_ONLY = {"mean", "var", "norm"}
LONG = 65536


def operand(dtype, shape, g):
    """Values of `shape` in `dtype`: small integers (1 in 8 a 0) or normals"""
    if dtype.startswith("int"):
        return g.integers(-3, 4, shape).astype(dtype)
    a = g.standard_normal(shape).astype(np.float32)
    return a if dtype == "bfloat16" else a.astype(dtype)


def rows(sizes, ops):
    g = np.random.default_rng(0)
    out = []
    for op in ops:
        for dt in DTYPES:
            if op in FLOATS_ONLY and dt.startswith("int"):
                continue
            for dim, shapes in ((1, [(LONG, c) for c in sizes]), (0, [(r, LONG) for r in sizes])):
                for shape in shapes:
                    a = operand(dt, shape, g)
                    out.append((f"{op} {dt} {shape[0]}x{shape[1]} dim {dim}",
                                make_case(OPS[op], a, dt, dim)))
    return out


def make_case(f, a, dt, dim):
    def make(L):
        x = L.from_numpy(a.copy())
        if dt == "bfloat16":
            x = x.to(L.bfloat16)
        return lambda: f(x, dim)
    return make


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--only", default="", help="the rows whose name contains this")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--sizes", default="2,4,8,16")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    run_calls(rows(sizes, args.ops.split(",")), args.reps, args.only, 1, 36)


if __name__ == "__main__":
    main()
