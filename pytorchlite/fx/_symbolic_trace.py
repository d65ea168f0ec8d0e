"""torch.fx._symbolic_trace: Tracer, symbolic_trace and wrap.

Tracing runs the module's forward once with a Proxy for each argument.  While it runs,
nn.Module.__call__ and nn.Module.__getattr__ are patched: a call of a leaf submodule
(pytorchlite's own nn layers, except Sequential) becomes one call_module node, any other
submodule is traced through, and a parameter or buffer read becomes a get_attr node.  The
functions registered with wrap(), and those of the autowrap modules (math) reached from the
traced function's globals, are patched to record a call_function when a Proxy reaches them.
Everything is restored when the trace ends, also when it raises."""
import builtins
import collections
import copy
import functools
import inspect
import math

from .graph import Graph
from .node import map_aggregate
from .proxy import ParameterProxy, Proxy, TracerBase

__all__ = ["PH", "Tracer", "is_fx_tracing", "symbolic_trace", "wrap"]

_is_fx_tracing_flag = False

# (id(globals dict), name) -> the globals dict, for every wrap() call.
_wrapped_fns_to_patch = {}

_CO_VARSTUFF = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def _assert_is_none(value, msg):
    """The check a None concrete argument adds to the graph."""
    assert value is None, msg


def is_fx_tracing():
    return _is_fx_tracing_flag


class PHBase:
    """A placeholder value in concrete_args: that part of the input stays an input."""

    def __repr__(self):
        return "PH"


PH = PHBase()


class _Patcher:
    """Sets attributes and dict entries for the length of a trace and restores them."""

    def __init__(self):
        self._undo = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        while self._undo:
            self._undo.pop()()
        return False

    def patch(self, frame_dict, name, new_fn):
        if name in frame_dict:
            old = frame_dict[name]
            self._undo.append(lambda: frame_dict.__setitem__(name, old))
        else:
            self._undo.append(lambda: frame_dict.pop(name, None))
        frame_dict[name] = new_fn

    def patch_method(self, cls, name, new_fn):
        old = cls.__dict__[name]
        self._undo.append(lambda: setattr(cls, name, old))
        setattr(cls, name, new_fn)


def _name_in(obj, named):
    """The name under which named (pairs of name, object) holds obj itself, or None."""
    for name, candidate in named:
        if candidate is obj:
            return name
    return None


def _find_proxy(*objects):
    found = []

    def visit(x):
        if isinstance(x, Proxy) and not found:
            found.append(x)
    map_aggregate(objects, visit)
    return found[0] if found else None


def _create_wrapped_func(orig_fn):
    @functools.wraps(orig_fn)
    def wrapped(*args, **kwargs):
        proxy = _find_proxy(args, kwargs)
        if proxy is None:
            return orig_fn(*args, **kwargs)
        out = proxy.tracer.create_proxy("call_function", orig_fn, args, kwargs)
        out.node.meta["is_wrapped"] = True
        return out
    return wrapped


def wrap(fn_or_name):
    """Called at module scope: makes symbolic traces record calls of this function (given
    or named) as call_function nodes instead of tracing through them."""
    frame = inspect.currentframe().f_back
    if frame.f_code.co_name != "<module>":
        raise NotImplementedError("wrap must be called at the top level of a module")
    if callable(fn_or_name):
        fn_name = fn_or_name.__code__.co_name
    elif isinstance(fn_or_name, str):
        fn_name = fn_or_name
    else:
        raise AssertionError("wrap must be called with the name of a function or the function")
    _wrapped_fns_to_patch[(id(frame.f_globals), fn_name)] = frame.f_globals
    return fn_or_name


def _patch_function(fn, nargs):
    """fn with its *args/**kwargs made plain parameters, so that one Proxy each can be
    passed."""
    co = fn.__code__
    new_code = co.replace(co_flags=co.co_flags & ~_CO_VARSTUFF, co_argcount=nargs,
                          co_kwonlyargcount=0)
    return type(fn)(new_code, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)


