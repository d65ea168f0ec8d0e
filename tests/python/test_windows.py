"""The window functions (pytorchlite/_windows.py) against NumPy's symmetric windows in float64
(a periodic window of length N is NumPy's of length N + 1 without its last point), their
lengths 0 and 1, dtype / requires_grad / default dtype, PyTorch's errors and, with torch
installed, the same calls in both libraries."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, assert_raises_like_torch, torch, torch_ref

NUMPY = {
    "hann_window": np.hanning, "hamming_window": np.hamming,
    "blackman_window": np.blackman, "bartlett_window": np.bartlett,
    "kaiser_window": lambda n: np.kaiser(n, 12.0),
}
LENGTHS = [0, 1, 2, 3, 8, 101]


def _numpy_window(name, n, periodic):
    if n <= 1:
        return np.ones(n)
    return NUMPY[name](n + 1)[:-1] if periodic else NUMPY[name](n)


@pytest.mark.parametrize("name", list(NUMPY))
@pytest.mark.parametrize("n", LENGTHS)
def test_against_numpy(name, n):
    fn = getattr(ptl, name)
    for periodic in (True, False):
        want = _numpy_window(name, n, periodic)
        assert_close(fn(n, periodic, dtype=ptl.float64), want, dtype=ptl.float64, atol=1e-14)
        assert_close(fn(n, periodic), want.astype(np.float32), dtype=ptl.float32)
    assert_close(fn(n), _numpy_window(name, n, True).astype(np.float32))   # periodic default


def test_hamming_and_kaiser_parameters():
    n = np.arange(7)
    assert_close(ptl.hamming_window(7, False, 0.6, 0.3, dtype=ptl.float64),
                 0.6 - 0.3 * np.cos(2 * np.pi * n / 6))
    assert_close(ptl.hamming_window(6, True, 0.5, 0.5, dtype=ptl.float64),
                 np.hanning(7)[:-1], atol=1e-15)
    for beta in (0.0, 0.5, 5.0, 40.0, 150.0):
        assert_close(ptl.kaiser_window(64, False, beta, dtype=ptl.float64), np.kaiser(64, beta),
                     rtol=1e-12, atol=1e-300)
        assert_close(ptl.kaiser_window(9, True, beta, dtype=ptl.float64),
                     np.kaiser(10, beta)[:-1], rtol=1e-12, atol=1e-300)
    assert_close(ptl.kaiser_window(5, False, -3.0, dtype=ptl.float64), np.kaiser(5, 3.0))


def test_options():
    for name in NUMPY:
        fn = getattr(ptl, name)
        w = fn(4, requires_grad=True)
        assert w.requires_grad and w.is_leaf and w.dtype == ptl.float32
        assert fn(4, dtype=ptl.float16).dtype == ptl.float16
        assert fn(4, dtype=ptl.bfloat16).dtype == ptl.bfloat16
        assert fn(4, device="cpu", layout=ptl.strided).device.type == "cpu"
        assert fn(1, requires_grad=True).requires_grad
        old = ptl.get_default_dtype()
        ptl.set_default_dtype(ptl.float64)
        try:
            assert fn(3).dtype == ptl.float64
        finally:
            ptl.set_default_dtype(old)


@pytest.mark.parametrize("name", list(NUMPY))
def test_errors(name):
    assert_raises_like_torch(lambda lib: getattr(lib, name)(-1), RuntimeError,
                             f"{name} requires non-negative window_length, got "
                             "window_length=-1")
    assert_raises_like_torch(lambda lib: getattr(lib, name)(3, dtype=lib.int64), RuntimeError,
                             f"{name} expects floating point dtypes, got: ")
    assert_raises_like_torch(lambda lib: getattr(lib, name)(3, layout=lib.sparse_coo),
                             RuntimeError, f"{name} is not implemented for sparse types, got: ")
    assert_raises_like_torch(lambda lib: getattr(lib, name)(3, dtype=lib.complex64),
                             NotImplementedError, "not implemented for")
    assert_raises_like_torch(lambda lib: getattr(lib, name)(3.0), TypeError,
                             f"{name}(): argument 'window_length' (position 1) must be int, "
                             "not float")


@torch_ref
@pytest.mark.parametrize("name", list(NUMPY))
def test_matches_torch(name):
    for n in LENGTHS:
        for periodic in (True, False):
            for dtype in ("float32", "float64"):
                got = getattr(ptl, name)(n, periodic, dtype=getattr(ptl, dtype))
                want = getattr(torch, name)(n, periodic, dtype=getattr(torch, dtype))
                assert str(got.dtype) == str(want.dtype)
                tol = 1e-6 if dtype == "float32" else 1e-12
                assert_close(got, want.numpy(), rtol=tol, atol=tol)
