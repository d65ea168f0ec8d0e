"""The complex shape ops, scans and folds (tests/aten/test_complex_shape.py,
test_complex_reduce.py, test_complex_pads.py) against PyTorch in the same process, one
thread: each row's ratio (PyTorch's time / ours, > 1: we are faster), the libraries
alternating block by block and each one's fastest block counting; the range is that of the
per-round ratios (their second smallest and second largest).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_shape.py
    ... --rounds 40 --only cumprod

A row whose op pytorchlite refuses (a build from before complex shape ops) prints its error.
Needs PyTorch."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

import pytorchlite  # noqa: E402
from _interleave import crandn, one_thread_args, run_rows  # noqa: E402


def rows():
    """(name, function of (lib, tensors), arrays)"""
    out = []
    for dt in (np.complex64, np.complex128):
        name = np.dtype(dt).name
        x = crandn((256, 1024), dt, 0)
        u = x / np.abs(x)   # unit moduli: products stay finite
        out += [
            (f"roll 256x1024 {name} (1, 3)", lambda t, a: a.roll((1, 3), (0, 1)), [x]),
            (f"repeat 256x1024 {name} (2, 2)", lambda t, a: a.repeat(2, 2), [x]),
            (f"rot90 256x1024 {name}", lambda t, a: t.rot90(a), [x]),
            (f"pad constant 256x1024 {name}",
             lambda t, a: t.nn.functional.pad(a, (2, 2, 1, 1)), [x]),
            (f"pad reflect 1x256x1024 {name}",
             lambda t, a: t.nn.functional.pad(a[None], (2, 2), mode="reflect"), [x]),
            (f"cumsum 256x1024 {name} dim 1", lambda t, a: a.cumsum(1), [x]),
            (f"cumsum 256x1024 {name} dim 0", lambda t, a: a.cumsum(0), [x]),
            (f"cumprod 256x1024 {name} dim 1", lambda t, a: a.cumprod(1), [u]),
            (f"cumprod 256x1024 {name} dim 0", lambda t, a: a.cumprod(0), [u]),
            (f"prod 256x1024 {name} dim 1", lambda t, a: a.prod(1), [u]),
            (f"prod 256x1024 {name} dim 0", lambda t, a: a.prod(0), [u]),
            (f"prod 256x1024 {name} all", lambda t, a: a.prod(), [u]),
            (f"count_nonzero 256x1024 {name}", lambda t, a: t.count_nonzero(a), [x]),
            (f"var 256x1024 {name} dim 1", lambda t, a: a.var(1), [x]),
            (f"trace 1024x1024 {name}", lambda t, a: a.trace(),
             [crandn((1024, 1024), dt, 1)]),
        ]
    return out


if __name__ == "__main__":
    TORCH, ARGS = one_thread_args(20)
    run_rows(TORCH, rows(), ARGS.rounds, ARGS.only)
