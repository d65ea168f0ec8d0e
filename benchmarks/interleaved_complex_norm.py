"""Norms (src/aten/native/complex_norm.c, Note [Complex norms]), renorm and moments
(complex_reduce.c) of complex tensors and complex linalg.cross against PyTorch in the same
process: each row's fastest call of each library, the two alternating call by call, and
their ratio (PyTorch's time / ours, > 1: we are faster); one thread is timed by its CPU
time.

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_norm.py
    ... --reps 40 --only var

Needs PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _interleave import calls_main, crandn  # noqa: E402


def rows():
    """(name, make): make(lib) returns the call to time"""
    out = []
    for dt in (np.complex64, np.complex128):
        name = np.dtype(dt).name
        arrays = {"1M": crandn(1 << 20, dt, 0), "1024x1024": crandn((1024, 1024), dt, 1),
                  "64x64": crandn((64, 64), dt, 2), "349525x3": crandn((349525, 3), dt, 3)}

        def row(label, shape, fn, name=name, arrays=arrays):
            def make(lib, fn=fn, a=arrays[shape]):
                x = lib.from_numpy(a.copy())
                return lambda: fn(lib, x)
            out.append((f"{label} {shape} {name}", make))
        row("vector_norm", "1M", lambda t, x: t.linalg.vector_norm(x))
        row("vector_norm ord=1", "1M", lambda t, x: t.linalg.vector_norm(x, 1))
        row("vector_norm dim=1", "1024x1024", lambda t, x: t.linalg.vector_norm(x, dim=1))
        row("matrix_norm nuc", "64x64", lambda t, x: t.linalg.matrix_norm(x, "nuc"))
        row("var", "1M", lambda t, x: t.var(x))
        row("std dim=0", "1024x1024", lambda t, x: t.std(x, 0))
        row("cross", "349525x3", lambda t, x: t.linalg.cross(x, x.flip(0)))
        row("renorm dim=0", "1024x1024", lambda t, x: t.renorm(x, 2, 0, 10.0))
    return out


if __name__ == "__main__":
    calls_main(__doc__, rows, 20, 36)
