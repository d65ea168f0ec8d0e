"""Sorting benchmarks: sort of 1e6 float32 (one lane, then 1000 lanes of 1000), topk, cummax
and unique.  Each group runs pytorchlite, NumPy and (when installed) PyTorch on the same
data."""
import numpy as np
import pytest

from _impls import IMPLS, randn, run


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("shape", [(10**6,), (1000, 1000)])
def test_sort_float32(benchmark, impl, shape):
    benchmark.group = f"sort {shape} float32"
    a = randn(shape)
    fn = (lambda x: np.sort(x, -1)) if impl == "numpy" else (lambda x: x.sort(-1))
    run(benchmark, impl, fn, a)


@pytest.mark.parametrize("impl", IMPLS)
def test_argsort_int64(benchmark, impl):
    benchmark.group = "argsort 1e6 int64"
    a = np.random.default_rng(0).integers(-10**9, 10**9, 10**6)
    fn = (lambda x: np.argsort(x, kind="stable")) if impl == "numpy" else \
        (lambda x: x.argsort(stable=True))
    run(benchmark, impl, fn, a)


@pytest.mark.parametrize("impl", [i for i in IMPLS if i != "numpy"])
def test_topk(benchmark, impl):
    benchmark.group = "topk 10 of 1e6 float32"
    a = randn(10**6)
    run(benchmark, impl, lambda x: x.topk(10), a)


@pytest.mark.parametrize("impl", [i for i in IMPLS if i != "numpy"])
def test_cummax(benchmark, impl):
    benchmark.group = "cummax(1) 1024x1024 float32"
    run(benchmark, impl, lambda x: x.cummax(1), randn((1024, 1024)))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("inverse", [False, True])
def test_unique_int64(benchmark, impl, inverse):
    """unique without dim (summary.c, Note [Flat unique]) of 1e6 int64 in [0, 1024)."""
    benchmark.group = f"unique 1e6 int64{' return_inverse, counts' if inverse else ''}"
    a = np.random.default_rng(0).integers(0, 1024, (1024, 1024))
    if impl == "numpy":
        fn = lambda x: np.unique(x, return_inverse=inverse, return_counts=inverse)  # noqa: E731
    else:
        fn = lambda x: x.unique(return_inverse=inverse, return_counts=inverse)  # noqa: E731
    run(benchmark, impl, fn, a)
