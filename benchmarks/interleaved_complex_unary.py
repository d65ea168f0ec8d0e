"""The complex unary math of src/aten/native/complex_unary.c (Note [Complex elementwise math])
and logaddexp's complex composite against PyTorch in the same process, one thread, timed by
thread CPU time (other processes on the core do not inflate it), the libraries alternating
call by call; each row prints both fastest calls and their ratio (PyTorch's time / ours,
> 1: we are faster).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_complex_unary.py
    ... --reps 40 --only tanh

Needs PyTorch."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from _interleave import calls_main, crandn  # noqa: E402

OPS = ("sigmoid", "tanh", "sin", "exp", "expm1", "log1p", "asinh", "rsqrt", "exp2", "square",
       "logical_not")


def rows():
    """(name, make): make(lib) returns the call to time"""
    out = []
    for dt in (np.complex64, np.complex128):
        a = crandn(1 << 16, dt, 0)
        name = np.dtype(dt).name
        for op in OPS:
            out.append((f"{op} 64K {name}",
                        lambda lib, op=op, a=a: (lambda x=lib.from_numpy(a.copy()):
                                                 getattr(lib, op)(x))))
        out.append((f"logaddexp 64K {name}",
                    lambda lib, a=a: (lambda x=lib.from_numpy(a.copy()):
                                      lib.logaddexp(x, x.flip(0)))))
    return out


if __name__ == "__main__":
    calls_main(__doc__, rows, 30, 28)
