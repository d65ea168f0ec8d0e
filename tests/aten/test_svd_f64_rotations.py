"""float64 singular vectors (svd.c, Note [Singular vectors]): the rows that the bidiagonal's QR
steps rotate (ut, vt) start on a 64-byte line, float64's a whole number of lines long are
padded to an odd number of lines (row_ld), and the rotations go in blocks of two vectors of
eight doubles (16 columns) with AVX-512, of four vectors of four doubles otherwise (the file
runs again with the capability capped), then one vector, then a scalar tail.  Checked
against NumPy in float64 at and across those sizes (row lengths of 3-5, 7, 8, 9, 15, 16, 17,
24, 31-33, 40, 48, 64, 72, 256 on both sides; tall shapes below svd's QR-first crossover rotate rows of r
entries, above it of c), batched and non-contiguous, on one and two threads; size-0,
rank-deficient, graded, repeated values, non-finite.  Tolerances: a small multiple of
max(m, n) eps (times ||A|| for the values and the reconstruction)."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import linalg as L

from helpers import capability_reruns, num_threads
from svd_checks import check_svd, check_svd_of_size_zero

EPS = float(np.finfo(np.float64).eps)

test_lower_capabilities = capability_reruns(__file__)
# square sizes across the 8-double lines, the 16-column blocks and the padding (a whole
# number of lines: 8 -> 1 line, 16 -> 3, 24 -> 3, 32 -> 5, 64 -> 9, 256 -> 33)
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 23, 24, 25, 31, 32, 33, 40, 48, 63, 64, 65, 72,
         256]
# tall below the QR-first crossover (3 r < 5 c: U's rows of r entries), at and above it
# (rows of c), and wide
SHAPES = [(48, 40), (56, 40), (50, 40), (64, 40), (66, 40), (67, 40), (72, 48), (80, 48),
          (40, 48), (40, 56), (40, 64), (48, 80), (256, 64), (64, 256), (256, 160), (160, 256),
          (24, 8), (8, 24), (17, 16), (16, 17)]


def _np(t):
    assert t.dtype == ptl.float64
    return t.numpy()


def _check_svd(a, U, S, Vh, full, c=8.0):
    """U, S, Vh (float64 tensors) are an SVD of a (float64, batched or not), to c max(m, n,
    16) eps (svd_checks.check_svd)."""
    check_svd(a, _np(U), _np(S), _np(Vh), full, EPS, c)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("n", SIZES)
def test_svd_square_across_lines_and_blocks(n, full, threads):
    a = np.random.default_rng(n).standard_normal((n, n))
    _check_svd(a, *L.svd(ptl.tensor(a), full_matrices=full), full)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("m,n", SHAPES)
def test_svd_tall_and_wide_across_the_padding(m, n, full, threads):
    a = np.random.default_rng(m * n).uniform(-3, 3, (m, n))
    _check_svd(a, *L.svd(ptl.tensor(a), full_matrices=full), full)


@pytest.mark.parametrize("m,n", [(256, 256), (64, 64), (256, 64), (64, 256), (48, 40)])
def test_pinv_and_vectors_match_numpy(m, n, threads):
    g = np.random.default_rng(m + 7 * n)
    a = g.standard_normal((m, n))
    P = _np(L.pinv(ptl.tensor(a)))
    ref = np.linalg.pinv(a)
    cond = np.linalg.cond(a)
    assert np.abs(P - ref).max() <= 16 * max(m, n) * EPS * cond * np.abs(ref).max()
    # well separated values: each vector is LAPACK's up to its sign
    U, S, Vh = (_np(x) for x in L.svd(ptl.tensor(a), full_matrices=False))
    nu, ns, nvh = np.linalg.svd(a, full_matrices=False)
    gaps = -np.diff(ns) / ns[0]
    keep = np.ones(len(ns), bool)
    keep[:-1] &= gaps > 1e-6
    keep[1:] &= gaps > 1e-6
    sign = np.sign(np.sum(U * nu, axis=0))
    bound = 64 * max(m, n) * EPS / np.maximum(np.append(gaps, 1.0), np.append(1.0, gaps))
    err = np.abs(U * sign - nu).max(axis=0)
    assert np.all(err[keep] <= bound[keep])
    err = np.abs(Vh * sign[:, None] - nvh).max(axis=1)
    assert np.all(err[keep] <= bound[keep])


def test_svd_batched_non_contiguous(threads):
    g = np.random.default_rng(4)
    for shape in [(3, 2, 24, 16), (5, 16, 40), (4, 72, 72), (2, 48, 40)]:
        a = g.standard_normal(shape)
        A = ptl.tensor(a)
        for full in (True, False):
            _check_svd(a, *L.svd(A, full_matrices=full), full)
            _check_svd(np.swapaxes(a, -1, -2), *L.svd(A.mT, full_matrices=full), full)
    # a sliced (strided) input
    a = g.standard_normal((80, 70))
    _check_svd(a[::2, 3:67], *L.svd(ptl.tensor(a)[::2, 3:67], full_matrices=False), False)


def test_svd_bits_do_not_depend_on_threads_or_batch():
    a = np.random.default_rng(5).standard_normal((5, 64, 48))
    A = ptl.tensor(a)
    outs = []
    for t in (1, 2):
        with num_threads(t):
            outs.append([x.numpy() for x in L.svd(A)])
    for x, y in zip(*outs):
        assert np.array_equal(x, y)
    one = [x.numpy() for x in L.svd(A[3])]
    for x, y in zip(outs[0], one):
        assert np.array_equal(x[3], y)


@pytest.mark.parametrize("shape", [(0, 8), (8, 0), (0, 0), (2, 0, 16), (0, 16, 16)])
def test_svd_size_zero(shape):
    check_svd_of_size_zero(shape, ptl.float64)


@pytest.mark.parametrize("m,n", [(64, 64), (72, 48), (48, 72), (256, 64), (16, 16)])
def test_svd_rank_deficient_graded_and_repeated(m, n, threads):
    g = np.random.default_rng(m + n)
    k = min(m, n)
    low = g.standard_normal((m, 3)) @ g.standard_normal((3, n))
    _check_svd(low, *L.svd(ptl.tensor(low)), True)
    zero_col = g.standard_normal((m, n))
    zero_col[:, n // 2] = 0
    _check_svd(zero_col, *L.svd(ptl.tensor(zero_col)), True)
    q1, _ = np.linalg.qr(g.standard_normal((m, k)))
    q2, _ = np.linalg.qr(g.standard_normal((n, k)))
    graded = (q1 * np.logspace(0, -14, k)) @ q2.T
    _check_svd(graded, *L.svd(ptl.tensor(graded), full_matrices=False), False)
    repeated = (q1 * np.repeat([3.0, 1.0], [k // 2, k - k // 2])) @ q2.T
    _check_svd(repeated, *L.svd(ptl.tensor(repeated)), True)
    ones = np.ones((m, n))
    _check_svd(ones, *L.svd(ptl.tensor(ones)), True)


@pytest.mark.parametrize("scale", [1e-300, 1e300])
def test_svd_extreme_scales(scale):
    a = np.random.default_rng(9).standard_normal((64, 48)) * scale
    _check_svd(a, *L.svd(ptl.tensor(a), full_matrices=False), False)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_svd_non_finite_raises(bad):
    a = np.random.default_rng(1).standard_normal((64, 64))
    a[5, 9] = bad
    with pytest.raises(RuntimeError, match="The algorithm failed to converge because the "
                       "input matrix contained non-finite values"):
        L.svd(ptl.tensor(a))
