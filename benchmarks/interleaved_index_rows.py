"""PyTorch's time / ours for the rows of docs/performance.md's "scatter_reduce amax/amin,
float32 prod and cat of chunks" section, the two libraries interleaved call by call in one
process, fastest of --reps each, one thread:

    taskset -c 1 python benchmarks/interleaved_index_rows.py

Needs PyTorch (pip install torch==2.13.0)."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402


def rows(torch):
    """(name, fn(lib, data)) and each library's data."""
    g = np.random.default_rng(0)
    a = g.standard_normal((1000, 1000)).astype(np.float32)
    i = np.random.default_rng(1).integers(0, 1000, 10**6)
    b = a * np.float32(0.01) + 1
    s = np.random.default_rng(2).standard_normal((1024, 1024)).astype(np.float32)
    j = np.random.default_rng(3).integers(0, 1024, (1024, 1024))
    data = {m: [m.tensor(x) for x in (a, i, b, s, j)] for m in (torch, pytorchlite)}
    ops = [
        ("zeros(1000).scatter_reduce(0, I, A, amax)",
         lambda m, A, I, B, S, J: m.zeros(1000).scatter_reduce(0, I, A.view(-1), "amax")),
        ("zeros(1000).scatter_reduce(0, I, A, amin)",
         lambda m, A, I, B, S, J: m.zeros(1000).scatter_reduce(0, I, A.view(-1), "amin")),
        ("prod(A * 0.01 + 1, 1)", lambda m, A, I, B, S, J: m.prod(A * 0.01 + 1, 1)),
        ("prod(B, 1)", lambda m, A, I, B, S, J: m.prod(B, 1)),
        ("prod(B, 0)", lambda m, A, I, B, S, J: m.prod(B, 0)),
        ("cat(chunk(A, 10, 1), 0)", lambda m, A, I, B, S, J: m.cat(m.chunk(A, 10, 1), 0)),
        ("S.scatter_add(1, J, S)", lambda m, A, I, B, S, J: S.scatter_add(1, J, S)),
    ]
    return ops, data


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=60)
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    ops, data = rows(torch)
    for name, fn in ops:
        best = {}
        for _ in range(args.reps):
            for m in (torch, pytorchlite):
                t0 = time.perf_counter()
                fn(m, *data[m])
                dt = time.perf_counter() - t0
                best[m] = min(best.get(m, dt), dt)
        print(f"{name:44s} torch {best[torch] * 1e6:9.1f} us   ours "
              f"{best[pytorchlite] * 1e6:9.1f} us   ratio {best[torch] / best[pytorchlite]:.2f}")


if __name__ == "__main__":
    main()
