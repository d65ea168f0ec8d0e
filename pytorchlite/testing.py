"""torch.testing: assert_close and make_tensor, the two helpers PyTorch's own users write their
tests with.  The behaviour (default tolerances per dtype, which pairs of inputs compare, the
attribute checks, the wording of every failure) is PyTorch's, so a test written against
torch.testing passes or fails the same way here.

How assert_close walks its inputs:
  sequences (not strings) are compared item by item after their lengths, mappings key by key
  after their key sets; the leaves pair up as None with None, bool with bool, a Python number
  with a number, or tensor-likes (tensors and whatever as_tensor takes: NumPy arrays) of one
  family.  A failure deep inside says where: "The failure occurred for item [1]['a']".
"""
import collections.abc
import math
import warnings

import pytorchlite as torch

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# (rtol, atol) when neither is given; any other dtype compares exactly.
_TOLERANCES = {
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.complex64: (1.3e-6, 1e-5),
    torch.complex128: (1e-7, 1e-7),
}


class _Mismatch(Exception):
    """A failed comparison on its way up: the exception type to raise, its message, and the
    path of sequence indices and mapping keys that led to the failing leaf."""

    def __init__(self, exc_type, message, path=()):
        super().__init__(message)
        self.exc_type = exc_type
        self.message = message
        self.path = path

    def to_error(self, msg=None):
        if isinstance(msg, str):
            return self.exc_type(msg)
        text = self.message
        if self.path:
            where = "".join(f"[{key!r}]" for key in self.path)
            text += f"\n\nThe failure occurred for item {where}"
        if callable(msg):
            text = msg(text)
        return self.exc_type(text)


def _not_supported(actual, expected):
    raise _Mismatch(TypeError, "No comparison pair was able to handle inputs of type "
                    f"{type(actual)} and {type(expected)}.")


def _tolerances(dtypes, rtol, atol):
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Mismatch(ValueError, "Both 'rtol' and 'atol' must be either specified or "
                        f"omitted, but got no {missing}.")
    if rtol is not None:
        return rtol, atol
    pairs = [_TOLERANCES.get(dtype, (0.0, 0.0)) for dtype in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _difference_lines(abs_diff, rel_diff, rtol, atol, where=None):
    """The 'absolute' and 'relative' lines of a numeric mismatch; where holds the index of each
    greatest difference for tensors, None for scalars."""
    exact = rtol == 0 and atol == 0
    lines = []
    for kind, diff, tol, index in (("absolute", abs_diff, atol, where and where[0]),
                                   ("relative", rel_diff, rtol, where and where[1])):
        line = (f"{kind.title()} difference: {diff}" if where is None
                else f"Greatest {kind} difference: {diff} at index {index}")
        if not exact:
            line += f" (up to {tol} allowed)"
        lines.append(line)
    return lines


def _numeric_message(default_name, name, extra, lines, exact):
    if name is None:
        name = default_name
    elif callable(name):
        name = name(default_name)
    head = f"{name} are not {'equal' if exact else 'close'}!"
    return "\n".join([head, "", extra.strip()] + lines)


def _compare_numbers(actual, expected, rtol, atol, equal_nan, check_dtype):
    if check_dtype and type(actual) is not type(expected):
        raise _Mismatch(AssertionError,
                        f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    dtypes = [{int: torch.int64, float: torch.float64, complex: torch.complex128}[
        _number_kind(value)] for value in (actual, expected)]
    rtol, atol = _tolerances(dtypes, rtol, atol)
    if actual == expected:
        return
    both_nan = all(isinstance(v, (float, complex)) and _has_nan(v) for v in (actual, expected))
    if equal_nan and both_nan:
        return
    abs_diff = abs(actual - expected)
    if not math.isnan(abs(abs_diff)) and not math.isinf(abs(abs_diff)) \
            and abs_diff <= atol + rtol * abs(expected):
        return
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    lines = _difference_lines(abs_diff, rel_diff, rtol, atol)
    raise _Mismatch(AssertionError, _numeric_message(
        "Scalars", None, f"Expected {expected} but got {actual}.", lines,
        rtol == 0 and atol == 0))


def _number_kind(value):
    for kind in (int, float, complex):
        if isinstance(value, kind):
            return kind
    return float


def _has_nan(value):
    if isinstance(value, complex):
        return math.isnan(value.real) or math.isnan(value.imag)
    return math.isnan(value)


def _is_number(value):
    import numbers
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


def _is_bool(value):
    if isinstance(value, bool):
        return True
    try:
        import numpy
    except ImportError:
        return False
    return isinstance(value, numpy.bool_)


def _as_tensor(value, actual, expected):
    if isinstance(value, torch.Tensor):
        return value
    try:
        return torch.as_tensor(value)
    except Exception:
        _not_supported(actual, expected)


def _unravel(flat, shape):
    index = []
    for size in reversed(shape):
        flat, rest = divmod(flat, size)
        index.append(rest)
    return tuple(reversed(index))


def _tensor_message(actual, expected, matches, rtol, atol):
    total = matches.numel()
    wrong = total - int(matches.sum())
    extra = f"Mismatched elements: {wrong} / {total} ({wrong / total:.1%})"
    a, e = actual.flatten(), expected.flatten()
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        a, e = a.to(torch.int64), e.to(torch.int64)
    keep = matches.flatten()
    abs_diff = (a - e).abs()
    abs_diff[keep] = 0
    rel_diff = abs_diff / e.abs()
    rel_diff[keep] = 0
    abs_max, abs_at = abs_diff.max(0)
    rel_max, rel_at = rel_diff.max(0)
    shape = tuple(matches.shape)
    where = (_unravel(int(abs_at), shape), _unravel(int(rel_at), shape))
    lines = _difference_lines(abs_max.item(), rel_max.item(), rtol, atol, where)
    return extra, lines


def _compare_tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype,
                     check_layout, check_stride, allow_subclasses):
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not allow_subclasses and type(actual) is not type(expected)):
        _not_supported(actual, expected)
    a = _as_tensor(actual, actual, expected)
    e = _as_tensor(expected, actual, expected)
    rtol, atol = _tolerances([a.dtype, e.dtype], rtol, atol)

    def differ(attribute, mine, theirs):
        raise _Mismatch(AssertionError, f"The values for attribute '{attribute}' do not "
                        f"match: {mine} != {theirs}.")

    if a.shape != e.shape:
        differ("shape", a.shape, e.shape)
    if a.layout != e.layout:
        if check_layout:
            differ("layout", a.layout, e.layout)
    elif check_stride and a.stride() != e.stride():
        differ("stride()", a.stride(), e.stride())
    if check_device and a.device != e.device:
        differ("device", a.device, e.device)
    if check_dtype and a.dtype != e.dtype:
        differ("dtype", a.dtype, e.dtype)
    if a.device != e.device:
        a, e = a.cpu(), e.cpu()
    if a.dtype != e.dtype:
        common = torch.promote_types(a.dtype, e.dtype)
        a, e = a.to(common), e.to(common)
    if a.layout != e.layout:
        a = a.to_dense() if a.layout != torch.strided else a
        e = e.to_dense() if e.layout != torch.strided else e
    a, e = a.detach(), e.detach()
    matches = torch.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bool(matches.all()):
        return
    exact = rtol == 0 and atol == 0
    if a.dim() == 0:
        x, y = a.item(), e.item()
        abs_diff = abs(x - y)
        rel_diff = float("inf") if y == 0 else abs_diff / abs(y)
        message = _numeric_message("Scalars", None, f"Expected {y} but got {x}.",
                                   _difference_lines(abs_diff, rel_diff, rtol, atol), exact)
    else:
        extra, lines = _tensor_message(a, e, matches, rtol, atol)
        message = _numeric_message("Tensor-likes", None, extra, lines, exact)
    raise _Mismatch(AssertionError, message)


