"""logcumsumexp of complex tensors (src/aten/native/complex_scan.c, Note [Complex
logcumsumexp]) against PyTorch in the same process: along the last dim (one lane per row)
and along the first (the rows side by side), each row's fastest call of each library, the two
alternating call by call, and their ratio (PyTorch's time / ours, > 1: we are faster); one
thread is timed by its CPU time.

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_scan.py
    ... --reps 40 --only logcumsumexp --threads 2

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
        for shape, dim in (((1024, 256), 1), ((256, 1024), 0), ((1 << 16,), 0)):
            a = crandn(shape, dt, 0)
            label = "x".join(map(str, shape))

            def make(lib, a=a, dim=dim):
                x = lib.from_numpy(a.copy())
                return lambda: lib.logcumsumexp(x, dim)
            out.append((f"logcumsumexp {label} dim={dim} {name}", make))
    return out


if __name__ == "__main__":
    calls_main(__doc__, rows, 20, 40)
