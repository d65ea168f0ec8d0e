"""Anomaly detection (torch/autograd/anomaly_mode.py): while on, every node keeps the Python
stack of the forward call that made it, and a node that fails in backward warns "Error
detected in X. Traceback of forward call that caused the error: ..." before the error
propagates; with check_nan (the default) the engine also checks every gradient a node
produces and raises "Function 'X' returned nan values in its 0th output."."""
import warnings

from .. import _C
from .grad_mode import _DecoratorContextManager


class detect_anomaly(_DecoratorContextManager):
    """Turns anomaly detection on inside the block (or the decorated function)."""

    def __init__(self, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.check_nan = check_nan
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        _C._set_anomaly_enabled(True, self.check_nan)

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False

    def clone(self):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.__class__(self.check_nan)


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): sets anomaly detection now; restores it on
    leaving a with block."""

    def __init__(self, mode, check_nan=True):
        self.prev = _C.is_anomaly_enabled()
        self.prev_check_nan = _C.is_anomaly_check_nan_enabled()
        _C._set_anomaly_enabled(bool(mode), bool(check_nan))

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(self.prev, self.prev_check_nan)
        return False


is_anomaly_enabled = _C.is_anomaly_enabled
is_anomaly_check_nan_enabled = _C.is_anomaly_check_nan_enabled
