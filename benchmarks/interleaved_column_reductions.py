"""PyTorch's time / ours for the rows of docs/performance.md's "Rows that share L1 sets in
float32 prod(0); column extremes without a call an output" section: prod(0) and amax(0) of
few float32 rows, the two libraries interleaved call by call in one process, fastest of --reps
each, one thread (--clock cpu: the thread's CPU time, time.thread_time, which a loaded
machine's preemptions leave out), and amax(0) of 2 and 8 x 40000 of the other dtypes:

    taskset -c 1 python benchmarks/interleaved_column_reductions.py [--only prod] [--clock cpu]

Needs PyTorch (pip install torch==2.13.0)."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402

# prod(0): rows 4096 floats apart share L1 sets (the stage from 16 rows), 4000 do not
PROD_SHAPES = [(8, 65536), (16, 65536), (32, 4096), (32, 4000), (33, 4096), (48, 4096),
               (64, 4096), (64, 1000)]
AMAX_SHAPES = [(2, 40000), (3, 40000), (5, 40000), (6, 40000), (8, 40000), (64, 4000),
               (64, 100000), (1024, 1024)]


def rows():
    """(name, fn, float32 array) for every measured row."""
    g = np.random.default_rng(0)
    out = []
    for r, c in PROD_SHAPES:
        a = (1 + g.standard_normal((r, c)) / 1000).astype(np.float32)
        out.append((f"prod(0) {r}x{c}", lambda x: x.prod(0), a))
    for r, c in AMAX_SHAPES:
        a = g.standard_normal((r, c)).astype(np.float32)
        out.append((f"amax(0) {r}x{c}", lambda x: x.amax(0), a))
    for dt in ["float64", "int32", "int8", "float16"]:
        for r in [2, 8]:
            a = (g.standard_normal((r, 40000)) * 100).astype(dt)
            out.append((f"amax(0) {r}x40000 {dt}", lambda x: x.amax(0), a))
    return out


def best(fn, x, calls, clock):
    t = float("inf")
    for _ in range(calls):
        s = clock()
        fn(x)
        t = min(t, clock() - s)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--only", default="")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = ap.parse_args()
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    import torch
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    for name, fn, a in rows():
        if args.only not in name:
            continue
        xt, xl = torch.tensor(a), pytorchlite.tensor(a)
        fn(xt)
        fn(xl)
        tt = tl = float("inf")
        for _ in range(args.reps):
            tt = min(tt, best(fn, xt, args.calls, clock))
            tl = min(tl, best(fn, xl, args.calls, clock))
        print(f"{name:<26} torch {tt * 1e6:9.2f} us  ours {tl * 1e6:9.2f} us  "
              f"ratio {tt / tl:5.2f}")


if __name__ == "__main__":
    main()
