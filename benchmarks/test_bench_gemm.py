"""SGEMM on the shapes training uses, on one thread and on two: squares 128 to 2048, the skinny
64x4096 @ 4096x1024, autograd's transposed cases 256x784 @ (512x784)^T and 128x784 @
(512x784)^T, one row through a Linear layer (x @ W^T, and W @ x), the training steps'
products in the three forms autograd produces (forward x @ W^T, input grad g @ W, weight
grad g^T @ x) on the GPT's (1024 tokens) and the MLP's (batch 128, 784-512-256-10) shapes,
einsum 'bij,bjk' of 64 matrices of 64 x 64, and the products accumulated in place,
c.addmm_(a, b) and c.baddbmm_(a, b) (NumPy: c += a @ b).  Each group runs pytorchlite, NumPy
(OpenBLAS) and PyTorch (MKL / oneDNN) when installed, all three limited to the same number
of threads (NumPy's through OpenBLAS's own openblas_set_num_threads, found next to NumPy).

    pytest benchmarks/test_bench_gemm.py --benchmark-enable -q
"""
import ctypes
import glob
import os

import numpy as np
import pytest

import pytorchlite as ptl
from _impls import IMPLS, lib, make, randn, torch


def _openblas_set_num_threads():
    """NumPy's OpenBLAS thread-count setter, or None when NumPy ships another BLAS."""
    base = os.path.dirname(np.__file__)
    for path in glob.glob(os.path.join(base, "..", "numpy.libs", "*openblas*")) + \
            glob.glob(os.path.join(base, ".libs", "*openblas*")):
        blas = ctypes.CDLL(path)
        for name in ("scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_",
                     "openblas_set_num_threads"):
            if hasattr(blas, name):
                return getattr(blas, name)
    return None


SET_NUMPY_THREADS = _openblas_set_num_threads()


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    n = request.param
    old = ptl.get_num_threads()
    old_t = torch.get_num_threads() if torch is not None else None
    ptl.set_num_threads(n)
    if torch is not None:
        torch.set_num_threads(n)
    if SET_NUMPY_THREADS is not None:
        SET_NUMPY_THREADS(n)
    yield n
    ptl.set_num_threads(old)
    if torch is not None:
        torch.set_num_threads(old_t)


def _numpy_threads_known(impl):
    if impl == "numpy" and SET_NUMPY_THREADS is None:
        pytest.skip("NumPy's BLAS is not OpenBLAS: its thread count cannot be set here")


