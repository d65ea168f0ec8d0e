"""Runs a Graph (torch/csrc/jit/runtime/interpreter.cpp): the graph is compiled once into a
list of steps over a frame of slots; an aten node calls its operator through
`_C._op(name, overload)`, so autograd, autocast and every dispatch key work as in eager
mode.  Nothing is generated as Python source."""
from .. import _C
from . import _ir

_GETATTR, _LIST, _TUPLE, _UNPACK, _OP, _FUSED = range(6)


def _get_attr(obj, name):
    """A submodule, parameter or buffer of a module object (prim::GetAttr)."""
    d = obj.__dict__
    for table in ("_parameters", "_buffers", "_modules"):
        member = d.get(table)
        if member is not None and name in member:
            return member[name]
    return getattr(obj, name)


def _fused_runner(node):
    """Runs a prim::FusionGroup: its pointwise program in one pass over the data, or its
    subgraph node by node where the program cannot run (inputs that need autograd, are not
    contiguous float32/float64 tensors of one shape)."""
    program, scalars = node.attrs["program"]
    sub = Interpreter(node.subgraph)

    def run(*tensors):
        if not (_C.is_grad_enabled() and any(t.requires_grad for t in tensors)):
            out = _C._jit_run_pointwise_program(program, tensors, scalars)
            if out is not None:
                return out
        return sub.run(*tensors)
    return run


class Interpreter:
    def __init__(self, graph):
        self.graph = graph
        slots = {}
        for v in graph.inputs:
            slots[v] = len(slots)
        for n in graph.nodes:
            for o in n.outputs:
                slots[o] = len(slots)
        self.nslots = len(slots)
        self.ninputs = len(graph.inputs)
        self.template = [None] * self.nslots
        self.steps = []
        for n in graph.nodes:
            outs = tuple(slots[o] for o in n.outputs)
            ins = tuple(slots[v] for v in n.inputs)
            if n.kind == "prim::Constant":
                self.template[outs[0]] = n.attrs.get("value")
            elif n.kind == "prim::GetAttr":
                self.steps.append((_GETATTR, n.attrs["name"], ins[0], (), outs[0]))
            elif n.kind == "prim::ListConstruct":
                self.steps.append((_LIST, None, ins, (), outs[0]))
            elif n.kind == "prim::TupleConstruct":
                self.steps.append((_TUPLE, None, ins, (), outs[0]))
            elif n.kind == "prim::ListUnpack":
                self.steps.append((_UNPACK, None, ins[0], (), outs))
            elif n.kind == "prim::FusionGroup":
                self.steps.append((_FUSED, _fused_runner(n), ins, (), outs[0]))
            else:
                s = _ir.schema(n.kind, n.overload)
                pos = tuple(i for i, a in zip(ins, s.args) if not a[2])
                kw = tuple((a[0], i) for i, a in zip(ins, s.args) if a[2])
                self.steps.append((_OP, s.fn, pos, kw, outs if len(outs) != 1 else outs[0]))
        self.outputs = tuple(slots[v] for v in graph.outputs)

    def run(self, *args):
        env = self.template[:]
        env[:self.ninputs] = args
        for code, fn, ins, kw, out in self.steps:
            if code == _OP:
                if kw:
                    r = fn(*[env[i] for i in ins], **{k: env[i] for k, i in kw})
                else:
                    r = fn(*[env[i] for i in ins])
                if type(out) is int:
                    env[out] = r
                else:
                    for o, x in zip(out, r):
                        env[o] = x
            elif code == _GETATTR:
                env[out] = _get_attr(env[ins], fn)
            elif code == _LIST:
                env[out] = [env[i] for i in ins]
            elif code == _TUPLE:
                env[out] = tuple(env[i] for i in ins)
            elif code == _UNPACK:
                items = env[ins]
                if len(items) != len(out):
                    raise RuntimeError(f"prim::ListUnpack: the graph expects {len(out)} "
                                       f"items, the list has {len(items)}")
                for o, x in zip(out, items):
                    env[o] = x
            else:
                env[out] = fn(*[env[i] for i in ins])
        if len(self.outputs) == 1:
            return env[self.outputs[0]]
        return tuple(env[i] for i in self.outputs)
