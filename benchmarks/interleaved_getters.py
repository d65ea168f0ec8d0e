"""What a plain tensor pays for Tensor's getters and non-operator methods reaching
__torch_function__ under a mode or for a subclass (Note [Torch function]): x.shape, x.dim(),
x.size(0), x.requires_grad, a Parameter's .grad, the Python properties x.T and x.mT, and
F.max_pool2d (PyTorch's boolean_dispatch form), each with PyTorch's call, on one thread; the
two alternate block by block and the fastest of --rounds blocks of --calls calls counts:

    taskset -c 1 python benchmarks/interleaved_getters.py [--rounds 100] [--only x.shape]

Run it on two builds in turn (PYTHONPATH=one tree, then the other) to compare them.
Needs PyTorch (pip install torch==2.13.0)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import one_thread_args, print_alternating  # noqa: E402


def rows(torch, ptl):
    x, p, img = ptl.ones(4, 8), ptl.nn.Parameter(ptl.ones(3)), ptl.ones(1, 1, 4, 4)
    tx, tp, timg = torch.ones(4, 8), torch.nn.Parameter(torch.ones(3)), torch.ones(1, 1, 4, 4)
    F, TF = ptl.nn.functional, torch.nn.functional
    return [
        ("x.shape", lambda: x.shape, lambda: tx.shape),
        ("x.dim()", lambda: x.dim(), lambda: tx.dim()),
        ("x.size(0)", lambda: x.size(0), lambda: tx.size(0)),
        ("x.requires_grad", lambda: x.requires_grad, lambda: tx.requires_grad),
        ("p.grad", lambda: p.grad, lambda: tp.grad),
        ("x.T", lambda: x.T, lambda: tx.T),
        ("x.mT", lambda: x.mT, lambda: tx.mT),
        ("F.max_pool2d(img, 2)", lambda: F.max_pool2d(img, 2), lambda: TF.max_pool2d(timg, 2)),
    ]


def main():
    torch, args = one_thread_args(100, ("--calls", 2000))
    import pytorchlite as ptl
    print_alternating(rows(torch, ptl), args, 22)


if __name__ == "__main__":
    main()
