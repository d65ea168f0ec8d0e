"""torch.fft: discrete Fourier transforms.  Mirrors torch/fft/__init__.py and the
compositions of ATen/native/SpectralOps.cpp.

Every transform is one of three operators of src/aten/ops.def (Note [FFT kernel] in
src/aten/native/fft.c), with the derivatives of Note [FFT derivatives]:
    _fft_c2c(x, dim, normalization, forward)      complex -> complex
    _fft_r2c(x, dim, normalization, onesided)     real -> complex (the first n/2 + 1 bins
                                                  of the last dim when onesided)
    _fft_c2r(x, dim, normalization, last_dim_size) the half spectrum -> real
`normalization` is the scale the operator applies: 0 none, 1 1/sqrt(n), 2 1/n, picked from
`norm` and the direction ("backward", the default, scales the inverse transforms by 1/n).
This module checks the arguments with PyTorch's messages, promotes integer input to the
default float dtype and real input to complex where a complex input is needed, and pads
with zeros or trims each transformed dim to the requested number of points first."""
import operator

from . import _C
from . import overrides as _overrides
from ._native_signature import native_prefixed
from .linalg import _legacy   # PyTorch's ScalarType names ("ComplexFloat") for messages

_native = native_prefixed("fft_")   # PyTorch's argument checks (Note [Native signatures])
_f = _C._functions
_c2c = _C._op("aten::_fft_c2c")
_r2c = _C._op("aten::_fft_r2c")
_c2r = _C._op("aten::_fft_c2r")

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
           "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn", "fftfreq",
           "rfftfreq", "fftshift", "ifftshift"]



def _norm(norm, forward):
    """The operators' normalization for `norm` (a str or None: the schemas' check) and a
    transform in this direction."""
    if norm is None or norm == "backward":
        return 0 if forward else 2
    if norm == "forward":
        return 2 if forward else 0
    if norm == "ortho":
        return 1
    raise RuntimeError(f'Invalid normalization mode: "{norm}"')


def _as_int(v):
    """v (None, an int, or a 0-dim integer tensor, which PyTorch's parser takes for an int)
    as an int or None."""
    return v if v is None or isinstance(v, int) else operator.index(v)


def _wrap(d, ndim):
    """d in [0, ndim), with PyTorch's IndexError otherwise."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {d} but tensor has no dimensions")
    if not -ndim <= d < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, "
                         f"{ndim - 1}], but got {d})")
    return d % ndim


def _points(n):
    if n < 1:
        raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return n


def _float_input(x):
    """x with integer and bool dtypes promoted to the default float dtype; float16 and
    bfloat16 refused as PyTorch's CPU FFT refuses them."""
    dt = x.dtype
    if dt.is_complex:
        return x
    if dt in (_C.float16, _C.bfloat16):
        raise RuntimeError(f"Unsupported dtype {_legacy(dt)}")
    if not dt.is_floating_point:
        return x.to(_C.get_default_dtype())
    return x


def _to_complex(x):
    return x if x.dtype.is_complex else x.to(_C.promote_types(x.dtype, _C.complex64))


def _resize(x, dims, sizes):
    """x trimmed or zero-padded at the end of each dims[i] to sizes[i] points."""
    for d, n in zip(dims, sizes):
        have = x.shape[d]
        if have > n:
            x = x.narrow(d, 0, n)
        elif have < n:
            shape = list(x.shape)
            shape[d] = n - have
            x = _f["cat"]([x, _f["zeros"](shape, dtype=x.dtype, device=x.device)], d)
    return x


_OP_OF_NODE = {"FftC2CBackward0": "_fft_c2c", "FftR2CBackward0": "_fft_r2c",
               "FftC2RBackward0": "_fft_c2r"}


