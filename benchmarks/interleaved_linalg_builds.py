"""The linear algebra and complex product rows issue 16's AVX2 sweep left under PyTorch's speed
(linalg.qr, lstsq, eigh, solve_triangular with one column, complex mm, bmm and addmm, on
test_bench_linalg.py's and test_bench_gemm_complex.py's operands) on two builds of pytorchlite
in one process, and PyTorch's beside them: this tree's build and another built tree's,
imported under the package name ptl_base as interleaved_gemm_builds.py does.  Each row says
whether the two builds' outputs are the same bits, the microseconds of thread CPU time a call
of each, and PyTorch's time / each build's (> 1: the build is faster) when PyTorch is
installed.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_linalg_builds.py /path/to/tree
    ... --only "linalg.eigh" --rounds 20

The libraries alternate block by block (a block: the calls that take about BLOCK_SECONDS) and
each one's fastest block counts, so a shared host's load slows them alike.  One thread."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _interleave import best_block, crandn  # noqa: E402
from interleaved_gemm_builds import run_with_base  # noqa: E402

import pytorchlite  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

BLOCK_SECONDS = 0.02


def spd(n):
    a = np.random.default_rng(0).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def rows():
    """(name, operands as NumPy arrays, fn(lib, *tensors)) of each row."""
    g = np.random.default_rng(0)
    out = []
    for dt in ("float64", "float32"):
        out.append((f"linalg.qr 64x64 {dt}", [spd(64).astype(dt)],
                    lambda L, a: L.linalg.qr(a)))
        out.append((f"linalg.lstsq 256x64 {dt}",
                    [g.standard_normal((256, 64)).astype(dt),
                     g.standard_normal((256, 1)).astype(dt)],
                    lambda L, a, b: L.linalg.lstsq(a, b)))
        for n in (64, 128):
            out.append((f"linalg.eigh {n}x{n} {dt}", [spd(n).astype(dt)],
                        lambda L, a: L.linalg.eigh(a)))
        for upper in (False, True):
            t = spd(256)
            out.append((f"linalg.solve_triangular 256 {'upper' if upper else 'lower'} 1 "
                        f"column {dt}",
                        [(np.triu(t) if upper else np.tril(t)).astype(dt),
                         g.standard_normal((256, 1)).astype(dt)],
                        lambda L, a, b, u=upper: L.linalg.solve_triangular(a, b, upper=u)))
    for dt in ("complex64", "complex128"):
        out.append((f"mm 64x64 {dt}", [crandn((64, 64), dt, 0), crandn((64, 64), dt, 1)],
                    lambda L, a, b: a @ b))
        out.append((f"bmm 64 x 64^3 {dt}",
                    [crandn((64, 64, 64), dt, 0), crandn((64, 64, 64), dt, 1)],
                    lambda L, a, b: L.bmm(a, b)))
        out.append((f"addmm 64x64 {dt}",
                    [crandn((64, 64), dt, 0), crandn((64, 64), dt, 1), crandn((64, 64), dt, 2)],
                    lambda L, c, a, b: L.addmm(c, a, b, beta=1j, alpha=2 - 1j)))
    return out


def flat(out):
    """The arrays of a result (a tensor or a tuple of them) as NumPy arrays."""
    if isinstance(out, (tuple, list)):
        return [a for o in out for a in flat(o)]
    return [np.asarray(out.numpy() if hasattr(out, "numpy") else out)]


def same_bits(x, y):
    """Whether the results x and y hold the same bits."""
    fx, fy = flat(x), flat(y)
    return len(fx) == len(fy) and all(
        a.shape == b.shape and a.dtype == b.dtype and
        np.array_equal(np.ascontiguousarray(a).view(np.uint8),
                       np.ascontiguousarray(b).view(np.uint8)) for a, b in zip(fx, fy))


def measure(libs, operands, fn, rounds):
    """{name: the fastest seconds per call of fn(lib, *operands)}, the libraries alternating."""
    calls = {}
    for name, lib in libs.items():
        ts = [lib.from_numpy(a.copy()) for a in operands]
        calls[name] = lambda lib=lib, ts=ts: fn(lib, *ts)
    one = best_block(calls["this"], 3)
    reps = max(1, int(BLOCK_SECONDS / max(one, 1e-7)))
    best = dict.fromkeys(libs, float("inf"))
    for _ in range(rounds):
        for name, call in calls.items():
            best[name] = min(best[name], best_block(call, reps, time.thread_time))
    return best


def table(args, base):
    libs = {"base": base, "this": pytorchlite}
    if torch is not None:
        libs["torch"] = torch
    for lib in libs.values():
        lib.set_num_threads(1)
    for name, operands, fn in rows():
        if args.only and args.only not in name:
            continue
        same = same_bits(*(fn(lib, *[lib.from_numpy(a.copy()) for a in operands])
                           for lib in (base, pytorchlite)))
        best = measure(libs, operands, fn, args.rounds)
        line = (f"{name:52s} bits {'same' if same else 'DIFFER'}  base "
                f"{best['base'] * 1e6:8.1f} this {best['this'] * 1e6:8.1f} us")
        if "torch" in best:
            line += (f"  PyTorch / base {best['torch'] / best['base']:5.2f}, / this "
                     f"{best['torch'] / best['this']:5.2f}")
        print(line, flush=True)


def main(argv=None):
    run_with_base(__doc__, 15, ("--only", "", "the rows whose name contains this"), table, argv)


if __name__ == "__main__":
    main()
