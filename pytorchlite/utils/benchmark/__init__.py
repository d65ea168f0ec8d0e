"""pytorchlite.utils.benchmark (torch.utils.benchmark): Timer, Measurement, Compare and the
Fuzzer classes.

PyTorch's Callgrind wrapper and C++ statement timing are not here: see utils/timer.py for
what Timer does instead."""
from .utils.common import *  # noqa: F401,F403
from .utils.compare import *  # noqa: F401,F403
from .utils.fuzzer import *  # noqa: F401,F403
from .utils.sparse_fuzzer import *  # noqa: F401,F403
from .utils.timer import *  # noqa: F401,F403
from .utils import common as _common, compare as _compare, fuzzer as _fuzzer, \
    sparse_fuzzer as _sparse_fuzzer, timer as _timer

__all__ = (_common.__all__ + _timer.__all__ + _compare.__all__ + _fuzzer.__all__
           + _sparse_fuzzer.__all__)
