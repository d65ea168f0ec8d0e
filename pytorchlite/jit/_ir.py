"""The graph IR (torch/csrc/jit/ir/ir.h): a Graph holds typed Values and a list of Nodes; a
control-flow node (prim::If, prim::Loop) holds Blocks, each a list of Nodes with inputs and
outputs of its own (Note [Blocks]).  It prints in TorchScript's format and, with overloads and
constants written out in full, in the file format of Note [Graph file format]
(_serialization.py).

Types are strings, written as TorchScript writes them: `Float(4, 3, strides=[3, 1],
requires_grad=0, device=cpu)` for a tensor the trace saw, `Tensor`, `int`, `float`, `bool`,
`str`, `NoneType`, `Device`, `ScalarType`, `Layout`, `MemoryFormat`, `int[]`, `float[]`,
`Tensor[]`, `Tensor?[]`, any other list `T[]`, an optional `T?`, a tuple `(T, U)`, a dict
`Dict(str, T)` or `Dict(int, T)`, and `__torch__.<class>` for a module.

Note [Blocks]
~~~~~~~~~~~~~
As in TorchScript, `%y : T = prim::If(%cond)` holds two blocks without inputs; each ends with
`-> (...)`, the values the node returns when that block ran.  `%c : T = prim::Loop(%max_trip_count,
%start_condition, %carried...)` holds one block whose inputs are the iteration number and the
carried values, and whose outputs are the condition to run again and the new carried values; the
node returns the carried values after the last iteration.  A block's nodes may read any value
defined before the node that holds the block (in an enclosing block or the graph); nothing
outside a block reads a value defined inside it.
"""
import json
import re

from .. import _C
from .._tensor import Tensor
from ._builtins import BUILTINS