class Tracer(TracerBase):
    """Records a module's forward (or a function) as a Graph; override is_leaf_module,
    call_module, create_proxy or create_arg to change what is recorded."""

    def __init__(self, autowrap_modules=(math,), autowrap_functions=(),
                 param_shapes_constant=False):
        super().__init__()
        self._autowrap_function_ids = {
            id(value) for module in autowrap_modules for name, value in module.__dict__.items()
            if not name.startswith("_") and callable(value)}
        self._autowrap_function_ids.update(id(f) for f in autowrap_functions)
        self._autowrap_modules = list(autowrap_modules)
        self.param_shapes_constant = param_shapes_constant
        self.submodule_paths = None
        self.root = None
        self.tensor_attrs = {}
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}

    def create_arg(self, a):
        """As TracerBase's, and tensors and modules of the root become get_attr nodes (a
        tensor that is no attribute becomes a new `_tensor_constant<i>` attribute)."""
        import pytorchlite
        if isinstance(a, pytorchlite.nn.Parameter):
            name = _name_in(a, self.root.named_parameters())
            if name is None:
                raise NameError("parameter is not a member of this module")
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, pytorchlite.Tensor):
            name = _name_in(a, self.root.named_buffers())
            if name is not None:
                return self.create_node("get_attr", name, (), {})
        elif isinstance(a, pytorchlite.nn.Module):
            name = _name_in(a, self.root.named_modules())
            if name is None:
                raise NameError("module is not installed as a submodule")
            return self.create_node("get_attr", name, (), {})
        if isinstance(a, pytorchlite.Tensor):
            qualname = self.tensor_attrs.get(a)
            if not qualname:
                i = 0
                while hasattr(self.root, f"_tensor_constant{i}"):
                    i += 1
                qualname = f"_tensor_constant{i}"
                self.tensor_attrs[a] = qualname
                setattr(self.root, qualname, a)
            return self.create_node("get_attr", qualname, (), {})
        return super().create_arg(a)

    def is_leaf_module(self, m, module_qualified_name):
        """pytorchlite's own nn modules (torch.nn's) are leaves, except Sequential."""
        import pytorchlite
        module = type(m).__module__
        return (module.startswith("pytorchlite.nn") or module.startswith("torch.nn")) and \
            not isinstance(m, pytorchlite.nn.Sequential)

    def path_of_module(self, mod):
        """The qualified name of mod in the root (NameError when it is not a submodule)."""
        if self.submodule_paths is not None:
            path = self.submodule_paths.get(mod)
            if path is None:
                raise NameError("module is not installed as a submodule")
            return path
        path = _name_in(mod, self.root.named_modules())
        if path is None:
            raise NameError("module is not installed as a submodule")
        return path

    def call_module(self, m, forward, args, kwargs):
        """A leaf module's call is one call_module node; any other is traced through."""
        module_qualified_name = self.path_of_module(m)
        num_calls = self.num_calls.get(module_qualified_name, 0)
        key = f"{module_qualified_name}@{num_calls}" if num_calls else module_qualified_name
        self.num_calls[module_qualified_name] = num_calls + 1
        self.module_stack[key] = (module_qualified_name, type(m))
        try:
            if not self.is_leaf_module(m, module_qualified_name):
                return forward(*args, **kwargs)
            return self.create_proxy("call_module", module_qualified_name, args, kwargs)
        finally:
            self.module_stack.pop(key, None)

    def getattr(self, attr, attr_val, parameter_proxy_cache):
        """A parameter (or buffer) read from a module becomes a get_attr Proxy, one per
        name for the whole trace."""
        import pytorchlite
        if isinstance(attr_val, pytorchlite.nn.Parameter):
            collection = self.root.named_parameters()
        elif self.proxy_buffer_attributes and isinstance(attr_val, pytorchlite.Tensor):
            collection = self.root.named_buffers()
        else:
            return attr_val
        n = _name_in(attr_val, collection)
        if n is None:
            return attr_val
        if n not in parameter_proxy_cache:
            factory = None
            if self.param_shapes_constant:
                def factory(node):
                    return ParameterProxy(self, node, n, attr_val)
            parameter_proxy_cache[n] = self.create_proxy("get_attr", n, (), {},
                                                         proxy_factory_fn=factory)
        return parameter_proxy_cache[n]

    def create_args_for_root(self, root_fn, is_module, concrete_args=None):
        """The function to call and its arguments: a placeholder Proxy per parameter, or the
        concrete value given for it."""
        fn_for_analysis = inspect.unwrap(root_fn)
        co = fn_for_analysis.__code__
        total_args = co.co_argcount + co.co_kwonlyargcount
        names_iter = iter(co.co_varnames)
        args = []
        skip = 0
        if is_module:
            if total_args == 0:
                raise RuntimeError("``self`` argument cannot be part of *args expansion!")
            skip = 1
            next(names_iter)
            args.append(self.root)
        sig = inspect.signature(fn_for_analysis)
        arg_names = [next(names_iter) for _ in range(skip, total_args)]
        if isinstance(concrete_args, tuple):
            if len(arg_names) != len(concrete_args):
                raise RuntimeError(f"Tracing expected {len(arg_names)} arguments but got "
                                   f"{len(concrete_args)} concrete arguments")
            concrete_args = dict(zip(arg_names, concrete_args))
        annotations = getattr(fn_for_analysis, "__annotations__", {})

        def placeholder(name):
            if concrete_args is not None and name in concrete_args:
                return self._concrete_placeholder(name, concrete_args[name], sig)
            if name[0] == "*":
                default = inspect.Signature.empty
            else:
                default = sig.parameters[name].default
            dv = () if default is inspect.Parameter.empty else (default,)
            return self.create_proxy("placeholder", name, dv, {},
                                     type_expr=annotations.get(name, None))

        args.extend(placeholder(name) for name in arg_names)
        if co.co_kwonlyargcount > 0 or co.co_flags & _CO_VARSTUFF:
            if co.co_flags & inspect.CO_VARARGS:
                args.append(placeholder("*" + next(names_iter)))
            if co.co_flags & inspect.CO_VARKEYWORDS:
                args.append(placeholder("**" + next(names_iter)))
            root_fn = _patch_function(root_fn, len(args))
        return root_fn, args

    def _concrete_placeholder(self, name, value, sig):
        """A concrete argument: its value is used while tracing, and the graph keeps an
        input named `<name>_1` that is checked against that value, as PyTorch's does."""
        import pytorchlite
        param = sig.parameters[name]
        default = () if param.default is inspect.Parameter.empty else (param.default,)
        if isinstance(value, PHBase):
            return self.create_proxy("placeholder", f"{name}_1", default, {})
        out = self.create_proxy("placeholder", f"{name}_1", default, {})
        if value is None:
            self.create_proxy("call_function", _assert_is_none,
                              (out, f"{name} has been specialized to have value None but got "
                                    "another value"), {})
        elif type(value) in (bool, int, float, str, complex):
            pytorchlite._assert(out == value, f"{name} has been specialized to have value "
                                              f"{value} but got another value")
        return value

    def trace(self, root, concrete_args=None):
        """Runs root (an nn.Module's forward, or a function) on Proxies and returns the
        Graph it records."""
        import pytorchlite
        global _is_fx_tracing_flag
        old_flag = _is_fx_tracing_flag
        _is_fx_tracing_flag = True
        try:
            if isinstance(root, pytorchlite.nn.Module):
                self.root = root
                fn = type(root).forward
            else:
                self.root = pytorchlite.nn.Module()
                fn = root
            self.graph = Graph(tracer_cls=getattr(self, "__class__", None))
            self.tensor_attrs = {}
            self.num_calls = {}

            def collect_tensor_attrs(m, prefix):
                for k, v in m.__dict__.items():
                    if isinstance(v, pytorchlite.Tensor):
                        self.tensor_attrs[v] = ".".join(prefix + [k])
                for k, v in m.named_children():
                    collect_tensor_attrs(v, prefix + [k])
            collect_tensor_attrs(self.root, [])
            fn_globals = fn.__globals__
            fn, args = self.create_args_for_root(fn, isinstance(root, pytorchlite.nn.Module),
                                                 concrete_args)
            parameter_proxy_cache = {}
            module_cls = pytorchlite.nn.Module
            orig_getattr = module_cls.__getattr__
            orig_call = module_cls.__call__

            def module_getattr_wrapper(mod, attr):
                return self.getattr(attr, orig_getattr(mod, attr), parameter_proxy_cache)

            def module_call_wrapper(mod, *args, **kwargs):
                def forward(*args, **kwargs):
                    return orig_call(mod, *args, **kwargs)
                return self.call_module(mod, forward, args, kwargs)

            with _Patcher() as patcher:
                patcher.patch_method(module_cls, "__getattr__", module_getattr_wrapper)
                patcher.patch_method(module_cls, "__call__", module_call_wrapper)
                self._patch_wrapped_functions(patcher)
                self._autowrap_check(patcher, fn_globals)
                for module in self._autowrap_modules:
                    self._autowrap_check(patcher, module.__dict__)
                result = fn(*args)
                self.create_node("output", "output", (self.create_arg(result),), {},
                                 type_expr=fn.__annotations__.get("return", None))
            self.submodule_paths = None
        finally:
            _is_fx_tracing_flag = old_flag
        return self.graph

    @staticmethod
    def _patch_wrapped_functions(patcher):
        for (_, name), frame_dict in _wrapped_fns_to_patch.items():
            if name not in frame_dict and hasattr(builtins, name):
                orig_fn = getattr(builtins, name)
            else:
                orig_fn = frame_dict[name]
            patcher.patch(frame_dict, name, _create_wrapped_func(orig_fn))

    def _autowrap_check(self, patcher, frame_dict):
        if not self._autowrap_function_ids:
            return
        for name, value in list(frame_dict.items()):
            if not name.startswith("_") and callable(value) and \
                    id(value) in self._autowrap_function_ids:
                patcher.patch(frame_dict, name, _create_wrapped_func(value))

    def __deepcopy__(self, memo):
        new_tracer = Tracer.__new__(Tracer)
        for k, v in self.__dict__.items():
            setattr(new_tracer, k, v if k == "root" else copy.deepcopy(v, memo))
        return new_tracer


def symbolic_trace(root, concrete_args=None):
    """Traces root (an nn.Module or a function) into a GraphModule named after it."""
    import pytorchlite
    from .graph_module import GraphModule
    tracer = Tracer()
    graph = tracer.trace(root, concrete_args)
    name = type(root).__name__ if isinstance(root, pytorchlite.nn.Module) else root.__name__
    return GraphModule(tracer.root, graph, name)
