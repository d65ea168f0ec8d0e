"""PyTorch's time / ours for the svd, svd_reduced and pinv rows of test_bench_linalg.py's
test_linalg_vectors (64x64, 256x256, 256x64, 64x256, float64 and float32), the two libraries
interleaved call by call in one process, thread CPU time, fastest of --reps rounds each, one
thread (docs/performance.md, "float64 svd: scaled rotations, aligned rows"):

    taskset -c 1 python benchmarks/interleaved_svd_rows.py [--reps 15] [--only "256x256"]

Our times depend on the process for code whose buffers' alignment matters (the section has an
example): run it a few times.  Needs PyTorch (pip install torch==2.13.0)."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402

SHAPES = [(64, 64), (256, 256), (256, 64), (64, 256)]


def _fn(lib, name):
    return {"svd": lambda a: lib.linalg.svd(a, full_matrices=True),
            "svd_reduced": lambda a: lib.linalg.svd(a, full_matrices=False),
            "pinv": lib.linalg.pinv}[name]


def main():
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    for dtype in ("float64", "float32"):
        for name in ("svd", "svd_reduced", "pinv"):
            for m, n in SHAPES:
                row = f"{name} {m}x{n} {dtype}"
                if args.only not in row:
                    continue
                x = np.random.default_rng(0).standard_normal((m, n)).astype(dtype)
                calls = [(_fn(torch, name), torch.tensor(x)),
                         (_fn(pytorchlite, name), pytorchlite.tensor(x))]
                t0 = time.perf_counter()
                calls[1][0](calls[1][1])
                k = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-6)))
                best = [float("inf")] * 2
                for _ in range(args.reps):
                    for i, (f, a) in enumerate(calls):
                        t0 = time.thread_time()
                        for _ in range(k):
                            f(a)
                        best[i] = min(best[i], (time.thread_time() - t0) / k)
                print(f"{row:28s} torch {best[0] * 1e3:8.3f} ms  ours {best[1] * 1e3:8.3f} ms  "
                      f"ratio {best[0] / best[1]:.3f}", flush=True)


if __name__ == "__main__":
    main()
