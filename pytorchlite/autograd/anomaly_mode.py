"""Anomaly detection (torch/autograd/anomaly_mode.py): while on, the engine checks every
gradient a node produces and raises "Function 'X' returned nan values in its 0th output."."""
import warnings

from .. import _C
from .grad_mode import _DecoratorContextManager


class detect_anomaly(_DecoratorContextManager):
    """Turns anomaly detection on inside the block (or the decorated function)."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev)
        return False

    def clone(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.__class__(self.check_nan)


class set_detect_anomaly:
    """set_detect_anomaly(mode): sets anomaly detection now; restores it on leaving a with."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(bool(mode) and check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev)
        return False


is_anomaly_enabled = _C.is_anomaly_enabled
