"""jit.trace (torch/jit/_trace.py): runs a function or module once with the Tracer dispatch
key included and records every operator call into a Graph (Note [Tracing] in
src/python/tracer.c).

Note [Trace guards]
A trace is only right for inputs like the ones it saw.  Each traced callable keeps the
assumptions of its trace: the structure of the inputs (how many, which are tensors, how lists
and tuples nest), each tensor's sizes, dtype, device and requires_grad, and the value of every
Python scalar or string (baked into the graph as a constant).  A call whose inputs break one
of them never replays the graph: by default the function is traced again for those inputs
(traces live in a bounded LRU cache whose hits and misses `cache_info()` reads); with
`on_guard_failure="raise"` the call raises a RuntimeError that names the broken assumption.
Building the key (Python tuples of sizes, dtypes and devices, then hashing them) cost 2.7 us of
a 4.7 us call; a call whose inputs are all tensors first compares one bytes object from C
(`_C._jit_guard_signature`: dim, sizes, dtype, device, requires_grad per tensor) with the
last call's, and only when they differ builds the key.
"""
import collections
import difflib
import inspect
import re
import warnings

from .. import _C
from .._tensor import Tensor
from ..nn.modules.module import Module
from . import _annotations, _ir
from ._interpreter import Interpreter


class TracerWarning(Warning):
    """A trace may not generalize: a tensor became a Python value, or outputs differ."""


class TracingCheckError(Exception):
    def __init__(self, graph_diff_error, tensor_compare_error, extra_msg=None):
        self.message = "Tracing failed sanity checks!\n"
        if extra_msg is not None:
            self.message += extra_msg + "\n"
        if graph_diff_error is not None:
            self.message += "ERROR: Graphs differed across invocations!\n"
            self.message += _indent(graph_diff_error) + "\n"
        if tensor_compare_error is not None:
            self.message += ("ERROR: Tensor-valued Constant nodes differed in value across "
                             "invocations. This often indicates that the tracer has "
                             "encountered untraceable code.\n")
            self.message += _indent(tensor_compare_error) + "\n"
        super().__init__(self.message)


def _indent(s):
    return "\n".join("\t" + line for line in s.splitlines())


CacheInfo = collections.namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])


def _flatten(obj, leaves):
    """The structure of obj with its tensors replaced by their index in leaves."""
    if isinstance(obj, Tensor):
        leaves.append(obj)
        return ("T", len(leaves) - 1)
    if isinstance(obj, (tuple, list)):
        return (type(obj).__name__, tuple(_flatten(o, leaves) for o in obj))
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return ("V", type(obj).__name__, obj)
    raise RuntimeError(f"Type '{type(obj).__name__}' cannot be traced. Only Tensors and "
                       "(possibly nested) Lists, Tuples of them and Python scalars are "
                       "supported as inputs")


def _guard_key(structure, leaves):
    return structure, tuple((t.shape, t.dtype, t.device, t.requires_grad) for t in leaves)


_TENSOR_TUPLES = [("tuple", tuple(("T", i) for i in range(n))) for n in range(9)]


def _exact_key(inputs):
    if len(inputs) < len(_TENSOR_TUPLES) and all(isinstance(x, Tensor) for x in inputs):
        return _guard_key(_TENSOR_TUPLES[len(inputs)], inputs), inputs
    leaves = []
    return _guard_key(_flatten(tuple(inputs), leaves), leaves), leaves


def _describe_mismatch(expected, got, fields):
    """Names the first assumption of a trace that `got` breaks."""
    (es, et), (gs, gt) = expected, got
    if es != gs:
        return (f"the trace assumed inputs structured as {_show(es)}, but got {_show(gs)}")
    for i, (a, b) in enumerate(zip(et, gt)):
        for name, x, y in zip(fields, a, b):
            if x != y:
                return (f"the trace assumed tensor input {i} has {name} "
                        f"{list(x) if name == 'sizes' else x}, but got "
                        f"{list(y) if name == 'sizes' else y}")
    return "the inputs differ from the trace's"


