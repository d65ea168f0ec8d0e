"""Tensor printing.  Interim: the exact PyTorch formatter lands with the printing work."""
from . import _C

_PRINT = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    for k, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                 ("linewidth", linewidth)):
        if v is not None:
            _PRINT[k] = v
    _PRINT["sci_mode"] = sci_mode


def _str(self, tensor_contents=None):
    return "tensor(" + repr(self.tolist()) + ")"
