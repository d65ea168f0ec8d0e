"""Triangular substitution in solving order (Note [Triangular substitution in solving order]
in linalg_solve.c): one right-hand side by dot products in lanes, TRI_GROUP rows at a time;
2 to TRI_NARROW_RHS - 1 in one pass in vectors of columns (half vectors when all the columns
fit or the CPU has no AVX-512: the file runs again with the capability capped), each row subtracting the unknowns in the order they were solved; more in blocks
(LINALG_BLOCK) with the GEMM.  Sizes at and across the group, the block, the column thresholds
and the one-pass copy's stack limit, lower and upper, unit or not, left and right, batched on
one and two threads, against NumPy in float64; from two right-hand sides on, a one-block
solve's bits, and any solve's below TRI_NARROW_RHS, do not depend on the number of columns."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import capability_reruns

GROUP = 8        # TRI_GROUP
BLOCK = 64       # LINALG_BLOCK
NARROW = 64      # TRI_NARROW_RHS
HALF = {np.float32: 8, np.float64: 4}   # columns in tri_narrow's half vectors (32 bytes)
FULL = {np.float32: 16, np.float64: 8}  # and in its whole ones (64 bytes)
STACK = 16384    # TRI_NARROW_STACK, bytes
SIZES = [1, GROUP - 1, GROUP, GROUP + 1, 2 * GROUP + 1, BLOCK - 1, BLOCK, BLOCK + 1,
         BLOCK + GROUP, BLOCK + GROUP + 1, 2 * BLOCK + 5]
EPS = {np.float32: float(np.finfo(np.float32).eps), np.float64: float(np.finfo(np.float64).eps)}
DTYPES = pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])

test_lower_capabilities = capability_reruns(__file__)


def _triangle(n, upper, unit, seed, batch=(3,)):
    g = np.random.default_rng(seed)
    t = g.uniform(-1, 1, batch + (n, n)) / np.sqrt(max(n, 1)) + np.eye(n) * g.uniform(1, 2, n)
    tri = np.triu(t) if upper else np.tril(t)
    if unit:
        tri = tri - tri * np.eye(n) + np.eye(n)
    return t, tri


def _check(n, nrhs, upper, unit, dtype, batch=(3,)):
    t, tri = _triangle(n, upper, unit, n * 31 + nrhs, batch)
    b = np.random.default_rng(n + nrhs).standard_normal(batch + (n, nrhs))
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


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("nrhs", [1, 2, 9, NARROW - 1, NARROW])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@DTYPES
def test_groups_against_numpy(n, nrhs, upper, unit, dtype, threads):
    _check(n, nrhs, upper, unit, dtype)


@pytest.mark.parametrize("n", [GROUP + 1, BLOCK + GROUP + 1])
@pytest.mark.parametrize("cols", ["half", "half+1", "full", "full+1", "2full+1", "narrow+1"])
@pytest.mark.parametrize("upper", [False, True])
@DTYPES
def test_column_thresholds_against_numpy(n, cols, upper, dtype, threads):
    """Across tri_narrow's half and whole vectors, a second vector and the blocked path"""
    nrhs = {"half": HALF[dtype], "half+1": HALF[dtype] + 1, "full": FULL[dtype],
            "full+1": FULL[dtype] + 1, "2full+1": 2 * FULL[dtype] + 1,
            "narrow+1": NARROW + 1}[cols]
    _check(n, nrhs, upper, False, dtype)


