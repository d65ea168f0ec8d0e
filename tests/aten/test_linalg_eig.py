"""The eigendecomposition of a real square matrix of src/aten/native/linalg_eig.c (and
linalg_eig_vectors.c), aten::_linalg_eig_split (pytorchlite.linalg._eig_split): linalg.eig's
complex eigenvalues and eigenvectors as real and imaginary parts (Note [Nonsymmetric
eigensolver]).  References: numpy.linalg.eig (LAPACK's geev) in float64: the eigenvalue
multisets agree (matched by nearest neighbour), A V = V diag(w) holds in complex arithmetic,
the columns of V have unit 2-norm with their largest component real, conjugate pairs come as
(re + i im, re - i im) with im > 0 and conjugate eigenvectors.  Random matrices of n =
0..40, batches, transposed inputs, and matrices built to be hard: symmetric, defective
(Jordan blocks), triangular, companion, repeated and clustered eigenvalues, huge and tiny
scales, zero, rotations.  float32 against the float64 reference with float32 tolerances;
every error path with PyTorch's exception type and text, checked against the installed torch
where present."""
import re

import numpy as np
import pytest

import pytorchlite as ptl

from helpers import assert_no_leak, torch, torch_ref

eig_split = ptl.linalg._eig_split
EPS64 = np.finfo(np.float64).eps


def _parts(A, compute_v=True):
    """The eigenvalues (..., n) and eigenvectors (..., n, n) of A as complex ndarrays."""
    wr, wi, vr, vi = (x.double().numpy() for x in eig_split(A, compute_v))
    return wr + 1j * wi, vr + 1j * vi


def _match(w, ref):
    """The largest distance between the entries of w and those of ref, paired greedily by
    nearest neighbour (both 1-D complex)."""
    left, worst = list(ref), 0.0
    for x in sorted(w, key=lambda v: (v.real, v.imag)):
        k = int(np.argmin(np.abs(np.asarray(left) - x)))
        worst = max(worst, abs(left.pop(k) - x))
    return worst


def _check(a, w, V, vtol=1e-10, wtol=1e-10, ntol=1e-12):
    """w, V are an eigendecomposition of the float64 matrices a, as LAPACK's geev gives it:
    residual within vtol, eigenvalues within wtol (relative), unit norms within ntol."""
    n = a.shape[-1]
    assert w.shape == a.shape[:-1] and V.shape == a.shape
    for idx in np.ndindex(a.shape[:-2]):
        m, wm, Vm = a[idx], w[idx], V[idx]
        scale = max(np.abs(m).max(initial=0), np.finfo(np.float64).tiny)
        # A V = V diag(w)
        assert np.abs(m @ Vm - Vm * wm).max(initial=0) <= vtol * scale * max(n, 1)
        # the eigenvalues of LAPACK
        if n:
            ref = np.linalg.eigvals(m)
            assert _match(wm, ref) <= wtol * max(np.abs(ref).max(), scale)
        # unit columns whose largest component is real
        assert np.allclose(np.linalg.norm(Vm, axis=0), 1, rtol=0, atol=ntol)
        for j in range(n):
            real = Vm[:, j].imag == 0
            assert real.any() and np.abs(Vm[real, j]).max() >= np.abs(Vm[:, j]).max() * (1 - ntol)
        # conjugate pairs: positive imaginary part first, conjugate eigenvectors
        j = 0
        while j < n:
            if wm[j].imag != 0:
                assert wm[j].imag > 0 and wm[j + 1] == np.conj(wm[j])
                assert np.array_equal(Vm[:, j + 1], np.conj(Vm[:, j]))
                j += 2
            else:
                assert np.all(Vm[:, j].imag == 0)
                j += 1


