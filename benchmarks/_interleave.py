"""What the interleaved_* scripts share: complex operands, the time of a block of calls, and
their command line (--rounds, --only, a script's own options) with both libraries on one
thread.  Each script alternates PyTorch's block and ours, round after round, and keeps the
fastest of each: a shared machine's noise only ever slows a block."""
import argparse
import time

import numpy as np


def crandn(shape, dtype, seed):
    """Standard complex normal numbers of `shape` in `dtype`."""
    g = np.random.default_rng(seed)
    return (g.standard_normal(shape) + 1j * g.standard_normal(shape)).astype(dtype)


def best_block(fn, calls):
    """Seconds per call of `calls` calls of fn in a row."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def one_thread_args(rounds, *options):
    """(torch, args): --rounds (default `rounds`), --only and each (flag, default) of
    `options` parsed; PyTorch and pytorchlite both set to one thread."""
    import torch

    import pytorchlite
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--only", default="")
    for flag, default in options:
        p.add_argument(flag, default=default)
    args = p.parse_args()
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    return torch, args
