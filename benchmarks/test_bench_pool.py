"""Pooling benchmarks beyond test_bench_nn.py's max / adaptive average rows: fractional max
pooling 2-D and 3-D (the same _random_samples for both libraries, so both pool the same
windows) and 3-D adaptive max pooling, forward and forward+backward, next to PyTorch."""
import numpy as np
import pytest

from _impls import lib as library, randn

IMPLS = ["pytorchlite", "torch"]

# (name, input shape, kernel_size, output_size); None: adaptive max pooling
CASES = [("fractional_max_pool2d", (8, 32, 64, 64), 3, (32, 32)),
         ("fractional_max_pool3d", (4, 16, 16, 32, 32), 2, (8, 16, 16)),
         ("adaptive_max_pool3d", (4, 16, 16, 32, 32), None, (4, 8, 8))]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name, shape, k, out", CASES)
@pytest.mark.parametrize("part", ["forward", "forward+backward"])
def test_pool(benchmark, impl, name, shape, k, out, part):
    benchmark.group = f"{name} {'x'.join(map(str, shape))} k {k} -> {out}, {part}"
    lib = library(impl)
    nd = len(out)
    x = lib.tensor(randn(shape)).requires_grad_(part != "forward")
    u = lib.tensor(np.random.default_rng(1).random((shape[0], shape[1], nd), dtype=np.float32))
    f = getattr(lib.nn.functional, name)

    def run():
        y = f(x, out) if k is None else f(x, k, out, _random_samples=u)
        if part != "forward":
            x.grad = None
            y.sum().backward()
        return y

    y = benchmark(run)
    assert tuple(y.shape) == shape[:2] + tuple(out)