def _random(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("n", list(range(0, 13)) + [16, 23, 31, 40])
def test_random_matrices_match_lapack(n):
    for seed in range(3):
        a = _random((n, n), seed + 10 * n)
        w, V = _parts(ptl.tensor(a))
        _check(a, w, V)


@pytest.mark.parametrize("shape", [(2, 3, 3), (3, 1, 4, 4), (0, 3, 3), (2, 0, 0), (4, 1, 1),
                                   (2, 2, 2)])
def test_batches(shape):
    a = _random(shape, 1)
    w, V = _parts(ptl.tensor(a))
    _check(a, w, V)


def test_batch_spread_over_threads_matches_one_by_one():
    # 300 matrices of 8 x 8: the batch is above linalg_batch_run's grain, so it is split
    # over the thread pool; each matrix must come out as it does alone
    a = _random((300, 8, 8), 2)
    parts = [x.numpy() for x in eig_split(ptl.tensor(a))]
    for i in (0, 1, 150, 299):
        alone = [x.numpy() for x in eig_split(ptl.tensor(a[i]))]
        for p, q in zip(parts, alone):
            assert np.array_equal(p[i], q)


def test_non_contiguous_inputs():
    a = _random((2, 6, 6), 3)
    A = ptl.tensor(a)
    for view, ref in [(A.mT, np.swapaxes(a, -1, -2)), (A[:, ::2, ::2], a[:, ::2, ::2]),
                      (ptl.tensor(a[0]).expand(3, 6, 6), np.broadcast_to(a[0], (3, 6, 6)))]:
        w, V = _parts(view)
        _check(np.ascontiguousarray(ref), w, V)
        wc, Vc = _parts(view.contiguous())
        assert np.array_equal(w, wc) and np.array_equal(V, Vc)


def test_values_without_vectors():
    a = _random((2, 7, 7), 4)
    wr, wi, vr, vi = eig_split(ptl.tensor(a), False)
    assert tuple(vr.shape) == (0,) and tuple(vi.shape) == (0,)
    w, _ = _parts(ptl.tensor(a))
    for i in range(2):
        assert _match(wr.numpy()[i] + 1j * wi.numpy()[i], w[i]) <= 1e-12 * np.abs(w[i]).max()


def _similar(j, seed):
    """S j S^-1 for a random well-conditioned S."""
    n = j.shape[0]
    q, _ = np.linalg.qr(_random((n, n), seed))
    s = q @ np.diag(np.linspace(1, 3, n))
    return s @ j @ np.linalg.inv(s)


def _companion(roots):
    c = np.poly(roots)
    n = len(roots)
    m = np.zeros((n, n))
    m[0] = -c[1:]
    m[np.arange(1, n), np.arange(n - 1)] = 1
    return m


STRUCTURED = {
    "symmetric": lambda: (lambda x: x + x.T)(_random((9, 9), 5)),
    "diagonal": lambda: np.diag([3.0, -1.0, 2.0, 2.0, 0.0]),
    "upper-triangular": lambda: np.triu(_random((8, 8), 6)),
    "lower-triangular": lambda: np.tril(_random((8, 8), 7)),
    "companion": lambda: _companion([1.0, 2.0, 3.0, -1.5, 0.5]),
    "companion-complex-roots": lambda: _companion([1 + 2j, 1 - 2j, -1.0, 0.5j, -0.5j]),
    "repeated": lambda: _similar(np.diag([2.0, 2.0, 2.0, -1.0, -1.0, 5.0]), 8),
    "clustered": lambda: _similar(np.diag(1 + 1e-9 * np.arange(6)), 9),
    "zero": lambda: np.zeros((5, 5)),
    "identity": lambda: np.eye(4),
    "rotation": lambda: np.array([[0.0, -1.0], [1.0, 0.0]]),
    "rotation-3d": lambda: np.array([[np.cos(1.0), -np.sin(1.0), 0], [np.sin(1.0), np.cos(1.0), 0],
                                     [0, 0, 1.0]]),
    "permutation": lambda: np.eye(6)[[1, 2, 3, 4, 5, 0]],
    "huge": lambda: 1e250 * _random((6, 6), 10),
    "tiny": lambda: 1e-250 * _random((6, 6), 11),
    "graded": lambda: _random((6, 6), 12) * np.logspace(-8, 8, 6)[:, None] / np.logspace(-8, 8, 6),
    "rank-one": lambda: np.outer(_random(7, 13), _random(7, 14)),
    "hessenberg": lambda: np.triu(_random((10, 10), 15), -1),
    # rows and columns that isolate eigenvalues: balancing permutes them out of the QR
    "sparse": lambda: _random((12, 12), 23) * (_random((12, 12), 24) < -0.7),
    "isolated-rows-and-columns": lambda: np.block([
        [np.triu(_random((3, 3), 25)), _random((3, 4), 26), _random((3, 2), 27)],
        [np.zeros((4, 3)), _random((4, 4), 28), _random((4, 2), 29)],
        [np.zeros((2, 7)), np.triu(_random((2, 2), 30))]])[np.ix_(*[[4, 0, 8, 2, 6, 1, 3, 7, 5]]
                                                                  * 2)],
}


@pytest.mark.parametrize("name", list(STRUCTURED))
def test_structured_matrices(name):
    a = STRUCTURED[name]()
    w, V = _parts(ptl.tensor(a))
    # clustered eigenvalues move by up to cond * eps relative: 1e-9 apart -> about 1e-7
    _check(a, w, V, wtol=1e-6 if name == "clustered" else 1e-10)


def test_known_eigenvalues():
    w, V = _parts(ptl.tensor(np.array([[0.0, -1.0], [1.0, 0.0]])))
    assert np.allclose(w, [1j, -1j], rtol=0, atol=1e-15)
    w, _ = _parts(ptl.tensor(STRUCTURED["companion"]()))
    assert _match(w, np.array([1.0, 2.0, 3.0, -1.5, 0.5])) <= 1e-12
    w, _ = _parts(ptl.tensor(STRUCTURED["zero"]()))
    assert np.array_equal(w, np.zeros(5))
    # a triangular matrix is isolated entirely by balancing's permutation: its diagonal
    # exactly, in LAPACK's order (upper: as it is; lower: reversed), with LAPACK's vectors
    for a, order in [(np.triu(_random((8, 8), 6)), slice(None)),
                     (np.tril(_random((8, 8), 7)), slice(None, None, -1))]:
        w, V = _parts(ptl.tensor(a))
        assert np.array_equal(w, np.diag(a)[order].astype(complex))
        assert np.allclose(V, np.linalg.eig(a)[1], rtol=0, atol=1e-12)


def test_order_and_vectors_of_lapack():
    # dense random matrices: the Schur form's block order and geev's vectors (up to a sign
    # for real ones; complex ones are fixed by the largest-component-real rule)
    for n in (3, 6, 9):
        a = _random((n, n), 31 + n)
        w, V = _parts(ptl.tensor(a))
        wn, Vn = np.linalg.eig(a)
        assert np.allclose(w, wn, rtol=0, atol=1e-12 * np.abs(wn).max())
        sign = np.sign(np.sum(V.real * Vn.real, axis=0))
        assert np.allclose(V, Vn * sign, rtol=0, atol=1e-10)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_defective_matrices(k):
    # a Jordan block of order k: the computed eigenvalues spread by about (eps |A|)^(1/k);
    # the residual A V - V diag(w) is still of order eps |A|
    j = np.diag(np.full(k, 2.0)) + np.diag(np.ones(k - 1), 1)
    a = _similar(np.block([[j, np.zeros((k, 2))], [np.zeros((2, k)), np.diag([-1.0, 4.0])]]),
                 16 + k)
    w, V = _parts(ptl.tensor(a))
    _check(a, w, V, wtol=10 * EPS64 ** (1 / k))
    assert _match(w, np.array([2.0] * k + [-1.0, 4.0])) <= 10 * (EPS64 * 10) ** (1 / k)
    # the exact Jordan block is triangular: exact eigenvalues, one eigenvector direction
    w, V = _parts(ptl.tensor(j))
    assert np.array_equal(w, np.full(k, 2.0 + 0j))
    assert np.allclose(np.abs(V[0]), 1, rtol=0, atol=1e-12)


def test_back_substitution_does_not_overflow():
    # the nilpotent shift of order 12: every pivot of the back-substitution is the tiny
    # smin (about 1e-291), so x grows by 1e291 a row and must be rescaled on the way;
    # LAPACK gives e_0 for every eigenvalue 0
    a = np.eye(12, k=1)
    w, V = _parts(ptl.tensor(a))
    assert np.array_equal(w, np.zeros(12)) and np.all(np.isfinite(V))
    assert np.allclose(np.abs(V), np.abs(np.linalg.eig(a)[1]), rtol=0, atol=1e-12)
    assert np.allclose(np.abs(V[0]), 1, rtol=0, atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 5), (2, 6, 6), (0, 0)])
