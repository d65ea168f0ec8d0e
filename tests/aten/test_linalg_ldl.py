"""linalg.ldl_factor(_ex) and linalg.ldl_solve (Note [Bunch-Kaufman LDL] in linalg_ldl.c):
LD and pivots equal LAPACK's ?sytrf / ?hetrf (lower) as SciPy calls them, 1 x 1 and 2 x 2
blocks and interchanges included; ldl_solve against numpy.linalg.solve; float32, float64,
complex64 and complex128, symmetric and Hermitian, batched and broadcast, size 0,
non-contiguous, on one and two threads; PyTorch 2.13's errors."""
import re

import numpy as np
import pytest
import scipy.linalg.lapack as lapack

import pytorchlite as ptl

DTYPES = [(ptl.float64, np.float64, 1e-10), (ptl.float32, np.float32, 2e-4),
          (ptl.complex128, np.complex128, 1e-10), (ptl.complex64, np.complex64, 2e-4)]


def _sym(shape, seed, npdt, herm):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.issubdtype(npdt, np.complexfloating):
        a = a + 1j * rng.standard_normal(shape)
    at = np.swapaxes(a, -1, -2)
    return (a + (np.conj(at) if herm else at)).astype(npdt)


def _lapack(a, herm):
    f = {np.dtype(np.float32): lapack.ssytrf, np.dtype(np.float64): lapack.dsytrf,
         np.dtype(np.complex64): lapack.chetrf if herm else lapack.csytrf,
         np.dtype(np.complex128): lapack.zhetrf if herm else lapack.zsytrf}[a.dtype]
    ldu, ipiv, info = f(a, lower=1)
    return np.tril(ldu), ipiv, info


@pytest.fixture(params=DTYPES, ids=["float64", "float32", "complex128", "complex64"])
def dt(request):
    return request.param


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 8, 17, 40])
@pytest.mark.parametrize("herm", [False, True])
def test_ldl_factor_matches_lapack_and_solves(dt, n, herm, threads):
    tdt, npdt, tol = dt
    a = _sym((3, n, n), n, npdt, herm)
    LD, piv = ptl.linalg.ldl_factor(ptl.tensor(a), hermitian=herm)
    assert LD.dtype == tdt and piv.dtype == ptl.int32
    assert LD.shape == (3, n, n) and piv.shape == (3, n)
    rng = np.random.default_rng(n + 1)
    b = (rng.standard_normal((3, n, 2)) + (1j * rng.standard_normal((3, n, 2))
                                           if tdt.is_complex else 0)).astype(npdt)
    X = ptl.linalg.ldl_solve(LD, piv, ptl.tensor(b), hermitian=herm)
    assert X.dtype == tdt and X.shape == (3, n, 2)
    a64 = a.astype(np.complex128)
    for i in range(3):
        if not n:
            continue
        ld, ipiv, info = _lapack(a[i], herm)
        assert info == 0
        assert (piv.numpy()[i] == ipiv).all()
        scale = np.abs(ld).max() * n
        assert np.abs(LD.numpy()[i] - ld).max() <= tol * scale
        want = np.linalg.solve(a64[i], b[i].astype(np.complex128))
        assert np.abs(X.numpy()[i] - want).max() <= tol * 100 * max(np.abs(want).max(), 1)


def test_two_by_two_blocks_and_interchanges(dt):
    tdt, npdt, tol = dt
    seen = set()
    for seed in range(20):
        a = _sym((6, 6), 100 + seed, npdt, True)
        a[np.diag_indices(6)] = 0.01 * np.real(np.diagonal(a))
        LD, piv = ptl.linalg.ldl_factor(ptl.tensor(a), hermitian=True)
        p = piv.numpy()
        seen.update({"2x2"} if (p < 0).any() else set())
        seen.update({"swap"} if (np.abs(p) - 1 != np.arange(6)).any() else set())
        ld, ipiv, _ = _lapack(a, True)
        assert (p == ipiv).all()
        X = ptl.linalg.ldl_solve(LD, piv, ptl.eye(6, dtype=tdt), hermitian=True).numpy()
        assert np.abs(a.astype(np.complex128) @ X - np.eye(6)).max() <= tol * 1e3
    assert seen == {"2x2", "swap"}


