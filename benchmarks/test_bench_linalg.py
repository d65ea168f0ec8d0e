"""Dense linear algebra: solve, inv, cholesky, qr and eigh of one float64 or float32 matrix at 64
and 256 (and det, slogdet, lu_factor and solve_triangular, which also has 256 x 256 rows with 1
to 32 right-hand sides in both dtypes, upper and lower; float32 inputs of the LU family,
cholesky and qr are factored in float32 as LAPACK's sgetrf/spotrf/sgeqrf do for PyTorch: Note
[Float64 linear algebra]), and eig at 16, 64 and 256, against numpy.linalg (LAPACK) and
torch.linalg in the same process.  pytorchlite computes these itself
(src/aten/native/linalg_solve.c, linalg_decomp.c and linalg_eig.c): LU, the triangular solves
and QR in column blocks whose trailing updates run in the GEMM, Cholesky in row blocks of U (U^T
U = A: the panel is contiguous rows) with the same, eigh's tridiagonal reduction in panels with
GEMM updates and its vectors by divide and conquer (merges by GEMM) as LAPACK's syevd; eig's
Francis QR is LAPACK's small-matrix lahqr (its updates away from the bulge batched per sweep)
with laqr3's aggressive early deflation (from 160 rows; active blocks from 75), against LAPACK's
multishift QR.  The singular values alone (svdvals, and matrix_rank, which counts the rank from
them) of float64 matrices at 64 and 256: Householder bidiagonalization and shifted QR steps on
the bidiagonal (svd.c, Note [Bidiagonal singular values]), against LAPACK's gesdd without
vectors.  With the vectors (svd, pinv) the reflections are accumulated by blocks and the QR
steps' rotations applied in batches (Note [Singular vectors]); lstsq's default driver solves
through one QR of [A B] in one native call (linalg_lstsq.c, Note [Least squares by one QR]).
float32 svd, pinv and lstsq compute in float32 as sgesdd and sgeqrf do for PyTorch (the
bidiagonal's QR steps and lstsq's rank proof in double), and float32 eigh and eigvalsh as
ssyevd does (eigvalsh's values by the root-free QL in double)."""
import numpy as np
import pytest

from _impls import IMPLS, lib, make


def _spd(n):
    a = np.random.default_rng(0).standard_normal((n, n))
    return a @ a.T + n * np.eye(n)


def _np_lu_factor(a):
    # NumPy has no LU: the closest LAPACK call it makes is the one inside solve (getrf, getrs)
    return np.linalg.solve(a, np.ones((a.shape[-1], 1), a.dtype))


def _np_solve_triangular(a, b):
    # NumPy has no triangular solve: a general solve of the triangle stands in
    return np.linalg.solve(a, b)


def _fn(impl, name):
    if impl == "numpy":
        return {"solve": np.linalg.solve, "inv": np.linalg.inv, "cholesky": np.linalg.cholesky,
                "qr": np.linalg.qr, "eigh": np.linalg.eigh, "det": np.linalg.det,
                "slogdet": np.linalg.slogdet, "lu_factor": _np_lu_factor,
                "solve_triangular": _np_solve_triangular}[name]
    if name == "solve_triangular":
        return lambda a, b: lib(impl).linalg.solve_triangular(a, b, upper=False)
    return getattr(lib(impl).linalg, name)


_FLOAT64_ROWS = ["solve", "inv", "cholesky", "qr", "eigh"]
_FLOAT32_ROWS = _FLOAT64_ROWS + ["det", "slogdet", "lu_factor", "solve_triangular"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [64, 256])
@pytest.mark.parametrize("name,dtype", [(name, "float64") for name in _FLOAT64_ROWS] +
                         [(name, "float32") for name in _FLOAT32_ROWS])
def test_linalg(benchmark, impl, n, name, dtype):
    benchmark.group = f"linalg.{name} {n}x{n} {dtype}"
    a = _spd(n)
    if name == "solve_triangular":
        a = np.tril(a)
    if name in ("det", "slogdet"):
        a = a / np.exp(np.linalg.slogdet(a)[1] / n)  # det 1: within float32's range
    a = make(impl, a.astype(dtype))
    rhs = name in ("solve", "solve_triangular")
    args = (a, make(impl, np.ones((n, 1), dtype))) if rhs else (a,)
    benchmark(_fn(impl, name), *args)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name,n", [("eigh", 128), ("eigvalsh", 64), ("eigvalsh", 128),
                                    ("eigvalsh", 256)])
def test_linalg_eigh_f32(benchmark, impl, name, n):
    # float32 eigh between test_linalg's 64 and 256, and eigvalsh: both in float32 (Note
    # [Symmetric eigensolver]), eigvalsh's values by the root-free QL against ssterf
    benchmark.group = f"linalg.{name} {n}x{n} float32"
    a = make(impl, _spd(n).astype("float32"))
    benchmark(getattr(np.linalg if impl == "numpy" else lib(impl).linalg, name), a)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("cols", [1, 8, 16, 32])