@pytest.mark.parametrize("transposed", [False, True])
def test_float32(shape, transposed):
    a = _random(shape, 17).astype(np.float32)
    A = ptl.tensor(a)
    if transposed:
        A = A.mT.contiguous().mT
    outs = eig_split(A)
    assert all(o.dtype == ptl.float32 for o in outs)
    w, V = _parts(A)
    a64 = a.astype(np.float64)
    w64, V64 = _parts(ptl.tensor(a64))
    # float32 results are the float64 ones rounded
    assert np.abs(w - w64).max(initial=0) <= 1e-6 * max(np.abs(w64).max(initial=0), 1)
    assert np.abs(V - V64).max(initial=0) <= 1e-6
    _check(a64, w, V, vtol=1e-6, wtol=1e-6, ntol=1e-6)


def test_random_sizes_against_lapack_in_one_sweep():
    # sizes across the 2 x 2 / 3 x 3 bulge lengths of the sweep and larger
    rng = np.random.default_rng(18)
    for n in range(1, 41):
        a = rng.uniform(-1, 1, (n, n))
        w, V = _parts(ptl.tensor(a))
        _check(a, w, V)


def test_reflections_of_entries_whose_squares_underflow():
    # a block 1e-300 below the diagonal: balancing leaves entries near 1e-150 in the columns
    # the Hessenberg reduction reflects, whose squares underflow to 0, so the reflections
    # take the scaled 2-norm instead of the plain sum of squares
    rng = np.random.default_rng(60)
    a = np.block([[rng.standard_normal((4, 4)), rng.standard_normal((4, 4))],
                  [1e-300 * rng.standard_normal((4, 4)), rng.standard_normal((4, 4))]])
    w, V = _parts(ptl.tensor(a))
    _check(a, w, V)
    assert _match(w, np.concatenate([np.linalg.eigvals(a[:4, :4]),
                                     np.linalg.eigvals(a[4:, 4:])])) <= 1e-13


