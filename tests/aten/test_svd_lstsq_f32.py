"""float32 svd, pinv and lstsq computed in float32 (Note [Float64 linear algebra] in
linalg_solve.c, Note [Singular vectors] in svd.c, Note [Least squares by one QR] in
linalg_lstsq.c): the reflections, GEMMs and rotations of the singular vectors and lstsq's QR
run in float, as LAPACK's sgesdd and sgeqrf do for PyTorch.  The results carry float32
accuracy: the checks here are against NumPy in float64 on the same float32 values, with
tolerances of a small multiple of max(m, n) eps_f32 (times cond(A) where the problem's
sensitivity needs it).  Every size at and across the thresholds of the code (svd's QR first
when r >= 5c/3, the QR's blocks of 32 columns, the rotations' blocks of 64 and vectors of 16
floats with AVX-512, of 8 otherwise (the file runs again with the capability capped), the
bidiagonalization's sums of 16, lstsq's inverse leaves of 16 rows and its
many-right-hand-sides path above 0.6 n), batched and non-contiguous, on one and two threads;
size-0, wide and tall, rank-deficient."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import linalg as L

from helpers import capability_reruns, num_threads
from svd_checks import check_svd, check_svd_of_size_zero

EPS = float(np.finfo(np.float32).eps)
test_lower_capabilities = capability_reruns(__file__)

# square sizes at and across the blocks: 8 (the rotations' vectors below AVX-512), 16 (sums,
# vectors, inverse leaves), 32 (QR blocks), 64 (rotation blocks)
SIZES = [1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 80, 129]
# r x c around svd's QR-first crossover (3 r >= 5 c), tall and wide
CROSSOVER = [(49, 30), (50, 30), (51, 30), (30, 49), (30, 50), (30, 51), (100, 60), (101, 60),
             (99, 60), (60, 101), (200, 33), (33, 200), (70, 17), (17, 70)]


def _f32(a):
    """The float32 tensor of a, and its float32 values in float64 (the reference's input)."""
    a32 = np.asarray(a, np.float32)
    return ptl.tensor(a32), a32.astype(np.float64)


def _np(t):
    assert t.dtype == ptl.float32
    return t.numpy().astype(np.float64)


def _check_svd(a, U, S, Vh, full, c=4.0):
    """U, S, Vh (float32 tensors) are an SVD of a (float64 values of a float32 matrix, batched
    or not) to float32 accuracy, the reconstruction relative to a's largest entry
    (svd_checks.check_svd)."""
    check_svd(a, _np(U), _np(S), _np(Vh), full, EPS, c, entries=True)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("n", SIZES)
def test_svd_square_across_blocks(n, full, threads):
    A, a = _f32(np.random.default_rng(n).standard_normal((n, n)))
    _check_svd(a, *L.svd(A, full_matrices=full), full)


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("m,n", CROSSOVER)
def test_svd_tall_and_wide_across_the_qr_crossover(m, n, full, threads):
    A, a = _f32(np.random.default_rng(m * n).uniform(-3, 3, (m, n)))
    _check_svd(a, *L.svd(A, full_matrices=full), full)


def test_svd_runs_in_float32():
    # the float32 results are not the float64 computation rounded (what float32 inputs got
    # before): the work ran in float32; svdvals keeps float64's values
    A, a = _f32(np.random.default_rng(3).standard_normal((40, 30)))
    U, S, Vh = L.svd(A, full_matrices=False)
    U8, S8, Vh8 = L.svd(A.double(), full_matrices=False)
    assert not np.array_equal(U.numpy(), U8.numpy().astype(np.float32))
    assert not np.array_equal(S.numpy(), S8.numpy().astype(np.float32))
    assert np.array_equal(L.svdvals(A).numpy(), L.svdvals(A.double()).numpy().astype(np.float32))


def test_svd_batched_non_contiguous_and_threads(threads):
    g = np.random.default_rng(4)
    for shape in [(3, 2, 20, 12), (5, 12, 37), (4, 70, 70)]:
        a = g.standard_normal(shape)
        A, a = _f32(a)
        for full in (True, False):
            _check_svd(a, *L.svd(A, full_matrices=full), full)
            # the transposes: a non-contiguous input of the other shape
            at = np.swapaxes(a, -1, -2)
            _check_svd(at, *L.svd(A.mT, full_matrices=full), full)


def test_svd_batch_bits_do_not_depend_on_threads():
    A, _ = _f32(np.random.default_rng(5).standard_normal((6, 50, 40)))
    outs = []
    for t in (1, 2):
        with num_threads(t):
            outs.append([x.numpy() for x in L.svd(A)])
    for x, y in zip(*outs):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("shape", [(0, 5), (5, 0), (0, 0), (2, 0, 3), (0, 4, 4), (3, 1, 0)])
def test_svd_size_zero(shape):
    check_svd_of_size_zero(shape, ptl.float32)


@pytest.mark.parametrize("m,n", [(40, 40), (60, 20), (20, 60), (130, 70)])
def test_svd_rank_deficient_and_graded(m, n, threads):
    g = np.random.default_rng(m + n)
    low = g.standard_normal((m, 3)) @ g.standard_normal((3, n))
    A, a = _f32(low)
    _check_svd(a, *L.svd(A), True)
    S = _np(L.svd(A)[1])
    assert np.all(S[3:] <= 4 * max(m, n) * EPS * S[0])
    # columns scaled over five decades: the small values keep float32 accuracy relative to
    # the largest, as sgesdd's do
    A, a = _f32(g.standard_normal((m, n)) * np.logspace(0, -5, n))
    _check_svd(a, *L.svd(A, full_matrices=False), False)
    # a zero matrix: zero values, orthonormal vectors
    Z = ptl.zeros(m, n, dtype=ptl.float32)
    _check_svd(np.zeros((m, n)), *L.svd(Z), True)


def test_svd_repeated_values_and_scaling():
    g = np.random.default_rng(8)
    q1, _ = np.linalg.qr(g.standard_normal((50, 50)))
    q2, _ = np.linalg.qr(g.standard_normal((30, 30)))
    s = np.repeat([3.0, 1.0, 0.25], 10)
    for scale in (1.0, 1e30, 1e-30):
        A, a = _f32(q1[:, :30] * s * scale @ q2)
        _check_svd(a, *L.svd(A), True)


def test_svd_non_finite_input_raises():
    for bad in (np.nan, np.inf):
        a = np.ones((4, 3), np.float32)
        a[2, 1] = bad
        with pytest.raises(RuntimeError, match="contained non-finite values"):
            L.svd(ptl.tensor(a))


def _pinv_close(P, a, rtol=None, c=8.0):
    ref = np.linalg.pinv(a) if rtol is None else np.linalg.pinv(a, rcond=rtol)
    got = _np(P)
    assert got.shape == ref.shape
    s = np.linalg.svd(a, compute_uv=False)
    keep = s[..., :1] * (rtol or 0)
    cond = float(np.max(s.max(-1) / np.where(s > keep, s, np.inf).min(-1)))
    tol = c * max(a.shape[-2:]) * EPS * cond * cond
    assert np.abs(got - ref).max(initial=0.0) <= tol * max(np.abs(ref).max(initial=0.0), 1e-30)


@pytest.mark.parametrize("m,n", [(n, n) for n in SIZES] + CROSSOVER)
def test_pinv_across_blocks(m, n, threads):
    g = np.random.default_rng(m * 1000 + n)
    a = g.uniform(-1, 1, (m, n))
    k = min(m, n)
    a[:k, :k] += 2 * np.sqrt(k) * np.eye(k)   # well conditioned
    A, a = _f32(a)
    _pinv_close(L.pinv(A), a)


def test_pinv_rank_deficient_batched_and_non_contiguous(threads):
    g = np.random.default_rng(11)
    low = np.einsum("bij,bjk->bik", g.standard_normal((3, 30, 4)), g.standard_normal((3, 4, 20)))
    A, a = _f32(low)
    _pinv_close(L.pinv(A, rtol=1e-4), a, rtol=1e-4)
    _pinv_close(L.pinv(A.mT, rtol=1e-4), np.swapaxes(a, -1, -2), rtol=1e-4)
    assert tuple(L.pinv(ptl.zeros(2, 0, 3, dtype=ptl.float32)).shape) == (2, 3, 0)


def _lstsq_close(X, a, b, c=8.0):
    ref = np.linalg.lstsq(a, b, rcond=None)[0]
    got = _np(X)
    assert got.shape == ref.shape
    cond = float(np.linalg.cond(a))
    tol = c * max(a.shape) * EPS * cond * cond
    assert np.abs(got - ref).max(initial=0.0) <= tol * max(np.abs(ref).max(initial=0.0), 1e-30)


@pytest.mark.parametrize("nrhs", [1, 2, 9, 40])
@pytest.mark.parametrize("m,n", [(n, n) for n in SIZES] + [(50, 15), (50, 16), (50, 17),
                                                          (100, 33), (70, 64), (15, 50),
                                                          (17, 50), (33, 100)])
@pytest.mark.parametrize("driver", ["gels", "gelsy"])
def test_lstsq_across_blocks(m, n, nrhs, driver, threads):
    # nrhs 1: one column's solve; 40 above 0.6 n: the path with Q formed
    g = np.random.default_rng(m * 100 + n + nrhs)
    a = g.uniform(-1, 1, (m, n))
    k = min(m, n)
    a[:k, :k] += 2 * np.sqrt(k) * np.eye(k)
    A, a = _f32(a)
    B, b = _f32(g.standard_normal((m, nrhs)))
    res = L.lstsq(A, B, driver=driver)
    _lstsq_close(res.solution, a, b)
    if driver == "gelsy":
        assert int(res.rank) == k
    if driver == "gels" and m > n:
        r = b - a @ np.linalg.lstsq(a, b, rcond=None)[0]
        want = (r * r).sum(0)
        assert np.abs(_np(res.residuals) - want).max() <= 1e-3 * max(want.max(), 1.0)


def test_lstsq_vector_batched_non_contiguous(threads):
    g = np.random.default_rng(12)
    A, a = _f32(g.standard_normal((4, 60, 20)))
    B, b = _f32(g.standard_normal((4, 60)))
    X = L.lstsq(A, B).solution
    assert tuple(X.shape) == (4, 20)
    for i in range(4):
        _lstsq_close(X[i], a[i], b[i])
    At = ptl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)).astype(np.float32)).mT
    X = L.lstsq(At, B[..., None]).solution
    for i in range(4):
        _lstsq_close(X[i], a[i], b[i][:, None])
    res = L.lstsq(ptl.zeros(0, 3, dtype=ptl.float32), ptl.zeros(0, 2, dtype=ptl.float32))
    assert tuple(res.solution.shape) == (3, 2) and not np.any(res.solution.numpy())


