"""torch.finfo and torch.iinfo: the numerical properties of a dtype, with PyTorch's fields,
values, printed form and errors.  The values are facts of the IEEE and two's-complement
formats (bfloat16 is float32 with a 7-bit mantissa), written as constants so that no
library is needed to compute them."""
import builtins

from . import _C

# dtype -> (bits, eps, max, smallest normal, resolution)
_FLOAT = {
    "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14, 0.001),
    "bfloat16": (16, 2.0 ** -7, (2 - 2.0 ** -7) * 2.0 ** 127, 2.0 ** -126, 0.01),
    "float32": (32, 2.0 ** -23, (2 - 2.0 ** -23) * 2.0 ** 127, 2.0 ** -126, 1e-06),
    "float64": (64, 2.0 ** -52, (2 - 2.0 ** -52) * 2.0 ** 1023, 2.0 ** -1022, 1e-15),
}
# a complex dtype's finfo is that of its parts (PyTorch's finfo(complex64).dtype is float32)
_COMPLEX_PARTS = {"complex64": "float32", "complex128": "float64"}
# dtype -> (bits, signed)
_INT = {"uint8": (8, False), "int8": (8, True), "int16": (16, True), "int32": (32, True),
        "int64": (64, True)}


def _name(dtype):
    return str(dtype).replace("torch.", "")


def _check_dtype(fn, type):
    if not isinstance(type, _C.dtype):
        raise TypeError(f"{fn}(): argument 'type' (position 1) must be torch.dtype, not "
                        f"{builtins.type(type).__name__}")


class finfo:
    """finfo(type=torch.get_default_dtype()): bits, eps, max, min, tiny, smallest_normal,
    resolution and dtype of a floating point type (of the parts' type for a complex one)."""

    def __init__(self, type=None):
        if type is None:
            type = _C.get_default_dtype()
        _check_dtype("finfo", type)
        name = _COMPLEX_PARTS.get(_name(type), _name(type))
        if name not in _FLOAT:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        self.dtype = name
        self.bits, self.eps, self.max, self.smallest_normal, self.resolution = _FLOAT[self.dtype]
        self.min = -self.max
        self.tiny = self.smallest_normal

    def __eq__(self, other):
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("finfo", self.dtype))

    def __repr__(self):
        return (f"finfo(resolution={self.resolution:.6g}, min={self.min:.6g}, "
                f"max={self.max:.6g}, eps={self.eps:.6g}, "
                f"smallest_normal={self.smallest_normal:.6g}, tiny={self.tiny:.6g}, "
                f"dtype={self.dtype})")


class iinfo:
    """iinfo(type): bits, min, max and dtype of an integer type."""

    def __init__(self, type):
        _check_dtype("iinfo", type)
        if _name(type) == "bool":
            raise TypeError("torch.bool is not supported by torch.iinfo")
        if _name(type) not in _INT:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo "
                            "to handle 'torch.iinfo'")
        self.dtype = _name(type)
        self.bits, signed = _INT[self.dtype]
        self.min = -(1 << (self.bits - 1)) if signed else 0
        self.max = (1 << (self.bits - 1)) - 1 if signed else (1 << self.bits) - 1

    def __eq__(self, other):
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self):
        return hash(("iinfo", self.dtype))

    def __repr__(self):
        return f"iinfo(min={float(self.min):.6g}, max={float(self.max):.6g}, dtype={self.dtype})"
