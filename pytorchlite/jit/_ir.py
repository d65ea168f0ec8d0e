"""The graph IR (torch/csrc/jit/ir/ir.h): a Graph holds typed Values and a straight list of
Nodes; it prints in TorchScript's format and, with overloads and constants written out in
full, in the file format of Note [Graph file format] (_serialization.py).

Types are strings, written as TorchScript writes them: `Float(4, 3, strides=[3, 1],
requires_grad=0, device=cpu)` for a tensor the trace saw, `Tensor`, `int`, `float`, `bool`,
`str`, `NoneType`, `Device`, `ScalarType`, `Layout`, `MemoryFormat`, `int[]`, `float[]`,
`Tensor[]`, `Tensor?[]`, a tuple `(T, U)`, and `__torch__.<class>` for a module.
"""
import json
import re

from .. import _C
from .._tensor import Tensor

_DTYPE_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}
_TENSOR_TYPE = re.compile(r"^([A-Za-z0-9]+)\((.*)\)$")
_SCALAR_TYPES = ("int", "float", "bool", "str", "NoneType", "Device", "ScalarType", "Layout",
                 "MemoryFormat")


def tensor_type(t):
    """The TorchScript type of a tensor the trace saw."""
    name = _DTYPE_NAMES.get(str(t.dtype).split(".")[-1], "Tensor")
    parts = [str(s) for s in t.shape]
    if t.dim() > 0:
        parts.append("strides=[" + ", ".join(str(s) for s in t.stride()) + "]")
    parts.append(f"requires_grad={int(t.requires_grad)}")
    parts.append(f"device={t.device}")
    return f"{name}({', '.join(parts)})"


def is_tensor_type(ty):
    return ty == "Tensor" or (_TENSOR_TYPE.match(ty) is not None and ty.split("(")[0] in
                              _DTYPE_NAMES.values())


def tensor_type_fields(ty):
    """(dtype name, sizes, requires_grad) of a complete tensor type, or None."""
    m = _TENSOR_TYPE.match(ty)
    if m is None or m.group(1) not in _DTYPE_NAMES.values():
        return None
    dtype = next(k for k, v in _DTYPE_NAMES.items() if v == m.group(1))
    body = re.sub(r"strides=\[[^\]]*\]", "", m.group(2))
    sizes = tuple(int(p) for p in body.split(",") if p.strip().lstrip("-").isdigit())
    return dtype, sizes, "requires_grad=1" in body


def is_type(ty):
    """Whether ty is a type this IR knows (parsed files are checked with it)."""
    if ty in _SCALAR_TYPES or ty in ("int[]", "float[]", "bool[]", "Tensor[]", "Tensor?[]"):
        return True
    if ty.startswith("__torch__."):
        return re.fullmatch(r"__torch__(\.[A-Za-z_][A-Za-z0-9_]*)+", ty) is not None
    if ty.startswith("(") and ty.endswith(")"):
        return all(is_type(t) for t in split_top(ty[1:-1]))
    return is_tensor_type(ty)


def split_top(text, sep=","):
    """Splits text at the separators outside brackets and quotes."""
    parts, depth, cur, quote = [], 0, [], None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur).strip())
    return parts


class Value:
    __slots__ = ("name", "type", "node")

    def __init__(self, type_, name=None, node=None):
        self.type = type_
        self.name = name
        self.node = node


class Node:
    """One operation: kind ("aten::mm", "prim::Constant", ...), the operator's overload
    (aten nodes), inputs and outputs, and attributes: `value` (a constant's Python value),
    `name` (prim::GetAttr), `tensor` (the key of a tensor constant in the file)."""
    __slots__ = ("kind", "overload", "inputs", "outputs", "attrs", "subgraph")

    def __init__(self, kind, inputs, outputs, overload="", attrs=None, subgraph=None):
        self.kind = kind
        self.overload = overload
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = attrs or {}
        self.subgraph = subgraph
        for o in self.outputs:
            o.node = self

    @property
    def qualified_kind(self):
        return f"{self.kind}.{self.overload}" if self.overload else self.kind


class Graph:
    def __init__(self):
        self.inputs = []
        self.nodes = []
        self.outputs = []
        self.constants = {}   # tensor constant key -> tensor

    def add_input(self, type_, name):
        v = Value(type_, name)
        self.inputs.append(v)
        return v

    def create(self, kind, inputs, out_types, overload="", attrs=None):
        node = Node(kind, inputs, [Value(t) for t in out_types], overload, attrs)
        self.nodes.append(node)
        return node

    def constant(self, value, type_):
        return self.create("prim::Constant", [], [type_], attrs={"value": value}).outputs[0]

    def tensor_constant(self, t):
        key = f"c{len(self.constants)}"
        self.constants[key] = t
        return self.create("prim::Constant", [], [tensor_type(t)],
                           attrs={"value": t, "tensor": key}).outputs[0]

    def uses(self):
        """value -> how many inputs (and graph outputs) name it."""
        count = {}
        for n in self.nodes:
            for v in n.inputs:
                count[v] = count.get(v, 0) + 1
        for v in self.outputs:
            count[v] = count.get(v, 0) + 1
        return count

    def names(self):
        """value -> its printed name: a debug name, made unique, or a number."""
        out, taken, counter = {}, set(), len(self.inputs)
        values = list(self.inputs) + [o for n in self.nodes for o in n.outputs]
        for v in values:
            if v.name is not None and not v.name.isdigit():
                base, k = v.name, 1
                name = base
                while name in taken:
                    name = f"{base}.{k}"
                    k += 1
            else:
                while str(counter) in taken:
                    counter += 1
                name = str(counter)
                counter += 1
            taken.add(name)
            out[v] = name
        return out

    def __str__(self):
        return print_graph(self, full=False)

    def __repr__(self):
        return str(self)


