"""pytorchlite.accelerator: the device-generic view of the build's accelerator
(torch/accelerator/__init__.py).

pytorchlite knows one accelerator, CUDA.  As in PyTorch, the accelerator is decided when the
extension is built: current_accelerator() is device('cuda') in a build compiled with nvcc
(even where no driver or device is present) and None in a CPU-only build; is_available() and
device_count() then ask pytorchlite.cuda whether a device is visible now.  Every function that
needs a device raises PyTorch's "Cannot access accelerator device when none is available."
when none is.

The CUDA backend launches no work yet, so the current device index is bookkeeping kept here
(one process-wide index; PyTorch keeps one per thread) and synchronize() has nothing to wait
for once CUDA is initialised."""
from . import _C, cuda

__all__ = [
    "current_accelerator", "current_device_index", "device_count", "device_index",
    "is_available", "set_device_index", "synchronize",
]

_current_index = 0


def current_accelerator(check_available=False):
    """The build's accelerator as a device without an index, or None.  With
    check_available=True, None also when no device of that type is visible at run time."""
    if not cuda.is_built():
        return None
    if check_available and not cuda.is_available():
        return None
    return _C.device("cuda")


def is_available():
    """True when the build has an accelerator and at least one device of it is visible."""
    return current_accelerator() is not None and cuda.is_available()


def device_count():
    """Number of visible accelerator devices (0 without an accelerator)."""
    return cuda.device_count() if current_accelerator() is not None else 0


def _lazy_init():
    if not is_available():
        raise RuntimeError("Cannot access accelerator device when none is available.")
    cuda._lazy_init()


def _get_device_index(device, optional):
    """The index that device (an int, a device or a device string) names; None with optional
    means the current index.  Errors as torch.accelerator._utils._get_device_index."""
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _C.device(device)
    index = None
    if isinstance(device, _C.device):
        acc = current_accelerator()
        if acc is None:
            raise RuntimeError("Accelerator expected")
        if acc.type != device.type:
            raise ValueError(f"{device.type} doesn't match the current accelerator {acc}.")
        index = device.index
    if index is None:
        if not optional:
            raise ValueError("Expected a torch.device with a specified index or an integer, "
                             f"but got:{device}")
        return current_device_index()
    return index


def current_device_index():
    """Index of the current accelerator device."""
    _lazy_init()
    return _current_index


def set_device_index(device, /):
    """Makes device (an index, or a device with an index) the current one; a negative index
    is ignored, as in PyTorch."""
    global _current_index
    index = _get_device_index(device, optional=False)
    if index < 0:
        return
    _lazy_init()
    if index >= device_count():
        raise RuntimeError(f"Invalid device index {index}: {device_count()} accelerator "
                           "device(s) visible")
    _current_index = index


def synchronize(device=None, /):
    """Waits for all work queued on device (the current one by default)."""
    index = _get_device_index(device, optional=True)
    _lazy_init()
    if index >= device_count():
        raise RuntimeError(f"Invalid device index {index}: {device_count()} accelerator "
                           "device(s) visible")


class device_index:
    """Context manager that makes device (an index, or None for no change) current inside."""

    def __init__(self, device, /):
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            self.prev_idx = current_device_index()
            set_device_index(self.idx)

    def __exit__(self, *exc_info):
        if self.idx is not None:
            set_device_index(self.prev_idx)