def _is_sequence(value):
    return isinstance(value, collections.abc.Sequence) and not isinstance(value, str)


def _compare(actual, expected, path, options):
    try:
        _compare_leaves_or_walk(actual, expected, path, options)
    except _Mismatch as mismatch:
        if not mismatch.path:
            mismatch.path = path
        raise


def _compare_leaves_or_walk(actual, expected, path, options):
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Mismatch(AssertionError, "The length of the sequences mismatch: "
                            f"{len(actual)} != {len(expected)}")
        for index, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, path + (index,), options)
        return
    mappings = (isinstance(actual, collections.abc.Mapping)
                and isinstance(expected, collections.abc.Mapping))
    if mappings:
        mine, theirs = set(actual.keys()), set(expected.keys())
        if mine != theirs:
            lines = ["The keys of the mappings do not match:"]
            if theirs - mine:
                lines.append(f"Missing keys in the actual mapping: {sorted(theirs - mine)}")
            if mine - theirs:
                lines.append(f"Additional keys in the actual mapping: {sorted(mine - theirs)}")
            raise _Mismatch(AssertionError, "\n".join(lines))
        try:
            keys = sorted(mine)
        except TypeError:
            keys = list(actual.keys())
        for key in keys:
            _compare(actual[key], expected[key], path + (key,), options)
        return
    _compare_leaves(actual, expected, options)


