"""PyTorch's time / ours for the kernels of docs/performance.md's "Special functions at +-inf,
Chebyshev next to +-1, lerp's fused form, float32 prod's second pass": lerp (Tensor and Scalar
weight), i0, i1, bessel_j0, airy_ai, trigamma, chebyshev_u (the recurrence, the closed forms)
and float32 prod over either dim of 1000 x 1000, with and without a 0 in every row; the two
libraries alternating call by call in one process, fastest of --reps each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_special_edges.py [--only lerp] [--reps 150]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402


def arr(shape, lo, hi, dtype, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def case(name, f, *arrays):
    """A row: f(L, *tensors) on the arrays' tensors of library L"""
    def make(L):
        xs = [L.from_numpy(a.copy()) for a in arrays]
        return lambda: f(L, *xs)
    return name, make


def special(L, path):
    for part in path.split("."):
        L = getattr(L, part)
    return L


def rows():
    out = []
    for dt in (np.float32, np.float64):
        n = np.dtype(dt).name
        a, b, w = (arr(1 << 20, -2, 2, dt, s) for s in range(3))
        out += [case(f"lerp.Tensor {n} 1M", lambda L, a, b, w: L.lerp(a, b, w), a, b, w),
                case(f"lerp.Scalar {n} 1M", lambda L, a, b: L.lerp(a, b, 0.7), a, b)]
        x = arr(1 << 16, -30, 30, dt)
        for path in ("i0", "special.i1", "special.bessel_j0", "special.airy_ai"):
            out.append(case(f"{path} {n} 64K", lambda L, x, p=path: special(L, p)(x), x))
        out.append(case(f"trigamma {n} 64K", lambda L, x: L.polygamma(1, x), x))
        u = arr(1 << 14, -1, 1, dt)
        for k in (10, 100, 1000):
            out.append(case(f"chebyshev_u {n} 16K k={k}",
                            lambda L, u, k=k: L.special.chebyshev_polynomial_u(u, k), u))
    m = arr((1000, 1000), 0.9, 1.1, np.float32)
    mz = m.copy()
    mz[:, 500] = 0
    for label, a in (("", m), (" a 0 a row", mz)):
        for d in (0, 1):
            out.append(case(f"prod({d}) float32 1000x1000{label}",
                            lambda L, a, d=d: L.prod(a, d), a))
    return out


def main(argv=None):
    calls_main(__doc__, rows, 150, 44, argv)


if __name__ == "__main__":
    main()
