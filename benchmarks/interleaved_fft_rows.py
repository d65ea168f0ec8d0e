"""PyTorch's time / ours and NumPy's time / ours for the rows of test_bench_fft.py (fft of
1024 and 4096 complex64 points, alone and batched, of 64 lines of 1000 points, rfft of 2^16
float32, fft2 of 256x256 complex64, rfft of 64x1024 float32, irfft of 64x513 complex64), the
three libraries interleaved call by call in one process, thread CPU time, fastest of --reps
rounds each, one thread (docs/decisions.md, "torch.fft"), or --threads 2 on two cores (wall
time then, as thread time would count one thread only):

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_fft_rows.py [--reps 15]
    taskset -c 0,1 /work/venv-torch/bin/python benchmarks/interleaved_fft_rows.py --threads 2

Needs PyTorch (pip install torch==2.13.0)."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402

ROWS = [("fft", (1024,), True), ("fft", (64, 1024), True), ("fft", (4096,), True),
        ("fft", (16, 4096), True), ("fft", (64, 1000), True), ("rfft", (2 ** 16,), False),
        ("fft2", (256, 256), True), ("rfft", (64, 1024), False), ("irfft", (64, 513), True)]


def main():
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=15)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pytorchlite.set_num_threads(args.threads)
    clock = time.thread_time if args.threads == 1 else time.perf_counter
    gen = np.random.default_rng(0)
    for name, shape, complex_ in ROWS:
        x = gen.standard_normal(shape).astype(np.float32)
        if complex_:
            x = (x + 1j * gen.standard_normal(shape)).astype(np.complex64)
        calls = [(getattr(torch.fft, name), torch.tensor(x)),
                 (getattr(np.fft, name), x),
                 (getattr(pytorchlite.fft, name), pytorchlite.tensor(x))]
        t0 = time.perf_counter()
        calls[2][0](calls[2][1])
        k = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-6)))
        best = [float("inf")] * 3
        for _ in range(args.reps):
            for i, (f, a) in enumerate(calls):
                t0 = clock()
                for _ in range(k):
                    f(a)
                best[i] = min(best[i], (clock() - t0) / k)
        row = f"{name} {shape} {'complex64' if complex_ else 'float32'}"
        print(f"{row:28s} ours {best[2] * 1e6:9.1f} us  torch/ours {best[0] / best[2]:.2f}  "
              f"numpy/ours {best[1] / best[2]:.2f}", flush=True)


if __name__ == "__main__":
    main()
