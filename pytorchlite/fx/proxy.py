"""torch.fx.proxy: the Proxy a symbolic trace passes through the program in place of each
value, and the TracerBase that turns what happens to a Proxy into Graph nodes.

A Proxy records instead of computing: an operator (`p + 1`, `p[0]`, `-p`) becomes a
call_function of the `operator` module's function, a method call (`p.view(2, -1)`) a
call_method, an attribute read (`p.shape`) a call_function of getattr, and any pytorchlite
function or Tensor method that receives a Proxy reaches Proxy.__torch_function__ through the
`__torch_function__` protocol (pytorchlite/overrides.py), which records a call_function or,
for Tensor methods, a call_method.  What a Proxy cannot record is Python control flow on its
value: `bool(p)`, iterating it and `len(p)` raise, with PyTorch's messages."""
import collections
import dis
import enum
import inspect
import operator

from .graph import magic_methods, reflectable_magic_methods
from .node import Node, map_aggregate

__all__ = ["Attribute", "GraphAppendingTracer", "ParameterProxy", "Proxy", "TraceError",
           "TracerBase"]


class TraceError(ValueError):
    pass


def _base_types():
    import pytorchlite
    return (str, int, float, bool, complex, pytorchlite.dtype, pytorchlite.Tensor,
            pytorchlite.device, pytorchlite.memory_format, pytorchlite.layout, pytorchlite.Size)


class TracerBase:
    """Makes Nodes in self.graph from the calls a Proxy sees."""
    graph = None
    record_stack_traces = False
    check_mutable_operations = False
    proxy_buffer_attributes = False
    traced_func_name = "forward"

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        """A new node of self.graph; inside a traced submodule's call its meta records the
        stack of modules being called (nn_module_stack)."""
        node = self.graph.create_node(kind, target, args, kwargs, name, type_expr)
        module_stack = getattr(self, "module_stack", None)
        if module_stack:
            node.meta["nn_module_stack"] = collections.OrderedDict(module_stack)
        return node

    def proxy(self, node):
        return Proxy(node, self)

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None,
                     proxy_factory_fn=None):
        """A new Node for this call (its arguments turned into graph arguments by
        create_arg), wrapped in a Proxy."""
        args_ = self.create_arg(args)
        kwargs_ = self.create_arg(kwargs)
        node = self.create_node(kind, target, args_, kwargs_, name, type_expr)
        return self.proxy(node) if proxy_factory_fn is None else proxy_factory_fn(node)

    def create_arg(self, a):
        """a as a graph argument: Proxies become their Nodes, containers are rebuilt, and
        constants stay; anything else is refused."""
        if isinstance(a, Proxy):
            return a.node
        if hasattr(a, "__fx_create_arg__"):
            return a.__fx_create_arg__(self)
        if isinstance(a, tuple) and hasattr(a, "_fields"):
            return type(a)(*(self.create_arg(elem) for elem in a))
        if isinstance(a, (tuple, list)):
            return type(a)(self.create_arg(elem) for elem in a)
        if isinstance(a, dict):
            r = {}
            for k, v in a.items():
                k = self.create_arg(k)

                def no_node(arg):
                    if isinstance(arg, Node):
                        raise RuntimeError("Keys for dictionaries used as an argument cannot "
                                           f"contain a Node. Got key: {k}")
                map_aggregate(k, no_node)
                r[k] = self.create_arg(v)
            return r
        if isinstance(a, slice):
            return slice(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, range):
            return range(self.create_arg(a.start), self.create_arg(a.stop),
                         self.create_arg(a.step))
        if isinstance(a, (*_base_types(), enum.Enum)) or a is None or a is ...:
            return a
        raise NotImplementedError(f"argument of type: {type(a)}")

    def to_bool(self, obj):
        """Called for bool(proxy), i.e. control flow on a traced value."""
        raise TraceError("symbolically traced variables cannot be used as inputs to control flow")

    def iter(self, obj):
        """Called when a proxy is iterated (other than unpacked to a known count)."""
        raise TraceError("Proxy object cannot be iterated. This can be attempted when the "
                         "Proxy is used in a loop or as a *args or **kwargs function argument. "
                         "See the torch.fx docs on pytorch.org for a more detailed explanation "
                         "of what types of control flow can be traced, and check out the Proxy "
                         "docstring for help troubleshooting Proxy iteration errors")

    def keys(self, obj):
        """Called for proxy.keys(), as ** does."""
        return Attribute(obj, "keys")()


class GraphAppendingTracer(TracerBase):
    """The tracer of a Proxy made directly on a graph's node: it appends to that graph."""

    def __init__(self, graph):
        super().__init__()
        self.graph = graph
        self.scope = None