def _show(s):
    if s[0] == "T":
        return "Tensor"
    if s[0] == "V":
        return repr(s[2])
    inner = ", ".join(_show(x) for x in s[1])
    return f"({inner})" if s[0] == "tuple" else f"[{inner}]"


class _Recorder:
    """record(name, overload, args, returns), called by the Tracer fallback."""

    def __init__(self, graph, params, self_value, module_types):
        self.graph = graph
        self.module_types = module_types
        self.values = {}      # id(tensor) -> Value
        self.keep = []        # every tensor seen, so that ids stay unique
        self.params = params  # id(tensor) -> "fc1.weight"
        self.self_value = self_value
        self.modules = {"": self_value}

    def bind(self, t, value):
        self.values[id(t)] = value
        self.keep.append(t)

    def _module_value(self, path):
        v = self.modules.get(path)
        if v is None:
            parent, _, name = path.rpartition(".")
            pv = self._module_value(parent)
            v = self.graph.create("prim::GetAttr", [pv], [self.module_types[path]],
                                  attrs={"name": name}).outputs[0]
            v.name = name
            self.modules[path] = v
        return v

    def tensor(self, t):
        v = self.values.get(id(t))
        if v is not None:
            return v
        path = self.params.get(id(t))
        if path is not None:
            parent, _, name = path.rpartition(".")
            v = self.graph.create("prim::GetAttr", [self._module_value(parent)], ["Tensor"],
                                  attrs={"name": name}).outputs[0]
            v.name = name
        else:
            v = self.graph.tensor_constant(t.detach())
        self.bind(t, v)
        return v

    def argument(self, ty, x):
        g = self.graph
        base = ty.rstrip("?")
        if x is None:
            return g.constant(None, "NoneType")
        if base == "Tensor":
            return self.tensor(x)
        if base in ("Tensor[]", "Tensor?[]"):
            items = [self.tensor(t) if t is not None else g.constant(None, "NoneType")
                     for t in x]
            return g.create("prim::ListConstruct", items, [base]).outputs[0]
        if isinstance(x, list):
            elem = "float" if base == "float[]" else "int"
            items = [g.constant(e, elem) for e in x]
            return g.create("prim::ListConstruct", items, [elem + "[]"]).outputs[0]
        if base == "ScalarType":
            return g.constant(x, "ScalarType")
        if base == "Device":
            return g.constant(str(x), "Device")
        if base in ("Layout", "MemoryFormat", "str"):
            return g.constant(x, base)
        return g.constant(x, "bool" if isinstance(x, bool) else
                          "float" if isinstance(x, float) else
                          "complex" if isinstance(x, complex) else "int")

    def __call__(self, name, overload, args, rets):
        s = _ir.schema(name, overload)
        ins = [self.argument(a[1], x) for a, x in zip(s.args, args)]
        types = []
        for r in rets:
            if isinstance(r, Tensor):
                types.append(_ir.tensor_type(r))
            elif isinstance(r, list):
                types.append("Tensor[]")
            else:
                types.append("bool" if isinstance(r, bool) else type(r).__name__)
        node = self.graph.create(name, ins, types, overload=overload)
        for r, v in zip(rets, node.outputs):
            if isinstance(r, Tensor):
                self.bind(r, v)
            elif isinstance(r, list):
                items = self.graph.create("prim::ListUnpack", [v],
                                          [_ir.tensor_type(t) for t in r]).outputs
                for t, item in zip(r, items):
                    self.bind(t, item)

    def output(self, obj):
        if isinstance(obj, Tensor):
            return self.tensor(obj)
        if isinstance(obj, (tuple, list)):
            items = [self.output(o) for o in obj]
            ty = "(" + ", ".join(v.type for v in items) + ")"
            return self.graph.create("prim::TupleConstruct", items, [ty]).outputs[0]
        raise RuntimeError(f"Only tensors, lists and tuples of tensors can be output from "
                           f"traced functions, got {type(obj).__name__}")


