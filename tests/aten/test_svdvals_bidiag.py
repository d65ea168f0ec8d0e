"""The singular values without vectors (Note [Bidiagonal singular values], svd.c):
linalg.svdvals and _linalg_svd(compute_uv=False) by Householder bidiagonalization and
shifted QR steps on the bidiagonal, and what takes only values (matrix_rank, cond, lstsq's
rank count, the spectral norms).  Reference: numpy.linalg.svd in float64; the values are
checked to absolute error 10 max(m, n) eps sigma_max."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C

from helpers import make, torch

_linalg_svd = _C._op("aten::_linalg_svd")
EPS = {ptl.float32: np.finfo(np.float32).eps, ptl.float64: np.finfo(np.float64).eps}


def _check(S, a, dtype):
    a = np.asarray(a, dtype=np.float64)
    ref = np.linalg.svd(a, compute_uv=False) if min(a.shape[-2:]) > 0 else \
        np.zeros(a.shape[:-2] + (0,))
    got = np.array(S.numpy(), dtype=np.float64)
    assert S.dtype == dtype and got.shape == ref.shape
    if ref.size == 0:
        return
    smax = ref[..., :1]
    tol = 10 * max(a.shape[-2:]) * EPS[dtype] * smax
    assert np.all(np.abs(got - ref) <= tol), np.abs(got - ref).max() / smax.max()
    assert np.all(got >= 0) and np.all(np.diff(got, axis=-1) <= 0)


# around the QR-first switch (r >= 5c/3) and across sizes from 0 to 130
SIZES = [0, 1, 2, 3, 4, 7, 16, 29, 30, 31, 32, 33, 49, 50, 51, 64, 65, 83, 84, 100, 130]


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("m", SIZES)
def test_shapes_match_numpy(m, dtype):
    for n in SIZES:
        x, a = make((m, n), dtype, seed=m * 131 + n)
        _check(ptl.linalg.svdvals(x), a, dtype)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("shape", [(3, 40, 25), (2, 2, 25, 40), (4, 90, 20), (2, 0, 5),
                                   (0, 4, 4), (5, 1, 1)])
def test_batched_and_strided(shape, layout):
    x, a = make(shape, ptl.float64, layout, seed=sum(shape))
    _check(ptl.linalg.svdvals(x), a, ptl.float64)
    U, S, Vh = _linalg_svd(x, False, False)
    assert tuple(U.shape) == (0,) and tuple(Vh.shape) == (0,)
    _check(S, a, ptl.float64)


def _with_values(s, m, n, seed):
    gen = np.random.default_rng(seed)
    u, _ = np.linalg.qr(gen.standard_normal((m, m)))
    v, _ = np.linalg.qr(gen.standard_normal((n, n)))
    k = min(m, n)
    return (u[:, :k] * np.asarray(s, dtype=np.float64)) @ v[:, :k].T


@pytest.mark.parametrize("m,n", [(40, 40), (70, 30), (30, 70), (120, 20)])
@pytest.mark.parametrize("case", ["rank1", "rank_half", "zero", "repeated", "graded",
                                  "clustered"])
def test_structured_values(case, m, n):
    k = min(m, n)
    s = {"rank1": [5.0] + [0.0] * (k - 1),
         "rank_half": list(np.linspace(3, 1, k // 2)) + [0.0] * (k - k // 2),
         "zero": [0.0] * k,
         "repeated": [2.0] * (k // 3) + [1.0] * (k - k // 3),
         "graded": list(np.logspace(0, -30, k)),
         "clustered": list(1 + 1e-13 * np.arange(k)[::-1])}[case]
    a = _with_values(s, m, n, seed=m + n)
    _check(ptl.linalg.svdvals(ptl.tensor(a)), a, ptl.float64)
    _check(ptl.linalg.svdvals(ptl.tensor(a, dtype=ptl.float32)),
           a.astype(np.float32), ptl.float32)


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300, 5e-324])
def test_extreme_scales(scale):
    _, a = make((37, 23), ptl.float64, seed=3)
    a = a * scale / 5
    assert np.isfinite(a).all()
    for x in (a, a.T):
        _check(ptl.linalg.svdvals(ptl.tensor(x)), x, ptl.float64)


def test_columns_and_rows_of_tiny_scale():
    # a column below 1e-154 times the rest: its squared norm underflows, and the reduction
    # takes the careful reflection for it
    _, a = make((40, 30), ptl.float64, seed=17)
    a[:, 5] *= 1e-160
    a[7, :] *= 1e-170
    for x in (a, a.T, a[:12]):
        _check(ptl.linalg.svdvals(ptl.tensor(x)), x, ptl.float64)


@pytest.mark.parametrize("d,e", [
    ([3.0, 0.0, 2.0, 1.0], [1.0, 1.0, 1.0]),      # a zero in the middle of the diagonal
    ([3.0, 2.0, 1.0, 0.0], [1.0, 1.0, 1.0]),      # a zero at its end
    ([0.0, 2.0, 0.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]),
    ([1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 0.0]),      # split blocks
    ([1e-20, 1.0, 1e-20], [1.0, 1e-20]),
])
def test_bidiagonal_inputs(d, e):
    # an upper bidiagonal matrix stays one under the reduction: the QR steps see (d, e)
    a = np.diag(d) + np.diag(e, 1)
    _check(ptl.linalg.svdvals(ptl.tensor(a)), a, ptl.float64)
    _check(ptl.linalg.svdvals(ptl.tensor(a.T.copy())), a.T, ptl.float64)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_raises(bad):
    a = np.ones((2, 6, 5))
    a[1, 3, 2] = bad
    with pytest.raises(RuntimeError, match="input matrix contained non-finite values"):
        ptl.linalg.svdvals(ptl.tensor(a))


def test_threads_give_identical_bits():
    _, a = make((6, 70, 45), ptl.float64, seed=7)
    x = ptl.tensor(a)
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        s1 = ptl.linalg.svdvals(x).numpy()
        ptl.set_num_threads(2)
        s2 = ptl.linalg.svdvals(x).numpy()
    finally:
        ptl.set_num_threads(old)
    assert np.array_equal(s1, s2)
    for i in range(6):
        assert np.array_equal(ptl.linalg.svdvals(x[i]).numpy(), s1[i])


def test_grad_mode_takes_the_vectors():
    # svdvals of a tensor needing a gradient keeps the Jacobi path (its backward uses U, V)
    _, a = make((9, 6), ptl.float64, seed=11)
    x = ptl.tensor(a, requires_grad=True)
    S = ptl.linalg.svdvals(x)
    _check(S.detach(), a, ptl.float64)
    S.sum().backward()
    u, _, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose(x.grad.numpy(), u @ vh, atol=1e-12)
    with ptl.no_grad():
        _check(ptl.linalg.svdvals(x), a, ptl.float64)


def test_value_consumers():
    gen = np.random.default_rng(5)
    a = gen.standard_normal((60, 8)) @ gen.standard_normal((8, 40))
    x = ptl.tensor(a)
    assert ptl.linalg.matrix_rank(x).item() == np.linalg.matrix_rank(a) == 8
    b = gen.standard_normal((60, 3))
    res = ptl.linalg.lstsq(x, ptl.tensor(b))
    assert res.rank.item() == 8
    np.testing.assert_allclose(res.solution.numpy(), np.linalg.lstsq(a, b, rcond=None)[0],
                               atol=1e-8)
    f = gen.standard_normal((30, 20))
    sv = np.linalg.svd(f, compute_uv=False)
    np.testing.assert_allclose(ptl.linalg.cond(ptl.tensor(f)).item(), sv[0] / sv[-1],
                               rtol=1e-10)
    np.testing.assert_allclose(ptl.linalg.matrix_norm(ptl.tensor(f), "nuc").item(), sv.sum(),
                               rtol=1e-12)
    np.testing.assert_allclose(ptl.linalg.matrix_norm(ptl.tensor(f), 2).item(), sv[0],
                               rtol=1e-12)


@pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
def test_matches_torch_float32():
    _, a = make((3, 50, 20), ptl.float32, seed=13)
    got = ptl.linalg.svdvals(ptl.tensor(a)).numpy()
    ref = torch.linalg.svdvals(torch.tensor(a)).numpy()
    np.testing.assert_allclose(got, ref, atol=1e-4 * ref.max())
