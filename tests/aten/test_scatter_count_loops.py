"""scatter_row's typed loops with counts (scatter_gather.c): float32/float64 scatter_reduce
with reduce="mean" or include_self=False, against a sequential NumPy reference in the
tensor's dtype (the same order, so the same bits), at and across ROW_CHUNK = 256 and with
NaN, on 1 and 2 threads."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import NP_DTYPE, assert_raises_like_torch, num_threads


def _fold(a, b, reduce):
    if reduce in ("sum", "mean"):
        return a + b
    if reduce == "prod":
        return a * b
    if reduce == "amax":
        return a if (a != a or a > b) else b
    return a if (a != a or a < b) else b


def _sequential(a, idx, v, reduce, include_self):
    """scatter_reduce of 1-D arrays in index order, in a's dtype."""
    out, count = a.copy(), np.zeros(a.shape[0], np.int64)
    for k, b in zip(idx, v):
        out[k] = b if (not include_self and count[k] == 0) else _fold(out[k], b, reduce)
        count[k] += 1
    if reduce == "mean":
        c = count + (1 if include_self else 0)
        hit = count > 0
        out[hit] = (out[hit].astype(np.float64) / c[hit]).astype(a.dtype)
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_count_loops_match_sequential_bits(threads, dtype, reduce, include_self):
    npdt = NP_DTYPE[dtype]
    rng = np.random.default_rng(11)
    with num_threads(threads):
        for n in [0, 1, 255, 256, 257, 1000]:
            for size in [1, 7, 300]:
                a = rng.standard_normal(size).astype(npdt)
                v = (1 + rng.standard_normal(2 * n) / 8).astype(npdt)
                if n > 3:
                    v[3] = np.nan
                i = rng.integers(0, size, 2 * n)
                want = _sequential(a, i[::2], v[::2], reduce, include_self)
                got = ptl.tensor(a).scatter_reduce(0, ptl.tensor(i)[::2], ptl.tensor(v)[::2],
                                                   reduce, include_self=include_self)
                np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("reduce", ["mean", "amax"])
def test_count_loops_2d_and_in_place(reduce):
    # a transposed 2-D self along either dim, and the in-place form
    rng = np.random.default_rng(12)
    a = rng.standard_normal((30, 40))
    i = rng.integers(0, 30, (50, 40))
    v = rng.standard_normal((50, 40))
    x = ptl.tensor(a.T.copy()).t()
    want = a.copy()
    for c in range(40):
        want[:, c] = _sequential(a[:, c], i[:, c], v[:, c], reduce, False)
    got = x.scatter_reduce(0, ptl.tensor(i), ptl.tensor(v), reduce, include_self=False)
    np.testing.assert_array_equal(got.numpy(), want)
    y = ptl.tensor(a.T.copy())
    assert y.scatter_reduce_(1, ptl.tensor(i.T.copy()), ptl.tensor(v.T.copy()), reduce,
                             include_self=False) is y
    np.testing.assert_array_equal(y.numpy(), want.T)


def test_count_loops_errors():
    assert_raises_like_torch(
        lambda m: m.zeros(7).scatter_reduce(0, m.tensor([1, 7]), m.ones(2), "mean"),
        RuntimeError, "index 7 is out of bounds for dimension 0 with size 7")
    assert_raises_like_torch(
        lambda m: m.zeros(7).scatter_reduce(0, m.tensor([1, -1]), m.ones(2), "amax",
                                            include_self=False),
        RuntimeError, "index -1 is out of bounds for dimension 0 with size 7")
    assert_raises_like_torch(
        lambda m: m.zeros(7, dtype=m.bool).scatter_reduce(0, m.tensor([1]),
                                                          m.ones(1, dtype=m.bool), "mean"),
        NotImplementedError,
        "\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
