"""PyTorch's time / ours for flip (Note [Flip of the innermost dim] in
src/aten/native/shape_gather.c): the innermost dim flipped (1-D rows of every element size,
2-D and 3-D, with and without outer dims flipped too) and outer dims only (the table path),
the two libraries alternating call by call in one process, fastest of --reps each in thread
CPU time:

    taskset -c 1 python benchmarks/interleaved_flip.py [--only "flip(0)"] [--reps 150]

Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import calls_main  # noqa: E402


def arr(shape, dtype=np.float32):
    a = np.random.default_rng(0).standard_normal(shape) * 100
    if np.issubdtype(dtype, np.complexfloating):
        a = a + 1j * a[::-1]
    return a.astype(dtype)


def flip(shape, dims, dtype=np.float32):
    def make(L):
        x = L.from_numpy(arr(shape, dtype))
        return lambda: x.flip(dims)
    return f"flip({dims}) {'x'.join(map(str, shape))} {np.dtype(dtype).name}", make


def rows():
    return [
        flip((65536,), 0),
        flip((65536,), 0, np.uint8),
        flip((65536,), 0, np.int16),
        flip((65536,), 0, np.float64),
        flip((65536,), 0, np.complex128),
        flip((1024,), 0),
        flip((1024, 1024), 1),
        flip((256, 256), 1),
        flip((1024, 1024), (0, 1)),
        flip((64, 64, 64), 2),
        flip((64, 64, 64), (0, 2)),
        flip((32, 32, 32), (0, 1, 2)),
        flip((1024, 1024), 0),
        flip((64, 64, 64), 1),
    ]


def main(argv=None):
    calls_main(__doc__, rows, 150, 36, argv)


if __name__ == "__main__":
    main()
