"""What an operator costs on a wrapper tensor subclass whose __torch_dispatch__ unwraps,
computes and rewraps (Note [Python tensors] in src/python/python_dispatch.c), with PyTorch's
same subclass, and the plain `x + y`, `x.item()` and `float(x)` beside it (no subclass, no
mode: the paths that must not change; a wrapper's item() reaches it as
aten::_local_scalar_dense), on one thread; the two libraries alternate block by block and the
fastest of --rounds blocks counts, in thread CPU time:

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_subclass_dispatch.py \\
        [--rounds 40] [--only w]

Needs PyTorch (pip install torch==2.13.0)."""
import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import one_thread_args, run_rows  # noqa: E402


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
    """run_rows' rows: each fn(lib) runs on tensors made once per library."""
    made = {}
    for lib in (torch, ptl):
        W = wrapper_class(lib)
        made[lib] = (lib.ones(1), W(lib.ones(8)), W(lib.ones(8), requires_grad=True),
                      W(lib.ones(1)))
    return [
        ("x + y (plain, 1 elem)", lambda lib: made[lib][0] + made[lib][0], []),
        ("x.item() (plain)", lambda lib: made[lib][0].item(), []),
        ("float(x) (plain)", lambda lib: float(made[lib][0]), []),
        ("w.item() (wrapper)", lambda lib: made[lib][3].item(), []),
        ("w + w (wrapper)", lambda lib: made[lib][1] + made[lib][1], []),
        ("(g * g).sum().backward()",
         lambda lib: (made[lib][2] * made[lib][2]).sum().backward(), []),
    ]


def main():
    torch, args = one_thread_args(40)
    import pytorchlite as ptl
    run_rows(torch, rows(torch, ptl), args.rounds, args.only, clock=time.thread_time)


if __name__ == "__main__":
    main()