def _module_type(cls):
    mod = cls.__module__
    return "__torch__." + (cls.__qualname__ if mod == "__main__" else
                           f"{mod}.{cls.__qualname__}")


def _arg_names(fn, n):
    try:
        params = [p.name for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return params[:n] + [None] * (n - len(params[:n]))


def _record(fn, inputs, module):
    """Traces fn(*inputs) into (graph, guard key, outputs structure)."""
    graph = _ir.Graph()
    self_value = None
    params = {}
    module_types = {}
    if module is not None:
        module_types = {p: _module_type(type(m)) for p, m in module.named_modules()}
        self_value = graph.add_input(_module_type(type(module)), "self.1")
        for name, t in list(module.named_parameters()) + list(module.named_buffers()):
            params[id(t)] = name
    rec = _Recorder(graph, params, self_value, module_types)
    leaves = []
    structure = _flatten(tuple(inputs), leaves)
    names = _arg_names(fn, len(inputs))
    top = {i: names[i] for i in range(len(inputs))}
    for i, t in enumerate(leaves):
        pos = next((k for k, x in enumerate(inputs) if x is t), None)
        name = top.get(pos) if pos is not None else None
        rec.bind(t, graph.add_input(_ir.tensor_type(t), name))
    _C._jit_tracer_start(rec, TracerWarning)
    _annotations._tracing(1)
    try:
        out = fn(*inputs)
    finally:
        _annotations._tracing(-1)
        _C._jit_tracer_stop()
    graph.outputs = [rec.output(out)]
    return graph, _guard_key(structure, leaves)


class _Traced:
    """What trace() returns a call of: a graph, its interpreter and the trace's guard key."""
    __slots__ = ("graph", "interp", "key")

    def __init__(self, graph, key):
        self.graph = graph
        self.interp = Interpreter(graph)
        self.key = key


class _GuardedCache:
    """The traces of one callable, keyed by their guard key (Note [Trace guards])."""

    def __init__(self, maxsize, on_guard_failure):
        if on_guard_failure not in ("retrace", "raise"):
            raise ValueError("on_guard_failure must be 'retrace' or 'raise', got "
                             f"{on_guard_failure!r}")
        self.maxsize = maxsize
        self.on_guard_failure = on_guard_failure
        self.entries = collections.OrderedDict()
        self.hits = 0
        self.misses = 0
        self.first = None
        self.key_of = _exact_key
        self.fields = ("sizes", "dtype", "device", "requires_grad")
        # the last lookup's trace and, when its inputs were all tensors, their
        # _C._jit_guard_signature: a call like the last one skips building the guard key
        # (both key_of functions are functions of what the signature holds)
        self.last = None
        self.last_signature = None

    def add(self, traced):
        if self.first is None:
            self.first = traced
        self.entries[traced.key] = traced
        while len(self.entries) > self.maxsize:
            self.entries.popitem(last=False)

    def lookup(self, inputs, retrace):
        signature = _C._jit_guard_signature(inputs)
        if signature is not None and signature == self.last_signature:
            self.hits += 1   # the last lookup's trace is already the most recent entry
            return self.last, inputs
        traced, leaves = self._lookup_key(inputs, retrace)
        self.last, self.last_signature = traced, signature
        return traced, leaves

    def _lookup_key(self, inputs, retrace):
        key, leaves = self.key_of(inputs)
        traced = self.entries.get(key)
        if traced is not None:
            self.hits += 1
            self.entries.move_to_end(key)
            return traced, leaves
        self.misses += 1
        traced = None
        if self.on_guard_failure == "retrace" and retrace is not None:
            traced = retrace(inputs)   # None: there is no Python code to trace again
        if traced is None:
            raise RuntimeError("a traced function was called with inputs its trace did not "
                               "assume: " + _describe_mismatch(self.first.key, key,
                                                               self.fields))
        self.add(traced)
        return traced, leaves

    def info(self):
        return CacheInfo(self.hits, self.misses, self.maxsize, len(self.entries))


def _compare_outputs(traced_out, eager_out, tolerance, what):
    a, b = [], []
    _flatten(traced_out, a)
    _flatten(eager_out, b)
    ok = True
    for i, (x, y) in enumerate(zip(a, b)):
        # complex outputs compare as complex128 (double() would drop their imaginary parts)
        wide = _C.complex128 if x.is_complex() or y.is_complex() else _C.float64
        x, y = x.detach().to(wide), y.detach().to(wide)
        diff = None
        if x.shape != y.shape:
            diff = f"shapes differ: {tuple(x.shape)} vs {tuple(y.shape)}"
        elif x.numel() and not bool(((x - y).abs() <= 1e-5 + tolerance * y.abs()).all()):
            diff = f"greatest absolute difference: {float((x - y).abs().max())}"
        if diff is not None:
            warnings.warn(f"Output nr {i + 1}. of the traced function does not match the "
                          f"corresponding output of the {what}. Detailed error:\n{diff}",
                          TracerWarning, stacklevel=4)
            ok = False
    return ok


def _graph_shape(graph):
    """The graph's text without sizes and tensor constants' values, to compare the structure
    of two traces."""
    text = re.sub(r"\[value=\{[^}]*\}\]", "[value=<Tensor>]", _ir.print_graph(graph, False))
    return re.sub(r"\b([A-Z][A-Za-z0-9]*)\([^)]*\)", r"\1", text)


def _constants_differ(a, b):
    """The first tensor constant whose value differs between two traces, as text, or None."""
    for key, x in a.constants.items():
        y = b.constants.get(key)
        if y is None or x.shape != y.shape or x.dtype != y.dtype or \
                (x.numel() and not bool((x == y).all())):
            return f"constant {key}: {x} vs {y}"
    return None


def _check(run_traced, eager, trace_again, check_inputs, tolerance):
    for inputs in check_inputs:
        inputs = inputs if isinstance(inputs, tuple) else (inputs,)
        first = trace_again(inputs)
        again = trace_again(inputs)
        if _graph_shape(first) != _graph_shape(again):
            diff = "\n".join(difflib.ndiff(_graph_shape(first).splitlines(),
                                           _graph_shape(again).splitlines()))
            raise TracingCheckError(diff, None)
        differ = _constants_differ(first, again)
        if differ is not None:
            raise TracingCheckError(None, differ)
        _compare_outputs(run_traced(inputs), eager(*inputs), tolerance, "Python function")


class _TracedCallable:
    """What ScriptFunction and TracedModule share: the graph of the current trace, guards,
    .code and the interpreter."""

    @property
    def graph(self):
        return self._cache.first.graph

    @property
    def inlined_graph(self):
        return self.graph

    @property
    def code(self):
        from ._code import graph_code
        return graph_code(self.graph, self._code_name, self._self_name)

    def cache_info(self):
        """(hits, misses, maxsize, currsize) of the guarded trace cache."""
        return self._cache.info()

    def _run(self, inputs, self_obj):
        traced, leaves = self._cache.lookup(inputs, self._retrace)
        if self_obj is not None:
            return traced.interp.run(self_obj, *leaves)
        return traced.interp.run(*leaves)


class ScriptFunction(_TracedCallable):
    """A traced function (torch.jit.ScriptFunction)."""

    def __init__(self, fn, traced, cache):
        self._fn = fn
        self._cache = cache
        self._self_name = None
        self._code_name = getattr(fn, "__name__", "forward")
        self.__name__ = self._code_name
        self.__doc__ = getattr(fn, "__doc__", None)
        cache.add(traced)

    def _retrace(self, inputs):
        return _Traced(*_record(self._fn, inputs, None))

    def __call__(self, *inputs):
        return self._run(inputs, None)

    def __repr__(self):
        return f"<pytorchlite.jit.ScriptFunction object {self._code_name}>"


class TracedModule(_TracedCallable, Module):
    """A traced module (torch.jit.TopLevelTracedModule): its submodules, parameters and
    buffers are those of the module it traced (shared, not copied)."""

    def __init__(self, orig, traced, cache):
        Module.__init__(self)
        object.__setattr__(self, "_cache", cache)
        object.__setattr__(self, "_orig_forward", orig.forward if orig is not None else None)
        object.__setattr__(self, "_self_name", "self")
        object.__setattr__(self, "_code_name", "forward")
        object.__setattr__(self, "_type_name", traced.graph.inputs[0].type)
        if orig is not None:
            _copy_structure(orig, self)
            self.training = orig.training
        cache.add(traced)

    def _retrace(self, inputs):
        if self._orig_forward is None:
            return None
        return _Traced(*_record(self._orig_forward, inputs, self))

    def forward(self, *inputs):
        return self._run(inputs, self)

    def __call__(self, *inputs, **kwargs):
        d = self.__dict__
        if kwargs or d["_forward_pre_hooks"] or d["_forward_hooks"] or \
                d.get("_full_backward_hooks") or d.get("_backward_pre_hooks"):
            return Module.__call__(self, *inputs, **kwargs)
        return self._run(inputs, self)

    def _get_name(self):
        return self._type_name.rsplit(".", 1)[-1]

    def extra_repr(self):
        return "original_name=" + self._get_name()


def _copy_structure(src, dst):
    for name, p in src._parameters.items():
        dst._parameters[name] = p
    for name, b in src._buffers.items():
        dst._buffers[name] = b
    dst._non_persistent_buffers_set = set(src._non_persistent_buffers_set)
    for name, m in src._modules.items():
        if m is None:
            continue
        child = Module()
        _copy_structure(m, child)
        child.training = m.training
        dst._modules[name] = child


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None,
          check_tolerance=1e-5, strict=True, _force_outplace=False, _module_class=None,
          _compilation_unit=None, example_kwarg_inputs=None, _store_inputs=True, *,
          on_guard_failure="retrace", cache_size=8):
    """Traces func (a function or Module) on example_inputs into a graph.

    Returns a ScriptFunction, or a TracedModule for a Module, that runs the graph.  A call
    whose inputs break what the trace assumed retraces (on_guard_failure="retrace", keeping
    at most cache_size traces) or raises naming the assumption ("raise"); see Note [Trace
    guards].  check_trace traces again on check_inputs (default: example_inputs) and compares
    graphs and outputs, as PyTorch does.  optimize, strict and the underscored arguments are
    accepted for PyTorch's signature and have no effect: outputs are always tensors or
    (nested) tuples and lists of them."""
    if example_kwarg_inputs is not None:
        raise RuntimeError("example_kwarg_inputs is not supported; pass example_inputs")
    if example_inputs is None:
        raise RuntimeError("example_inputs must be given")
    if isinstance(example_inputs, (Tensor, list)):
        example_inputs = (example_inputs,)
    inputs = tuple(example_inputs)
    cache = _GuardedCache(cache_size, on_guard_failure)
    module = func if isinstance(func, Module) else None
    if module is not None:
        if isinstance(module, TracedModule):
            return module
        fn = module.forward
        graph, key = _record(fn, inputs, module)
        result = TracedModule(module, _Traced(graph, key), cache)
        fn_eager = module
    else:
        if isinstance(func, _TracedCallable):
            return func
        graph, key = _record(func, inputs, None)
        result = ScriptFunction(func, _Traced(graph, key), cache)
        fn_eager = func
    if check_trace:
        checks = check_inputs if check_inputs is not None else [inputs]

        def trace_again(xs):
            return _record(module.forward if module is not None else func, xs, module)[0]

        def run_traced(xs):
            g = trace_again(xs)
            interp = Interpreter(g)
            leaves = []
            _flatten(tuple(xs), leaves)
            return interp.run(result, *leaves) if module is not None else interp.run(*leaves)

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Converting a tensor", TracerWarning)
            _check(run_traced, fn_eager, trace_again, checks, check_tolerance)
    return result