# Note [Aggressive early deflation]: an active block of AED_MIN rows or more, in a matrix
# of AED_MIN_N rows or more, looks for converged eigenvalues in its last AED_WINDOW rows
# before each sweep and sweeps with the window's other eigenvalues as shifts.  Sizes at and
# across the matrix threshold (the active blocks cross AED_MIN within them); matrices whose
# window deflates whole (nearly triangular), a few blocks at a time (random: real
# eigenvalues and complex pairs), in repeated clusters, or with the window above the
# rows that balancing isolates; the eigenvalue-only path (which updates less of H) too.
AED_MIN, AED_MIN_N, AED_WINDOW = 75, 160, 24


def _eigvals(a):
    wr, wi, _, _ = eig_split(ptl.tensor(a), False)
    return wr.numpy() + 1j * wi.numpy()


@pytest.mark.parametrize("n", [AED_MIN, AED_MIN_N - 1, AED_MIN_N, AED_MIN_N + 1,
                               AED_MIN_N + AED_WINDOW])
def test_random_matrices_across_early_deflation(n):
    for seed in range(2):
        a = _random((n, n), seed + 7 * n)
        w, V = _parts(ptl.tensor(a))
        _check(a, w, V)
        assert _match(_eigvals(a), w) <= 1e-12 * np.abs(w).max()


