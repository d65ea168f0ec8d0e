"""Complex GEMM (src/aten/native/gemm_complex.c) on one thread and on two: complex64 and
complex128 squares 64 to 512, a product with B^H (an mH view, autograd's g @ B^H), a batch
of 64 matrices of 64 x 64 (bmm), batches of 2 x 2, 8 x 8 and 16 x 16 matrices (the tiny
kernels) and a 1024 x 1024 matrix-vector product.  Each group runs pytorchlite, NumPy and
PyTorch when installed (all three on the same number of threads, as
benchmarks/test_bench_gemm.py sets them).  The one-thread ratios of docs/performance.md come
from benchmarks/interleaved_complex_gemm.py, which alternates the libraries call by call.

    pytest benchmarks/test_bench_gemm_complex.py --benchmark-enable -q
"""
import numpy as np
import pytest

from _impls import IMPLS, lib
from test_bench_gemm import _numpy_threads_known, threads  # noqa: F401  (the fixture)

DTYPES = {"complex64": np.complex64, "complex128": np.complex128}


def crandn(shape, dtype, seed=0):
    g = np.random.default_rng(seed)
    return (g.standard_normal(shape) + 1j * g.standard_normal(shape)).astype(DTYPES[dtype])


def make(impl, a):
    return a if impl == "numpy" else lib(impl).from_numpy(a.copy())


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [64, 256, 512])
def test_complex_mm(benchmark, impl, dtype, n, threads):  # noqa: F811
    _numpy_threads_known(impl)
    benchmark.group = f"mm {n}x{n} @ {n}x{n} {dtype}, {threads} thread(s)"
    a, b = make(impl, crandn((n, n), dtype)), make(impl, crandn((n, n), dtype, 1))
    out = benchmark(lambda x, y: x @ y, a, b)
    assert tuple(out.shape) == (n, n)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_complex_mm_conj_transposed(benchmark, impl, dtype, threads):  # noqa: F811
    _numpy_threads_known(impl)
    benchmark.group = f"mm 256x256 @ (256x256)^H {dtype}, {threads} thread(s)"
    a, b = make(impl, crandn((256, 256), dtype)), make(impl, crandn((256, 256), dtype, 1))
    out = benchmark(lambda x, y: x @ (y.conj().T if impl == "numpy" else y.mH), a, b)
    assert tuple(out.shape) == (256, 256)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_complex_bmm(benchmark, impl, dtype, threads):  # noqa: F811
    _numpy_threads_known(impl)
    benchmark.group = f"bmm 64 x (64x64 @ 64x64) {dtype}, {threads} thread(s)"
    a, b = make(impl, crandn((64, 64, 64), dtype)), make(impl, crandn((64, 64, 64), dtype, 1))
    out = benchmark(lambda x, y: x @ y, a, b)
    assert tuple(out.shape) == (64, 64, 64)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
@pytest.mark.parametrize("n", [2, 8, 16])
def test_complex_bmm_small(benchmark, impl, dtype, n, threads):  # noqa: F811
    _numpy_threads_known(impl)
    bs = 80000 // n ** 2
    benchmark.group = f"bmm {bs} x ({n}x{n} @ {n}x{n}) {dtype}, {threads} thread(s)"
    a, b = make(impl, crandn((bs, n, n), dtype)), make(impl, crandn((bs, n, n), dtype, 1))
    out = benchmark(lambda x, y: x @ y, a, b)
    assert tuple(out.shape) == (bs, n, n)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_complex_mv(benchmark, impl, dtype, threads):  # noqa: F811
    _numpy_threads_known(impl)
    benchmark.group = f"mv 1024x1024 @ 1024 {dtype}, {threads} thread(s)"
    a, v = make(impl, crandn((1024, 1024), dtype)), make(impl, crandn(1024, dtype, 1))
    out = benchmark(lambda x, y: x @ y, a, v)
    assert tuple(out.shape) == (1024,)
