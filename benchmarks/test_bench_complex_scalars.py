"""Ops with a complex Scalar argument (Note [Complex Scalars] in src/aten/ivalue.h) on one
thread: addmm with a complex beta and alpha (straight to gemm_complex.c, where a Python
fallback used to compose the op with beta=0, mul and add), add with a complex alpha, lerp with
a complex weight, and masked_fill with a complex value.  Each group runs pytorchlite, NumPy
(the same formula in complex128 arrays) and PyTorch when installed.  The ratios of
docs/performance.md come from benchmarks/interleaved_complex_scalars.py, which alternates the
libraries call by call.

    taskset -c 1 /work/venv-torch/bin/python -m pytest benchmarks/test_bench_complex_scalars.py \
        --benchmark-enable -q
"""
import numpy as np
import pytest

from _impls import IMPLS, both_on_one_thread, lib


@pytest.fixture(autouse=True)
def one_thread():
    with both_on_one_thread():
        yield


def crandn(shape, seed=0):
    g = np.random.default_rng(seed)
    return g.standard_normal(shape) + 1j * g.standard_normal(shape)


def make(impl, a):
    return a if impl == "numpy" else lib(impl).from_numpy(a.copy())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [64, 256])
def test_addmm_complex_beta_alpha(benchmark, impl, n):
    benchmark.group = f"addmm {n}x{n} complex128, beta=1j alpha=2-1j"
    a, b, c = (make(impl, crandn((n, n), s)) for s in range(3))
    if impl == "numpy":
        out = benchmark(lambda: 1j * c + (2 - 1j) * (a @ b))
    else:
        t = lib(impl)
        out = benchmark(lambda: t.addmm(c, a, b, beta=1j, alpha=2 - 1j))
    assert tuple(out.shape) == (n, n)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["add", "lerp", "masked_fill"])
def test_pointwise_complex_scalar(benchmark, impl, op):
    benchmark.group = f"{op} 1M complex128 with a complex Scalar"
    x, y = make(impl, crandn(1 << 20, 0)), make(impl, crandn(1 << 20, 1))
    m = make(impl, np.random.default_rng(2).standard_normal(1 << 20) > 0)
    if impl == "numpy":
        fn = {"add": lambda: x + (2 - 1j) * y, "lerp": lambda: x + (0.3 - 0.7j) * (y - x),
              "masked_fill": lambda: np.where(m, 2 - 1j, x)}[op]
    else:
        t = lib(impl)
        fn = {"add": lambda: t.add(x, y, alpha=2 - 1j), "lerp": lambda: t.lerp(x, y, 0.3 - 0.7j),
              "masked_fill": lambda: x.masked_fill(m, 2 - 1j)}[op]
    out = benchmark(fn)
    assert tuple(out.shape) == (1 << 20,)