def _rotations(n, seed):
    """S R S^-1, R block diagonal with n / 2 rotations by distinct angles: complex pairs
    only."""
    r = np.zeros((n, n))
    for k, t in enumerate(np.linspace(0.1, 3.0, n // 2)):
        r[2 * k:2 * k + 2, 2 * k:2 * k + 2] = [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
    return _similar(r, seed)


def _converging(n, seed):
    rng = np.random.default_rng(seed)
    h = np.diag(rng.permutation(np.linspace(1, 10, n)))
    h += 0.1 * np.triu(rng.standard_normal((n, n)), 1)
    h[np.arange(1, n), np.arange(n - 1)] = 1e-8 * rng.standard_normal(n - 1)
    return h


LARGE = {
    # (a random triangular matrix's eigenvalues are too ill-conditioned to compare)
    "nearly-triangular": lambda n: np.diag(np.linspace(1, 10, n)) +
    0.05 * np.triu(_random((n, n), 40), 1) + 1e-13 * np.tril(_random((n, n), 41), -1),
    "uniform": lambda n: np.random.default_rng(42).uniform(-1, 1, (n + 10, n + 10)),
    "symmetric": lambda n: (lambda x: x + x.T)(_random((n, n), 43)),
    "rotations": lambda n: _rotations(n, 44),
    "repeated": lambda n: _similar(np.diag(np.repeat([1.0, -2.0, 3.0], n // 3)), 45),
    "hessenberg": lambda n: np.triu(_random((n, n), 46), -1),
    "graded": lambda n: _random((n, n), 47) * np.logspace(-3, 3, n)[:, None] /
    np.logspace(-3, 3, n),
    # Hessenberg already (the reduction leaves it), subdiagonal 1e-8: the window deflates
    # all but its top row at once
    "converging": lambda n: _converging(n, 52),
    "isolated-rows-below": lambda n: np.block([
        [_random((n - 5, n - 5), 48), _random((n - 5, 5), 49)],
        [np.zeros((5, n - 5)), np.triu(_random((5, 5), 50))]]),
}


# 170 rows: with windows; 90 (below AED_MIN_N, its active blocks above AED_MIN): without
@pytest.mark.parametrize("n", [90, AED_MIN_N + 10])
@pytest.mark.parametrize("name", list(LARGE))
def test_structured_matrices_with_early_deflation(name, n):
    a = LARGE[name](n)
    w, V = _parts(ptl.tensor(a))
    # repeated eigenvalues move by about cond(S) eps relative (S from _similar)
    _check(a, w, V, wtol=1e-8 if name == "repeated" else 1e-10,
           vtol=1e-8 if name == "repeated" else 1e-10)
    assert _match(_eigvals(a), w) <= 1e-9 * np.abs(w).max()


def test_batch_with_early_deflation_matches_one_by_one():
    a = _random((3, AED_MIN_N + 5, AED_MIN_N + 5), 51)
    parts = [x.numpy() for x in eig_split(ptl.tensor(a))]
    for i in range(3):
        alone = [x.numpy() for x in eig_split(ptl.tensor(a[i]))]
        for p, q in zip(parts, alone):
            assert np.array_equal(p[i], q)
    w, V = _parts(ptl.tensor(a))
    _check(a, w, V)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_raises(bad):
    a = _random((2, 4, 4), 19)
    a[1, 2, 3] = bad
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.eig: input tensor should not contain infs or NaNs.")):
        eig_split(ptl.tensor(a))


ERRORS = [
    ("non-square", (3, 4, "float64"), RuntimeError,
     "linalg.eig: A must be batches of square matrices, but they are 3 by 4 matrices"),
    ("1-d", (3, "float32"), RuntimeError,
     "linalg.eig: The input tensor A must have at least 2 dimensions."),
    ("long", (3, 3, "int64"), RuntimeError, "Unknown Complex ScalarType for Long"),
    ("long-1-d", (3, "int64"), RuntimeError, "Unknown Complex ScalarType for Long"),
    ("int", (3, 3, "int32"), RuntimeError, "Unknown Complex ScalarType for Int"),
    ("bool", (3, 3, "bool"), RuntimeError, "Unknown Complex ScalarType for Bool"),
    ("half", (3, 3, "float16"), NotImplementedError,
     "\"linalg_eig_out_cpu\" not implemented for 'Half'"),
    ("bfloat16", (3, 3, "bfloat16"), NotImplementedError,
     "\"linalg_eig_out_cpu\" not implemented for 'BFloat16'"),
    ("half-non-square", (3, 4, "float16"), RuntimeError,
     "linalg.eig: A must be batches of square matrices, but they are 3 by 4 matrices"),
]


def _arg(lib, spec):
    *shape, dtype = spec
    return lib.ones(tuple(shape), dtype=getattr(lib, dtype))


@pytest.mark.parametrize("name, spec, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, spec, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        eig_split(_arg(ptl, spec))


@torch_ref
@pytest.mark.parametrize("name, spec, exc, msg", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(name, spec, exc, msg):
    with pytest.raises(exc, match=re.escape(msg)):
        torch.linalg.eig(_arg(torch, spec))


@torch_ref
def test_non_finite_message_matches_torch():
    with pytest.raises(RuntimeError, match=re.escape(
            "torch.linalg.eig: input tensor should not contain infs or NaNs.")):
        torch.linalg.eig(torch.full((2, 3, 3), float("nan")))


@torch_ref
def test_matches_torch_eig():
    a = _random((3, 6, 6), 20)
    tw, tV = torch.linalg.eig(torch.tensor(a))
    w, V = _parts(ptl.tensor(a))
    for i in range(3):
        assert _match(w[i], tw.numpy()[i]) <= 1e-12 * np.abs(w[i]).max()
        # each eigenvector agrees with torch's up to a unit factor
        for j in range(6):
            k = np.argmin(np.abs(tw.numpy()[i] - w[i, j]))
            phase = np.vdot(tV.numpy()[i][:, k], V[i][:, j])
            assert abs(abs(phase) - 1) <= 1e-10


def test_outputs_record_the_eig_node():
    """The derivative itself: tests/autograd/test_complex_autograd.py."""
    A = ptl.tensor(_random((3, 3), 21), requires_grad=True)
    outs = eig_split(A)
    assert all(o.grad_fn is not None and o.grad_fn.name() == "LinalgEigBackward0"
               for o in outs)
    with ptl.no_grad():
        assert not any(o.requires_grad for o in eig_split(A))


def test_no_leak():
    A = ptl.tensor(_random((2, 5, 5), 22))
    assert_no_leak(lambda: eig_split(A))
    assert_no_leak(lambda: pytest.raises(RuntimeError, eig_split, ptl.ones(3, 4)))


# ---- linalg.eig / eigvals: the complex results assembled from _eig_split's parts ----

@pytest.mark.parametrize("shape", [(5, 5), (3, 4, 4), (0, 3, 3), (1, 1), (2, 0, 0)])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_eig_returns_complex_eigenpairs(shape, dtype):
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    w, v = ptl.linalg.eig(ptl.tensor(a, dtype=dtype))
    cdt = ptl.complex64 if dtype == ptl.float32 else ptl.complex128
    assert w.dtype == v.dtype == cdt and w.shape == shape[:-1] and v.shape == shape
    wn, vn = w.numpy().astype(np.complex128), v.numpy().astype(np.complex128)
    tol = 1e-4 if dtype == ptl.float32 else 1e-12
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], atol=tol * max(1, a.size))
    if a.size:
        np.testing.assert_allclose(np.linalg.norm(vn, axis=-2), 1.0, atol=tol)
        ref = np.linalg.eigvals(a)
        np.testing.assert_allclose(np.sort_complex(wn.reshape(-1, shape[-1])),
                                   np.sort_complex(ref.reshape(-1, shape[-1])), atol=tol * 10)
    np.testing.assert_array_equal(ptl.linalg.eigvals(ptl.tensor(a, dtype=dtype)).numpy(),
                                  w.numpy())


def test_eig_of_a_rotation_is_plus_minus_i():
    r = ptl.linalg.eig(ptl.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=ptl.float64))
    assert type(r).__name__ == "linalg_eig"
    np.testing.assert_allclose(r.eigenvalues.numpy(), [1j, -1j], atol=1e-15)
    assert "torch.return_types.linalg_eig(" in repr(r)


def test_eig_errors():
    with ptl.no_grad():
        assert ptl.linalg.eigvals(ptl.ones(2, 2, requires_grad=True)).shape == (2,)
    # a complex matrix has its own kernel (tests/aten/test_linalg_complex.py)
    assert ptl.linalg.eig(ptl.ones(2, 2, dtype=ptl.complex64))[0].dtype == ptl.complex64
    with pytest.raises(NotImplementedError, match="out="):
        ptl.linalg.eigvals(ptl.ones(2, 2), out=ptl.empty(2, dtype=ptl.complex64))
    with pytest.raises(TypeError, match="must be Tensor"):
        ptl.linalg.eig([[1.0]])
    with pytest.raises(RuntimeError, match="square"):
        ptl.linalg.eig(ptl.ones(2, 3))


@torch_ref
def test_eig_matches_torch():
    a = np.random.default_rng(7).standard_normal((3, 6, 6))
    w, v = ptl.linalg.eig(ptl.tensor(a))
    tw, tv = torch.linalg.eig(torch.tensor(a))
    np.testing.assert_allclose(w.numpy(), tw.numpy(), atol=1e-12)
    # eigenvectors agree up to a unit factor per column (LAPACK's normalisation fixes it)
    ratio = v.numpy() / tv.numpy()
    np.testing.assert_allclose(np.abs(ratio), 1.0, atol=1e-9)
    assert str(ptl.linalg.eigvals(ptl.tensor(a)).dtype) == str(torch.linalg.eigvals(
        torch.tensor(a)).dtype)
