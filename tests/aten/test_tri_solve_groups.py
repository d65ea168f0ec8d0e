"""Triangular substitution in solving order (Note [Triangular substitution in solving order]
in linalg_solve.c): below TRI_FEW_RHS right-hand sides each column is substituted TRI_GROUP
rows at a time, the rows of a block (LINALG_BLOCK) subtracting its unknowns in the order they
were solved, as the many-column path does.  Sizes at and across the group, the block and the
column threshold, lower and upper, unit or not, left and right, batched on one and two
threads, against NumPy in float64; a one-block solve's bits do not depend on the number of
right-hand sides."""
import numpy as np
import pytest

import pytorchlite as ptl

GROUP = 8        # TRI_GROUP
BLOCK = 64       # LINALG_BLOCK
FEW_RHS = 8      # TRI_FEW_RHS
SIZES = [1, GROUP - 1, GROUP, GROUP + 1, 2 * GROUP + 1, BLOCK - 1, BLOCK, BLOCK + 1,
         BLOCK + GROUP, BLOCK + GROUP + 1, 2 * BLOCK + 5]
EPS = {np.float32: float(np.finfo(np.float32).eps), np.float64: float(np.finfo(np.float64).eps)}


def _triangle(n, upper, unit, seed, batch=(3,)):
    g = np.random.default_rng(seed)
    t = g.uniform(-1, 1, batch + (n, n)) / np.sqrt(max(n, 1)) + np.eye(n) * g.uniform(1, 2, n)
    tri = np.triu(t) if upper else np.tril(t)
    if unit:
        tri = tri - tri * np.eye(n) + np.eye(n)
    return t, tri


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("nrhs", [1, 3, FEW_RHS - 1, FEW_RHS])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_groups_against_numpy(n, nrhs, upper, unit, dtype, threads):
    t, tri = _triangle(n, upper, unit, n * 31 + nrhs)
    b = np.random.default_rng(n + nrhs).standard_normal((3, n, nrhs))
    t, b = t.astype(dtype), b.astype(dtype)
    tri = (np.triu(t) if upper else np.tril(t)).astype(np.float64)
    if unit:
        tri = tri - tri * np.eye(n) + np.eye(n)
    ref = np.linalg.solve(tri, b.astype(np.float64))
    got = ptl.linalg.solve_triangular(ptl.tensor(t), ptl.tensor(b), upper=upper,
                                      unitriangular=unit)
    assert got.dtype == (ptl.float32 if dtype == np.float32 else ptl.float64)
    tol = 8 * n * EPS[dtype] * np.linalg.cond(tri).max()
    np.testing.assert_allclose(got.numpy(), ref, rtol=tol, atol=tol * np.abs(ref).max())
    # X T = B: the transposed copies go through the same substitution
    right = ptl.linalg.solve_triangular(ptl.tensor(t), ptl.tensor(b).mT, upper=upper,
                                        left=False, unitriangular=unit)
    ref_r = np.swapaxes(np.linalg.solve(np.swapaxes(tri, -1, -2), b.astype(np.float64)), -1, -2)
    np.testing.assert_allclose(right.numpy(), ref_r, rtol=tol, atol=tol * np.abs(ref_r).max())


@pytest.mark.parametrize("n", [1, GROUP - 1, GROUP, GROUP + 1, 3 * GROUP + 5, BLOCK - 1, BLOCK])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
def test_one_block_bits_do_not_depend_on_columns(n, upper, unit, dtype, threads):
    """One block (no GEMM share): a column solved alone, among three, or among FEW_RHS + 1
    (the row-by-row path) gives the same bits"""
    t, _ = _triangle(n, upper, unit, n + 7, batch=(2,))
    b = np.random.default_rng(n).standard_normal((2, n, FEW_RHS + 1))
    T, B = ptl.tensor(t.astype(dtype)), ptl.tensor(b.astype(dtype))
    many = ptl.linalg.solve_triangular(T, B, upper=upper, unitriangular=unit).numpy()
    three = ptl.linalg.solve_triangular(T, B[..., 2:5], upper=upper, unitriangular=unit).numpy()
    np.testing.assert_array_equal(three, many[..., 2:5])
    for c in (0, FEW_RHS):
        one = ptl.linalg.solve_triangular(T, B[..., c:c + 1], upper=upper, unitriangular=unit)
        np.testing.assert_array_equal(one.numpy(), many[..., c:c + 1])


def test_views_and_empty_sizes(threads):
    """A transposed (non-contiguous) triangle and a strided right-hand side; 0 x 0 systems
    and no right-hand sides"""
    n = BLOCK + GROUP + 3
    t, _ = _triangle(n, False, False, 5, batch=())
    b = np.random.default_rng(6).standard_normal((n, 2 * FEW_RHS))
    T, B = ptl.tensor(t.T.copy()).mT, ptl.tensor(b)[:, ::4]
    got = ptl.linalg.solve_triangular(T, B, upper=False)
    ref = np.linalg.solve(np.tril(t), b[:, ::4])
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)
    got_u = ptl.linalg.solve_triangular(T.mT, B, upper=True)
    np.testing.assert_allclose(got_u.numpy(), np.linalg.solve(np.triu(t.T), b[:, ::4]),
                               rtol=1e-12, atol=1e-12)
    assert ptl.linalg.solve_triangular(ptl.zeros(0, 0), ptl.zeros(0, 3), upper=True).shape \
        == (0, 3)
    assert ptl.linalg.solve_triangular(T, ptl.zeros(n, 0), upper=False).shape == (n, 0)


@pytest.mark.parametrize("n", [GROUP + 1, BLOCK + 1, 2 * BLOCK + 5])
def test_linalg_solve_one_vector(n, threads):
    """linalg.solve's back substitution (upper, descending) and forward one (unit lower)"""
    a = np.random.default_rng(n).uniform(-1, 1, (3, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    b = np.random.default_rng(n + 1).standard_normal((3, n))
    got = ptl.linalg.solve(ptl.tensor(a), ptl.tensor(b))
    np.testing.assert_allclose(got.numpy(), np.linalg.solve(a, b[..., None])[..., 0],
                               rtol=1e-11, atol=1e-12)
