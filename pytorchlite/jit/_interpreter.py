"""Runs a Graph (torch/csrc/jit/runtime/interpreter.cpp): the graph is compiled once into a
list of steps over a frame of slots; an aten node calls its operator through
`_C._op(name, overload)`, so autograd, autocast and every dispatch key work as in eager
mode.  Nothing is generated as Python source.  A block of prim::If or prim::Loop runs as an
Interpreter of its own, whose inputs are the values it reads from outside and its block
inputs (Note [Blocks] in _ir.py).

Note [Which graphs run in C]
Every graph the C executor can take (Note [Graph programs] in src/jit/graph_exec.h) runs
there: `lower` turns it into a `_C._JitProgram`, and `Interpreter.run` calls that program.
It takes straight-line graphs of aten operators, prim::Constant, prim::GetAttr of a module's
parameters, buffers and submodules, prim::ListConstruct of ints, floats or tensors,
prim::ListUnpack, prim::FusionGroup, and a prim::TupleConstruct that is the graph's return.
A module graph is lowered on its first run, for the module it runs on, and again when that
module or one of the attributes it read was replaced (the program's guards).  Anything else
(a node with blocks, another prim:: kind, a list of another type, a plain Python attribute)
keeps the Python steps below, which run every graph, and a block's own Interpreter lowers
the block's straight-line graph to C on its own."""
from operator import itemgetter

from .. import _C
from . import _ir
from ._builtins import raise_exception

_LIST, _TUPLE, _FUSED, _DICT = range(4)


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


def _op_step(fn, ins, kw, out):
    """env -> None: calls fn on the slots ins (positional) and kw (keyword) into out."""
    get = itemgetter(*ins) if ins else (lambda env: ())
    if len(ins) == 1:
        def args(env):
            return (get(env),)
    else:
        args = get
    if kw:
        names = tuple(k for k, _ in kw)
        get_kw = itemgetter(*(i for _, i in kw))

        def call(env):
            values = get_kw(env)
            return fn(*args(env), **dict(zip(names, values if len(names) > 1 else (values,))))
    else:
        def call(env):
            return fn(*args(env))
    if type(out) is int:
        def step(env):
            env[out] = call(env)
    elif not out:   # an operator that returns nothing (aten::_set_item)
        step = call
    else:
        def step(env):
            for o, x in zip(out, call(env)):
                env[o] = x
    return step


def _unpack_step(src, out):
    def step(env):
        items = env[src]
        if len(items) != len(out):
            raise RuntimeError(f"prim::ListUnpack: the graph expects {len(out)} items, the "
                               f"list has {len(items)}")
        for o, x in zip(out, items):
            env[o] = x
    return step


def _getattr_step(name, src, out, is_module):
    """prim::GetAttr: a submodule from _modules, a tensor from _parameters or _buffers, read
    straight from the tables (_get_attr for anything else)."""
    if is_module:
        def step(env):
            sub = env[src].__dict__.get("_modules", {}).get(name)
            env[out] = sub if sub is not None else _get_attr(env[src], name)
    else:
        def step(env):
            d = env[src].__dict__
            t = d["_parameters"].get(name) if "_parameters" in d else None
            env[out] = t if t is not None else _get_attr(env[src], name)
    return step


def _simple_step(code, fn, ins, out):
    if code == _LIST:
        def step(env):
            env[out] = [env[i] for i in ins]
    elif code == _TUPLE:
        def step(env):
            env[out] = tuple(env[i] for i in ins)
    elif code == _DICT:   # keys and values alternate
        def step(env):
            env[out] = {env[k]: env[v] for k, v in zip(ins[::2], ins[1::2])}
    else:
        def step(env):
            env[out] = fn(*[env[i] for i in ins])
    return step


def _block_interpreter(block):
    """(Interpreter of block, the outer values it reads); the interpreter takes those values
    then the block's inputs and returns its outputs as a tuple."""
    free = _ir.free_values(block)
    graph = _ir.Graph()
    graph.inputs = free + block.inputs
    graph.nodes = block.nodes
    graph.outputs = block.outputs
    return Interpreter(graph), free


def _results(value, n):
    return value if n != 1 else (value,)


def _if_step(cond, node, slots, out):
    """prim::If: runs the block cond selects and writes its outputs to out."""
    branches = []
    for b in node.blocks:
        interp, free = _block_interpreter(b)
        branches.append((interp, tuple(slots[v] for v in free)))
    (then_i, then_free), (else_i, else_free) = branches
    n = len(out)

    def step(env):
        interp, free = (then_i, then_free) if env[cond] else (else_i, else_free)
        for o, x in zip(out, _results(interp.run(*[env[i] for i in free]), n)):
            env[o] = x
    return step


