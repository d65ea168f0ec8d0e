"""The cost of calling an operator whose kernel is written in Python: pytorchlite.library
(the kernel stored in the dispatcher's per-key table, Note [Python kernels] in
src/python/library.c) against PyTorch's custom_op path, and both against their built-in op of
the same work (x + y on one float32), all in the same process."""
import itertools

import pytest

from _impls import TENSOR_IMPLS, lib

_names = itertools.count()


def custom_add(L):
    """A custom op z = x + y with a Python kernel and an autograd formula, as the docs write it."""
    ns = f"ptlbench{next(_names)}"

    @L.library.custom_op(f"{ns}::add", mutates_args=())
    def add(x: L.Tensor, y: L.Tensor) -> L.Tensor:
        return x + y

    add.register_autograd(lambda ctx, g: (g, g))
    return add


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_custom_op_call(benchmark, impl):
    benchmark.group = "custom_op add(x, y) with a Python kernel, 1 float32"
    L = lib(impl)
    add = custom_add(L)
    x, y = L.ones(1), L.ones(1)
    benchmark(add, x, y)


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_library_impl_call(benchmark, impl):
    benchmark.group = "Library.impl add(x, y), CPU Python kernel, 1 float32"
    L = lib(impl)
    ns = f"ptlbench{next(_names)}"
    library = L.library.Library(ns, "DEF")
    library.define("add(Tensor x, Tensor y) -> Tensor")
    library.impl("add", lambda x, y: x + y, "CPU")
    op = getattr(getattr(L.ops, ns), "add").default
    x, y = L.ones(1), L.ones(1)
    benchmark(op, x, y)
    library._destroy()


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_builtin_add_call(benchmark, impl):
    benchmark.group = "built-in add(x, y), 1 float32"
    L = lib(impl)
    x, y = L.ones(1), L.ones(1)
    benchmark(L.add, x, y)