def _with_kappa(n, kappa, seed):
    """A float32 n x n matrix whose ||A||_F ||A^-1||_F is about kappa."""
    g = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(g.standard_normal((n, n)))
    q2, _ = np.linalg.qr(g.standard_normal((n, n)))
    s = np.linspace(1, 0.5, n)
    rest = float(np.sum(s[:-1] ** -2))
    tot = float(np.sum(s[:-1] ** 2))
    # kappa^2 = (tot + t^2) (rest + t^-2), t the last value: t^2 ~ tot / (kappa^2 - ...)
    t = np.sqrt(tot / (kappa * kappa - tot * rest))
    s[-1] = t
    return (q1 @ np.diag(s) @ q2).astype(np.float32)


@pytest.mark.parametrize("n", [17, 64, 100])
def test_lstsq_float32_rank_proof_bands(n):
    # kappa = ||R||_F ||R^-1||_F: below 1 / (2 rcond) the float32 inverse proves full rank,
    # between that and 1 / rcond the float64 one does, above it nothing can (rank -1 from
    # the kernel; linalg.lstsq then counts the rank from the singular values)
    rcond = EPS * n
    b = np.ones((n, 1), np.float32)
    for frac, proved in ((0.3, True), (0.75, True), (3.0, False)):
        a = _with_kappa(n, frac / rcond, n)
        a64 = a.astype(np.float64)
        kappa = np.linalg.norm(a64) * np.linalg.norm(np.linalg.inv(a64))
        assert abs(kappa * rcond / frac - 1) < 0.05
        rank = L._lstsq_qr(ptl.tensor(a), ptl.tensor(b), rcond)[2]
        assert int(rank) == (n if proved else -1)
        s = np.linalg.svd(a64, compute_uv=False)
        res = L.lstsq(ptl.tensor(a), ptl.tensor(b))
        assert int(res.rank) == int(np.sum(s > rcond * s[0]))


