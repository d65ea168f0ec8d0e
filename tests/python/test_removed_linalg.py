"""The functions PyTorch removed in 1.9 and keeps as stubs (torch.matrix_rank, lstsq, solve,
eig, symeig and the Tensor methods lstsq, solve, eig, symeig): PyTorch's exception and
migration message for every call form, its TypeError for a missing argument; and the build
flags torch.has_lapack / has_spectral / has_mkl / has_openmp."""
import pytest

import golden
import pytorchlite as ptl
from helpers import torch

CALLS = {
    "matrix_rank": lambda lib: lib.matrix_rank(lib.eye(2)),
    "matrix_rank tol symmetric out": lambda lib: lib.matrix_rank(lib.eye(2), 0.5, True,
                                                                 out=lib.empty(0)),
    "lstsq": lambda lib: lib.lstsq(lib.eye(2), lib.eye(2)),
    "solve": lambda lib: lib.solve(lib.eye(2), lib.eye(2)),
    "eig": lambda lib: lib.eig(lib.eye(2)),
    "eig eigenvectors": lambda lib: lib.eig(lib.eye(2), True),
    "symeig": lambda lib: lib.symeig(lib.eye(2)),
    "symeig upper": lambda lib: lib.symeig(lib.eye(2), True, False),
    "Tensor.lstsq": lambda lib: lib.eye(2).lstsq(lib.eye(2)),
    "Tensor.solve": lambda lib: lib.eye(2).solve(lib.eye(2)),
    "Tensor.eig": lambda lib: lib.eye(2).eig(),
    "Tensor.eig eigenvectors": lambda lib: lib.eye(2).eig(eigenvectors=True),
    "Tensor.symeig": lambda lib: lib.eye(2).symeig(True),
    "matrix_rank no argument": lambda lib: lib.matrix_rank(),
    "lstsq one argument": lambda lib: lib.lstsq(lib.eye(2)),
    "solve no argument": lambda lib: lib.solve(),
    "eig no argument": lambda lib: lib.eig(),
    "symeig no argument": lambda lib: lib.symeig(),
    "Tensor.solve no argument": lambda lib: lib.eye(2).solve(),
}


@pytest.mark.parametrize("what", list(CALLS))
def test_same_exception_and_message(what):
    golden.assert_raises(lambda: CALLS[what](ptl), lambda: CALLS[what](torch))


@pytest.mark.parametrize("name", ["matrix_rank", "lstsq", "solve", "eig", "symeig"])
def test_message_names_the_replacement(name):
    with pytest.raises(RuntimeError, match="removed") as info:
        CALLS[name](ptl)
    assert "torch.linalg." in str(info.value)


def test_build_flags():
    """Linear algebra and FFTs are built in (pytorchlite's own kernels); MKL and OpenMP are
    not (its threads are its own pool): plain bools, as PyTorch's."""
    assert (ptl.has_lapack, ptl.has_spectral, ptl.has_mkl, ptl.has_openmp) == (
        True, True, False, False)
    assert all(type(getattr(ptl, n)) is bool for n in ("has_lapack", "has_spectral",
                                                      "has_mkl", "has_openmp"))
    assert ptl.linalg.inv(ptl.eye(2)).equal(ptl.eye(2))
    assert ptl.fft.fft(ptl.ones(4)).real.tolist() == [4.0, 0.0, 0.0, 0.0]
