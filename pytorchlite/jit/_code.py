"""`.code` of a graph: Python-like source, as TorchScript prints it
(torch/csrc/jit/serialization/python_print.cpp).  A value used once, in the block that defines
it, is written inline; prim::If prints as if/else, prim::Loop as for or while."""
from .._tensor import Tensor
from . import _ir

_PY_TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "str",
             "NoneType": "None", "int[]": "List[int]", "float[]": "List[float]",
             "Tensor[]": "List[Tensor]", "Tensor?[]": "List[Optional[Tensor]]"}


def _py_type(ty):
    if _ir.is_tensor_type(ty):
        return "Tensor"
    if ty.endswith("?"):
        return f"Optional[{_py_type(ty[:-1])}]"
    if ty.endswith("[]") and ty not in _PY_TYPES:
        return f"List[{_py_type(ty[:-2])}]"
    if _ir.is_tuple_type(ty):
        return "Tuple[" + ", ".join(_py_type(t) for t in _ir.split_top(ty[1:-1])) + "]"
    if _ir.is_dict_type(ty):
        return "Dict[" + ", ".join(_py_type(t) for t in _ir.dict_types(ty)) + "]"
    return _PY_TYPES.get(ty, ty)


def _literal(n):
    v = n.attrs.get("value")
    if isinstance(v, Tensor) or "tensor" in n.attrs:
        return "CONSTANTS." + n.attrs.get("tensor", "c")
    if isinstance(v, str) and n.outputs[0].type == "ScalarType":
        return "torch." + v
    return repr(v)


def _use_lists(graph):
    """value -> the node list (graph or block) of each place that reads it."""
    where = {}

    def scan(nodes):
        for n in nodes:
            for v in n.inputs:
                where.setdefault(v, []).append(id(nodes))
            for b in n.blocks:
                for v in b.outputs:
                    where.setdefault(v, []).append(id(b.nodes))
                scan(b.nodes)
    scan(graph.nodes)
    for v in graph.outputs:
        where.setdefault(v, []).append(id(graph.nodes))
    return where