# (m, k, n, B transposed)
SHAPES = [(128, 128, 128, False), (256, 256, 256, False), (512, 512, 512, False),
          (1024, 1024, 1024, False), (2048, 2048, 2048, False), (64, 4096, 1024, False),
          (256, 784, 512, True), (128, 784, 512, True)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("m,k,n,bt", SHAPES)
def test_sgemm(benchmark, impl, m, k, n, bt, threads):
    _numpy_threads_known(impl)
    what = f"({n}x{k})^T" if bt else f"{k}x{n}"
    benchmark.group = f"sgemm {m}x{k} @ {what} float32, {threads} thread(s)"
    a = make(impl, randn((m, k)))
    b = make(impl, randn((n, k), 1) if bt else randn((k, n), 1))
    if bt:
        b = b.T if impl == "numpy" else b.t()
    out = benchmark(lambda x, y: x @ y, a, b)
    assert tuple(out.shape) == (m, n)


# (rows, in, out) of the training steps' linear layers: the GPT's (1024 tokens; attention
# projections, MLP up and down, head) and the MLP's (batch 128); and a layer of 65 inputs
# (a one-hot vocabulary: its weight gradient's last column is a tail of a transposed A, Note
# [GEMM last columns])
TRAINING_LAYERS = [(1024, 128, 384), (1024, 128, 128), (1024, 128, 512), (1024, 512, 128),
                   (1024, 128, 65), (128, 784, 512), (128, 512, 256), (128, 256, 10),
                   (1024, 65, 1024)]
# each layer's three products: (a shape, b shape, transpose a, transpose b)
TRAINING_FORMS = {
    "forward x @ W^T": lambda r, i, o: ((r, i), (o, i), False, True),
    "input grad g @ W": lambda r, i, o: ((r, o), (o, i), False, False),
    "weight grad g^T @ x": lambda r, i, o: ((r, o), (r, i), True, False),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("layer", TRAINING_LAYERS, ids=lambda l: "x".join(map(str, l)))
@pytest.mark.parametrize("form", list(TRAINING_FORMS))
def test_sgemm_training_shapes(benchmark, impl, layer, form, threads):
    _numpy_threads_known(impl)
    ashape, bshape, ta, tb = TRAINING_FORMS[form](*layer)
    benchmark.group = (f"sgemm training shapes {form}, layer {'x'.join(map(str, layer))} "
                       f"float32, {threads} thread(s)")
    a, b = make(impl, randn(ashape)), make(impl, randn(bshape, 1))
    if ta:
        a = a.T if impl == "numpy" else a.t()
    if tb:
        b = b.T if impl == "numpy" else b.t()
    out = benchmark(lambda x, y: x @ y, a, b)
    assert out.shape[0] == a.shape[0] and out.shape[1] == b.shape[1]


# one input row through a Linear layer, x @ W^T (inference at batch 1; linear_cross_entropy's
# one-row chunks): (in, out); and W @ x, the same dot products as a column
MATRIX_VECTOR = [(64, 8192), (512, 512), (784, 512), (4096, 1024)]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("k,n", MATRIX_VECTOR, ids=lambda v: str(v))
@pytest.mark.parametrize("form", ["x @ W^T", "W @ x"])
def test_sgemv(benchmark, impl, k, n, form, threads):
    _numpy_threads_known(impl)
    benchmark.group = f"sgemv {form}, W {n}x{k} float32, {threads} thread(s)"
    w, x = make(impl, randn((n, k))), make(impl, randn((1, k), 1))
    t = (lambda m: m.T) if impl == "numpy" else (lambda m: m.t())
    a, b = (x, t(w)) if form == "x @ W^T" else (w, t(x))
    out = benchmark(lambda p, q: p @ q, a, b)
    assert out.shape[0] * out.shape[1] == n


@pytest.mark.parametrize("impl", IMPLS)
def test_einsum_batched(benchmark, impl, threads):
    _numpy_threads_known(impl)
    benchmark.group = f"einsum bij,bjk (64, 64, 64) float32, {threads} thread(s)"
    x, y = make(impl, randn((64, 64, 64))), make(impl, randn((64, 64, 64), 1))
    if impl == "numpy":
        fn = lambda p, q: np.einsum("bij,bjk->bik", p, q, optimize=True)  # noqa: E731
    else:
        fn = lambda p, q: lib(impl).einsum("bij,bjk->bik", p, q)  # noqa: E731
    out = benchmark(fn, x, y)
    assert tuple(out.shape) == (64, 64, 64)


# products accumulated into c: (batch or 0 for addmm_, m, k, n)
IN_PLACE = [(0, 16, 16, 16), (0, 128, 128, 128), (0, 512, 128, 784), (8, 16, 16, 16),
            (16, 64, 64, 64)]


def _accumulate(impl):
    if impl == "numpy":
        return lambda c, a, b: np.add(c, a @ b, out=c)
    return lambda c, a, b: (c.baddbmm_ if c.dim() == 3 else c.addmm_)(a, b)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("batch,m,k,n", IN_PLACE)
def test_products_in_place(benchmark, impl, batch, m, k, n, threads):
    _numpy_threads_known(impl)
    lead = (batch,) if batch else ()
    name = "baddbmm_" if batch else "addmm_"
    benchmark.group = (f"c.{name}(a, b) {'x'.join(map(str, lead + (m, k)))} @ {k}x{n} "
                       f"float32, {threads} thread(s)")
    c = make(impl, np.zeros(lead + (m, n), np.float32))
    a, b = make(impl, randn(lead + (m, k))), make(impl, randn(lead + (k, n), 1))
    out = benchmark(_accumulate(impl), c, a, b)
    assert tuple(out.shape) == lead + (m, n)


def test_results_agree():
    """The timed products compute what float64 NumPy computes."""
    a, b = randn((64, 300)), randn((300, 70), 1)
    ours = (ptl.tensor(a) @ ptl.tensor(b)).numpy()
    np.testing.assert_allclose(ours, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-4, atol=1e-4)
