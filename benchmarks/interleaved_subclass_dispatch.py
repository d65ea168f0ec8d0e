"""What an operator costs on a wrapper tensor subclass whose __torch_dispatch__ unwraps,
computes and rewraps (Note [Python tensors] in src/python/python_dispatch.c), with PyTorch's
same subclass, and the plain `x + y` beside it (no subclass, no mode: the path that must not
change), on one thread; the two libraries alternate block by block and the fastest of
--rounds blocks of --calls calls counts, in thread CPU time:

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_subclass_dispatch.py \\
        [--rounds 40] [--only w]

Needs PyTorch (pip install torch==2.13.0)."""
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import best_block, one_thread_args  # noqa: E402


def wrapper_class(lib):
    """A wrapper subclass of lib.Tensor: `elem` holds the tensor, each op runs on it."""
    tree_map = importlib.import_module(lib.__name__ + ".utils._pytree").tree_map

    class Wrapper(lib.Tensor):
        @staticmethod
        def __new__(cls, elem, requires_grad=False):
            r = lib.Tensor._make_wrapper_subclass(cls, elem.size(), strides=elem.stride(),
                                                  dtype=elem.dtype, device=elem.device,
                                                  requires_grad=requires_grad)
            r.elem = elem.detach() if requires_grad else elem
            return r

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            def unwrap(e):
                return e.elem if isinstance(e, Wrapper) else e

            def wrap(e):
                return Wrapper(e) if isinstance(e, lib.Tensor) else e
            return tree_map(wrap, func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {})))
    return Wrapper


def rows(torch, ptl):
    W, TW = wrapper_class(ptl), wrapper_class(torch)
    x, tx = ptl.ones(1), torch.ones(1)
    w, tw = W(ptl.ones(8)), TW(torch.ones(8))
    g, tg = W(ptl.ones(8), requires_grad=True), TW(torch.ones(8), requires_grad=True)
    return [
        ("x + y (plain, 1 elem)", lambda: x + x, lambda: tx + tx),
        ("w + w (wrapper)", lambda: w + w, lambda: tw + tw),
        ("(g * g).sum().backward()", lambda: (g * g).sum().backward(),
         lambda: (tg * tg).sum().backward()),
    ]


def main():
    torch, args = one_thread_args(40, ("--calls", 500))
    import pytorchlite as ptl
    for name, ours, theirs in rows(torch, ptl):
        if args.only and not name.startswith(args.only):
            continue
        best = [float("inf")] * 2
        for _ in range(args.rounds):   # the libraries alternate block by block
            for i, f in enumerate((ours, theirs)):
                best[i] = min(best[i], best_block(f, int(args.calls), clock=time.thread_time))
        o, t = (s * 1e6 for s in best)
        print(f"{name:26s} ours {o:8.2f} us  torch {t:8.2f} us  torch/ours {t / o:5.2f}",
              flush=True)


if __name__ == "__main__":
    main()