class Proxy:
    """Stands for a value while a program is traced; see this module's docstring."""

    def __init__(self, node, tracer=None):
        self.tracer = tracer if tracer is not None else GraphAppendingTracer(node.graph)
        self.node = node

    def __repr__(self):
        return f"Proxy({self.node.name})"

    def __getattr__(self, k):
        # dunders are protocol lookups (copy, pickle, numpy's __array__...), never a traced
        # attribute: answering them with a Proxy would make those protocols record nodes
        if k.startswith("__") and k.endswith("__"):
            raise AttributeError(k)
        return Attribute(self, k)

    def __getstate__(self):
        return self.__dict__

    def __setstate__(self, d):
        self.__dict__ = d

    def __deepcopy__(self, memo):
        return Proxy(self.node, self.tracer)

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", "__call__", (self,) + args, kwargs)

    def __iter__(self):
        # `a, b = proxy` iterates from an UNPACK_SEQUENCE of known count: that unpacking is
        # recorded as getitem nodes; any other iteration is control flow.
        frame = inspect.currentframe().f_back
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset >= frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)

    def __bool__(self):
        return self.tracer.to_bool(self)

    def keys(self):
        return self.tracer.keys(self)

    def __len__(self):
        raise RuntimeError("'len' is not supported in symbolic tracing by default. If you want "
                           "this call to be recorded, please call torch.fx.wrap('len') at "
                           "module scope")

    @classmethod
    def __torch_function__(cls, orig_method, types, args=None, kwargs=None):
        from ..overrides import is_tensor_method_or_property
        args = args if args else ()
        kwargs = kwargs if kwargs else {}
        tracers = {}

        def find_tracer(a):
            if isinstance(a, cls):
                tracers[a.tracer] = None
        map_aggregate(args, find_tracer)
        map_aggregate(kwargs, find_tracer)
        if len(tracers) > 1:
            raise RuntimeError(f"Found multiple different tracers {list(tracers)} while trying "
                               f"to trace operations {orig_method}")
        tracer = next(iter(tracers))
        if is_tensor_method_or_property(orig_method):
            return tracer.create_proxy("call_method", orig_method.__name__, args, kwargs)
        return tracer.create_proxy("call_function", orig_method, args, kwargs,
                                   name=tracer.graph._target_to_str(orig_method.__name__))


class Attribute(Proxy):
    """proxy.name: a call_method when called, otherwise (made on first use) a getattr node."""

    def __init__(self, root, attr):
        self.root = root
        self.attr = attr
        self.tracer = root.tracer
        self._node = None

    @property
    def node(self):
        if self._node is None:
            self._node = self.tracer.create_proxy("call_function", getattr,
                                                  (self.root, self.attr), {}).node
        return self._node

    def __call__(self, *args, **kwargs):
        return self.tracer.create_proxy("call_method", self.attr, (self.root,) + args, kwargs)


class ParameterProxy(Proxy):
    """The Proxy of a parameter when Tracer(param_shapes_constant=True): its shape, size,
    dim, ndim, numel and nelement are the parameter's own values, so that code branching on
    them traces."""

    def __init__(self, tracer, node, name, param):
        super().__init__(node, tracer)
        self.param = param
        self.name = name

    def __repr__(self):
        return f"ParameterProxy({self.name})"

    @property
    def shape(self):
        return self.param.shape

    @property
    def ndim(self):
        return self.param.ndim

    def size(self, dim=None):
        return self.param.size() if dim is None else self.param.size(dim)

    def dim(self):
        return self.param.dim()

    def numel(self):
        return self.param.numel()

    def nelement(self):
        return self.param.nelement()


def _define_magic(method):
    target = getattr(operator, method)

    def impl(*args, **kwargs):
        tracer = args[0].tracer
        return tracer.create_proxy("call_function", target, args, kwargs)
    impl.__name__ = method
    setattr(Proxy, f"__{method.strip('_')}__", impl)


def _define_reflectable(method):
    target = getattr(operator, method)

    def impl(self, rhs):
        return self.tracer.create_proxy("call_function", target, (rhs, self), {})
    impl.__name__ = method
    setattr(Proxy, f"__r{method.strip('_')}__", impl)


# Set after the class is made, so that __eq__ does not take __hash__ away (a Proxy is a
# dict key in tracers' caches).
for _method in magic_methods:
    if hasattr(operator, _method):
        _define_magic(_method)
for _method in reflectable_magic_methods:
    if hasattr(operator, _method):
        _define_reflectable(_method)
del _method
