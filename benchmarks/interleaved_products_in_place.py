"""c.addmm_(a, b) and c.baddbmm_(a, b) (float32, c accumulated in place) against PyTorch's on
one thread, and the in-place form these calls had before they were native (a new addmm /
baddbmm result copied into c: `c.copy_(addmm(c, a, b))`, what Tensor.addmm_ ran when it was a
Python wrapper) against PyTorch's too, all in one process.  The libraries alternate block by
block and the fastest of --rounds blocks counts (thread CPU time):

    OMP_NUM_THREADS=1 taskset -c 1 /work/venv-torch/bin/python \\
        benchmarks/interleaved_products_in_place.py [--rounds 30] [--only addmm_]

Prints ns per call and PyTorch's time / ours (> 1: we are faster).  Needs PyTorch."""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import one_thread_args, print_alternating  # noqa: E402

# (batch, or 0 for addmm_; m, k, n)
SHAPES = [(0, 16, 16, 16), (0, 64, 64, 64), (0, 128, 128, 128), (0, 512, 128, 784),
          (8, 16, 16, 16), (16, 64, 64, 64)]


def rows(torch, ptl):
    """((name, ours, theirs), m * k * n * batch) of each shape, native and copied."""
    out = []
    for batch, m, k, n in SHAPES:
        lead = (batch,) if batch else ()
        g = np.random.default_rng(0)
        arrays = [g.standard_normal(lead + shape).astype(np.float32)
                  for shape in ((m, n), (m, k), (k, n))]
        c, a, b = (ptl.tensor(x) for x in arrays)
        tc, ta, tb = (torch.tensor(x) for x in arrays)
        op = "baddbmm" if batch else "addmm"
        name = f"{op}_ {'x'.join(map(str, lead + (m, k)))}@{k}x{n}"
        native = getattr(c, op + "_")
        functional = getattr(ptl, op)
        theirs = getattr(tc, op + "_")
        flops = m * k * n * max(batch, 1)
        out.append(((name, lambda f=native, a=a, b=b: f(a, b, beta=0.5),
                     lambda f=theirs, a=ta, b=tb: f(a, b, beta=0.5)), flops))
        out.append(((name + " (copied)",
                     lambda f=functional, c=c, a=a, b=b: c.copy_(f(c, a, b, beta=0.5)),
                     lambda f=theirs, a=ta, b=tb: f(a, b, beta=0.5)), flops))
    return out


def main():
    torch, args = one_thread_args(30, ("--calls", 0))
    import pytorchlite as ptl
    fixed = int(args.calls)
    for row, flops in rows(torch, ptl):
        args.calls = fixed or max(3, int(2e6 / flops))   # about a millisecond a block
        print_alternating([row], args, 36, time.thread_time)


if __name__ == "__main__":
    main()
