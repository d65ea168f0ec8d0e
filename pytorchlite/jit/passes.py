"""Graph passes (torch/csrc/jit/passes/): each takes a Graph, changes it in place and returns
it.  The names follow torch._C._jit_pass_*.

Note [Pass safety]
A pass never changes what a graph computes.  Nodes that write to a tensor (in-place and out=
overloads: their schema marks an argument `(a!)`) and random ones keep their place: DCE keeps
them, CSE and constant propagation skip them, and the peephole rules and CSE are only applied
to graphs without writes, where a value's contents cannot change once computed.  A peephole
rule only removes a node when its output has the same type (dtype, sizes, strides) as the
value that replaces it.  Nodes that hold blocks (prim::If, prim::Loop: Note [Blocks] in _ir.py)
are kept in place: DCE removes unused nodes inside their blocks but never the node itself, and
CSE, constant propagation and the peephole rules leave the nodes inside blocks alone (a value
replaced outside is replaced inside too).
"""
from .. import _C
from .._tensor import Tensor
from ..autograd import no_grad
from . import _ir

_RANDOM = ("rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like",
           "normal", "bernoulli", "multinomial", "poisson", "dropout", "_standard_gamma",
           "native_dropout", "uniform_", "normal_", "exponential_")


def _new_constant_key(graph):
    k = len(graph.constants)
    while f"c{k}" in graph.constants:
        k += 1
    return f"c{k}"


def _writes(node):
    if node.blocks or node.kind == "prim::CallMethod":
        return True
    if node.kind.startswith("prim::"):
        return False
    s = _ir.schema(node.kind, node.overload)
    return "!" in s.text.split("->")[0] or node.kind.endswith("_")


def _random(node):
    return node.kind.split("::")[-1] in _RANDOM


def _replace_uses(graph, old, new):
    _replace_in_nodes(graph.nodes, old, new)
    graph.outputs = [new if v is old else v for v in graph.outputs]


def _replace_in_nodes(nodes, old, new):
    for n in _ir.all_nodes(nodes):
        n.inputs = [new if v is old else v for v in n.inputs]
        for b in n.blocks:
            b.outputs = [new if v is old else v for v in b.outputs]


def eliminate_dead_code(graph):
    """Removes nodes whose outputs nothing uses (torch._C._jit_pass_dce)."""
    changed = True
    while changed:
        changed = _remove_dead(graph.nodes, graph.uses())
    return graph


def _remove_dead(nodes, uses):
    """Removes the unused nodes of a node list and of its nodes' blocks, in place; returns
    whether any went."""
    keep = [n for n in nodes if _writes(n) or n.kind == "prim::RaiseException" or
            any(uses.get(o, 0) for o in n.outputs)]
    changed = len(keep) != len(nodes)
    nodes[:] = keep
    for n in keep:
        for b in n.blocks:
            changed = _remove_dead(b.nodes, uses) or changed
    return changed


def _constant_key(node):
    v = node.attrs.get("value")
    if isinstance(v, Tensor):
        if v.dim() == 0:
            return ("scalar tensor", str(v.dtype), repr(v.item()))
        return ("tensor", id(v))
    return ("value", type(v).__name__, repr(v), node.outputs[0].type)


def eliminate_common_subexpression(graph):
    """Gives identical computations one node (torch._C._jit_pass_cse): the same kind,
    overload, attributes and inputs; constants by value.  A graph that writes to tensors only
    shares its constants (Note [Pass safety])."""
    mutable = any(_writes(n) and not n.blocks for n in _ir.all_nodes(graph.nodes))
    seen = {}
    keep = []
    for n in graph.nodes:
        if n.kind == "prim::Constant":
            key = ("const",) + _constant_key(n)
        elif mutable or _random(n) or _writes(n):
            keep.append(n)
            continue
        else:
            key = (n.kind, n.overload, repr(sorted((k, v) for k, v in n.attrs.items()
                                                   if k == "name")),
                   tuple(id(v) for v in n.inputs),
                   tuple(o.type for o in n.outputs))
        first = seen.get(key)
        if first is None:
            seen[key] = n
            keep.append(n)
            continue
        for old, new in zip(n.outputs, first.outputs):
            _replace_uses(graph, old, new)
    graph.nodes = keep
    return graph


