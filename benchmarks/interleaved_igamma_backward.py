"""PyTorch's time / ours for gammainc's and gammaincc's backward in x (ours: the hidden op
_ptl_igamma_density, Note [Incomplete gamma density]; PyTorch's: derivatives.yaml's
exp((a - 1) log x - x - lgamma(a))) on 64K elements, x = a U(0.5, 1.5), at a moderate a (5,
the e^-x e^v form) and at large ones (1e4 and 1e12, the Stirling form), float32 and float64:
the backward alone (autograd.grad of a kept graph) and forward + backward, the two libraries
alternating call by call in one process, fastest of --reps each in thread CPU time:

    taskset -c 1 python benchmarks/interleaved_igamma_backward.py [--only 1e4] [--reps 60]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402


def case(name, a, x, fn, whole):
    """A row: the backward of fn(a, x).sum() in x; whole: with the forward"""
    def make(L):
        ta, tx = L.from_numpy(a.copy()), L.from_numpy(x.copy()).requires_grad_()
        f = getattr(L.special, fn)
        if whole:
            return lambda: L.autograd.grad(f(ta, tx).sum(), (tx,))
        y = f(ta, tx).sum()
        return lambda: L.autograd.grad(y, (tx,), retain_graph=True)
    return name, make


def rows():
    out = []
    rng = np.random.default_rng(0)
    u = rng.uniform(0.5, 1.5, 1 << 16)
    for dt in (np.float64, np.float32):
        for a0 in (5.0, 1e4, 1e12):
            a = np.full(1 << 16, a0, dtype=dt)
            x = (a0 * u).astype(dt)
            for fn in ("gammainc", "gammaincc"):
                out.append(case(f"{fn} backward {np.dtype(dt).name} a={a0:g}", a, x, fn, False))
            out.append(case(f"gammainc fwd+bwd {np.dtype(dt).name} a={a0:g}", a, x, "gammainc",
                            True))
    return out


def main(argv=None):
    calls_main(__doc__, rows, 60, 40, argv)


if __name__ == "__main__":
    main()