class _Printer:
    """Python-like source of a graph: a value read once, in its own block, is written inline;
    prim::If prints as if/else and prim::Loop as for or while."""

    def __init__(self, graph):
        self.names = graph.names()
        self.uses = _use_lists(graph)
        self.expr = {}
        self.taken = set()

    def target(self, v):
        name = self.names[v].replace(".", "_")
        t = "_" + name if name[0].isdigit() else name
        self.expr[v] = t
        return t

    def assign(self, targets, values, indent, body):
        if targets:
            body.append(f"{indent}{', '.join(targets)} = {', '.join(values)}")

    def nodes(self, nodes, indent, body):
        for n in nodes:
            if n.kind == "prim::If":
                self.if_node(n, indent, body)
                continue
            if n.kind == "prim::Loop":
                self.loop_node(n, indent, body)
                continue
            text = self.text(n)
            uses = self.uses.get(n.outputs[0], []) if len(n.outputs) == 1 else []
            if n.outputs and not any(self.uses.get(o) for o in n.outputs) and \
                    n.kind not in ("prim::Constant", "prim::GetAttr"):
                body.append(indent + text)   # kept for what it does (aten::append)
                continue
            if len(n.outputs) == 1 and (uses == [id(nodes)] or
                                        n.kind in ("prim::Constant", "prim::GetAttr")):
                self.expr[n.outputs[0]] = text
                continue
            targets = [self.target(o) for o in n.outputs]
            if targets:
                self.assign(targets, [text], indent, body)
            else:
                body.append(indent + text)

    def text(self, n):
        ins = [self.expr[v] for v in n.inputs]
        if n.kind == "prim::Constant":
            return _literal(n)
        if n.kind == "prim::GetAttr":
            name = n.attrs["name"]
            return f"{ins[0]}.{name}" if name.isidentifier() else f'getattr({ins[0]}, "{name}")'
        if n.kind == "prim::ListConstruct":
            return "[" + ", ".join(ins) + "]"
        if n.kind == "prim::TupleConstruct":
            return "(" + ", ".join(ins) + ("," if len(ins) == 1 else "") + ")"
        if n.kind == "prim::TupleIndex":
            return f"{ins[0]}[{ins[1]}]"
        if n.kind == "prim::TupleUnpack":
            return ins[0]
        if n.kind == "prim::unchecked_cast":
            return f"unchecked_cast({_py_type(n.outputs[0].type)}, {ins[0]})"
        if n.kind == "prim::CallMethod":
            return f"({ins[0]}).{n.attrs['name']}(" + ", ".join(ins[1:]) + ")"
        return f"{n.kind.replace('aten::', 'torch.').replace('prim::', 'prim.')}(" + \
            ", ".join(ins) + ")"

    def block(self, b, targets, indent, body):
        start = len(body)
        self.nodes(b.nodes, indent, body)
        self.assign(targets, [self.expr[v] for v in b.outputs], indent, body)
        if len(body) == start:
            body.append(indent + "pass")

    def if_node(self, n, indent, body):
        targets = [self.target(o) for o in n.outputs]
        body.append(f"{indent}if {self.expr[n.inputs[0]]}:")
        self.block(n.blocks[0], targets, indent + "  ", body)
        body.append(f"{indent}else:")
        self.block(n.blocks[1], targets, indent + "  ", body)

    def loop_node(self, n, indent, body):
        b = n.blocks[0]
        trip, cond = n.inputs[0], n.inputs[1]
        params = [self.target(v) for v in b.inputs[1:]]
        self.assign(params, [self.expr[v] for v in n.inputs[2:]], indent, body)
        it = self.target(b.inputs[0])
        const = [v.node.attrs.get("value") if v.node is not None and
                 v.node.kind == "prim::Constant" else None for v in (trip, cond, b.outputs[0])]
        inner = indent + "  "
        if const[1] is True and const[2] is True:
            body.append(f"{indent}for {it} in range({self.expr[trip]}):")
            self.block(_BlockView(b.nodes, b.outputs[1:]), params, inner, body)
        else:
            c = "_c" + it.lstrip("_")
            counted = const[0] != _INT_MAX
            numbered = counted or bool(self.uses.get(b.inputs[0]))
            self.assign([c], [self.expr[cond]], indent, body)
            if numbered:
                self.assign([it], ["0"], indent, body)
            test = f"{c} and {it} < {self.expr[trip]}" if counted else c
            body.append(f"{indent}while {test}:")
            self.block(_BlockView(b.nodes, b.outputs), [c] + params, inner, body)
            if numbered:
                self.assign([it], [f"{it} + 1"], inner, body)
        for o, p in zip(n.outputs, params):
            self.expr[o] = p


_INT_MAX = 9223372036854775807


class _BlockView:
    def __init__(self, nodes, outputs):
        self.nodes = nodes
        self.outputs = outputs


def graph_code(graph, fn_name, self_name):
    """The source of `def <fn_name>(...)` for graph (the first input is self for modules)."""
    p = _Printer(graph)
    args = []
    for i, v in enumerate(graph.inputs):
        name = p.names[v].replace(".", "_")
        p.expr[v] = name
        if i == 0 and self_name is not None:
            p.expr[v] = self_name
            args.append(self_name)
        else:
            args.append(f"{name}: {_py_type(v.type)}")
    body = []
    p.nodes(graph.nodes, "  ", body)
    ret = ", ".join(p.expr[v] for v in graph.outputs)
    body.append(f"  return {ret}")
    out_type = _py_type(graph.outputs[0].type) if len(graph.outputs) == 1 else "Tuple"
    head = f"def {fn_name}(" + ",\n    ".join(args) + f") -> {out_type}:"
    return head + "\n" + "\n".join(body) + "\n"
