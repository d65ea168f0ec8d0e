"""torch.stft and torch.istft (and the Tensor methods): the short-time Fourier transform and
its inverse, composed of torch.fft's transforms (pytorchlite/fft.py), so they are
differentiable.  Mirrors torch/functional.py and ATen/native/SpectralOps.cpp's stft/istft.

stft frames the (reflect-padded, when center) signal with hop_length, multiplies each frame by
the window (zero-padded to n_fft in the middle) and transforms it: rfft when input and
window are real and onesided, fft otherwise; normalized scales by n_fft^-1/2.  istft inverts
each frame, multiplies by the window again and overlap-adds, dividing by the overlap-added
squared window (which must not vanish: the NOLA condition)."""
import warnings

from . import _C
from . import overrides as _overrides
from ._native_signature import native
from . import fft as _fft

_f = _C._functions

__all__ = ["stft", "istft"]


def _type_name(x):
    names = {"float32": "FloatTensor", "float64": "DoubleTensor",
             "complex64": "ComplexFloatTensor", "complex128": "ComplexDoubleTensor"}
    return "torch." + names.get(str(x.dtype).split(".")[-1], "Tensor")


def _flag(b):
    """A bool? as PyTorch's messages print it: None, 1 or 0."""
    return "None" if b is None else int(bool(b))


def _window(window, win_length, n_fft, like):
    """The window zero-padded in the middle of n_fft points (ones of win_length without one)."""
    if window is None:
        real = {_C.complex64: _C.float32, _C.complex128: _C.float64}.get(like.dtype, like.dtype)
        window = _f["ones"](win_length, dtype=real, device=like.device)
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        parts = [_f["zeros"](left, dtype=window.dtype, device=window.device), window,
                 _f["zeros"](n_fft - win_length - left, dtype=window.dtype,
                             device=window.device)]
        window = _f["cat"](parts)
    return window