@pytest.mark.parametrize("m,n", [(100, 71), (100, 72), (100, 73), (90, 40), (90, 41),
                                 (33, 40), (33, 41), (65, 73), (200, 199)])
def test_float_qr_last_panel_takes_a_few_trailing_columns(m, n, threads):
    # the float QR's last block takes up to 8 (QR_WIDE_TAIL) columns after it into its panel
    # (n - 64 of 7, 8, 9; n - 32 of 8, 9; a wide matrix); lstsq's [A b] is the case it is for
    A, a = _f32(np.random.default_rng(m + 7 * n).standard_normal((m, n)))
    Q, R = L.qr(A)
    q, r = _np(Q), _np(R)
    ref = np.linalg.qr(a)[1]
    # R's rows up to sign (LAPACK's signs: the same reflections)
    assert np.abs(np.abs(r) - np.abs(ref)).max() <= 8 * m * EPS * np.abs(a).max()
    assert np.abs(q @ r - a).max() <= 8 * m * EPS * np.abs(a).max()
    assert np.abs(q.T @ q - np.eye(q.shape[1])).max() <= 8 * m * EPS


def test_lstsq_rank_below_float32_precision_is_r_s_rank():
    # R is factored in float32: an exactly repeated column leaves a diagonal entry of order
    # eps_f32 ||A||, not 0, so an rcond far below eps_f32 proves full rank from R, as
    # PyTorch's sgeqp3 counts it (rank 10 and a solution of order 1 / eps_f32 from PyTorch
    # 2.13 on this matrix); the default rcond counts the repeated column out
    g = np.random.default_rng(0)
    a = g.standard_normal((40, 10)).astype(np.float32)
    a[:, 9] = a[:, 3]
    B = ptl.tensor(g.standard_normal((40, 1)).astype(np.float32))
    assert int(L.lstsq(ptl.tensor(a), B).rank) == 9
    assert int(L.lstsq(ptl.tensor(a), B, rcond=1e-4).rank) == 9
    res = L.lstsq(ptl.tensor(a), B, rcond=1e-9)
    assert int(res.rank) == 10
    assert float(np.abs(res.solution.numpy()).max()) > 1e4
