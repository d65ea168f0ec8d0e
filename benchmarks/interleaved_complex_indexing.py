"""The gather / scatter / index family on complex tensors (tests/aten/test_complex_indexing.py)
against PyTorch in the same process, one thread: each row's ratio (PyTorch's time / ours, > 1:
we are faster), the libraries alternating block by block and each one's fastest block
counting; the range is that of the per-round ratios (their second smallest and second
largest).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_indexing.py
    ... --rounds 40 --only scatter_add

A row whose op pytorchlite refuses (a build from before complex indexing) prints its error.
Needs PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import crandn, one_thread_args, run_rows  # noqa: E402


def rows():
    """(name, function of (lib, tensors), arrays)"""
    g = np.random.default_rng(0)
    idx = g.integers(0, 512, (512, 512))
    rows_idx = g.integers(0, 512, 512)
    out = []
    for dt in (np.complex64, np.complex128):
        name = np.dtype(dt).name
        x = crandn((512, 512), dt, 0)
        out += [
            (f"gather 512x512 {name} dim 1", lambda t, a, i: a.gather(1, i), [x, idx]),
            (f"scatter_add 512x512 {name} dim 1",
             lambda t, a, i: a.scatter_add(1, i, a), [x, idx]),
            (f"scatter_reduce prod 512x512 {name}",
             lambda t, a, i: a.scatter_reduce(1, i, a, "prod"), [x, idx]),
            (f"scatter_reduce mean 512x512 {name}",
             lambda t, a, i: a.scatter_reduce(1, i, a, "mean", include_self=False), [x, idx]),
            (f"index_add 512 rows of 512 {name}",
             lambda t, a, i: a.index_add(0, i, a), [x, rows_idx]),
            (f"index_add 512 rows {name} alpha=2-1j",
             lambda t, a, i: a.index_add(0, i, a, alpha=2 - 1j), [x, rows_idx]),
            (f"index_put_ acc 512 rows {name}",
             lambda t, a, i, v: a.index_put_((i,), v, accumulate=True), [x, rows_idx, x]),
            (f"x[idx] 512 rows {name}", lambda t, a, i: a[i], [x, rows_idx]),
            (f"take 256K of 512x512 {name}", lambda t, a, i: a.take(i), [x, idx]),
        ]
    for dt in (np.float32, np.int64):   # take walks every dtype the same way
        x = (crandn((512, 512), np.complex128, 0).real * 100).astype(dt)
        out.append((f"take 256K of 512x512 {np.dtype(dt).name}", lambda t, a, i: a.take(i),
                    [x, idx]))
    return out


def main():
    torch, args = one_thread_args(20)
    run_rows(torch, rows(), args.rounds, args.only)


if __name__ == "__main__":
    main()