def test_hermitian_reads_the_lower_triangle_and_real_diagonal():
    a = _sym((5, 5), 7, np.complex128, True)
    junk = a + np.triu(np.ones((5, 5)) * (3 + 4j), 1) + 2j * np.eye(5)
    LD, piv = ptl.linalg.ldl_factor(ptl.tensor(junk), hermitian=True)
    ld, ipiv, _ = _lapack(a, True)
    assert (piv.numpy() == ipiv).all()
    np.testing.assert_allclose(LD.numpy(), ld, rtol=1e-12, atol=1e-12)
    assert not np.imag(np.diagonal(LD.numpy())).any()


def test_broadcast_and_non_contiguous():
    a = _sym((2, 1, 4, 4), 8, np.float64, False)
    LD, piv = ptl.linalg.ldl_factor(ptl.tensor(a).mT)
    b = np.random.default_rng(9).standard_normal((3, 4, 2))
    X = ptl.linalg.ldl_solve(LD, piv.to(ptl.int64), ptl.tensor(b))
    assert X.shape == (2, 3, 4, 2)
    np.testing.assert_allclose(X.numpy(), np.linalg.solve(a, b), rtol=1e-10, atol=1e-10)
    big = ptl.tensor(_sym((8, 8), 10, np.float64, False))
    LD2, piv2 = ptl.linalg.ldl_factor(big[::2, ::2])
    ld, ipiv, _ = _lapack(big.numpy()[::2, ::2].copy(), False)
    assert (piv2.numpy() == ipiv).all()
    np.testing.assert_allclose(LD2.numpy(), ld, rtol=1e-12, atol=1e-12)


def test_zero_pivot_info_and_errors():
    s = np.array([[4.0, 1, 2], [1, -3, 0.5], [2, 0.5, 1]])
    A = ptl.tensor(np.stack([np.eye(3), s]))
    LD, piv, info = ptl.linalg.ldl_factor_ex(A)
    assert info.numpy().tolist() == [0, 3]
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_factor: Unknown error code: 3.")):
        ptl.linalg.ldl_factor(A)
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_factor_ex: Unknown error code: 3.")):
        ptl.linalg.ldl_factor_ex(A, check_errors=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_factor_ex: A must be batches of square matrices, but they are 2 "
            "by 3 matrices")):
        ptl.linalg.ldl_factor(ptl.ones(2, 3))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_factor_ex: The input tensor A must have at least 2 dimensions.")):
        ptl.linalg.ldl_factor(ptl.ones(3))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_factor_ex: Expected a floating point or complex tensor as input. "
            "Got Long")):
        ptl.linalg.ldl_factor(ptl.ones(3, 3, dtype=ptl.int64))
    with pytest.raises(NotImplementedError, match=re.escape(
            "\"ldl_factor_kernel_cpu\" not implemented for 'Half'")):
        ptl.linalg.ldl_factor(ptl.ones(3, 3, dtype=ptl.float16))


def test_ldl_solve_errors():
    LD, piv = ptl.linalg.ldl_factor(ptl.eye(3, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match=re.escape(
            "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 3 by 3 but "
            "each b matrix is 4 by 2")):
        ptl.linalg.ldl_solve(LD, piv, ptl.ones(4, 2, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected b and A to have the same dtype, but found b of type Float and A of type "
            "Double instead.")):
        ptl.linalg.ldl_solve(LD, piv, ptl.ones(3, 2))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_solve: Expected LD.shape[:-1] and pivots.shape to be the same, "
            "but got pivots with shape [2] instead")):
        ptl.linalg.ldl_solve(LD, piv[:2], ptl.ones(3, 2, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_solve: The input tensor A must have at least 2 dimensions.")):
        ptl.linalg.ldl_solve(LD[0], piv, ptl.ones(3, 2, dtype=ptl.float64))
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.ldl_solve: A must be batches of square matrices, but they are 2 by 3 "
            "matrices")):
        ptl.linalg.ldl_solve(LD[:2], piv, ptl.ones(3, 2, dtype=ptl.float64))
    with pytest.raises(IndexError, match=re.escape(
            "Dimension out of range (expected to be in range of [-1, 0], but got -2)")):
        ptl.linalg.ldl_solve(LD, piv, ptl.ones(3, dtype=ptl.float64))


def test_empty_batches():
    LD, piv = ptl.linalg.ldl_factor(ptl.ones(2, 0, 0))
    assert LD.shape == (2, 0, 0) and piv.shape == (2, 0) and LD.dtype == ptl.float32
    LD, piv = ptl.linalg.ldl_factor(ptl.ones(0, 3, 3, dtype=ptl.complex64))
    X = ptl.linalg.ldl_solve(LD, piv, ptl.ones(0, 3, 1, dtype=ptl.complex64))
    assert X.shape == (0, 3, 1)
