"""TorchScript's builtin operators on Python values (torch/csrc/jit/runtime/register_prim_ops.cpp):
arithmetic and comparisons on int/float/bool/str, conversions between tensors and numbers,
what a tensor's shape reads as ints, and the generic list and dict operators.  They are not dispatcher
operators: `_ir.schema` finds them here when `_C._op` has no operator of that name, so the
interpreter, the passes and the file format treat them as any other `aten::` node.

A type `t` in a schema stands for any type and `t[]` for any list (TorchScript's type
variables)."""
import math


def _div(a, b):
    if b == 0:
        raise ZeroDivisionError("division by zero")
    return a / b


def _floordiv(a, b):
    if b == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    return a // b


def _remainder(a, b):
    if b == 0:
        raise ZeroDivisionError("integer division or modulo by zero")
    return a % b


def _getitem(items, i):
    if not -len(items) <= i < len(items):
        raise IndexError("list index out of range")
    return items[i]


def _append(items, x):
    items.append(x)
    return items


def _dict_getitem(d, key):
    if key not in d:
        raise KeyError(key)
    return d[key]


def _dict_setitem(d, key, value):
    d[key] = value


def _range_length(lo, hi, step):
    if step == 0:
        raise RuntimeError("range() arg 3 must not be zero")
    if step > 0 and lo < hi:
        return 1 + (hi - 1 - lo) // step
    if step < 0 and lo > hi:
        return 1 + (lo - 1 - hi) // (-step)
    return 0


class Error(Exception):
    """What a scripted function's `raise` and failed `assert` raise when they run
    (torch.jit.Error): the message names the exception the source raised."""


def raise_exception(msg, cls=None, source=None):
    """prim::RaiseException: cls is the qualified name of the exception class ("builtins.
    ValueError"), None for RuntimeError and for AssertionError (whose message names it);
    source is where the statement is, when the graph was compiled in this process."""
    where = "Traceback of TorchScript (most recent call last):\n" + source if source else ""
    raise Error("The following operation failed in the TorchScript interpreter.\n" + where +
                f"{cls or 'RuntimeError'}: {msg}\n")


_ARITH = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
          "div": _div, "floordiv": _floordiv, "remainder": _remainder,
          "pow": lambda a, b: float(a ** b)}
_COMPARE = {"lt": lambda a, b: a < b, "gt": lambda a, b: a > b, "le": lambda a, b: a <= b,
            "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}
# overload -> (type of a, type of b); ORDER: the frontend picks the overload from these names
NUMBER_OVERLOADS = {("int", "int"): "int", ("float", "float"): "float",
                    ("int", "float"): "int_float", ("float", "int"): "float_int"}


def _arith_return(op, a, b):
    if op == "div" or op == "pow" or "float" in (a, b):
        return "float"
    return "int"


def _table():
    table = {}
    for (a, b), overload in NUMBER_OVERLOADS.items():
        for op, fn in _ARITH.items():
            ret = _arith_return(op, a, b)
            table[(f"aten::{op}", overload)] = (f"aten::{op}.{overload}({a} a, {b} b) -> {ret}",
                                                fn)
        for op, fn in _COMPARE.items():
            table[(f"aten::{op}", overload)] = (f"aten::{op}.{overload}({a} a, {b} b) -> bool",
                                                fn)
    for ty in ("str", "bool"):
        for op in ("eq", "ne"):
            table[(f"aten::{op}", ty)] = (f"aten::{op}.{ty}({ty} a, {ty} b) -> bool",
                                          _COMPARE[op])
    rows = [
        ("aten::neg.int(int a) -> int", lambda a: -a),
        ("aten::neg.float(float a) -> float", lambda a: -a),
        ("aten::__not__(bool self) -> bool", lambda a: not a),
        ("aten::add.str(str a, str b) -> str", lambda a, b: a + b),
        ("prim::RaiseException(str msg, str? cls=None) -> ()", raise_exception),
        ("aten::__and__.bool(bool a, bool b) -> bool", lambda a, b: a and b),
        ("aten::__or__.bool(bool a, bool b) -> bool", lambda a, b: a or b),
        ("aten::__is__(t self, t obj) -> bool", lambda a, b: a is b),
        ("aten::__isnot__(t self, t obj) -> bool", lambda a, b: a is not b),
        ("aten::Bool.Tensor(Tensor a) -> bool", bool),
        ("aten::Float.Tensor(Tensor a) -> float", float),
        ("aten::Int.Tensor(Tensor a) -> int", int),
        ("aten::Float.int(int a) -> float", float),
        ("aten::Int.float(float a) -> int", int),
        ("aten::Bool.int(int a) -> bool", bool),
        ("aten::dim(Tensor self) -> int", lambda t: t.dim()),
        ("prim::dtype(Tensor a) -> ScalarType", lambda t: t.dtype),
        ("aten::numel(Tensor self) -> int", lambda t: t.numel()),
        ("aten::size(Tensor self) -> int[]", lambda t: list(t.shape)),
        ("aten::size.int(Tensor self, int dim) -> int", lambda t, d: t.size(d)),
        ("aten::len.Tensor(Tensor t) -> int", len),
        ("aten::len.t(t[] a) -> int", len),
        ("aten::__getitem__.t(t[] list, int idx) -> t", _getitem),
        ("aten::append.t(t[](a!) self, t el) -> t[](a!)", _append),
        ("aten::__range_length(int lo, int hi, int step) -> int", _range_length),
        ("aten::__derive_index(int index, int start, int step) -> int",
         lambda i, start, step: start + i * step),
        ("aten::sqrt.float(float a) -> float", math.sqrt),
        ("aten::exp.float(float a) -> float", math.exp),
        ("aten::log.float(float a) -> float", math.log),
    ]
    for k in ("str", "int"):   # Dict(str, t) and Dict(int, t)
        rows += [
            (f"aten::__getitem__.Dict_{k}(Dict({k}, t) self, {k} key) -> t", _dict_getitem),
            (f"aten::_set_item.{k}(Dict({k}, t)(a!) l, {k} idx, t v) -> ()", _dict_setitem),
            (f"aten::__contains__.{k}(Dict({k}, t) dict, {k} key) -> bool",
             lambda d, key: key in d),
            (f"aten::len.Dict_{k}(Dict({k}, t) self) -> int", len),
            (f"aten::keys.{k}(Dict({k}, t) self) -> {k}[]", lambda d: list(d)),
            (f"aten::values.{k}(Dict({k}, t) self) -> t[]", lambda d: list(d.values())),
            (f"aten::items.{k}(Dict({k}, t) self) -> (({k}, t)[])", lambda d: list(d.items())),
            (f"aten::get.{k}(Dict({k}, t) self, {k} key) -> t?", lambda d, key: d.get(key)),
            (f"aten::get.default_{k}(Dict({k}, t) self, {k} key, t default_value) -> t",
             lambda d, key, default: d.get(key, default)),
        ]
    for text, fn in rows:
        head = text.split("(")[0]
        name, _, overload = head.partition(".")
        table[(name, overload)] = (text, fn)
    return table


BUILTINS = _table()
