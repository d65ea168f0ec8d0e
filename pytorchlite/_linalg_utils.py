"""The linear-algebra functions PyTorch removed in 1.9 and keeps as stubs that raise
(torch/_linalg_utils.py): torch.matrix_rank, lstsq, solve, eig, symeig and the Tensor methods
lstsq, solve, eig, symeig.  Each raises PyTorch's RuntimeError, which names the torch.linalg
function to call instead; a call that misses a required argument raises Python's TypeError
first, as PyTorch's does (the signatures are PyTorch's).  As in PyTorch, they are plain
Python functions that __torch_function__ does not see."""
__all__ = ["matrix_rank", "lstsq", "solve", "eig", "symeig"]

_REMOVED = "This function was deprecated since version 1.9 and is now removed."


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    raise RuntimeError(
        _REMOVED + "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
        "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")


def solve(input, A, *, out=None):
    raise RuntimeError(
        _REMOVED + " `torch.solve` is deprecated in favor of `torch.linalg.solve`. "
        "`torch.linalg.solve` has its arguments reversed and does not return the LU "
        "factorization.\n\nTo get the LU factorization see `torch.lu`, which can be used with "
        "`torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
        "replaced with:\nX = torch.linalg.solve(A, B)")


def lstsq(input, A, *, out=None):
    raise RuntimeError(
        _REMOVED + " `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n"
        "`torch.linalg.lstsq` has reversed arguments and does not return the QR decomposition "
        "in the returned tuple (although it returns other information about the problem).\n\n"
        "To get the QR decomposition consider using `torch.linalg.qr`.\n\n"
        "The returned solution in `torch.lstsq` stored the residuals of the solution in the "
        "last m - n columns of the returned value whenever m > n. In torch.linalg.lstsq, the "
        "residuals are in the field 'residuals' of the returned named tuple.\n\n"
        "The unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
        "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution")


def _symeig(input, eigenvectors=False, upper=True, *, out=None):
    raise RuntimeError(
        _REMOVED + " The default behavior has changed from using the upper triangular portion "
        "of the matrix by default to using the lower triangular portion.\n\n"
        "L, _ = torch.symeig(A, upper=upper) should be replaced with:\n"
        "L = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\n"
        "L, V = torch.symeig(A, eigenvectors=True) should be replaced with:\n"
        "L, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")


def eig(self, eigenvectors=False, *, e=None, v=None):
    raise RuntimeError(
        _REMOVED + " `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` "
        "rather than real tensors mimicking complex tensors.\n\n"
        "L, _ = torch.eig(A) should be replaced with:\nL_complex = torch.linalg.eigvals(A)\n\n"
        "and\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
        "L_complex, V_complex = torch.linalg.eig(A)")


# torch.symeig is the function PyTorch names _symeig
symeig = _symeig


def _solve_method(self, other):
    return solve(self, other)


def _lstsq_method(self, other):
    return lstsq(self, other)


def _eig_method(self, eigenvectors=False):
    return eig(self, eigenvectors=eigenvectors)


def _symeig_method(self, eigenvectors=False):
    return _symeig(self, eigenvectors=eigenvectors)


def _install(tensor_class):
    """Tensor.solve / lstsq / eig / symeig, PyTorch's stubs that call the functions above."""
    for name, method in (("solve", _solve_method), ("lstsq", _lstsq_method),
                         ("eig", _eig_method), ("symeig", _symeig_method)):
        method.__name__ = name
        method.__qualname__ = "Tensor." + name
        setattr(tensor_class, name, method)