def _finish(name, result, out, complex_out, ndims=1):
    """result, or out resized to it and filled (ndims: the transformed dims).  An out= call
    that autograd would record is refused with PyTorch's message, which names the operator
    PyTorch writes out with (c2c for fftn / ifftn / ihfftn of real input over several dims:
    r2c, then c2c into out).
    PyTorch lets ifft and ihfft of real input through with an unusable grad_fn; we refuse
    them too."""
    if out is None:
        return result
    if result.requires_grad:
        node = result.grad_fn
        while node is not None and type(node).__name__ not in _OP_OF_NODE:
            node = node.next_functions[0][0] if node.next_functions else None
        op = _OP_OF_NODE.get(type(node).__name__, name)
        op = "_fft_c2c" if op == "_fft_r2c" and ndims > 1 else op
        raise RuntimeError(f"{op}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if complex_out and not out.dtype.is_complex:
        raise RuntimeError(f"{name} expects a complex output tensor, but got "
                           f"{_legacy(out.dtype)}")
    if not complex_out and not out.dtype.is_floating_point:
        raise RuntimeError(f"{name} expects a floating point output tensor, but got "
                           f"{_legacy(out.dtype)}")
    out.resize_(result.shape)
    out.copy_(result)
    return out


# ---- one dim ----

def _one_dim(fname, input, n, dim):
    n = _as_int(n)
    dim = _as_int(dim)
    d = _wrap(dim, input.dim())
    return n, d


def _c2c_1d(fname, input, n, dim, norm, forward, out):
    n, d = _one_dim(fname, input, n, dim)
    x = _float_input(input)
    n = _points(x.shape[d] if n is None else n)
    mode = _norm(norm, forward)
    x = _resize(x, [d], [n])
    if x.dtype.is_complex:
        y = _c2c(x, [d], mode, forward)
    else:
        y = _r2c(x, [d], mode, False)   # PyTorch's real-input path: no complex copy
        if not forward:
            y = y.conj_physical()   # PyTorch's result carries no conjugate bit
    return _finish(fname, y, out, True)


@_native
def fft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D discrete Fourier transform of input along dim."""
    return _c2c_1d("fft", input, n, dim, norm, True, out)


@_native
def ifft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D inverse discrete Fourier transform of input along dim."""
    return _c2c_1d("ifft", input, n, dim, norm, False, out)


def _real_input(fname, x, message=None):
    x = _float_input(x)
    if x.dtype.is_complex:
        raise RuntimeError(message or f"{fname} expects a real input tensor, but got "
                           f"{_legacy(x.dtype)}")
    return x


@_native
def rfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The 1-D Fourier transform of a real input: the n/2 + 1 non-negative frequencies."""
    n, d = _one_dim("rfft", input, n, dim)
    x = _real_input("rfft", input)
    n = _points(x.shape[d] if n is None else n)
    y = _r2c(_resize(x, [d], [n]), [d], _norm(norm, True), True)
    return _finish("rfft", y, out, True)


@_native
def ihfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of hfft: the n/2 + 1 bins of the inverse transform of a real input."""
    n, d = _one_dim("ihfft", input, n, dim)
    x = _real_input("ihfft", input)
    n = _points(x.shape[d] if n is None else n)
    y = _r2c(_resize(x, [d], [n]), [d], _norm(norm, False), True).conj()
    return _finish("ihfft", y, out, True)


def _c2r_1d(fname, input, n, dim, norm, forward, out):
    n, d = _one_dim(fname, input, n, dim)
    x = _to_complex(_float_input(input))
    n = _points(2 * (x.shape[d] - 1) if n is None else n)
    x = _resize(x, [d], [n // 2 + 1])
    if forward:   # hfft: the forward transform of the Hermitian signal
        x = x.conj()
    return _finish(fname, _c2r(x, [d], _norm(norm, forward), n), out, False)


@_native
def irfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The inverse of rfft: n real points (default 2 (m - 1)) from m half-spectrum bins."""
    return _c2r_1d("irfft", input, n, dim, norm, False, out)


@_native
def hfft(input, n=None, dim=-1, norm=None, *, out=None):
    """The Fourier transform of a Hermitian-symmetric signal given by its first half: n real
    points (default 2 (m - 1))."""
    return _c2r_1d("hfft", input, n, dim, norm, True, out)


# ---- several dims ----

def _int_list(v):
    """v as a list: the parser's int[1] takes one int for a list of it (s=4, dim=0)."""
    return [v] if isinstance(v, int) else v


def _nd(fname, input, s, dim, check_last=True):
    """(sizes, dims) after PyTorch's checks: dims wrapped and distinct, s with -1 read from
    the input (s None: the sizes of the dims; dim None: the last len(s) dims, or all); the
    last size is left to the caller unless check_last."""
    ndim = input.dim()
    s = _int_list(s)
    if dim is not None:
        dims = [_wrap(_as_int(d), ndim) for d in _int_list(dim)]
        if len(set(dims)) != len(dims):
            raise RuntimeError("FFT dims must be unique")
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has "
                               f"{ndim} dimensions.")
        dims = list(range(ndim - len(s), ndim))
    else:
        dims = list(range(ndim))
    if s is None:
        sizes = [input.shape[d] for d in dims]
    else:
        sizes = [input.shape[d] if _as_int(n) == -1 else n
                 for d, n in zip(dims, s)]
    for n in sizes[:-1] if not check_last else sizes:
        _points(n)
    return sizes, dims


def _c2c_nd(fname, input, s, dim, norm, forward, out):
    sizes, dims = _nd(fname, input, s, dim)
    x = _resize(_float_input(input), dims, sizes)
    mode = _norm(norm, forward)
    if x.dtype.is_complex or not dims:
        y = _c2c(_to_complex(x), dims, mode, forward)
    else:
        y = _r2c(x, dims, mode, False)
        if not forward:
            y = y.conj_physical()   # PyTorch's result carries no conjugate bit
    return _finish(fname, y, out, True, len(dims))


@_native
def fftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-D discrete Fourier transform over dim (default: all dims, or the last len(s))."""
    return _c2c_nd("fftn", input, s, dim, norm, True, out)


@_native
def ifftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-D inverse discrete Fourier transform."""
    return _c2c_nd("ifftn", input, s, dim, norm, False, out)


@_native
def fft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D discrete Fourier transform (fftn over the last two dims)."""
    return _c2c_nd("fft2", input, s, dim, norm, True, out)


@_native
def ifft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D inverse discrete Fourier transform."""
    return _c2c_nd("ifft2", input, s, dim, norm, False, out)


def _r2c_nd(fname, input, s, dim, norm, forward, out):
    """rfftn, and ihfftn (forward False: the conjugate of the inverse transform)."""
    if not forward and input.dtype.is_complex:
        raise RuntimeError(f"Only supports floating-point dtypes, but found: "
                           f"{_legacy(input.dtype)}")
    x = _real_input(fname, input, f"rfftn expects a real-valued input tensor, but got "
                                  f"{_legacy(input.dtype)}")
    sizes, dims = _nd(fname, x, s, dim)
    if not dims:
        raise RuntimeError(f"{fname.rstrip('2')}n must transform at least one axis"
                           if fname.endswith("2") else
                           f"{fname} must transform at least one axis")
    y = _r2c(_resize(x, dims, sizes), dims, _norm(norm, forward), True)
    return _finish(fname, y if forward else y.conj_physical(), out, True,
                   1 if forward else len(dims))


@_native
def rfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-D Fourier transform of a real input, the last dim halved to n/2 + 1 bins."""
    return _r2c_nd("rfftn", input, s, dim, norm, True, out)


@_native
def rfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D Fourier transform of a real input."""
    return _r2c_nd("rfftn", input, s, dim, norm, True, out)


@_native
def ihfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of hfftn: the half spectrum of the inverse transform of a real input."""
    return _r2c_nd("ihfftn", input, s, dim, norm, False, out)


@_native
def ihfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D inverse of hfft2."""
    return _r2c_nd("ihfftn", input, s, dim, norm, False, out)


def _c2r_nd(fname, input, s, dim, norm, forward, out):
    """irfftn, and hfftn (forward True: the transform of the conjugate)."""
    x = _to_complex(_float_input(input))
    s = _int_list(s)
    sizes, dims = _nd(fname, x, s, dim, check_last=False)
    if not dims:
        raise RuntimeError(f"{fname} must transform at least one axis")
    n = sizes[-1] if s is not None and s[-1] != -1 else 2 * (x.shape[dims[-1]] - 1)
    sizes[-1] = _points(n) // 2 + 1
    x = _resize(x, dims, sizes)
    if forward:
        x = x.conj()
    return _finish(fname, _c2r(x, dims, _norm(norm, forward), n), out, False)


@_native
def irfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The inverse of rfftn: real output whose last dim has s[-1] points (default
    2 (m - 1) from m bins)."""
    return _c2r_nd("irfftn", input, s, dim, norm, False, out)


@_native
def irfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The inverse of rfft2."""
    return _c2r_nd("irfftn", input, s, dim, norm, False, out)


@_native
def hfftn(input, s=None, dim=None, norm=None, *, out=None):
    """The N-D Fourier transform of a Hermitian-symmetric signal given by its half
    spectrum: real output."""
    return _c2r_nd("hfftn", input, s, dim, norm, True, out)


@_native
def hfft2(input, s=None, dim=(-2, -1), norm=None, *, out=None):
    """The 2-D hfftn."""
    return _c2r_nd("hfftn", input, s, dim, norm, True, out)


# ---- helpers ----

def _freq_dtype(fname, dtype):
    dtype = _C.get_default_dtype() if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise RuntimeError(f"{fname} requires a floating point or complex dtype")
    return dtype


@_native
def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
            requires_grad=False):
    """The sample frequencies of an n-point fft: [0, 1, ..., -(n//2), ..., -1] / (d n)."""
    dtype = _freq_dtype("fftfreq", dtype)
    r = _f["arange"](n, dtype=dtype, device=device)
    half = (n + 1) // 2
    if n > half:
        r = _f["cat"]([r.narrow(0, 0, half), r.narrow(0, half, n - half) - n])
    r = r * (1.0 / (n * d)) if n else r
    return _finish_freq(r, out, requires_grad)


@_native
def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None, pin_memory=False,
             requires_grad=False):
    """The sample frequencies of an n-point rfft: [0, 1, ..., n//2] / (d n)."""
    dtype = _freq_dtype("rfftfreq", dtype)
    r = _f["arange"](n // 2 + 1, dtype=dtype, device=device)
    r = r * (1.0 / (n * d)) if n else r * float("nan")
    return _finish_freq(r, out, requires_grad)


def _finish_freq(r, out, requires_grad):
    if out is not None:
        out.resize_(r.shape)
        out.copy_(r)
        r = out
    return r.requires_grad_(requires_grad) if requires_grad else r


def _shift(input, dim, inverse):
    if dim is None:
        dims = list(range(input.dim()))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap(d, input.dim()) for d in dims]
    if not dims:
        raise RuntimeError("`shifts` required")
    shifts = [(input.shape[d] + inverse) // 2 for d in dims]
    return _f["roll"](input, shifts, dims)


@_native
def fftshift(input, dim=None):
    """input rolled by size // 2 along dim (all dims by default): the zero frequency to the
    centre."""
    return _shift(input, dim, 0)


@_native
def ifftshift(input, dim=None):
    """The inverse of fftshift: rolled by (size + 1) // 2."""
    return _shift(input, dim, 1)

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
