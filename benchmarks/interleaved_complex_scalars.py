"""Ops with a complex Scalar argument (Note [Complex Scalars] in src/aten/ivalue.h) against
PyTorch in the same process, one thread: each row's ratio (PyTorch's time / ours, > 1: we are
faster), the libraries alternating block by block and each one's fastest block counting; the
range is that of the per-round ratios (their second smallest and second largest).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_scalars.py
    ... --rounds 40 --only addmm

A row whose op pytorchlite refuses (a build from before complex Scalars) prints its error.
The last row, x + y of 8 float32 elements, is the dispatcher's per-call cost (its argument
keys now look at the Scalar arguments too).  Needs PyTorch."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import best_block, crandn, one_thread_args  # noqa: E402


def rows():
    """(name, function of (lib, arrays), arrays)"""
    c64, c128 = np.complex64, np.complex128
    m = np.random.default_rng(3).standard_normal(1 << 20) > 0
    out = []
    for n, dt in ((64, c128), (256, c64), (256, c128)):
        out.append((f"addmm {n} {np.dtype(dt).name} beta=1j alpha=2-1j",
                    lambda t, a, b, c: t.addmm(c, a, b, beta=1j, alpha=2 - 1j),
                    [crandn((n, n), dt, s) for s in range(3)]))
    out.append(("addmv 1024 complex128 alpha=1j",
                lambda t, a, v: t.addmv(v, a, v, alpha=1j),
                [crandn((1024, 1024), c128, 0), crandn(1024, c128, 1)]))
    for dt in (c64, c128):
        name = np.dtype(dt).name
        x, y = crandn(1 << 20, dt, 0), crandn(1 << 20, dt, 1)
        out += [(f"add 1M {name} alpha=2-1j", lambda t, a, b: t.add(a, b, alpha=2 - 1j), [x, y]),
                (f"lerp 1M {name} w=0.3-0.7j", lambda t, a, b: t.lerp(a, b, 0.3 - 0.7j), [x, y]),
                (f"addcmul 1M {name} value=1j",
                 lambda t, a, b: t.addcmul(a, a, b, value=1j), [x, y]),
                (f"pow 1M {name} exponent=1.5-0.5j", lambda t, a: t.pow(a, 1.5 - 0.5j), [x]),
                (f"masked_fill 1M {name} 2-1j",
                 lambda t, a, mm: a.masked_fill(mm, 2 - 1j), [x, m]),
                (f"where 1M {name} x or 2-1j",
                 lambda t, a, mm: t.where(mm, a, 2 - 1j), [x, m]),
                (f"full 1M {name} 1j",
                 lambda t, a: t.full((1 << 20,), 1j, dtype=a.dtype), [x])]
    out.append(("x + y, 8 float32", lambda t, a, b: a + b,
                [np.ones(8, np.float32), np.ones(8, np.float32)]))
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