def _loop_step(ins, node, slots, out):
    """prim::Loop: runs the body while the iteration number is below the trip count and the
    condition holds; the body returns the next condition and carried values."""
    body, free = _block_interpreter(node.blocks[0])
    free = tuple(slots[v] for v in free)
    trip, cond, carried = ins[0], ins[1], ins[2:]
    n = len(carried) + 1

    def step(env):
        outer = [env[i] for i in free]
        values = [env[i] for i in carried]
        limit, go, i = env[trip], env[cond], 0
        while go and i < limit:
            go, *values = _results(body.run(*outer, i, *values), n)
            i += 1
        for o, x in zip(out, values):
            env[o] = x
    return step


def _raise_step(ins, source):
    def step(env):
        raise_exception(*[env[i] for i in ins], source=source)
    return step


def _call_method_step(name, ins, out):
    def step(env):
        env[out] = getattr(env[ins[0]], name)(*[env[i] for i in ins[1:]])
    return step


def _is_default(v, default):
    """Whether the input v is a constant equal to its argument's schema default (the call can
    leave it out: the operator fills it in)."""
    node = v.node
    return default is not _ir.NO_DEFAULT and node is not None and \
        node.kind == "prim::Constant" and "tensor" not in node.attrs and \
        _ir.same_value(node.attrs.get("value"), default)


def _getattr_object(obj, name, is_module):
    """(table, value) of prim::GetAttr `name` on obj: the table of the module it sits in, in
    the order the Python steps look (a plain attribute cannot be guarded: RuntimeError)."""
    d = obj.__dict__
    order = ("_modules", "_parameters", "_buffers") if is_module else \
        ("_parameters", "_buffers", "_modules")
    for key in order:
        table = d.get(key)
        if table is not None and name in table:
            return table, table[name]
    raise RuntimeError(f"jit executor: cannot lower prim::GetAttr '{name}', a plain Python "
                       f"attribute of {type(obj).__name__}")


def _returns_value(ty):
    return _ir.is_tensor_type(ty) or ty in ("int", "float", "bool", "NoneType")


def lower(graph, module=None):
    """The graph as a `_C._JitProgram` (Note [Which graphs run in C]); module is the object a
    module graph's first input stands for.  Raises RuntimeError naming what cannot be
    lowered."""
    slots, objects = {}, {}
    for v in graph.inputs:
        slots[v] = len(slots)
    for n in graph.nodes:
        for o in n.outputs:
            slots[o] = len(slots)
    if graph.inputs and graph.inputs[0].type.startswith("__torch__."):
        if module is None:
            raise RuntimeError("jit executor: a module graph is lowered for its module")
        objects[graph.inputs[0]] = module
    returns = list(graph.outputs)
    tuple_output = len(returns) != 1
    last = returns[0].node if len(returns) == 1 else None
    if last is not None and last.kind == "prim::TupleConstruct" and \
            graph.uses().get(returns[0]) == 1:
        returns, tuple_output = list(last.inputs), True
    else:
        last = None
    constants, steps, guards = [], [], []
    for n in graph.nodes:
        if n is last:
            continue
        ins = [slots[v] for v in n.inputs]
        outs = [slots[o] for o in n.outputs]
        if getattr(n, "blocks", None) or (n.subgraph is not None and
                                          n.kind != "prim::FusionGroup"):
            raise RuntimeError(f"jit executor: cannot lower {n.kind}, a node with blocks")
        if any(v in objects for v in n.inputs) and n.kind != "prim::GetAttr":
            raise RuntimeError(f"jit executor: cannot lower {n.kind} on a module")
        if n.kind == "prim::Constant":
            constants.append((outs[0], n.outputs[0].type, n.attrs.get("value")))
        elif n.kind == "prim::GetAttr":
            ty = n.outputs[0].type
            if n.inputs[0] not in objects:
                raise RuntimeError("jit executor: cannot lower prim::GetAttr of a value that "
                                   "is not a module")
            table, value = _getattr_object(objects[n.inputs[0]], n.attrs["name"],
                                           ty.startswith("__torch__."))
            guards.append((table, n.attrs["name"], value))
            if ty.startswith("__torch__."):
                objects[n.outputs[0]] = value
            else:
                constants.append((outs[0], ty, value))
        elif n.kind == "prim::ListConstruct":
            steps.append(("list", n.outputs[0].type, ins, outs[0]))
        elif n.kind == "prim::ListUnpack":
            steps.append(("unpack", ins[0], outs))
        elif n.kind == "prim::FusionGroup":
            program, scalars = n.attrs["program"]
            steps.append(("fused", program, scalars, lower(n.subgraph), ins, outs[0]))
        elif n.kind.startswith("prim::"):
            raise RuntimeError(f"jit executor: cannot lower {n.kind}")
        else:
            steps.append(("op", n.kind, n.overload, ins, outs))
    for v in returns:
        if v in objects or not _returns_value(v.type):
            raise RuntimeError(f"jit executor: cannot lower a graph that returns {v.type}")
    try:
        return _C._jit_program(len(slots), len(graph.inputs), constants, steps,
                               [slots[v] for v in returns], tuple_output, module,
                               tuple(guards))
    except (TypeError, ValueError, OverflowError) as e:   # a constant of an unexpected kind
        raise RuntimeError(f"jit executor: cannot lower the graph: {e}") from e


