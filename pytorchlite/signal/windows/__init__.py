"""torch.signal.windows: SciPy-style windows of length M, symmetric (sym=True, the default) or
periodic (sym=False: the first M points of the symmetric window of length M + 1).

As the torch-namespace windows (_windows.py), each is evaluated in float64 at the points
n = 0 .. M - 1 and cast, so a float32 window is the float64 one correctly rounded (PyTorch
evaluates in the requested dtype, so its float32 windows differ in the last bits), and
requires_grad gives a leaf.  Length 0 gives an empty tensor; where PyTorch returns [1.] for
length 1 without evaluating, so does this."""
import math
from collections.abc import Iterable

from ... import _C
from ..._layout import strided
from ..._windows import _i0_series

_f = _C._functions

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]

_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)


def _check(name, M, dtype, layout):
    """dtype (the default one for None) after PyTorch's checks of the common arguments."""
    if dtype is None:
        dtype = _C.get_default_dtype()
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    if dtype not in (_C.float32, _C.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _span(M, sym):
    """The length whose symmetric window this one is the start of, minus one."""
    return M - 1 if sym or M <= 1 else M


def _points(M, device):
    return _f["arange"](M, dtype=_C.float64, device=device)


def _finish(values, dtype, requires_grad):
    return values.to(dtype).requires_grad_(requires_grad)


def _trivial(M, dtype, device, requires_grad):
    """The windows of lengths 0 and 1, which need no points; None for longer ones."""
    if M > 1:
        return None
    maker = _f["empty"] if M == 0 else _f["ones"]
    return maker(M, dtype=dtype, device=device).requires_grad_(requires_grad)


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=strided, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau); center defaults to the middle of the span."""
    dtype = _check("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    if center is None:
        center = _span(M, sym) / 2.0
    values = ((_points(M, device) - center).abs() * (-1.0 / tau)).exp()
    return _finish(values, dtype, requires_grad)


def cosine(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """sin(pi (n + 1/2) / (span + 1))."""
    dtype = _check("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    values = ((_points(M, device) + 0.5) * (math.pi / (_span(M, sym) + 1))).sin()
    return _finish(values, dtype, requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=strided, device=None,
             requires_grad=False):
    """exp(-(n - span / 2)^2 / (2 std^2))."""
    dtype = _check("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(M, dtype, device, requires_grad)
    d = _points(M, device) - _span(M, sym) / 2.0
    values = (d * d * (-0.5 / (std * std))).exp()
    return _finish(values, dtype, requires_grad)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=strided, device=None,
           requires_grad=False):
    """I0(beta sqrt(1 - r^2)) / I0(beta), r = 2 n / span - 1 (capped at 1)."""
    dtype = _check("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    r = (_points(M, device) * (2.0 / _span(M, sym)) - 1).clamp(-1.0, 1.0)
    arg = (1 - r * r).sqrt() * beta
    values = _i0_series(arg) / _i0_series(_f["full_like"](arg[:1], beta))
    return _finish(values, dtype, requires_grad)


def bartlett(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """The triangle 1 - |2 n / span - 1|."""
    dtype = _check("bartlett", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    values = 1 - (_points(M, device) * (2.0 / _span(M, sym)) - 1).abs()
    return _finish(values, dtype, requires_grad)


def general_cosine(M, *, a, sym=True, dtype=None, layout=strided, device=None,
                   requires_grad=False):
    """sum_i (-1)^i a[i] cos(2 pi i n / span)."""
    dtype = _check("general_cosine", M, dtype, layout)
    trivial = _trivial(M, dtype, device, requires_grad)
    if trivial is not None:
        return trivial
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    phase = _points(M, device) * (2 * math.pi / _span(M, sym))
    values = _f["zeros_like"](phase)
    for i, w in enumerate(a):
        values = values + ((-1) ** i * float(w)) * (phase * i).cos()
    return _finish(values, dtype, requires_grad)


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=strided, device=None,
                    requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / span)."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def hamming(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_cosine with a = [0.42, 0.5, 0.08]."""
    dtype = _check("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M, *, sym=True, dtype=None, layout=strided, device=None, requires_grad=False):
    """general_cosine with Nuttall's four coefficients (SciPy's)."""
    return general_cosine(M, a=list(_NUTTALL), sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)
