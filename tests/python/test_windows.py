"""The window functions (pytorchlite/_windows.py) against NumPy's symmetric windows in float64
(a periodic window of length N is NumPy's of length N + 1 without its last point), their
lengths 0 and 1, dtype / requires_grad / default dtype, PyTorch's errors and, with torch
installed, the same calls in both libraries; and torch.signal.windows against
scipy.signal.windows and torch."""
import re

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


# ---- torch.signal.windows, against scipy.signal.windows (float64) and torch ----
SIGNAL_CASES = {
    "bartlett": ({}, lambda sw, M, sym: sw.bartlett(M, sym=sym)),
    "blackman": ({}, lambda sw, M, sym: sw.blackman(M, sym=sym)),
    "cosine": ({}, lambda sw, M, sym: sw.cosine(M, sym=sym)),
    "exponential": ({"tau": 2.5}, lambda sw, M, sym: sw.exponential(M, tau=2.5, sym=sym)),
    "gaussian": ({"std": 1.7}, lambda sw, M, sym: sw.gaussian(M, 1.7, sym=sym)),
    "general_cosine": ({"a": [0.5, 0.3, 0.2]},
                       lambda sw, M, sym: sw.general_cosine(M, [0.5, 0.3, 0.2], sym=sym)),
    "general_hamming": ({"alpha": 0.6}, lambda sw, M, sym: sw.general_hamming(M, 0.6, sym=sym)),
    "hamming": ({}, lambda sw, M, sym: sw.hamming(M, sym=sym)),
    "hann": ({}, lambda sw, M, sym: sw.hann(M, sym=sym)),
    "kaiser": ({"beta": 7.5}, lambda sw, M, sym: sw.kaiser(M, 7.5, sym=sym)),
    "nuttall": ({}, lambda sw, M, sym: sw.nuttall(M, sym=sym)),
}


@pytest.mark.parametrize("name", sorted(SIGNAL_CASES))
@pytest.mark.parametrize("M", [0, 1, 2, 3, 8, 33])
@pytest.mark.parametrize("sym", [True, False])
def test_signal_windows_match_scipy(name, M, sym):
    sw = pytest.importorskip("scipy.signal.windows")
    kwargs, ref = SIGNAL_CASES[name]
    ours = getattr(ptl.signal.windows, name)(M, sym=sym, dtype=ptl.float64, **kwargs)
    assert ours.dtype == ptl.float64 and ours.shape == (M,)
    np.testing.assert_allclose(ours.numpy(), ref(sw, M, sym), rtol=1e-12, atol=1e-14)
    f32 = getattr(ptl.signal.windows, name)(M, sym=sym, **kwargs)
    assert f32.dtype == ptl.float32
    np.testing.assert_array_equal(f32.numpy(), ours.numpy().astype(np.float32))


def test_signal_windows_arguments_and_errors():
    w = ptl.signal.windows
    assert w.hann(4, requires_grad=True).requires_grad
    np.testing.assert_allclose(w.exponential(5, center=1.0, sym=False, dtype=ptl.float64).numpy(),
                               np.exp(-np.abs(np.arange(5) - 1.0)), rtol=1e-15)
    for bad, kind, msg in [
            (lambda: w.hann(-1), ValueError,   # hann is general_cosine's, in PyTorch too
             "general_cosine requires non-negative window length, got M=-1"),
            (lambda: w.cosine(3, dtype=ptl.int64), ValueError,
             "cosine expects float32 or float64 dtypes, got: torch.int64"),
            (lambda: w.bartlett(3, dtype=ptl.float16), ValueError,
             "bartlett expects float32 or float64 dtypes, got: torch.float16"),
            (lambda: w.kaiser(3, layout=ptl.sparse_coo), ValueError,
             "kaiser is implemented for strided tensors only, got: torch.sparse_coo"),
            (lambda: w.exponential(3, tau=0), ValueError, "Tau must be positive, got: 0 instead."),
            (lambda: w.exponential(3, center=1.0), ValueError,
             "Center must be None for symmetric windows"),
            (lambda: w.gaussian(3, std=-1.0), ValueError,
             "Standard deviation must be positive, got: -1.0 instead."),
            (lambda: w.kaiser(3, beta=-2.0), ValueError,
             "beta must be non-negative, got: -2.0 instead."),
            (lambda: w.general_cosine(3, a=[]), ValueError, "Coefficients cannot be empty"),
            (lambda: w.general_cosine(3, a=1.0), TypeError,
             "Coefficients must be a list/tuple")]:
        with pytest.raises(kind, match="^" + re.escape(msg) + "$"):
            bad()
    # as in PyTorch, lengths 0 and 1 return before the coefficients are looked at
    assert w.general_cosine(1, a=[]).tolist() == [1.0]


@torch_ref
@pytest.mark.parametrize("name", sorted(SIGNAL_CASES))
@pytest.mark.parametrize("M,sym", [(0, True), (1, False), (6, True), (7, False)])
def test_signal_windows_match_torch(name, M, sym):
    kwargs = SIGNAL_CASES[name][0]
    for dtype in ("float32", "float64"):
        ours = getattr(ptl.signal.windows, name)(M, sym=sym, dtype=getattr(ptl, dtype),
                                                 **kwargs)
        theirs = getattr(torch.signal.windows, name)(M, sym=sym, dtype=getattr(torch, dtype),
                                                     **kwargs)
        assert str(ours.dtype) == str(theirs.dtype) and tuple(ours.shape) == tuple(theirs.shape)
        tol = 1e-6 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=tol, atol=tol)