@pytest.mark.parametrize("case", ["half", "full", "two"])
@pytest.mark.parametrize("past", [0, 1])
@DTYPES
def test_copy_past_the_stack_against_numpy(case, past, dtype):
    """tri_narrow's padded copy of b on the stack up to STACK bytes, at the limit and a row
    past it (allocated)"""
    nrhs, width = {"half": (HALF[dtype], 32), "full": (HALF[dtype] + 1, 64),
                   "two": (FULL[dtype] + 1, 128)}[case]
    _check(STACK // width + past, nrhs, past == 1, False, dtype, batch=())


@pytest.mark.parametrize("n", [1, GROUP - 1, GROUP, GROUP + 1, 3 * GROUP + 5, BLOCK - 1, BLOCK,
                               BLOCK + 1, 2 * BLOCK + 5])
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("unit", [False, True])
@DTYPES
def test_bits_do_not_depend_on_columns(n, upper, unit, dtype, threads):
    """From two columns on, a column solved among 2, 3, 9 or 17 others (half and whole
    vectors, one and two) gives the bits it gets among NARROW - 1; in one block also among
    NARROW + 2 (the blocked path).  One column alone agrees to rounding."""
    t, _ = _triangle(n, upper, unit, n + 7, batch=(2,))
    b = np.random.default_rng(n).standard_normal((2, n, NARROW + 2))
    T, B = ptl.tensor(t.astype(dtype)), ptl.tensor(b.astype(dtype))

    def solve(cols):
        return ptl.linalg.solve_triangular(T, B[..., cols], upper=upper,
                                           unitriangular=unit).numpy()

    many = solve(slice(0, NARROW - 1))
    for c0, c1 in ((4, 6), (2, 5), (0, 9), (40, 57)):
        np.testing.assert_array_equal(solve(slice(c0, c1)), many[..., c0:c1])
    if n <= BLOCK:
        np.testing.assert_array_equal(solve(slice(0, NARROW + 2))[..., :NARROW - 1], many)
    one = solve(slice(3, 4))
    tol = 16 * max(n, 1) * EPS[dtype]
    np.testing.assert_allclose(one, many[..., 3:4], rtol=tol, atol=tol * np.abs(many).max())


def test_views_broadcast_and_empty_sizes(threads):
    """A transposed (non-contiguous) triangle and a strided right-hand side; a broadcast
    batch; 0 x 0 systems and no right-hand sides"""
    n = BLOCK + GROUP + 3
    t, _ = _triangle(n, False, False, 5, batch=())
    b = np.random.default_rng(6).standard_normal((n, 4 * GROUP))
    T, B = ptl.tensor(t.T.copy()).mT, ptl.tensor(b)[:, ::4]
    got = ptl.linalg.solve_triangular(T, B, upper=False)
    ref = np.linalg.solve(np.tril(t), b[:, ::4])
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-12, atol=1e-12)
    got_u = ptl.linalg.solve_triangular(T.mT, B, upper=True)
    np.testing.assert_allclose(got_u.numpy(), np.linalg.solve(np.triu(t.T), b[:, ::4]),
                               rtol=1e-12, atol=1e-12)
    tb, _ = _triangle(n, True, False, 8, batch=(3, 1))
    bb = np.random.default_rng(9).standard_normal((2, n, 5))
    got_b = ptl.linalg.solve_triangular(ptl.tensor(tb), ptl.tensor(bb), upper=True)
    assert got_b.shape == (3, 2, n, 5)
    ref_b = np.linalg.solve(np.triu(tb), np.broadcast_to(bb, (3, 2, n, 5)))
    np.testing.assert_allclose(got_b.numpy(), ref_b, rtol=1e-12, atol=1e-12)
    assert ptl.linalg.solve_triangular(ptl.zeros(0, 0), ptl.zeros(0, 3), upper=True).shape \
        == (0, 3)
    assert ptl.linalg.solve_triangular(T, ptl.zeros(n, 0), upper=False).shape == (n, 0)
    assert ptl.linalg.solve_triangular(ptl.zeros(2, 0, 0), ptl.zeros(2, 0, 7),
                                       upper=False).shape == (2, 0, 7)


@pytest.mark.parametrize("n", [GROUP + 1, BLOCK + 1, 2 * BLOCK + 5])
@pytest.mark.parametrize("nrhs", [None, 1, 3])
def test_linalg_solve_few_vectors(n, nrhs, threads):
    """linalg.solve's back substitution (upper, descending) and forward one (unit lower)"""
    a = np.random.default_rng(n).uniform(-1, 1, (3, n, n)) + 2 * np.sqrt(n) * np.eye(n)
    shape = (3, n) if nrhs is None else (3, n, nrhs)
    b = np.random.default_rng(n + 1).standard_normal(shape)
    got = ptl.linalg.solve(ptl.tensor(a), ptl.tensor(b))
    ref = (np.linalg.solve(a, b[..., None])[..., 0] if nrhs is None else np.linalg.solve(a, b))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-11, atol=1e-12)
