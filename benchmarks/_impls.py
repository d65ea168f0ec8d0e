"""What every ratio benchmark needs: the implementations to run (pytorchlite, NumPy, and
PyTorch when installed) and the same data as each one's array type."""
import pytorchlite as ptl

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

IMPLS = ["pytorchlite", "numpy"] + (["torch"] if torch is not None else [])


def make(impl, a):
    """The NumPy array a as impl's array (a copy for the tensor libraries)."""
    if impl == "pytorchlite":
        return ptl.tensor(a)
    if impl == "torch":
        return torch.tensor(a)
    return a


def run(benchmark, impl, fn, *arrays):
    args = [make(impl, a) for a in arrays]
    benchmark(fn, *args)
