"""Complex linear algebra (src/aten/native/linalg_complex.c, Note [Complex linear algebra]):
solve, inv, det, cholesky, qr, eigh, eigvalsh, svd and svdvals of one complex128 Hermitian
positive-definite matrix at 16 and 64 (and complex64 at 64), against numpy.linalg and
torch.linalg (LAPACK's zgetrf/zgetrs, zpotrf, zgeqrf/zungqr, zheevd, zgesdd) in the same
process.  pytorchlite's LU family and Cholesky are blocked on the complex GEMM, QR / eigh /
SVD vectorised loops (the SVD by bidiagonalisation, linalg_complex_svd.c);
benchmarks/interleaved_linalg_complex.py gives the one-thread ratios against PyTorch."""
import numpy as np
import pytest

from _impls import IMPLS, lib, make

_ROWS = ["solve", "inv", "det", "cholesky", "qr", "eigh", "eigvalsh", "svd", "svdvals"]


def _hpd(n):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    return a @ a.conj().T + n * np.eye(n)


def _fn(impl, name):
    mod = np.linalg if impl == "numpy" else lib(impl).linalg
    return getattr(mod, name)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n,dtype", [(16, "complex128"), (64, "complex128"), (64, "complex64")])
@pytest.mark.parametrize("name", _ROWS)
def test_linalg_complex(benchmark, impl, n, dtype, name):
    benchmark.group = f"linalg.{name} {n}x{n} {dtype}"
    a = _hpd(n)
    if name == "det":
        a = a / np.exp(np.linalg.slogdet(a)[1] / n)   # |det| 1: within complex64's range
    a = make(impl, a.astype(dtype))
    args = (a, make(impl, np.ones((n, 1), dtype))) if name == "solve" else (a,)
    benchmark(_fn(impl, name), *args)
