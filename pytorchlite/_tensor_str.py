"""Tensor printing: repr/str of a Tensor and set_printoptions.  Mirrors torch/_tensor_str.py.

The output matches PyTorch's character for character (tests/python/test_tensor_str.py
compares with torch).  Unlike PyTorch, which formats with tensor ops (masked_select, abs, min,
max, stack), this module works on Python lists: the elements it shows are pulled out once
with tolist(), from views of the edge rows when the tensor is summarized, so printing needs
no kernels beyond indexing and costs O(shown elements)."""
import contextlib
import math

from . import _C

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80}
_PROFILES = {
    "default": _DEFAULTS,
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}
PRINT_OPTS = dict(_DEFAULTS, sci_mode=None)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """Sets the printing options (NumPy's names).  `profile` ('default', 'short', 'full')
    resets the four numeric options first; `sci_mode` is always set (None = automatic)."""
    if profile is not None and profile in _PROFILES:
        PRINT_OPTS.update(_PROFILES[profile])
    for key, value in (("precision", precision), ("threshold", threshold),
                       ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            PRINT_OPTS[key] = value
    PRINT_OPTS["sci_mode"] = sci_mode


def get_printoptions():
    """The current options, as keyword arguments for set_printoptions()."""
    return dict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily changes the printing options."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Ellipsis:
    """Marks the elided middle of a summarized dimension in the nested lists."""


_ELIDED = _Ellipsis()


def _tolist(t):
    """t.tolist(); for a tensor whose values only its subclass's __torch_dispatch__ knows (a
    wrapper has no data), the same lists read through operators that reach it, as PyTorch's
    printer reads them: unbind(0) down to 0-dim tensors, then item()."""
    if getattr(type(t), "__torch_dispatch__", None) is None:
        return t.tolist()
    if t.dim() == 0:
        return t.item()
    return [_tolist(row) for row in t.unbind(0)]


def _summarized_lists(t, edge):
    """Nested lists of t's shown elements: each dimension longer than 2*edge keeps its first
    and last `edge` entries around an _ELIDED marker.  edge >= 1."""
    n = t.size(0)
    if t.dim() == 1:
        if n > 2 * edge:
            return _tolist(t[:edge]) + [_ELIDED] + _tolist(t[n - edge:])
        return _tolist(t)
    if n > 2 * edge:
        rows = list(range(edge)) + [None] + list(range(n - edge, n))
    else:
        rows = range(n)
    return [_ELIDED if i is None else _summarized_lists(t[i], edge) for i in rows]


def _flatten(data, dim, out):
    """Appends the leaves of `dim`-deep nested lists to out, skipping _ELIDED."""
    if dim == 0:
        out.append(data)
        return out
    for item in data:
        if item is not _ELIDED:
            _flatten(item, dim - 1, out)
    return out


class _Formatter:
    """Chooses one width and one notation for every element shown (PyTorch's _Formatter)."""

    def __init__(self, values, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        precision = PRINT_OPTS["precision"]
        if not floating:
            for v in values:
                self.max_width = max(self.max_width, len(str(v)))
            return
        finite = [v for v in values if v != 0 and math.isfinite(v)]
        if not finite:
            return
        absolute = [abs(v) for v in finite]
        lo, hi = min(absolute), max(absolute)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        if PRINT_OPTS["sci_mode"] is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS["sci_mode"]
        if self.sci_mode:
            spec, extra = f".{precision}e", 0
        elif self.int_mode:
            spec, extra = ".0f", 1          # room for the trailing "."
        else:
            spec, extra = f".{precision}f", 0
        for v in finite:
            self.max_width = max(self.max_width, len(format(v, spec)) + extra)

    def format(self, v):
        if not self.floating:
            s = str(v)
        elif self.sci_mode:
            s = format(v, f"{self.max_width}.{PRINT_OPTS['precision']}e")
        elif self.int_mode:
            s = format(v, ".0f")
            if math.isfinite(v):
                s += "."
        else:
            s = format(v, f".{PRINT_OPTS['precision']}f")
        return " " * (self.max_width - len(s)) + s


class _ComplexFormatter:
    """Complex elements: the real parts and the imaginary parts each get a _Formatter, and
    an element prints as real, sign, imag and "j" (PyTorch's complex printing)."""

    def __init__(self, values):
        self.real = _Formatter([v.real for v in values], True)
        self.imag = _Formatter([v.imag for v in values], True)
        self.max_width = self.real.max_width + self.imag.max_width + 1

    def format(self, v):
        imag = (self.imag.format(v.imag) + "j").lstrip()
        real = self.real.format(v.real)
        return real + imag if imag[0] in "+-" else real + "+" + imag


def _formatter(values, dtype):
    if dtype.is_complex:
        return _ComplexFormatter(values)
    return _Formatter(values, dtype.is_floating_point)


def _vector_str(data, indent, fmt):
    width = fmt.max_width + 2        # ", " between elements
    per_line = max(1, math.floor((PRINT_OPTS["linewidth"] - indent) / width))
    items = [" ..." if v is _ELIDED else fmt.format(v) for v in data]
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested_str(data, dim, indent, fmt):
    if dim == 1:
        return _vector_str(data, indent, fmt)
    parts = ["..." if row is _ELIDED else _nested_str(row, dim - 1, indent + 1, fmt)
             for row in data]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(parts) + "]"


def _tensor_str(t, indent):
    """The bracketed contents of a non-empty tensor, lines after the first indented."""
    dim = t.dim()
    if dim == 0:
        value = t.item()
        return _formatter([value], t.dtype).format(value)
    summarize = t.numel() > PRINT_OPTS["threshold"]
    edge = PRINT_OPTS["edgeitems"]
    if summarize and not edge:
        return "[...]"
    data = _summarized_lists(t, edge) if summarize else _tolist(t)
    fmt = _formatter(_flatten(data, dim, []), t.dtype)
    return _nested_str(data, dim, indent, fmt)


def _add_suffixes(text, suffixes, indent, force_newline=False):
    """Appends ", suffix" pieces, moving one to a new line when it would pass linewidth (the
    first one always, with force_newline)."""
    out = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for i, suffix in enumerate(suffixes):
        if (force_newline and i == 0) or last_line + len(suffix) + 2 > PRINT_OPTS["linewidth"]:
            out.append(",\n" + " " * indent + suffix)
            last_line = indent + len(suffix)
        else:
            out.append(", " + suffix)
            last_line += len(suffix) + 2
    out.append(")")
    return "".join(out)


def _part_str(name, t, indent):
    """`name=tensor(...)` for a part of a sparse tensor, its lines indented to follow."""
    prefix = name + "=tensor("
    if t.numel() == 0:
        return prefix + "[], size=" + str(tuple(t.shape)) + ")"
    return prefix + _tensor_str(t, indent + len(prefix)) + ")"


def _sparse_str(self, prefix):
    """repr of a sparse COO tensor: its indices and values, then size, nnz, dtype, layout."""
    indent = len(prefix)
    sparse_dim, dense_dim, nnz, coalesced = self._sparse_info()
    suffixes = ["size=" + str(tuple(self.shape)), "nnz=" + str(nnz)]
    if self.dtype not in (_C.get_default_dtype(), _C.int64, _C.bool):
        suffixes.append("dtype=" + str(self.dtype))
    suffixes.append("layout=torch.sparse_coo")
    text = (_part_str("indices", self._indices().detach(), indent) + ",\n" + " " * indent +
            _part_str("values", self._values().detach(), indent))
    grad_fn = getattr(self, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + text, suffixes, indent, force_newline=True)


def _str(self, tensor_contents=None):
    """repr(tensor): `tensor(<contents>, <suffixes>)`."""
    from ._tensor import Tensor
    cls = type(self)
    prefix = "tensor(" if cls is Tensor or cls.__name__ == "Parameter" else cls.__name__ + "("
    if self._sparse_info() is not None:
        return _sparse_str(self, prefix)
    indent = len(prefix)
    suffixes = []
    if self.device.type != "cpu":
        suffixes.append(f"device='{self.device}'")
    default = _C.get_default_dtype()
    default_complex = _C.complex128 if default == _C.float64 else _C.complex64
    if self.device.type == "meta":   # no values: the size instead, and every other dtype
        suffixes.append("size=" + str(tuple(self.shape)))
        if self.dtype != default:
            suffixes.append("dtype=" + str(self.dtype))
        text = "..."
    elif self.numel() == 0:
        if self.dim() != 1:
            suffixes.append("size=" + str(tuple(self.shape)))
        if self.dtype != default:   # no values to tell ints from floats
            suffixes.append("dtype=" + str(self.dtype))
        text = "[]"
    else:
        if not PRINT_OPTS["edgeitems"]:
            suffixes.append("size=" + str(tuple(self.shape)))
        if self.dtype not in (default, default_complex, _C.int64, _C.bool):
            suffixes.append("dtype=" + str(self.dtype))
        if tensor_contents is None:
            text = _tensor_str(self if self.device.type == "cpu" else self.cpu(), indent)
    if tensor_contents is not None:
        text = tensor_contents
    grad_fn = getattr(self, "grad_fn", None)
    if grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(grad_fn).__name__}>")
    elif self.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + text, suffixes, indent)
