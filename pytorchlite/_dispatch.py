"""Looking at the dispatcher from Python (see src/aten/dispatcher.h, Note [Dispatch]).

    with pytorchlite.dispatch_trace():     # same as PTL_SHOW_DISPATCH_TRACE=1
        x + y                              # prints: [dispatch] aten::add.Tensor keys={...} -> CPU

The trace is written by the C dispatcher to the process's stderr (file descriptor 2), nested
calls indented, so it also shows calls that ops make internally."""
import contextlib
import sys

from . import _C


@contextlib.contextmanager
def dispatch_trace(enabled=True):
    """Prints the route of every dispatcher call made inside the block (on this thread)."""
    sys.stderr.flush()
    old = _C._dispatch_trace(enabled)
    try:
        yield
    finally:
        _C._dispatch_trace(old)


def dispatch_stats(reset=False):
    """{"aten::add.Tensor": {"CPU": 12}, ...}: how often each op's kernel ran, per key."""
    stats = _C._dispatch_stats()
    if reset:
        _C._dispatch_reset_stats()
    return stats
