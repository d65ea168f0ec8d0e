"""torch.cuda.nvtx: NVTX ranges and marks for the CUDA profilers (Nsight Systems).

pytorchlite loads no NVTX injection library, so it acts as NVTX itself does when no tool is
attached to the process: range_push and range_pop return NVTX_NO_PUSH_POP_TRACKING (-2),
range_start returns range id 0 and the rest do nothing (a profiler sees no ranges).  That is
the CUDA build; the CPU-only build has PyTorch's CPU-only stub, whose calls raise
RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?") (and whose
range_start / range_end raise AttributeError, as there)."""
from contextlib import contextmanager

from .. import _C

__all__ = ["range_push", "range_pop", "range_start", "range_end", "mark", "range"]

_NO_PUSH_POP_TRACKING = -2   # nvToolsExt.h: the push / pop answer without a tool


class _NVTXStub:
    """PyTorch's stand-in for its NVTX bindings in a build without them."""

    @staticmethod
    def _fail(*args, **kwargs):
        raise RuntimeError("NVTX functions not installed. Are you sure you have a CUDA build?")

    rangePushA = _fail
    rangePop = _fail
    markA = _fail


class _NVTXWithoutTool:
    """NVTX's answers when no tool is attached (nvtxDetail/nvtxImplCore.h)."""

    @staticmethod
    def rangePushA(msg):
        return _NO_PUSH_POP_TRACKING

    @staticmethod
    def rangePop():
        return _NO_PUSH_POP_TRACKING

    @staticmethod
    def markA(msg):
        return None

    @staticmethod
    def rangeStartA(msg):
        return 0

    @staticmethod
    def rangeEnd(range_id):
        return None


_nvtx = _NVTXWithoutTool() if _C._config()["cuda_built"] else _NVTXStub()


def range_push(msg):
    """Pushes a range with message msg onto the thread's stack of nested ranges: its depth
    (NVTX's -2 here, Note at the top)."""
    return _nvtx.rangePushA(msg)


def range_pop():
    """Pops the innermost range of the thread's stack."""
    return _nvtx.rangePop()


def range_start(msg):
    """Starts a range that may end on another thread: its id, for range_end."""
    return _nvtx.rangeStartA(msg)


def range_end(range_id):
    """Ends the range range_start returned range_id for."""
    _nvtx.rangeEnd(range_id)


def mark(msg):
    """An instantaneous event with message msg."""
    return _nvtx.markA(msg)


@contextmanager
def range(msg, *args, **kwargs):   # noqa: A001 (PyTorch's name)
    """`with range("step {}", i):` pushes msg.format(*args, **kwargs) around the block."""
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
