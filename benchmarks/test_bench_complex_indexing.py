"""The gather / scatter / index family on complex128 (tests/aten/test_complex_indexing.py)
on one thread: gather, scatter_add, scatter_reduce prod, index_add with a complex alpha and
index_put_ with accumulate; take of 256K elements for complex and real dtypes (np.take).  Each group runs pytorchlite, NumPy (np.take_along_axis,
np.add.at, np.multiply.at on complex128 arrays) and PyTorch when installed.  The ratios of
docs/performance.md come from benchmarks/interleaved_complex_indexing.py, which alternates
the libraries block by block.

    taskset -c 1 /work/venv-torch/bin/python -m pytest benchmarks/test_bench_complex_indexing.py \
        --benchmark-enable -q
"""
import numpy as np
import pytest

from _impls import IMPLS, both_on_one_thread, lib

N = 512


@pytest.fixture(autouse=True)
def one_thread():
    with both_on_one_thread():
        yield


def data():
    g = np.random.default_rng(0)
    x = g.standard_normal((N, N)) + 1j * g.standard_normal((N, N))
    return x, g.integers(0, N, (N, N)), g.integers(0, N, N)


def make(impl, a):
    return a if impl == "numpy" else lib(impl).from_numpy(a.copy())


def np_scatter(x, idx, op):
    out = x.copy()
    rows = np.broadcast_to(np.arange(N)[:, None], idx.shape)
    op.at(out, (rows, idx), x)
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["gather", "scatter_add", "scatter_reduce_prod",
                                "index_add_alpha", "index_put_accumulate"])
def test_complex_indexing(benchmark, impl, op):
    benchmark.group = f"{op} {N}x{N} complex128"
    x, idx, rows = data()
    tx, ti, tr, tv = make(impl, x), make(impl, idx), make(impl, rows), make(impl, x)
    if impl == "numpy":
        fn = {"gather": lambda: np.take_along_axis(tx, ti, 1),
              "scatter_add": lambda: np_scatter(tx, ti, np.add),
              "scatter_reduce_prod": lambda: np_scatter(tx, ti, np.multiply),
              "index_add_alpha": lambda: np.add.at(tx.copy(), tr, (2 - 1j) * tv),
              "index_put_accumulate": lambda: np.add.at(tx, tr, tv)}[op]
    else:
        fn = {"gather": lambda: tx.gather(1, ti),
              "scatter_add": lambda: tx.scatter_add(1, ti, tx),
              "scatter_reduce_prod": lambda: tx.scatter_reduce(1, ti, tx, "prod"),
              "index_add_alpha": lambda: tx.index_add(0, tr, tv, alpha=2 - 1j),
              "index_put_accumulate": lambda: tx.index_put_((tr,), tv, accumulate=True)}[op]
    benchmark(fn)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "int64"])
def test_take(benchmark, impl, dtype):
    benchmark.group = f"take 256K of {N}x{N} {dtype}"
    x, idx, _ = data()
    x = (x if dtype.startswith("complex") else x.real * 100).astype(dtype)
    tx, ti = make(impl, x), make(impl, idx)
    benchmark(lambda: np.take(tx, ti) if impl == "numpy" else tx.take(ti))
