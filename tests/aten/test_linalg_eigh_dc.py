"""eigh's vectors by divide and conquer (Note [Tridiagonal divide and conquer] in
linalg_eigh_dc.c): above DC_LEAF rows the tridiagonal T is split in halves down to leaves of at
most DC_LEAF rows (solved by the QL iteration), and each merge deflates small z components and
close poles, solves the secular equation root by root and forms the merged vectors from the
recomputed z by one GEMM per half.  Every size from 0 past four merge levels' worth of leaves
and some larger ones; matrices that deflate heavily (identity, diagonal, two or three distinct
eigenvalues, clusters, glued Wilkinson matrices, zero); tiny and huge scales; float32,
batched and strided inputs; one and two threads bit for bit.  The eigenvalues are checked
against NumPy's (LAPACK) in float64, the vectors (signs free) through the residual
|A V - V diag(w)| / |A| and the orthogonality |V^T V - I|, both at O(n eps).  eigvalsh keeps
the QL iteration: it agrees with eigh's eigenvalues to O(n eps |A|), not bit for bit."""
import numpy as np
import pytest

import pytorchlite as ptl

DC_LEAF = 32
SIZES = list(range(0, 4 * DC_LEAF + 3)) + [200, 256, 300]
EPS = {"float64": np.finfo(np.float64).eps, "float32": np.finfo(np.float32).eps}


def _check(a, w, V, dtype="float64", c=4.0):
    """w ascending and LAPACK's; the residual and the orthogonality at c n eps (normwise)."""
    n = a.shape[-1]
    w = w.numpy().astype(np.float64)
    v = V.numpy().astype(np.float64)
    assert np.all(np.diff(w, axis=-1) >= 0)
    if n == 0:
        return
    eps = EPS[dtype]
    norm = np.linalg.norm(a, 2, axis=(-2, -1))[..., None]
    ref = np.linalg.eigvalsh(a)
    assert np.all(np.abs(w - ref) <= c * n * eps * norm)
    # scaled to the norm first: |A V| of a matrix near 1e300 would overflow
    safe = np.where(norm > 0, norm, 1.0)[..., None]
    an = a / safe
    res = np.linalg.norm(an @ v - v * (w[..., None, :] / safe), axis=(-2, -1))
    assert np.all(res <= c * n * eps)
    eye = np.broadcast_to(np.eye(n), a.shape)
    assert np.all(np.linalg.norm(np.swapaxes(v, -1, -2) @ v - eye, axis=(-2, -1)) <= c * n * eps)


def _random(n, seed):
    a = np.random.default_rng(seed).standard_normal((n, n))
    return a + a.T


def _with_values(lam, seed):
    """Q diag(lam) Q^T for a random orthogonal Q, symmetrised."""
    n = len(lam)
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((n, n)))
    a = (q * lam) @ q.T
    return (a + a.T) / 2


def _glued_wilkinson(n):
    """Copies of W21+ (diagonal |10 - i|, off-diagonal 1) glued by 1e-7, cut to n rows: its
    eigenvalues come in pairs equal to many digits, so the merges deflate close poles."""
    i = np.arange(n)
    a = np.diag(np.abs(i % 21 - 10).astype(np.float64))
    off = np.where((i[:-1] + 1) % 21 == 0, 1e-7, 1.0)
    return a + np.diag(off, 1) + np.diag(off, -1)


def _kind(kind, n):
    g = np.random.default_rng(n + 100)
    if kind == "random":
        return _random(n, n)
    if kind == "two values":
        return _with_values(np.where(np.arange(n) % 2 == 0, -1.0, 3.0), n)
    if kind == "three values":
        return _with_values(np.array([(0.0, 1.0, 7.0)[i % 3] for i in range(n)]), n)
    if kind == "clusters":
        return _with_values(np.array([(-1.0, 2.0, 2.0 + 1e-11, 5.0)[i % 4] + 1e-13 * i
                                      for i in range(n)]), n)
    if kind == "identity":
        return np.eye(n)
    if kind == "diagonal repeats":
        return np.diag(g.integers(-2, 3, n).astype(np.float64))
    if kind == "glued wilkinson":
        return _glued_wilkinson(n)
    if kind == "graded":
        return _with_values(np.logspace(-12, 0, n) * g.choice([-1.0, 1.0], n), n)
    raise AssertionError(kind)


@pytest.mark.parametrize("n", SIZES)
def test_eigh_random_every_size(n, threads):
    a = _random(n, n)
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    _check(a, w, V)
    # eigvalsh keeps the QL iteration: the same values to rounding
    wv = ptl.linalg.eigvalsh(ptl.tensor(a)).numpy()
    assert np.all(np.abs(wv - w.numpy()) <= 4 * max(n, 1) * EPS["float64"] *
                  max(np.abs(a).sum(axis=1).max(initial=0.0), 1.0))


@pytest.mark.parametrize("n", [DC_LEAF + 1, 2 * DC_LEAF + 1, 100, 4 * DC_LEAF + 2, 256, 300])
@pytest.mark.parametrize("kind", ["two values", "three values", "clusters", "identity",
                                  "diagonal repeats", "glued wilkinson", "graded"])
def test_eigh_heavy_deflation(n, kind):
    a = _kind(kind, n)
    for uplo in ("L", "U"):
        w, V = ptl.linalg.eigh(ptl.tensor(np.tril(a) if uplo == "L" else np.triu(a)),
                               UPLO=uplo)
        _check(a, w, V)


