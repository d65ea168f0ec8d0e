"""torch.nn.attention: choosing the backends of F.scaled_dot_product_attention.

sdpa_kernel sets the enable_*_sdp switches of torch.backends.cuda for the duration of a with
block and restores them after.  On the CPU PyTorch has two backends, FLASH_ATTENTION and MATH;
allowing neither makes scaled_dot_product_attention raise PyTorch's error.  See Note [SDPA
backends on the CPU] in nn/functional.py.  PyTorch's flash-attention implementation registry
(FA3 / FA4, CUDA kernels) has no counterpart here."""
import contextlib
import enum

from ... import backends as _backends

__all__ = ["SDPBackend", "sdpa_kernel", "WARN_FOR_UNFUSED_KERNELS"]

# PyTorch warns with each reason the fused kernels refuse a call when this is True; the CPU
# here has one fused path, whose refusals F.scaled_dot_product_attention reports anyway when
# it raises.
WARN_FOR_UNFUSED_KERNELS = False


class SDPBackend(enum.IntEnum):
    """The scaled-dot-product-attention backends, with PyTorch's values."""
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__


_SWITCHES = {SDPBackend.CUDNN_ATTENTION: "cudnn", SDPBackend.FLASH_ATTENTION: "flash",
             SDPBackend.EFFICIENT_ATTENTION: "mem_efficient", SDPBackend.MATH: "math",
             SDPBackend.OVERRIDEABLE: "overrideable"}


def _allow_only(allowed):
    for backend, name in _SWITCHES.items():
        _backends._sdp_enabled[name] = backend in allowed


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority=False):
    """Allows only the given backend(s) for scaled_dot_product_attention inside the block and
    restores the previous switches on exit.  set_priority (their order as the priority order)
    changes nothing visible here: the two CPU backends compute the same values, and the
    order never decides whether a call raises."""
    if not isinstance(backends, (list, SDPBackend)):
        raise AssertionError("Backend must be an instance of SDPBackend or a list of "
                             f"SDPBackend instances, got {type(backends).__name__}")
    if isinstance(backends, SDPBackend):
        backends = [backends]
    backends = list(dict.fromkeys(backends))
    previous = [b for b, name in _SWITCHES.items() if _backends._sdp_enabled[name]]
    try:
        _allow_only(backends)
        yield {}
    finally:
        _allow_only(previous)