def _pad(x, pad, mode):
    """x (batch, length) padded at the ends of its last dim (F.pad's modes) by `pad`: an int
    for both ends, or [left, right]."""
    from .nn import functional as F
    if x.dtype.is_complex:
        return _f["complex"](_pad(x.real.contiguous(), pad, mode),
                             _pad(x.imag.contiguous(), pad, mode))
    pad = [pad, pad] if isinstance(pad, int) else pad
    return F.pad(x.unsqueeze(0), pad, mode=mode).squeeze(0)


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None,
         align_to_window=None):
    """The short-time Fourier transform of a 1-D (L) or 2-D (B, L) signal: complex
    (B?, n_fft // 2 + 1 or n_fft, frames).  align_to_window (center=False only): the frames
    start where their window starts instead of n_fft points apart from the window's
    zero-padding (Note [stft align_to_window])."""
    if center and align_to_window is not None:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in "
                               "a future PyTorch release.")
        return_complex = True
    if not return_complex:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch "
                      "release, stft will return complex tensors for all inputs, and "
                      "return_complex=False will raise an error.\nNote: you can still call "
                      "torch.view_as_real on the complex output to recover the old return "
                      "format.")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    x = input if input.dtype.is_complex or input.dtype.is_floating_point else \
        input.to(_C.get_default_dtype())
    one_dim = x.dim() == 1
    if one_dim:
        x = x.unsqueeze(0)
    if center and x.dim() == 2:
        x = _pad(x, n_fft // 2, pad_mode)

    def where():
        w = "None" if window is None else \
            f"{_type_name(window)}{{{list(window.shape)}}}"
        shape = list(x.shape[1:] if one_dim else x.shape)   # the signal as it was given
        return (f"stft({_type_name(x)}{shape}, n_fft={n_fft}, hop_length={hop_length}"
                f", win_length={win_length}, window={w}, normalized={int(normalized)}, "
                f"onesided={onesided}, return_complex={int(return_complex)}, "
                f"align_to_window={_flag(align_to_window)}) : ")
    if x.dim() != 2:
        raise RuntimeError(where() + "expected a 1D or 2D tensor")
    length = x.shape[-1]
    span = win_length if align_to_window else n_fft   # the points a frame reads
    if not 0 < span <= length:
        raise RuntimeError(where() + f"expected 0 < n_fft < {length}, but got n_fft={span}")
    if hop_length <= 0:
        raise RuntimeError(where() + f"expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(where() + f"expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win_length):
        raise RuntimeError(where() + f"expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    if onesided is None:
        onesided = not complex_in
    elif onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    frames_n = 1 + (length - span) // hop_length
    if span < n_fft:
        # Note [stft align_to_window]: frame m is x[m * hop : m * hop + win_length] under the
        # window, zero-padded as the window is (left points before, the rest after).  PyTorch
        # 2.13 pads the signal by `left` at both ends and reads past its end when n_fft -
        # win_length is odd and the last frame ends at the signal's end (a setStorage error
        # there); the zeros here give that frame the value the others' formula gives.
        left = (n_fft - win_length) // 2
        x = _pad(x, [left, n_fft - win_length - left], "constant")
        length = x.shape[-1]
    x = x.contiguous()
    batch = x.shape[0]
    frames = x.as_strided((batch, frames_n, n_fft), (length, hop_length, 1),
                          x.storage_offset())
    frames = frames * _window(window, win_length, n_fft, x)
    norm = "ortho" if normalized else "backward"
    spec = _fft.rfft(frames, norm=norm) if onesided else _fft.fft(frames, norm=norm)
    spec = spec.transpose(1, 2)
    if one_dim:
        spec = spec.squeeze(0)
    return spec if return_complex else _f["view_as_real"](spec)


@native
def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """The inverse of stft: overlap-added inverse transforms of the frames, divided by the
    overlap-added squared window."""
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length

    def where():
        w = "None" if window is None else f"{_type_name(window)}{{{list(window.shape)}}}"
        kind = {"complex64": "CPUComplexFloatType", "complex128": "CPUComplexDoubleType"}
        return (f"istft({kind[str(input.dtype).split('.')[-1]]}{list(input.shape)}, "
                f"n_fft={n_fft}, hop_length={hop_length}, win_length={win_length}, "
                f"window={w}, center={int(center)}, normalized={int(normalized)}, "
                f"onesided={onesided}, length={length}, "
                f"return_complex={int(return_complex)}) ")
    if input.dim() not in (2, 3):
        raise RuntimeError(where() + f": expected a tensor with 3 or 4 dimensions of "
                           f"complex, but got {input.dim()}")
    one_dim = input.dim() == 2
    spec = input.unsqueeze(0) if one_dim else input
    n_freq, frames_n = spec.shape[-2], spec.shape[-1]
    if not 0 < hop_length:
        raise RuntimeError(where() + f": expected hop_length > 0, but got "
                           f"hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(where() + f": expected 0 < win_length <= n_fft, but got "
                           f"win_length={win_length}")
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied.Please "
                      "provide the same window used by stft to make the inversion "
                      "lossless.To suppress this warning and use a rectangular window, "
                      "explicitly set `window=torch.ones(n_fft, device=<device>)`.")
    elif window.dim() != 1 or window.shape[0] != win_length:
        raise RuntimeError(where() + f": expected a 1D window tensor of size equal to "
                           f"win_length={win_length}, but got window with size "
                           f"{list(window.shape)}")
    if onesided is None:
        onesided = n_freq != n_fft
    if onesided and n_freq != n_fft // 2 + 1:
        raise RuntimeError(where() + ": expected the frequency dimension (3rd to the last) of "
                           "the input tensor to match n_fft / 2 + 1 when onesided=True, but "
                           f"got {n_freq}")
    if not onesided and n_freq != n_fft:
        raise RuntimeError(where() + ": expected the frequency dimension (3rd to the last) of "
                           "the input tensor to match n_fft when onesided=False, but got "
                           f"{n_freq}")
    complex_window = window is not None and window.dtype.is_complex
    if return_complex and onesided or (not return_complex and complex_window):
        raise RuntimeError("Cannot have onesided output if window or input is complex"
                           if return_complex else "Complex windows are incompatible with "
                           "return_complex=False")
    norm = "ortho" if normalized else "backward"
    frames = spec.transpose(1, 2)                       # (batch, frames, freq)
    if return_complex:
        frames = _fft.ifft(frames, n=n_fft, norm=norm)
    else:
        if not onesided:
            frames = frames.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(frames, n=n_fft, norm=norm)
    w = _window(window, win_length, n_fft, frames)
    frames = frames * w
    total = n_fft + hop_length * (frames_n - 1)
    index = (_f["arange"](frames_n, device=input.device).unsqueeze(1) * hop_length +
             _f["arange"](n_fft, device=input.device)).reshape(-1)
    batch = frames.shape[0]
    if return_complex:
        parts = _f["view_as_real"](frames.reshape(batch, -1))
        y = _f["zeros"](batch, total, 2, dtype=parts.dtype, device=input.device)
        y = _f["view_as_complex"](y.index_add(1, index, parts))
    else:
        y = _f["zeros"](batch, total, dtype=frames.dtype, device=input.device)
        y = y.index_add(1, index, frames.reshape(batch, -1))
    w2 = (w * w.conj()).real if complex_window else w * w
    env = _f["zeros"](total, dtype=w2.dtype, device=input.device).index_add(
        0, index, w2.repeat(frames_n))
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + length
    else:
        end = total - n_fft // 2 if center else total
    end = min(end, total)
    y = y[:, start:end]
    env = env[start:end]
    if env.numel() and env.abs().min().item() < 1e-11:
        raise RuntimeError(where() + "window overlap add min: 1")
    y = y / env
    if length is not None and y.shape[-1] < length:
        warnings.warn("The length of signal is shorter than the length parameter. Result is "
                      "being padded with zeros in the tail. Please check your center and "
                      "hop_length settings.")
        pad = _f["zeros"](batch, length - y.shape[-1], dtype=y.dtype, device=input.device)
        y = _f["cat"]([y, pad], 1)
    return y.squeeze(0) if one_dim else y


def _install(tensor_class):
    tensor_class.stft = stft
    tensor_class.istft = istft

# each public function goes to __torch_function__ first (Note [Torch function])
_overrides._route_functions(globals())
