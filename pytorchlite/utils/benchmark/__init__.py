"""pytorchlite.utils.benchmark (torch.utils.benchmark): Timer, Measurement and Compare.

PyTorch's Callgrind wrapper, C++ statement timing and the Fuzzer classes are not here: see
utils/timer.py for what Timer does instead."""
from .utils.common import *  # noqa: F401,F403
from .utils.compare import *  # noqa: F401,F403
from .utils.timer import *  # noqa: F401,F403
from .utils import common as _common, compare as _compare, timer as _timer

__all__ = _common.__all__ + _timer.__all__ + _compare.__all__