def _constant_inputs(node, producers):
    """The Python values of node's inputs when all are constants (lists of constants count),
    else None."""
    values = []
    for v in node.inputs:
        p = producers.get(v)
        if p is None:
            return None
        if p.kind == "prim::Constant":
            values.append(p.attrs.get("value"))
        elif p.kind == "prim::ListConstruct":
            items = _constant_inputs(p, producers)
            if items is None:
                return None
            values.append(items)
        else:
            return None
    return values


def _constant_type(value, declared):
    if isinstance(value, Tensor):
        return _ir.tensor_type(value)
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return declared


def propagate_constants(graph):
    """Runs every node whose inputs are all constants and puts its result in the graph as a
    constant (torch._C._jit_pass_constant_propagation); random nodes and writes are left."""
    producers = {o: n for n in graph.nodes for o in n.outputs}
    out = []
    for n in graph.nodes:
        if n.kind.startswith("prim::") or _random(n) or _writes(n):
            out.append(n)
            continue
        args = _constant_inputs(n, producers)
        if args is None:
            out.append(n)
            continue
        s = _ir.schema(n.kind, n.overload)
        pos = [a for a, decl in zip(args, s.args) if not decl[2]]
        kw = {decl[0]: a for a, decl in zip(args, s.args) if decl[2]}
        with no_grad():
            result = s.fn(*pos, **kw)
        results = result if len(n.outputs) > 1 else (result,)
        if any(isinstance(r, (list, tuple)) for r in results):
            out.append(n)
            continue
        for o, r in zip(n.outputs, results):
            if isinstance(r, Tensor):
                key = _new_constant_key(graph)
                r = r.detach()
                graph.constants[key] = r
                attrs = {"value": r, "tensor": key}
            else:
                attrs = {"value": r}
            c = _ir.Node("prim::Constant", [], [_ir.Value(_constant_type(r, o.type))],
                         attrs=attrs)
            producers[c.outputs[0]] = c
            out.append(c)
            _replace_uses_in(out, graph, o, c.outputs[0])
    graph.nodes = out
    return eliminate_dead_code(graph)


def _replace_uses_in(done, graph, old, new):
    _replace_uses(graph, old, new)
    _replace_in_nodes(done, old, new)


def _scalar_constant(v, producers):
    """The number a value holds when it is a constant int/float or a 0-dim constant tensor."""
    p = producers.get(v)
    if p is None or p.kind != "prim::Constant":
        return None
    x = p.attrs.get("value")
    if isinstance(x, Tensor):
        return x.item() if x.dim() == 0 else None
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    return None


def _identity_rule(n, producers):
    """The input that node n returns unchanged, or None (Note [Pass safety])."""
    op = n.kind.split("::")[-1]
    ins = n.inputs
    if op in ("mul", "div") and len(ins) == 2 and _scalar_constant(ins[1], producers) == 1:
        return ins[0]
    if op == "mul" and len(ins) == 2 and _scalar_constant(ins[0], producers) == 1:
        return ins[1]
    if op in ("add", "sub") and len(ins) >= 2 and _scalar_constant(ins[1], producers) == 0:
        return ins[0]
    if op == "add" and len(ins) == 3 and _scalar_constant(ins[0], producers) == 0 and \
            _scalar_constant(ins[2], producers) == 1:
        return ins[1]
    if op == "pow" and n.overload == "Tensor_Scalar" and _scalar_constant(ins[1], producers) == 1:
        return ins[0]
    if op in ("t", "neg") and producers.get(ins[0]) is not None and \
            producers[ins[0]].kind == n.kind:
        return producers[ins[0]].inputs[0]
    if op == "transpose" and producers.get(ins[0]) is not None and \
            producers[ins[0]].kind == n.kind:
        inner = producers[ins[0]]
        dims = {_scalar_constant(ins[1], producers), _scalar_constant(ins[2], producers)}
        inner_dims = {_scalar_constant(inner.inputs[1], producers),
                      _scalar_constant(inner.inputs[2], producers)}
        if None not in dims and dims == inner_dims:
            return inner.inputs[0]
    return None


def peephole(graph):
    """Algebraic rules (torch._C._jit_pass_peephole): x * 1, 1 * x, x / 1, x + 0, x - 0,
    x ** 1, t(t(x)), transpose(transpose(x, a, b), a, b) and neg(neg(x)) become x when x has
    the result's type (Note [Pass safety])."""
    if any(_writes(n) for n in _ir.all_nodes(graph.nodes)):
        return graph
    changed = True
    while changed:
        changed = False
        producers = {o: n for n in graph.nodes for o in n.outputs}
        for n in graph.nodes:
            if n.kind.startswith("prim::") or len(n.outputs) != 1:
                continue
            src = _identity_rule(n, producers)
            if src is not None and src.type == n.outputs[0].type and src is not n.outputs[0] \
                    and _ir.tensor_type_fields(src.type) is not None:
                _replace_uses(graph, n.outputs[0], src)
                changed = True
        eliminate_dead_code(graph)
    return graph


