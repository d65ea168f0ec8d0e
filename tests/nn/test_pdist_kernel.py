"""pdist's CPU kernels _pdist_forward / _pdist_backward (linalg_norm.c, Note [Pdist loops])
against NumPy in float64: every p kind, row counts around the groups of PDIST_ROWS = 4 rows,
column counts around the 8-float steps, non-contiguous inputs, the pair ranges of the
threads (at and across the grain of PTL_GRAIN_SIZE / (M + 1) pairs) on 1 and 2 threads, the
AVX2 and the portable loops, gradcheck (zero distances included) and PyTorch's errors."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import NP_DTYPE, assert_close, assert_raises_like_torch, num_threads, \
    rerun_with_capability

GRAIN = 32768
PS = [2.0, 1.0, 0.0, np.inf, 0.5, 1.5, 3.0]


def _np_pdist(a, p):
    i, j = np.triu_indices(a.shape[0], 1)
    d = np.abs(a[i] - a[j])
    if d.shape[1] == 0:
        return np.zeros(len(i))
    if p == np.inf:
        return d.max(1)
    if p == 0:
        return (d != 0).sum(1).astype(np.float64)
    return (d ** p).sum(1) ** (1 / p)


def _np_pdist_grad(a, p, g, dist, npdt=np.float64):
    """d(sum g * pdist) / d a in float64 given the distances, PyTorch's formulas per p (for
    p = inf |diff| as the dtype npdt holds it, which the distance was rounded to)."""
    n = a.shape[0]
    i, j = np.triu_indices(n, 1)
    diff = a[i] - a[j]
    dist = dist[:, None]
    gg = g[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        if p == 0:
            t = np.zeros_like(diff)
        elif p == 1:
            t = gg * np.sign(diff)
        elif p == 2:
            t = np.where(dist == 0, 0, gg * diff / dist)
        elif p == np.inf:
            t = np.where(np.abs(diff).astype(npdt) == dist, gg * np.sign(diff), 0)
        elif p < 2:
            t = np.where((dist == 0) | ((diff == 0) & (p < 1)), 0,
                         np.sign(diff) * np.abs(diff) ** (p - 1) * gg / dist ** (p - 1))
        else:
            t = np.where(dist == 0, 0, diff * np.abs(diff) ** (p - 2) * gg / dist ** (p - 1))
    out = np.zeros_like(a)
    np.add.at(out, i, t)
    np.add.at(out, j, -t)
    return out


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_forward_against_numpy(threads, dtype):
    rng = np.random.default_rng(0)
    with num_threads(threads):
        for n in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13]:
            for m in [0, 1, 7, 8, 9, 16, 17, 64, 65]:
                a = rng.standard_normal((n, m))
                x = ptl.tensor(a, dtype=dtype)
                for p in PS:
                    want = _np_pdist(x.double().numpy(), p)
                    got = ptl.pdist(x, p)
                    assert got.dtype == dtype and got.shape == (n * (n - 1) // 2,)
                    if p == 0:
                        np.testing.assert_array_equal(got.numpy(), want)
                    else:
                        assert_close(got, want, dtype=dtype)


def test_float32_p2_accuracy():
    # the float lanes of the AVX2 loop: within a few float32 ulps of the float64 distance of
    # the float32 inputs (as PyTorch's float sums are), also far from the origin
    rng = np.random.default_rng(1)
    for shift in [0.0, 1e3]:
        a = (rng.standard_normal((60, 300)) + shift).astype(np.float32)
        want = _np_pdist(a.astype(np.float64), 2)
        got = ptl.pdist(ptl.tensor(a)).numpy().astype(np.float64)
        assert np.max(np.abs(got - want) / want) < 4e-7
        want1 = _np_pdist(a.astype(np.float64), 1)
        got1 = ptl.pdist(ptl.tensor(a), 1).numpy().astype(np.float64)
        assert np.max(np.abs(got1 - want1) / want1) < 4e-7


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_non_contiguous_and_special_values(dtype):
    rng = np.random.default_rng(2)
    a = rng.standard_normal((20, 12))
    t = ptl.tensor(a, dtype=dtype)
    for x, ref in [(t[:, ::2], a[:, ::2]), (t.t().contiguous().t(), a), (t[::3], a[::3]),
                   (ptl.tensor(a.T.copy(), dtype=dtype).t(), a)]:
        for p in PS:
            assert_close(ptl.pdist(x, p), _np_pdist(ref, p), dtype=dtype)
    b = a[:6, :9].copy()
    b[1, 3], b[4, 8] = np.nan, np.inf
    got = ptl.pdist(ptl.tensor(b, dtype=dtype)).numpy()
    want = _np_pdist(b, 2)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(want))
    same = ptl.tensor(np.ones((5, 10)), dtype=dtype)
    for p in PS:
        np.testing.assert_array_equal(ptl.pdist(same, p).numpy(), np.zeros(10))


@pytest.mark.parametrize("m", [1, 8, 63])
def test_thread_ranges_give_the_one_thread_bits(m):
    # pairs * (m + 1) at, below and above PTL_GRAIN_SIZE, and many grains (ranges that start
    # inside a row and inside a group of four rows j)
    per = m + 1
    rng = np.random.default_rng(3)
    for pairs_goal in [GRAIN // per - 1, GRAIN // per, GRAIN // per + 1, 5 * GRAIN // per]:
        n = int((1 + np.sqrt(1 + 8 * pairs_goal)) / 2) + 1
        for dtype in (ptl.float32, ptl.float64):
            x = ptl.tensor(rng.standard_normal((n, m)), dtype=dtype)
            for p in (2.0, 1.0, 3.0):
                with num_threads(1):
                    one = ptl.pdist(x, p).numpy()
                with num_threads(2):
                    two = ptl.pdist(x, p).numpy()
                np.testing.assert_array_equal(one, two)
                assert_close(ptl.tensor(one), _np_pdist(x.double().numpy(), p), dtype=dtype)


def test_portable_loops():
    # the same module under PTL_CPU_CAPABILITY=default: the double loop for every p
    rerun_with_capability(__file__, "default", "-k", "forward_against_numpy or special")


@pytest.mark.parametrize("p", PS)
def test_gradcheck(p):
    rng = np.random.default_rng(4)
    for shape in [(4, 3), (6, 9), (2, 1)]:
        a = rng.standard_normal(shape)
        assert gradcheck(lambda t: ptl.pdist(t, p), (ptl.tensor(a, requires_grad=True),))
    x = ptl.ones(3, 2, dtype=ptl.float64, requires_grad=True)   # zero distances: zero grad
    ptl.pdist(x, p).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.zeros((3, 2)))


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_backward_against_numpy(dtype):
    rng = np.random.default_rng(5)
    for n, m in [(0, 3), (1, 3), (2, 0), (7, 9), (12, 17)]:
        a = rng.standard_normal((n, m))
        x = ptl.tensor(a, dtype=dtype, requires_grad=True)
        ad = x.detach().double().numpy()
        g = ptl.tensor(rng.standard_normal(n * (n - 1) // 2), dtype=dtype)
        for p in PS:
            # the distances as the kernel rounded them (p < 1 sums terms |diff|^(p-1) that
            # cancel, so float32's rounding of dist would show)
            x.grad = None
            d = ptl.pdist(x, p)
            d.backward(g)
            want = _np_pdist_grad(ad, p, g.double().numpy(), d.detach().double().numpy(),
                                  NP_DTYPE[dtype])
            assert_close(x.grad, want, dtype=dtype)


def test_errors():
    assert_raises_like_torch(lambda m: m.pdist(m.ones(3, 2, dtype=m.float16)),
                             NotImplementedError, "\"pdist\" not implemented for 'Half'")
    assert_raises_like_torch(lambda m: m.pdist(m.ones(3, 2, dtype=m.bfloat16)),
                             NotImplementedError, "\"pdist\" not implemented for 'BFloat16'")
    assert_raises_like_torch(lambda m: m.ops.aten._pdist_forward(m.ones(3, 2, dtype=m.int64)),
                             NotImplementedError, "\"pdist\" not implemented for 'Long'")
    assert_raises_like_torch(
        lambda m: m.ops.aten._pdist_backward(m.ones(3), m.ones(3, 2, dtype=m.int64), 2.0,
                                             m.ones(3)),
        NotImplementedError, "\"pdist_backward\" not implemented for 'Long'")
    with pytest.raises(RuntimeError, match="pdist only supports 2D tensors, got: 3D"):
        ptl.ops.aten._pdist_forward(ptl.ones(3, 2, 4))
    with pytest.raises(RuntimeError, match="expected grad of 3 elements"):
        ptl.ops.aten._pdist_backward(ptl.ones(2), ptl.ones(3, 2), 2.0, ptl.ones(3))
