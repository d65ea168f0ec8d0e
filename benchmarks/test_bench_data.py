"""Data loading benchmarks: one epoch of a DataLoader, pytorchlite next to torch's.

- a 60000x784 float32 TensorDataset (MNIST-sized), batch 128, shuffled, 0 and 2 workers;
- a Dataset whose __getitem__ spends 1 ms in Python, 2 workers (the workers' parallelism and
  the per-batch transfer cost dominate)."""
import time

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.utils.data as pdata

try:
    import torch
    import torch.utils.data as tdata
except ImportError:  # pragma: no cover
    torch = None

IMPLS = ["pytorchlite"] + (["torch"] if torch is not None else [])
LIBS = {"pytorchlite": (ptl, pdata)}
if torch is not None:
    LIBS["torch"] = (torch, tdata)

_X = np.random.default_rng(0).standard_normal((60000, 784), dtype=np.float32)
_Y = np.arange(60000) % 10


def epoch(loader):
    n = 0
    for batch in loader:
        n += len(batch[0])
    return n


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("workers", [0, 2])
def test_tensor_dataset_epoch(benchmark, impl, workers):
    benchmark.group = f"DataLoader 60000x784 f32 bs128 shuffle, {workers} workers"
    lib, data = LIBS[impl]
    ds = data.TensorDataset(lib.tensor(_X), lib.tensor(_Y))
    loader = data.DataLoader(ds, batch_size=128, shuffle=True, num_workers=workers)
    n = benchmark.pedantic(epoch, args=(loader,), rounds=3, iterations=1)
    assert n == 60000


class SlowPython:
    """Mixin: __getitem__ does 1 ms of Python work, then returns a small tensor."""

    def __init__(self, lib, n):
        self.lib, self.n = lib, n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        end = time.perf_counter() + 1e-3
        acc = 0
        while time.perf_counter() < end:
            acc += 1
        return self.lib.full((16,), float(i)), i


class SlowPtl(SlowPython, pdata.Dataset):
    pass


if torch is not None:
    class SlowTorch(SlowPython, tdata.Dataset):
        pass


@pytest.mark.parametrize("impl", IMPLS)
def test_slow_python_dataset_epoch(benchmark, impl):
    benchmark.group = "DataLoader 1 ms/item Python dataset, 256 items bs16, 2 workers"
    lib, data = LIBS[impl]
    ds = SlowPtl(lib, 256) if impl == "pytorchlite" else SlowTorch(lib, 256)
    loader = data.DataLoader(ds, batch_size=16, num_workers=2)
    n = benchmark.pedantic(epoch, args=(loader,), rounds=3, iterations=1)
    assert n == 256
