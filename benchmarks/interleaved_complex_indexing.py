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
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import best_block, crandn, one_thread_args  # noqa: E402


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
    return out


def main():
    torch, args = one_thread_args(20)
    for name, fn, arrays in rows():
        if args.only and not name.startswith(args.only):
            continue
        libs = []
        for lib in (torch, pytorchlite):
            xs = [lib.from_numpy(a.copy()) for a in arrays]
            libs.append(lambda lib=lib, xs=xs: fn(lib, *xs))
        try:
            libs[1]()
        except Exception as exc:  # noqa: BLE001 -- an older build's refusal is the answer
            print(f"{name:40s} pytorchlite: {type(exc).__name__}: {str(exc)[:60]}", flush=True)
            continue
        t0 = time.perf_counter()
        libs[0]()
        calls = max(1, min(20000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
        rounds = [[best_block(f, calls) for f in libs] for _ in range(args.rounds)]
        tt, tp = (min(r[i] for r in rounds) for i in (0, 1))
        ratios = sorted(r[0] / r[1] for r in rounds)
        lo, hi = ratios[min(1, len(ratios) - 1)], ratios[max(-2, -len(ratios))]
        print(f"{name:40s} torch {tt * 1e6:10.2f} us  ours {tp * 1e6:10.2f} us  ratio "
              f"{tt / tp:5.2f} (rounds {lo:.2f}-{hi:.2f})", flush=True)


if __name__ == "__main__":
    main()