_DTYPE_NAMES = {
    "float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
    "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
    "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}
_TENSOR_TYPE = re.compile(r"^([A-Za-z0-9]+)\((.*)\)$")
_SCALAR_TYPES = ("int", "float", "complex", "bool", "str", "NoneType", "Device", "ScalarType",
                 "Layout",
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
    if ty in _SCALAR_TYPES:
        return True
    if ty.endswith("[]") or ty.endswith("?"):
        inner = ty[:-2] if ty.endswith("[]") else ty[:-1]
        return inner != "NoneType" and is_type(inner)
    if ty.startswith("__torch__."):
        return re.fullmatch(r"__torch__(\.[A-Za-z_][A-Za-z0-9_]*)+", ty) is not None
    if ty.startswith("(") and ty.endswith(")"):
        return all(is_type(t) for t in split_top(ty[1:-1]))
    if is_dict_type(ty):
        key, value = dict_types(ty)
        return key in ("str", "int") and is_type(value)
    return is_tensor_type(ty)


def is_tuple_type(ty):
    """Whether ty is a tuple `(T, U)` (not a list of tuples `(T, U)[]`)."""
    return ty.startswith("(") and ty.endswith(")")


def is_dict_type(ty):
    return ty.startswith("Dict(") and ty.endswith(")")


def dict_types(ty):
    """(key type, value type) of `Dict(K, V)`."""
    parts = split_top(ty[5:-1])
    return (parts[0], parts[1]) if len(parts) == 2 else ("", "")


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


class Block:
    """The body of a control-flow node (Note [Blocks]): inputs, nodes, outputs."""
    __slots__ = ("inputs", "nodes", "outputs")

    def __init__(self, inputs=(), nodes=(), outputs=()):
        self.inputs = list(inputs)
        self.nodes = list(nodes)
        self.outputs = list(outputs)


class Node:
    """One operation: kind ("aten::mm", "prim::Constant", ...), the operator's overload
    (aten nodes), inputs and outputs, and attributes: `value` (a constant's Python value),
    `name` (prim::GetAttr, prim::CallMethod), `tensor` (the key of a tensor constant in the
    file).  prim::If and prim::Loop hold blocks (Note [Blocks])."""
    __slots__ = ("kind", "overload", "inputs", "outputs", "attrs", "subgraph", "blocks")

    def __init__(self, kind, inputs, outputs, overload="", attrs=None, subgraph=None,
                 blocks=()):
        self.kind = kind
        self.overload = overload
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.attrs = attrs or {}
        self.subgraph = subgraph
        self.blocks = list(blocks)
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
        """value -> how many inputs (and graph and block outputs) name it."""
        count = {}
        for n in all_nodes(self.nodes):
            for v in n.inputs:
                count[v] = count.get(v, 0) + 1
            for b in n.blocks:
                for v in b.outputs:
                    count[v] = count.get(v, 0) + 1
        for v in self.outputs:
            count[v] = count.get(v, 0) + 1
        return count

    def names(self):
        """value -> its printed name: a debug name, made unique, or a number."""
        out, taken, counter = {}, set(), len(self.inputs)
        values = list(self.inputs) + list(_defined(self.nodes))
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


def all_nodes(nodes):
    """The nodes and, depth first after each, the nodes of its blocks."""
    for n in nodes:
        yield n
        for b in n.blocks:
            yield from all_nodes(b.nodes)


def _defined(nodes):
    """The values the nodes define, in printing order: a node's outputs, then its blocks'
    inputs and nodes."""
    for n in nodes:
        yield from n.outputs
        for b in n.blocks:
            yield from b.inputs
            yield from _defined(b.nodes)


def free_values(block):
    """The values block's nodes (and their blocks) read that are defined outside it, in order
    of first use."""
    defined = set(block.inputs) | set(_defined(block.nodes))
    out, seen = [], set()
    reads = [v for n in all_nodes(block.nodes) for v in
             n.inputs + [o for b in n.blocks for o in b.outputs]] + block.outputs
    for v in reads:
        if v not in defined and v not in seen:
            seen.add(v)
            out.append(v)
    return out


def _format_float(value, full):
    text = repr(value)
    return text[:-1] if text.endswith(".0") and not full else text


def _format_constant(value, full):
    if value is None:
        return ""
    if isinstance(value, Tensor):
        if value.dim() == 0 and not full:
            v = value.item()
            if isinstance(v, complex):   # TorchScript's {(re,im)}
                return f"[value={{({v.real:g},{v.imag:g})}}]"
            return "[value={" + (repr(v) if not isinstance(v, bool) else str(int(v))) + "}]"
        return "[value=<Tensor>]"
    if isinstance(value, bool):
        return f"[value={int(value)}]"
    if isinstance(value, float):
        return f"[value={_format_float(value, full)}]"
    if isinstance(value, complex):   # TorchScript's 2.-1.j; full: exact, as complex() reads it
        sign = "-" if value.imag < 0 or repr(value.imag).startswith("-") else "+"
        return (f"[value={_format_float(value.real, full)}{sign}"
                f"{_format_float(abs(value.imag), full)}j]")
    if isinstance(value, str):
        return f"[value={json.dumps(value)}]"
    if isinstance(value, int):
        return f"[value={value}]"
    if type(value).__name__ in ("dtype", "memory_format"):
        return f"[value={json.dumps(str(value).split('.')[-1])}]"
    return f"[value={json.dumps(str(value))}]"


def print_graph(graph, full):
    """TorchScript's text of the graph; full=True writes what the file format needs
    (overloads, exact floats, tensor constant keys)."""
    names = graph.names()
    ins = [f"%{names[v]} : {v.type}" for v in graph.inputs]
    lines = ["graph(" + ",\n      ".join(ins) + "):"]
    groups = [0]
    _print_nodes(graph.nodes, names, full, "  ", groups, lines)
    lines.append("  return (" + ", ".join(f"%{names[v]}" for v in graph.outputs) + ")")
    subgraphs = []
    for k, n in enumerate(n for n in graph.nodes if n.subgraph is not None):
        sub = print_graph(n.subgraph, full).rstrip("\n")
        subgraphs.append(f"with {n.kind}_{k} = {sub}")
    return "\n".join(lines + subgraphs) + "\n"


def _print_nodes(nodes, names, full, indent, groups, lines):
    for n in nodes:
        outs = ", ".join(f"%{names[o]} : {o.type}" for o in n.outputs)
        if n.kind == "prim::Constant":
            if full and "tensor" in n.attrs:
                attrs = f"[tensor={json.dumps(n.attrs['tensor'])}]"
            else:
                attrs = _format_constant(n.attrs.get("value"), full)
        elif n.kind in ("prim::GetAttr", "prim::CallMethod"):
            attrs = f"[name={json.dumps(n.attrs['name'])}]"
        else:
            attrs = ""
        kind = n.qualified_kind if full else n.kind
        if n.subgraph is not None:
            kind = f"{kind}_{groups[0]}"
            groups[0] += 1
        args = ", ".join(f"%{names[v]}" for v in n.inputs)
        lines.append(f"{indent}{outs} = {kind}{attrs}({args})")
        for k, b in enumerate(n.blocks):
            params = ", ".join(f"%{names[v]} : {v.type}" for v in b.inputs)
            lines.append(f"{indent}  block{k}({params}):")
            _print_nodes(b.nodes, names, full, indent + "    ", groups, lines)
            lines.append(f"{indent}    -> (" + ", ".join(f"%{names[v]}" for v in b.outputs) +
                         ")")


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
            ty = re.sub(r"\([a-z!]+\)", "", ty).replace("SymInt", "int")   # TorchScript's view
            self.args.append((name, ty, kwarg_only))
        rets = m.group(4).strip()
        if rets.startswith("("):
            rets = rets[1:-1]
        self.returns = [re.sub(r"\([a-z!]+\)", "", re.sub(r"\s+\w+$", "", r))
                        for r in split_top(rets)]


_schemas = {}


def schema(name, overload):
    """The Schema of name.overload (cached), or None when no such operator exists."""
    key = (name, overload)
    s = _schemas.get(key)
    if s is None:
        try:
            fn = _C._op(name, overload)
            text = fn._schemas[0]
        except AttributeError:
            if key not in BUILTINS:
                return None
            text, fn = BUILTINS[key]
        s = Schema(text)
        s.fn = fn
        _schemas[key] = s
    return s


def arg_accepts(schema_type, value_type):
    """Whether a value of value_type may be passed where schema_type is declared."""
    base = schema_type[:-1] if schema_type.endswith("?") else schema_type
    if base == "t":
        return True
    if base == "t[]":
        return value_type.endswith("[]")
    if is_dict_type(base):
        if not is_dict_type(value_type):
            return False
        (k, v), (vk, vv) = dict_types(base), dict_types(value_type)
        return k == vk and (v == "t" or v == vv)
    if value_type.endswith("?"):
        return schema_type.endswith("?") and arg_accepts(base, value_type[:-1])
    if value_type == "NoneType":
        return schema_type.endswith("?") or base in ("Tensor", "ScalarType", "Layout",
                                                      "Device", "MemoryFormat", "Generator")
    if base == "Tensor":   # a number is wrapped into a tensor, as in eager mode
        return is_tensor_type(value_type) or value_type in ("int", "float", "complex", "bool")
    if base == "Scalar":
        return value_type in ("int", "float", "complex", "bool")
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