@pytest.mark.parametrize("upper", [False, True], ids=["lower", "upper"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linalg_solve_triangular_columns(benchmark, impl, cols, upper, dtype):
    """A 256 x 256 triangle, left side, with 1 to 32 right-hand sides (Note [Triangular
    substitution in solving order]: one by dot products, 2 to 63 in one pass)"""
    benchmark.group = (f"linalg.solve_triangular 256x256 {'upper' if upper else 'lower'} "
                       f"{cols} column(s) {dtype}")
    a = _spd(256)
    a = make(impl, (np.triu(a) if upper else np.tril(a)).astype(dtype))
    b = make(impl, np.random.default_rng(1).standard_normal((256, cols)).astype(dtype))
    if impl == "numpy":
        benchmark(_np_solve_triangular, a, b)
    else:
        benchmark(lib(impl).linalg.solve_triangular, a, b, upper=upper)


def _eig_fn(impl):
    if impl == "numpy":
        return np.linalg.eig
    if impl == "torch":
        return lib(impl).linalg.eig
    return lib(impl).linalg._eig_split


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [16, 64, 256])
def test_linalg_eig(benchmark, impl, n):
    # a random nonsymmetric matrix: about half its eigenvalues come in complex pairs;
    # pytorchlite's _eig_split returns linalg.eig's results as real and imaginary parts
    benchmark.group = f"linalg.eig {n}x{n} float64"
    a = make(impl, np.random.default_rng(0).standard_normal((n, n)))
    benchmark(_eig_fn(impl), a)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [64, 100, 256])
def test_linalg_eigvals(benchmark, impl, n):
    # the eigenvalues alone: the Francis sweeps update only the active block (100 rows:
    # below the 160 from which early deflation runs)
    benchmark.group = f"linalg.eigvals {n}x{n} float64"
    a = make(impl, np.random.default_rng(0).standard_normal((n, n)))
    benchmark(np.linalg.eigvals if impl == "numpy" else lib(impl).linalg.eigvals, a)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [128, 512, 1024])
def test_linalg_cholesky_sizes(benchmark, impl, n):
    # Cholesky's blocking (Note [Blocked Cholesky]) beyond the 64 and 256 of test_linalg
    benchmark.group = f"linalg.cholesky {n}x{n} float64"
    a = make(impl, _spd(n))
    benchmark(np.linalg.cholesky if impl == "numpy" else lib(impl).linalg.cholesky, a)


def _values_fn(impl, name):
    if impl == "numpy":
        return {"svdvals": lambda a: np.linalg.svd(a, compute_uv=False),
                "matrix_rank": np.linalg.matrix_rank,
                "lstsq": lambda a, b: np.linalg.lstsq(a, b, rcond=None)}[name]
    return getattr(lib(impl).linalg, name)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("name,m,n", [("svdvals", 64, 64), ("svdvals", 256, 256),
                                      ("svdvals", 256, 64), ("matrix_rank", 256, 256),
                                      ("lstsq", 256, 64)])
def test_linalg_values(benchmark, impl, name, m, n):
    benchmark.group = f"linalg.{name} {m}x{n} float64"
    gen = np.random.default_rng(0)
    args = (make(impl, gen.standard_normal((m, n))),)
    if name == "lstsq":
        args += (make(impl, gen.standard_normal((m, 4))),)
    benchmark(_values_fn(impl, name), *args)


def _vectors_fn(impl, name):
    if impl == "numpy":
        return {"svd": lambda a: np.linalg.svd(a, full_matrices=True),
                "svd_reduced": lambda a: np.linalg.svd(a, full_matrices=False),
                "pinv": np.linalg.pinv,
                "lstsq": lambda a, b: np.linalg.lstsq(a, b, rcond=None)}[name]
    L = lib(impl).linalg
    return {"svd": lambda a: L.svd(a, full_matrices=True),
            "svd_reduced": lambda a: L.svd(a, full_matrices=False),
            "pinv": L.pinv, "lstsq": L.lstsq}[name]


_VECTOR_ROWS = [(name, m, n) for name in ("svd", "svd_reduced", "pinv", "lstsq")
                for m, n in ((64, 64), (256, 256), (256, 64), (64, 256))
                if name != "lstsq" or m >= n]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name,m,n", _VECTOR_ROWS)
def test_linalg_vectors(benchmark, impl, name, m, n, dtype):
    # the singular vectors (svd.c, Note [Singular vectors]), pinv from them, and lstsq with
    # one right-hand side (one QR of [A B]: linalg_lstsq.c; square and tall rows)
    benchmark.group = f"linalg.{name} {m}x{n} {dtype}"
    gen = np.random.default_rng(0)
    args = (make(impl, gen.standard_normal((m, n)).astype(dtype)),)
    if name == "lstsq":
        args += (make(impl, gen.standard_normal((m, 1)).astype(dtype)),)
    benchmark(_vectors_fn(impl, name), *args)