def lower_file(path):
    """The program of a file written by jit.save, lowered for the module it holds (the C API's
    ptl_api_jit_load)."""
    from ._serialization import load
    from ._trace import TracedModule
    m = load(path)
    return lower(m.graph, m if isinstance(m, TracedModule) else None)


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
                self.steps.append(_getattr_step(n.attrs["name"], ins[0], outs[0],
                                                n.outputs[0].type.startswith("__torch__.")))
            elif n.kind == "prim::ListConstruct":
                self.steps.append(_simple_step(_LIST, None, ins, outs[0]))
            elif n.kind == "prim::TupleConstruct":
                self.steps.append(_simple_step(_TUPLE, None, ins, outs[0]))
            elif n.kind == "prim::DictConstruct":
                self.steps.append(_simple_step(_DICT, None, ins, outs[0]))
            elif n.kind == "prim::ListUnpack":
                self.steps.append(_unpack_step(ins[0], outs))
            elif n.kind == "prim::If":
                self.steps.append(_if_step(ins[0], n, slots, outs))
            elif n.kind == "prim::Loop":
                self.steps.append(_loop_step(ins, n, slots, outs))
            elif n.kind in ("prim::TupleUnpack", "prim::unchecked_cast"):
                self.steps.append(_unpack_step(ins[0], outs) if n.kind == "prim::TupleUnpack"
                                  else _simple_step(_FUSED, lambda x: x, ins, outs[0]))
            elif n.kind == "prim::TupleIndex":
                self.steps.append(_simple_step(_FUSED, lambda t, i: t[i], ins, outs[0]))
            elif n.kind == "prim::CallMethod":
                self.steps.append(_call_method_step(n.attrs["name"], ins, outs[0]))
            elif n.kind == "prim::FusionGroup":
                self.steps.append(_simple_step(_FUSED, _fused_runner(n), ins, outs[0]))
            elif n.kind == "prim::RaiseException":
                self.steps.append(_raise_step(ins, n.attrs.get("source")))
            elif n.kind == "prim::Uninitialized":
                pass   # the slot keeps None: only a branch that raised gives this value
            else:
                s = _ir.schema(n.kind, n.overload)
                defaulted = [_is_default(v, d) for v, d in zip(n.inputs, s.defaults)]
                pos = [i for i, a in zip(ins, s.args) if not a[2]]
                npos = len(pos)
                while npos and defaulted[npos - 1]:   # trailing defaults are left out
                    npos -= 1
                kw = tuple((a[0], i) for i, a, d in zip(ins, s.args, defaulted)
                           if a[2] and not d)
                self.steps.append(_op_step(s.fn, tuple(pos[:npos]), kw,
                                           outs if len(outs) != 1 else outs[0]))
        self.outputs = tuple(slots[v] for v in graph.outputs)
        self.program = None
        self._module_graph = bool(graph.inputs) and graph.inputs[0].type.startswith("__torch__.")
        self._lowerable = True
        if not self._module_graph:
            self._lower(None)

    def _lower(self, module):
        try:
            self.program = lower(self.graph, module)
        except RuntimeError:
            self.program = None
            self._lowerable = False

    def __getstate__(self):
        state = self.__dict__.copy()
        state["program"] = None   # a copy lowers the graph again on its first run
        return state

    def run(self, *args):
        program = self.program
        if program is not None:
            out = program(*args)
            if out is not NotImplemented:
                return out
        if self._lowerable:
            # first run of a module graph, a new module, or one of its attributes replaced
            self._lower(args[0] if self._module_graph and args else None)
            if self.program is not None:
                return self.program(*args)
        return self.run_steps(*args)

    def run_steps(self, *args):
        """Runs the graph with the Python steps."""
        env = self.template[:]
        env[:self.ninputs] = args
        for step in self.steps:
            step(env)
        if len(self.outputs) == 1:
            return env[self.outputs[0]]
        return tuple(env[i] for i in self.outputs)