def _format_constant(value, full):
    if value is None:
        return ""
    if isinstance(value, Tensor):
        if value.dim() == 0 and not full:
            v = value.item()
            return "[value={" + (repr(v) if not isinstance(v, bool) else str(int(v))) + "}]"
        return "[value=<Tensor>]"
    if isinstance(value, bool):
        return f"[value={int(value)}]"
    if isinstance(value, float):
        text = repr(value)
        return f"[value={text[:-1] if text.endswith('.0') and not full else text}]"
    if isinstance(value, str):
        return f"[value={json.dumps(value)}]"
    if isinstance(value, int):
        return f"[value={value}]"
    if type(value).__name__ == "dtype":
        return f"[value={json.dumps(str(value).split('.')[-1])}]"
    return f"[value={json.dumps(str(value))}]"


def print_graph(graph, full):
    """TorchScript's text of the graph; full=True writes what the file format needs
    (overloads, exact floats, tensor constant keys)."""
    names = graph.names()
    ins = [f"%{names[v]} : {v.type}" for v in graph.inputs]
    lines = ["graph(" + ",\n      ".join(ins) + "):"]
    groups = 0
    for n in graph.nodes:
        outs = ", ".join(f"%{names[o]} : {o.type}" for o in n.outputs)
        if n.kind == "prim::Constant":
            if full and "tensor" in n.attrs:
                attrs = f"[tensor={json.dumps(n.attrs['tensor'])}]"
            else:
                attrs = _format_constant(n.attrs.get("value"), full)
        elif n.kind == "prim::GetAttr":
            attrs = f"[name={json.dumps(n.attrs['name'])}]"
        else:
            attrs = ""
        kind = n.qualified_kind if full else n.kind
        if n.subgraph is not None:
            kind = f"{kind}_{groups}"
            groups += 1
        args = ", ".join(f"%{names[v]}" for v in n.inputs)
        lines.append(f"  {outs} = {kind}{attrs}({args})")
    lines.append("  return (" + ", ".join(f"%{names[v]}" for v in graph.outputs) + ")")
    subgraphs = []
    for k, n in enumerate(n for n in graph.nodes if n.subgraph is not None):
        sub = print_graph(n.subgraph, full).rstrip("\n")
        subgraphs.append(f"with {n.kind}_{k} = {sub}")
    return "\n".join(lines + subgraphs) + "\n"


NO_DEFAULT = object()
_LITERALS = {"None": None, "True": True, "False": False}


def _parse_default(text):
    """A schema default as a Python value (numbers, None, booleans), else NO_DEFAULT."""
    if text in _LITERALS:
        return _LITERALS[text]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return NO_DEFAULT


def same_value(a, b):
    """Whether two constants are the same value of the same type (1 is not True, not 1.0)."""
    return type(a) is type(b) and a == b


class Schema:
    """One operator's schema, read from `_C._op(name, overload)._schemas`."""
    __slots__ = ("name", "overload", "args", "defaults", "returns", "fn", "text")

    def __init__(self, text):
        self.text = text
        m = re.match(r"^([\w:]+)(?:\.(\w+))?\((.*)\) -> (.*)$", text)
        self.name, self.overload = m.group(1), m.group(2) or ""
        self.args = []
        self.defaults = []
        kwarg_only = False
        for part in split_top(m.group(3)):
            if part == "*":
                kwarg_only = True
                continue
            decl, eq, default = part.partition("=")
            decl = decl.strip()
            self.defaults.append(_parse_default(default.strip()) if eq else NO_DEFAULT)
            ty, name = decl.rsplit(" ", 1)
            ty = re.sub(r"\([a-z!]+\)", "", ty)
            self.args.append((name, ty, kwarg_only))
        rets = m.group(4).strip()
        if rets.startswith("("):
            rets = rets[1:-1]
        self.returns = [re.sub(r"\([a-z!]+\)", "", r.split(" ")[0]) for r in split_top(rets)]


_schemas = {}


def schema(name, overload):
    """The Schema of name.overload (cached), or None when no such operator exists."""
    key = (name, overload)
    s = _schemas.get(key)
    if s is None:
        try:
            fn = _C._op(name, overload)
        except AttributeError:
            return None
        s = Schema(fn._schemas[0])
        s.fn = fn
        _schemas[key] = s
    return s


def arg_accepts(schema_type, value_type):
    """Whether a value of value_type may be passed where schema_type is declared."""
    base = schema_type[:-1] if schema_type.endswith("?") else schema_type
    if value_type == "NoneType":
        return schema_type.endswith("?") or base in ("Tensor", "ScalarType", "Layout",
                                                      "Device", "MemoryFormat", "Generator")
    if base == "Tensor":
        return is_tensor_type(value_type)
    if base == "Scalar":
        return value_type in ("int", "float", "bool")
    if base == "float":
        return value_type in ("int", "float")
    if base == "int":
        return value_type in ("int", "bool")
    if base in ("int[]", "SymInt[]") or re.fullmatch(r"int\[\d+\]", base):
        return value_type == "int[]"
    if base in ("Tensor[]", "Tensor?[]"):
        return value_type in ("Tensor[]", "Tensor?[]")
    if base == "float[]":
        return value_type == "float[]"
    return base == value_type