def inline_parameters(graph, module):
    """Replaces every prim::GetAttr of a tensor by a constant holding (a detached copy of) the
    module's tensor, and of an int, float, bool or str attribute (`training` too) by a constant
    of its value, in the graph and in its blocks; removes the module GetAttrs left unused
    (freezing)."""
    graph.nodes = _inline_attrs(graph, graph.nodes, {graph.inputs[0]: module})
    return eliminate_dead_code(graph)


def _inline_attrs(graph, nodes, where):
    """nodes with their attribute reads made constants; where maps module values to modules."""
    out = []
    for n in nodes:
        for b in n.blocks:
            b.nodes = _inline_attrs(graph, b.nodes, where)
        if n.kind != "prim::GetAttr" or n.inputs[0] not in where:
            out.append(n)
            continue
        owner = where[n.inputs[0]]
        name = n.attrs["name"]
        if name in owner._modules:
            where[n.outputs[0]] = owner._modules[name]
            out.append(n)
            continue
        if name in owner._parameters or name in owner._buffers:
            t = owner._parameters.get(name, owner._buffers.get(name))
            key = _new_constant_key(graph)
            t = t.detach().clone()
            graph.constants[key] = t
            c = _ir.Node("prim::Constant", [], [_ir.Value(_ir.tensor_type(t))],
                         attrs={"value": t, "tensor": key})
        else:
            c = _ir.Node("prim::Constant", [], [_ir.Value(n.outputs[0].type)],
                         attrs={"value": getattr(owner, name)})
        out.append(c)
        _replace_uses_in(out, graph, n.outputs[0], c.outputs[0])
    return out


def fold_constant_ifs(graph):
    """Replaces each prim::If whose condition is a constant by the nodes of the block it runs,
    in the graph and in its blocks (part of torch's constant propagation)."""
    graph.nodes = _fold_ifs(graph, graph.nodes)
    return graph


def _fold_ifs(graph, nodes):
    out = []
    for n in nodes:
        for b in n.blocks:
            b.nodes = _fold_ifs(graph, b.nodes)
        c = n.inputs[0].node if n.kind == "prim::If" else None
        if c is None or c.kind != "prim::Constant" or not isinstance(c.attrs.get("value"), bool):
            out.append(n)
            continue
        taken = n.blocks[0 if c.attrs["value"] else 1]
        out.extend(taken.nodes)
        for o, v in zip(n.outputs, taken.outputs):
            _replace_uses_in(out, graph, o, v)
    return out


def copy_graph(graph):
    """A copy of graph whose nodes and values are new (constants are shared)."""
    new = _ir.Graph()
    new.constants = dict(graph.constants)
    vmap = {}
    for v in graph.inputs:
        vmap[v] = new.add_input(v.type, v.name)
    new.nodes = _copy_nodes(graph.nodes, vmap)
    new.outputs = [vmap[v] for v in graph.outputs]
    return new


def _copy_nodes(nodes, vmap):
    """Copies of nodes (and their blocks); vmap maps each old value to its copy and gains the
    values the nodes define.  A value not in vmap is read as it is."""
    out = []
    for n in nodes:
        outs = [_ir.Value(o.type, o.name) for o in n.outputs]
        for o, c in zip(n.outputs, outs):
            vmap[o] = c
        blocks = []
        for b in n.blocks:
            params = [_ir.Value(v.type, v.name) for v in b.inputs]
            vmap.update(zip(b.inputs, params))
            body = _copy_nodes(b.nodes, vmap)
            blocks.append(_ir.Block(params, body, [vmap.get(v, v) for v in b.outputs]))
        sub = copy_graph(n.subgraph) if n.subgraph is not None else None
        out.append(_ir.Node(n.kind, [vmap.get(v, v) for v in n.inputs], outs, n.overload,
                            dict(n.attrs), sub, blocks))
    return out


