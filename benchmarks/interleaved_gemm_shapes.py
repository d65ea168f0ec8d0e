"""The float32 products of the one-thread training steps (benchmarks/ratio_table.py's MLP, GPT
and LSTM rows), each in the layout the step computes it in, timed against PyTorch's in the
same process: GFLOP/s of each and the ratio (PyTorch's time / ours, > 1: we are faster).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_gemm_shapes.py
    ... --only wgrad --rounds 40

The two libraries alternate call block by call block, and each one's fastest block counts.
Layouts: "A^T" is a transposed view of a row-major [K, M] (a weight gradient's g^T of
g^T @ x; `lda` pads its rows, as an LSTM's gate gradients are), "B^T" one of [N, K] (a
Linear's W^T), "+bias" an addmm with a broadcast bias row.  Needs PyTorch."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402

# (group, M, K, N, A transposed, lda of a transposed A or 0, B transposed, bias)
SHAPES = [
    ("gpt fwd", 1024, 128, 384, False, 0, True, True),
    ("gpt fwd", 1024, 128, 128, False, 0, True, True),
    ("gpt fwd", 1024, 128, 512, False, 0, True, True),
    ("gpt fwd", 1024, 512, 128, False, 0, True, True),
    ("gpt fwd", 1024, 128, 65, False, 0, True, False),
    ("gpt dgrad", 1024, 384, 128, False, 0, False, False),
    ("gpt dgrad", 1024, 128, 128, False, 0, False, False),
    ("gpt dgrad", 1024, 512, 128, False, 0, False, False),
    ("gpt dgrad", 1024, 128, 512, False, 0, False, False),
    ("gpt dgrad", 1024, 65, 128, False, 0, False, False),
    ("gpt wgrad", 384, 1024, 128, True, 0, False, False),
    ("gpt wgrad", 128, 1024, 128, True, 0, False, False),
    ("gpt wgrad", 512, 1024, 128, True, 0, False, False),
    ("gpt wgrad", 128, 1024, 512, True, 0, False, False),
    ("gpt wgrad", 65, 1024, 128, True, 0, False, False),
    ("mlp fwd", 128, 784, 512, False, 0, True, True),
    ("mlp fwd", 128, 512, 256, False, 0, True, True),
    ("mlp fwd", 128, 256, 10, False, 0, True, True),
    ("mlp dgrad", 128, 256, 512, False, 0, False, False),
    ("mlp dgrad", 128, 10, 256, False, 0, False, False),
    ("mlp wgrad", 512, 128, 784, True, 0, False, False),
    ("mlp wgrad", 256, 128, 512, True, 0, False, False),
    ("mlp wgrad", 10, 128, 256, True, 0, False, False),
    ("lstm wgrad", 512, 1024, 64, True, 528, False, False),
    ("lstm dgrad", 1024, 512, 64, False, 0, False, False),
    ("lstm dgrad", 1024, 64, 512, False, 0, False, False),
    ("lstm wgrad", 512, 1024, 128, True, 528, False, False),
    ("lstm dgrad", 1024, 512, 128, False, 0, False, False),
    ("lstm fwd", 1024, 64, 512, False, 0, True, False),
    ("lstm fwd", 1024, 128, 512, False, 0, True, False),
]


def operands(lib, m, k, n, at, lda, bt, bias, seed):
    g = np.random.default_rng(seed)
    if at:
        a = lib.tensor(g.standard_normal((k, lda or m)).astype(np.float32))[:, :m].t()
    else:
        a = lib.tensor(g.standard_normal((m, k)).astype(np.float32))
    if bt:
        b = lib.tensor(g.standard_normal((n, k)).astype(np.float32)).t()
    else:
        b = lib.tensor(g.standard_normal((k, n)).astype(np.float32))
    s = lib.tensor(g.standard_normal((n,)).astype(np.float32)) if bias else None
    if bias:
        return lambda: lib.addmm(s, a, b)
    return lambda: lib.mm(a, b)


def block_time(fn, calls):
    t = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t) / calls


def measure(shape, rounds):
    import torch
    group, m, k, n, at, lda, bt, bias = shape
    ours = operands(pytorchlite, m, k, n, at, lda, bt, bias, 0)
    ref = operands(torch, m, k, n, at, lda, bt, bias, 0)
    calls = max(1, int(2e7 / (m * n * k)))
    best = [float("inf"), float("inf")]
    for fn in (ours, ref):
        block_time(fn, calls)
    for _ in range(rounds):
        best[0] = min(best[0], block_time(ours, calls))
        best[1] = min(best[1], block_time(ref, calls))
    return best


def describe(shape):
    group, m, k, n, at, lda, bt, bias = shape
    lay = ("A^T" + (f"(lda {lda})" if lda else "") if at else "") + (" B^T" if bt else "")
    return f"{group:10s} {m:5d}x{k:<5d}@{k:5d}x{n:<4d} {lay.strip():14s}{'+bias' if bias else ''}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--only", default="", help="the rows whose group contains this")
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(args.threads)
    pytorchlite.set_num_threads(args.threads)
    print(f"threads {args.threads}, rounds {args.rounds}; GFLOP/s ours, PyTorch's; ratio")
    for shape in SHAPES:
        if args.only not in shape[0]:
            continue
        ours, ref = measure(shape, args.rounds)
        flops = 2.0 * shape[1] * shape[2] * shape[3]
        print(f"{describe(shape)}  {flops / ours / 1e9:6.1f} {flops / ref / 1e9:6.1f}  "
              f"{ref / ours:5.2f}", flush=True)


if __name__ == "__main__":
    main()
