"""The window functions of the torch namespace: hann_window, hamming_window, blackman_window,
bartlett_window and kaiser_window.

Each is evaluated in float64 on the points n = 0 .. N-1 of a symmetric window of length N
(periodic=True, the default: of length N + 1 with its last point dropped, the form a DFT of
length N wants) and cast to the requested dtype, so a float32 window is the float64 one
correctly rounded.  Length 0 gives an empty tensor and length 1 the window [1.].  The Kaiser
window needs the modified Bessel function I0, summed here as its power series in float64."""
import math
import operator

from . import _C
from . import overrides as _overrides
from ._native_signature import native
from ._layout import strided

_f = _C._functions

__all__ = ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"]


def _points(name, window_length, periodic, dtype, layout, device):
    """(n as float64, the symmetric length) after PyTorch's argument checks; None for the
    lengths 0 and 1, whose windows need no points."""
    try:
        window_length = operator.index(window_length)
    except TypeError:
        raise TypeError(f"{name}(): argument 'window_length' (position 1) must be int, not "
                        f"{type(window_length).__name__}") from None
    if dtype is None:
        dtype = _C.get_default_dtype()
    if layout is not None and layout != strided:
        raise RuntimeError(f"{name} is not implemented for sparse types, got: layout={layout}")
    if dtype.is_complex:
        raise NotImplementedError(f"{name} is not implemented for complex dtypes, got: {dtype}")
    if not dtype.is_floating_point:
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got "
                           f"window_length={window_length}")
    if window_length <= 1:
        return None, window_length, dtype
    n = _f["arange"](window_length, dtype=_C.float64, device=device)
    return n, window_length + 1 if periodic else window_length, dtype


def _finish(values, window_length, dtype, device, requires_grad):
    if values is None:
        values = _f["ones"](window_length, dtype=dtype, device=device)
    else:
        values = values.to(dtype)
    return values.requires_grad_(requires_grad)


def _cosine_sum(name, window_length, periodic, coefficients, dtype, layout, device,
                requires_grad):
    """sum_k (-1)^k a_k cos(2 pi k n / (N - 1)): the Hann, Hamming and Blackman windows."""
    n, length, dtype = _points(name, window_length, periodic, dtype, layout, device)
    values = None
    if n is not None:
        phase = n * (2 * math.pi / (length - 1))
        values = _f["full_like"](n, coefficients[0])
        for k, a in enumerate(coefficients[1:], 1):
            values = values + ((-1) ** k * a) * (phase * k).cos()
    return _finish(values, window_length, dtype, device, requires_grad)


@native
def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                pin_memory=False, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _cosine_sum("hann_window", window_length, periodic, (0.5, 0.5), dtype, layout, device,
                       requires_grad)


@native
def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, pin_memory=False, requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _cosine_sum("hamming_window", window_length, periodic, (alpha, beta), dtype, layout,
                       device, requires_grad)


@native
def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _cosine_sum("blackman_window", window_length, periodic, (0.42, 0.5, 0.08), dtype,
                       layout, device, requires_grad)


@native
def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None,
                    pin_memory=False, requires_grad=False):
    """The triangle 1 - |2n / (N - 1) - 1|."""
    n, length, dtype = _points("bartlett_window", window_length, periodic, dtype, layout,
                               device)
    values = None if n is None else 1 - (n * (2.0 / (length - 1)) - 1).abs()
    return _finish(values, window_length, dtype, device, requires_grad)


def _i0_series(x):
    """I0(x) = sum_k ((x / 2)^2)^k / (k!)^2 for a float64 tensor, summed until the terms stop
    changing the sum (about |x| + 20 terms: they peak near k = |x| / 2)."""
    q = x * x * 0.25
    term = _f["ones_like"](x)
    total = term
    k = 1
    while True:
        term = term * q / (k * k)
        total = total + term
        if k > 2 and bool((term <= total * 1e-17).all()):
            return total
        k += 1


@native
def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, pin_memory=False, requires_grad=False):
    """I0(beta sqrt(1 - ((n - m) / m)^2)) / I0(beta), m = (N - 1) / 2."""
    n, length, dtype = _points("kaiser_window", window_length, periodic, dtype, layout, device)
    values = None
    if n is not None:
        m = (length - 1) / 2
        r = ((n - m) / m).clamp(-1.0, 1.0)
        arg = (1 - r * r).sqrt() * beta
        values = _i0_series(arg) / _i0_series(_f["full_like"](arg[:1], beta))
    return _finish(values, window_length, dtype, device, requires_grad)

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
