"""`.code` of a traced graph: Python-like source, as TorchScript prints it
(torch/csrc/jit/serialization/python_print.cpp).  A value used once is written inline."""
from .._tensor import Tensor
from . import _ir

_PY_TYPES = {"int": "int", "float": "float", "bool": "bool", "str": "str",
             "NoneType": "None", "int[]": "List[int]", "float[]": "List[float]",
             "Tensor[]": "List[Tensor]", "Tensor?[]": "List[Optional[Tensor]]"}


def _py_type(ty):
    if _ir.is_tensor_type(ty):
        return "Tensor"
    if ty.startswith("(") and ty.endswith(")"):
        return "Tuple[" + ", ".join(_py_type(t) for t in _ir.split_top(ty[1:-1])) + "]"
    return _PY_TYPES.get(ty, ty)


def _literal(n):
    v = n.attrs.get("value")
    if isinstance(v, Tensor) or "tensor" in n.attrs:
        return "CONSTANTS." + n.attrs.get("tensor", "c")
    if isinstance(v, str) and n.outputs[0].type == "ScalarType":
        return "torch." + v
    return repr(v)


def graph_code(graph, fn_name, self_name):
    """The source of `def <fn_name>(...)` for graph (the first input is self for modules)."""
    names = graph.names()
    uses = graph.uses()
    expr = {}
    args = []
    for i, v in enumerate(graph.inputs):
        name = names[v].replace(".", "_")
        expr[v] = name
        if i == 0 and self_name is not None:
            expr[v] = args.append(self_name) or self_name
        else:
            args.append(f"{name}: {_py_type(v.type)}")
    body = []
    for n in graph.nodes:
        ins = [expr[v] for v in n.inputs]
        if n.kind == "prim::Constant":
            text = _literal(n)
        elif n.kind == "prim::GetAttr":
            text = f"{ins[0]}.{n.attrs['name']}"
        elif n.kind == "prim::ListConstruct":
            text = "[" + ", ".join(ins) + "]"
        elif n.kind == "prim::TupleConstruct":
            text = "(" + ", ".join(ins) + ("," if len(ins) == 1 else "") + ")"
        else:
            text = f"{n.kind.replace('aten::', 'torch.').replace('prim::', 'prim.')}(" + \
                   ", ".join(ins) + ")"
        if len(n.outputs) == 1 and (uses.get(n.outputs[0], 0) <= 1 or
                                    n.kind in ("prim::Constant", "prim::GetAttr")):
            expr[n.outputs[0]] = text
            continue
        targets = []
        for o in n.outputs:
            t = "_" + names[o].replace(".", "_") if names[o][0].isdigit() else \
                names[o].replace(".", "_")
            expr[o] = t
            targets.append(t)
        body.append(f"  {', '.join(targets)} = {text}")
    ret = ", ".join(expr[v] for v in graph.outputs)
    body.append(f"  return {ret}")
    out_type = _py_type(graph.outputs[0].type) if len(graph.outputs) == 1 else "Tuple"
    head = f"def {fn_name}(" + ",\n    ".join(args) + f") -> {out_type}:"
    return head + "\n" + "\n".join(body) + "\n"