def _compare_leaves(actual, expected, options):
    if actual is None or expected is None:
        if actual is None and expected is None:
            return
        raise _Mismatch(AssertionError, f"None mismatch: {actual} is not {expected}")
    if _is_bool(actual) and _is_bool(expected):
        if bool(actual) != bool(expected):
            raise _Mismatch(AssertionError,
                            f"Booleans mismatch: {bool(actual)} is not {bool(expected)}")
        return
    if _is_number(actual) and _is_number(expected):
        actual, expected = (v.item() if hasattr(v, "item") else v for v in (actual, expected))
        _compare_numbers(actual, expected, options["rtol"], options["atol"],
                         options["equal_nan"], options["check_dtype"])
        return
    tensor_like = [isinstance(v, torch.Tensor) or _is_ndarray(v) for v in (actual, expected)]
    if all(tensor_like):
        _compare_tensors(actual, expected, options["rtol"], options["atol"],
                         options["equal_nan"], options["check_device"],
                         options["check_dtype"], options["check_layout"],
                         options["check_stride"], options["allow_subclasses"])
        return
    _not_supported(actual, expected)


def _is_ndarray(value):
    try:
        import numpy
    except ImportError:
        return False
    return isinstance(value, numpy.ndarray)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raises AssertionError unless actual and expected are close: for each pair of leaves
    |actual - expected| <= atol + rtol * |expected| elementwise (NaN equal to NaN only with
    equal_nan), after their shapes, and unless switched off their devices, dtypes and
    layouts, agree.  Without rtol and atol the looser default of the two dtypes applies
    (float32: rtol 1.3e-6, atol 1e-5; float64: 1e-7, 1e-7; integers and bool: exact).  msg
    replaces the message (a string) or rewrites it (a callable taking the message)."""
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_layout=check_layout,
                   check_stride=check_stride, allow_subclasses=allow_subclasses)
    try:
        _compare(actual, expected, (), options)
    except _Mismatch as mismatch:
        raise mismatch.to_error(msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """The deprecated predecessor of assert_close: expected is made a tensor like actual and
    the dtypes may differ."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `torch.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    if not isinstance(actual, torch.Tensor):
        actual = torch.tensor(actual)
    if not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        rtol, atol = _tolerances([actual.dtype, expected.dtype], None, None)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


_INTEGERS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_COMPLEX = (torch.complex64, torch.complex128)


def _range(dtype, low, high, lowest, highest, default_low, default_high):
    """low and high checked, then clamped to [lowest, highest]; rounded up for integer and
    bool dtypes."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dtype in _FLOATS + _COMPLEX:
        warnings.warn("Passing `low==high` to `torch.testing.make_tensor` for floating or "
                      "complex types is deprecated since 2.1 and will be removed in 2.3. "
                      "Use `torch.full(...)` instead.", FutureWarning, stacklevel=3)
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    elif high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, "
                         f"{high}), but {dtype} only supports [{lowest}, {highest})")
    low = min(max(low, lowest), highest)
    high = min(max(high, lowest), highest)
    if dtype is torch.bool or dtype in _INTEGERS:
        return math.ceil(low), math.ceil(high)
    return low, high


def make_tensor(*shape, dtype, device, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """A tensor of the shape, dtype and device with values drawn uniformly from [low, high):
    by default [0, 2) for bool, [0, 10) for uint8, [-9, 10) for signed integers and [-9, 9)
    for floating and complex types (each part).  noncontiguous gives a view with a stride of
    2 in the last dim (when it has two or more elements); exclude_zero replaces zeros by one
    (integers, bool) or the dtype's smallest normal number."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = shape[0]
    shape = tuple(shape)
    if noncontiguous and memory_format is not None:
        raise ValueError("The parameters `noncontiguous` and `memory_format` are mutually "
                         f"exclusive, but got noncontiguous={noncontiguous} and "
                         f"memory_format={memory_format}")
    if requires_grad and (dtype is torch.bool or dtype in _INTEGERS):
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    if noncontiguous:
        shape = shape[:-1] + (2 * shape[-1],)
    if dtype is torch.bool:
        low, high = _range(dtype, low, high, 0, 2, 0, 2)
        result = torch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _INTEGERS:
        info = torch.iinfo(dtype)
        top = info.max + (1 if dtype is not torch.int64 else 0)
        default_low = 0 if dtype is torch.uint8 else -9
        low, high = _range(dtype, low, high, info.min, top, default_low, 10)
        result = torch.randint(low, high, shape, device=device, dtype=dtype)
    elif dtype in _FLOATS + _COMPLEX:
        info = torch.finfo(dtype)
        low, high = _range(dtype, low, high, info.min, info.max, -9, 9)
        result = torch.empty(shape, device=device, dtype=dtype)
        target = torch.view_as_real(result) if dtype in _COMPLEX else result
        if high - low >= info.max:
            target.uniform_(low / 2, high / 2).mul_(2)
        else:
            target.uniform_(low, high)
    else:
        raise TypeError(f"The requested dtype '{dtype}' is not supported by "
                        "torch.testing.make_tensor(). To request support, file an issue at: "
                        "https://github.com/pytorch/pytorch/issues")
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        floating = dtype in _FLOATS + _COMPLEX
        result[result == 0] = torch.finfo(dtype).tiny if floating else 1
    if dtype in _FLOATS + _COMPLEX:
        result.requires_grad = requires_grad
    return result