def inline_calls(graph, module):
    """Replaces every prim::CallMethod on a submodule of module (the graph's first input) by a
    copy of the nodes of that submodule's scripted forward (torch._C._jit_pass_inline)."""
    repl = {}
    graph.nodes = _inline_nodes(graph.nodes, {graph.inputs[0]: module}, repl)

    def final(v):
        while v in repl:
            v = repl[v]
        return v

    for n in _ir.all_nodes(graph.nodes):
        n.inputs = [final(v) for v in n.inputs]
        for b in n.blocks:
            b.outputs = [final(v) for v in b.outputs]
    graph.outputs = [final(v) for v in graph.outputs]
    return graph


def _inline_nodes(nodes, where, repl):
    """nodes with each prim::CallMethod replaced by its callee's nodes; where maps module
    values to modules, repl gains call output -> callee result."""
    out = []
    for n in nodes:
        if n.kind == "prim::GetAttr" and n.inputs[0] in where:
            child = where[n.inputs[0]]._modules.get(n.attrs["name"])
            if child is not None:
                where[n.outputs[0]] = child
        for b in n.blocks:
            b.nodes = _inline_nodes(b.nodes, where, repl)
        if n.kind != "prim::CallMethod":
            out.append(n)
            continue
        callee = where[n.inputs[0]].graph
        vmap = dict(zip(callee.inputs, n.inputs))
        out.extend(_inline_nodes(_copy_nodes(callee.nodes, vmap), where, repl))
        repl[n.outputs[0]] = vmap.get(callee.outputs[0], callee.outputs[0])
    return out


def optimize(graph):
    """The passes freeze runs: constant propagation (then the Ifs it decides are replaced by
    their blocks, and it runs again on what they held), peephole, CSE, DCE."""
    propagate_constants(graph)
    if any(n.kind == "prim::If" for n in graph.nodes):
        fold_constant_ifs(graph)
        propagate_constants(graph)
    peephole(graph)
    eliminate_common_subexpression(graph)
    eliminate_dead_code(graph)
    return graph


_jit_pass_dce = eliminate_dead_code
_jit_pass_cse = eliminate_common_subexpression
_jit_pass_constant_propagation = propagate_constants
_jit_pass_peephole = peephole

__all__ = ["eliminate_dead_code", "eliminate_common_subexpression", "propagate_constants",
           "peephole", "inline_parameters", "inline_calls", "copy_graph", "fold_constant_ifs",
           "optimize"]


# ---- fusion ---------------------------------------------------------------------------------

_PROGRAM_OPS = {name: i for i, name in enumerate(_C._jit_pointwise_program_ops())}
_FUSIBLE = {("aten::add", "Tensor"), ("aten::add", "Scalar"), ("aten::sub", "Tensor"),
            ("aten::sub", "Scalar"), ("aten::mul", "Tensor"), ("aten::mul", "Scalar"),
            ("aten::div", "Tensor"), ("aten::div", "Scalar"), ("aten::maximum", ""),
            ("aten::minimum", ""), ("aten::neg", ""), ("aten::abs", ""), ("aten::exp", ""),
            ("aten::log", ""), ("aten::sqrt", ""), ("aten::rsqrt", ""), ("aten::sin", ""),
            ("aten::cos", ""), ("aten::tanh", ""), ("aten::sigmoid", ""), ("aten::relu", ""),
            ("aten::reciprocal", ""), ("aten::square", "")}


def _fusible(n, producers):
    """Whether n can be an instruction of a pointwise program: a listed operator on float
    tensors of its output's sizes and dtype, or on scalar constants.  A scripted graph's
    `Tensor` has no sizes or dtype: its nodes fuse too, since a program runs only on inputs of
    one float dtype and one shape and the group's subgraph runs on any others
    (Note [Pointwise programs])."""
    if (n.kind, n.overload) not in _FUSIBLE or len(n.outputs) != 1:
        return False
    out = _ir.tensor_type_fields(n.outputs[0].type)
    if out is None and n.outputs[0].type != "Tensor":
        return False
    if out is not None and out[0] not in ("float32", "float64"):
        return False
    tensors = n.inputs[:2] if n.kind.split("::")[1] in ("add", "sub", "mul", "div", "maximum",
                                                        "minimum") else n.inputs[:1]
    for v in tensors:
        if _scalar_constant(v, producers) is not None:
            continue
        fields = _ir.tensor_type_fields(v.type)
        if out is None:
            if not _ir.is_tensor_type(v.type):
                return False
        elif fields is None or fields[:2] != out[:2]:
            return False
    if n.kind.split("::")[1] in ("add", "sub") and _scalar_constant(n.inputs[2],
                                                                    producers) is None:
        return False
    return True


_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")