@pytest.mark.parametrize("n", [DC_LEAF + 1, 97, 256])
def test_eigh_zero_and_diagonal_exact(n):
    # every z component deflates: the values exactly, V = I for the zero matrix
    w, V = ptl.linalg.eigh(ptl.zeros(n, n, dtype=ptl.float64))
    assert not w.any()
    np.testing.assert_array_equal(V.numpy(), np.eye(n))
    d = np.random.default_rng(n).standard_normal(n)
    w, V = ptl.linalg.eigh(ptl.tensor(np.diag(d)))
    np.testing.assert_array_equal(w.numpy(), np.sort(d))
    np.testing.assert_array_equal(np.abs(V.numpy()), np.eye(n)[:, np.argsort(d)])


@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e300])
@pytest.mark.parametrize("n", [DC_LEAF + 5, 130])
def test_eigh_tiny_and_huge_scales(scale, n):
    a = _random(n, 7) * (scale / 4)
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    assert np.all(np.isfinite(w.numpy())) and np.all(np.isfinite(V.numpy()))
    _check(a, w, V)


@pytest.mark.parametrize("n", [DC_LEAF + 1, 100, 256])
@pytest.mark.parametrize("kind", ["random", "three values"])
def test_eigh_float32(n, kind):
    a = _kind(kind, n).astype(np.float32)
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    assert w.dtype == ptl.float32 and V.dtype == ptl.float32
    _check(a.astype(np.float64), w, V, "float32")


def test_eigh_batched_and_strided(threads):
    g = np.random.default_rng(3)
    n = 2 * DC_LEAF + 7
    a = g.standard_normal((4, n, n))
    a = a + np.swapaxes(a, -1, -2)
    a[1] = _kind("three values", n)
    a[2] = _glued_wilkinson(n)
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    _check(a, w, V)
    # a transposed view of every other matrix of a larger batch: the same bits
    big = ptl.tensor(np.concatenate([a, a])).transpose(-1, -2)[::2]
    w2, V2 = ptl.linalg.eigh(big)
    ref = np.swapaxes(np.concatenate([a, a]), -1, -2)[::2]
    _check(ref, w2, V2)
    one = ptl.linalg.eigh(ptl.tensor(np.ascontiguousarray(ref[1])))
    np.testing.assert_array_equal(w2.numpy()[1], one[0].numpy())
    np.testing.assert_array_equal(V2.numpy()[1], one[1].numpy())


@pytest.mark.parametrize("n", [DC_LEAF + 1, 200, 300])
def test_eigh_one_and_two_threads_bit_identical(n):
    a = np.stack([_random(n, 1), _kind("three values", n), _glued_wilkinson(n)])
    old = ptl.get_num_threads()
    try:
        out = []
        for t in (1, 2):
            ptl.set_num_threads(t)
            out.append([x.numpy() for x in ptl.linalg.eigh(ptl.tensor(a))] +
                       [x.numpy() for x in ptl.linalg.eigh(ptl.tensor(a[0]))])
    finally:
        ptl.set_num_threads(old)
    for x, y in zip(*out):
        np.testing.assert_array_equal(x, y)


def test_eigh_not_finite_takes_the_ql():
    # a NaN reaches the tridiagonal: the QL's result (no vectors from the merges)
    n = DC_LEAF + 8
    a = _random(n, 5)
    a[3, 4] = a[4, 3] = np.nan
    w, V = ptl.linalg.eigh(ptl.tensor(a))
    assert np.isnan(w.numpy()).any()
    assert w.shape == (n,) and V.shape == (n, n)


@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("n", [2, 3, 5, 32, 33, 40])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_of_a_matrix_with_a_nonfinite_entry_is_nan(dtype, n, bad, uplo):
    """Every value and vector entry nan (Note [Symmetric eigensolver]): a nan on T's
    subdiagonal had been deflated as negligible and a nan elsewhere lost in the reduction's
    scaled norms, returning finite values; a nan in the triangle not read changes nothing."""
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, n))
    a = a + a.T
    for i, j in [(1, 0), (n - 1, n - 2), (n - 1, 0), (n // 2, n // 2)]:
        b = a.copy()
        lo, hi = max(i, j), min(i, j)
        r, c = (lo, hi) if uplo == "L" else (hi, lo)
        b[r, c] = bad
        x = ptl.tensor(b).to(getattr(ptl, dtype))
        w, v = ptl.linalg.eigh(x, UPLO=uplo)
        assert ptl.isnan(w).all() and ptl.isnan(v).all(), (i, j)
        assert ptl.isnan(ptl.linalg.eigvalsh(x, UPLO=uplo)).all(), (i, j)
        if lo != hi:   # the mirror entry, outside the triangle read
            b = a.copy()
            b[c, r] = bad
            x = ptl.tensor(b).to(getattr(ptl, dtype))
            w, v = ptl.linalg.eigh(x, UPLO=uplo)
            want = np.linalg.eigvalsh(a, UPLO=uplo)
            np.testing.assert_allclose(w.double().numpy(), want, rtol=1e-4, atol=1e-4 * n)


def test_eigh_of_a_batch_with_one_nonfinite_matrix():
    a = np.stack([np.eye(3), np.eye(3)])
    a[1, 2, 1] = a[1, 1, 2] = np.nan
    w = ptl.linalg.eigvalsh(ptl.tensor(a))
    assert w[0].tolist() == [1.0, 1.0, 1.0]
    assert ptl.isnan(w[1]).all()
