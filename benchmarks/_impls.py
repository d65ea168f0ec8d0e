"""What every ratio benchmark needs: the implementations to run (pytorchlite, NumPy, and
PyTorch when installed), each tensor library's module, and the same data as each one's array
type."""
import contextlib

import numpy as np
import pytest

import pytorchlite as ptl

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

TORCH = ["torch"] if torch is not None else []
IMPLS = ["pytorchlite", "numpy"] + TORCH
# the libraries with autograd and nn (NumPy has neither, so those groups have no NumPy row)
TENSOR_IMPLS = ["pytorchlite"] + TORCH


@contextlib.contextmanager
def both_on_one_thread():
    """pytorchlite and PyTorch (when installed) on one thread inside, as they were after."""
    old = ptl.get_num_threads()
    old_t = torch.get_num_threads() if torch is not None else None
    ptl.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        ptl.set_num_threads(old)
        if torch is not None:
            torch.set_num_threads(old_t)


def lib(impl):
    """The module of tensor library impl; a torch case is skipped when torch is missing."""
    if impl == "torch" and torch is None:
        pytest.skip("PyTorch is not installed: no reference to compare with")
    return ptl if impl == "pytorchlite" else torch


def randn(shape, seed=0):
    """Standard normal float32 data, the same for every implementation."""
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def make(impl, a, requires_grad=False):
    """The NumPy array a as impl's array (a copy for the tensor libraries)."""
    if impl == "numpy":
        return a
    t = lib(impl).tensor(a)
    return t.requires_grad_(True) if requires_grad else t


def run(benchmark, impl, fn, *arrays):
    args = [make(impl, a) for a in arrays]
    benchmark(fn, *args)