def _program(chain, producers):
    """(instructions, scalars, external tensor inputs) of a chain of fusible nodes
    (Note [Pointwise programs]): operands are named ("in", i), ("sc", j) or ("ins", k) while
    the chain is read, and numbered as registers at the end."""
    inputs, scalars, instrs, reg = [], [], [], {}

    def operand(v):
        if v in reg:
            return reg[v]
        c = _scalar_constant(v, producers)
        if c is not None:
            scalars.append(float(c))
            return ("sc", len(scalars) - 1)
        inputs.append(v)
        reg[v] = ("in", len(inputs) - 1)
        return reg[v]

    for n in chain:
        op = n.kind.split("::")[1]
        a = operand(n.inputs[0])
        if op not in _BINARY:
            instrs.append((_PROGRAM_OPS[op], a, a))
        else:
            b = operand(n.inputs[1])
            if op in ("add", "sub") and _scalar_constant(n.inputs[2], producers) != 1:
                scalars.append(float(_scalar_constant(n.inputs[2], producers)))
                instrs.append((_PROGRAM_OPS["mul"], b, ("sc", len(scalars) - 1)))
                b = ("ins", len(instrs) - 1)
            instrs.append((_PROGRAM_OPS[op], a, b))
        reg[n.outputs[0]] = ("ins", len(instrs) - 1)
    base = {"in": 0, "sc": len(inputs), "ins": len(inputs) + len(scalars)}
    program = tuple((op, base[a[0]] + a[1], base[b[0]] + b[1]) for op, a, b in instrs)
    return program, scalars, inputs


def fuse_pointwise(graph):
    """Replaces each chain of two or more fusible elementwise nodes whose intermediate values
    nothing else uses by one prim::FusionGroup node: its subgraph holds the chain, and it runs
    as one pass over the data (Note [Pointwise programs] in src/aten/pointwise_program.h)."""
    producers = {o: n for n in graph.nodes for o in n.outputs}
    uses = graph.uses()
    out, group = [], []

    def close():
        chain = list(group)
        group.clear()
        inside = {}
        for n in chain:
            for v in n.inputs:
                inside[v] = inside.get(v, 0) + 1
        escapes = any(uses.get(o, 0) > inside.get(o, 0) for n in chain[:-1] for o in n.outputs)
        if len(chain) < 2 or escapes:
            out.extend(chain)
        else:
            out.append(_fusion_node(chain, producers))

    for n in graph.nodes:
        if _fusible(n, producers):
            group.append(n)
        elif n.kind == "prim::Constant":
            out.append(n)   # constants have no inputs: moving them before the chain is safe
        else:
            if group:
                close()
            out.append(n)
    if group:
        close()
    graph.nodes = out
    return eliminate_dead_code(graph)


def _fusion_node(chain, producers):
    instrs, scalars, inputs = _program(chain, producers)
    sub = _ir.Graph()
    vmap = {v: sub.add_input(v.type, None) for v in inputs}
    for n in chain:
        ins = []
        for v in n.inputs:
            if v not in vmap:
                p = producers[v]
                c = sub.create("prim::Constant", [], [v.type], attrs=dict(p.attrs))
                if "tensor" in p.attrs:
                    sub.constants[p.attrs["tensor"]] = p.attrs["value"]
                vmap[v] = c.outputs[0]
            ins.append(vmap[v])
        copy = sub.create(n.kind, ins, [o.type for o in n.outputs], overload=n.overload)
        for o, c in zip(n.outputs, copy.outputs):
            vmap[o] = c
    sub.outputs = [vmap[chain[-1].outputs[0]]]
    node = _ir.Node("prim::FusionGroup", inputs, [chain[-1].outputs[0]],
                    attrs={"program": (tuple(instrs), tuple(scalars))}, subgraph=sub)
    return node


def unfuse(graph):
    """The graph with every prim::FusionGroup replaced by the nodes of its subgraph."""
    out = []
    for n in graph.nodes:
        if n.kind != "prim::FusionGroup":
            out.append(n)
            continue
        sub = copy_graph(n.subgraph)
        vmap = dict(zip(sub.inputs, n.inputs))
        for m in sub.nodes:
            m.inputs = [vmap.get(v, v) for v in m.inputs]
            out.append(m)
        result = sub.outputs[0]
        result_node = result.node
        result_node.outputs = [n.outputs[0] if o is result else o for o in result_node.outputs]
        n.outputs[0].node = result_node
        graph.constants.update(sub.constants)
    graph.nodes = out
    return graph
