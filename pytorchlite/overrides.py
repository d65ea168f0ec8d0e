"""torch.overrides: the __torch_function__ protocol (Note [Torch function] in
src/python/torch_function.c).

A call of a pytorchlite function, Tensor method or operator whose arguments include an
object of a type other than Tensor that defines ``__torch_function__`` (a Tensor subclass,
any tensor-like class), or made while a TorchFunctionMode is active, is handed to
``handle_torch_function``: the active mode first, then each overloaded argument's type
(subclasses before their base classes, otherwise left to right, one per type) is called as
``__torch_function__(func, types, args, kwargs)`` until one returns something other than
NotImplemented.  ``Tensor.__torch_function__``, which every subclass inherits, computes the
call with subclass handling disabled and returns its tensors as the subclass.
"""
import contextlib
import functools
import inspect
import threading
import types

from . import _C

__all__ = [
    "BaseTorchFunctionMode", "TorchFunctionMode", "get_default_nowrap_functions",
    "handle_torch_function", "has_torch_function", "has_torch_function_unary",
    "has_torch_function_variadic", "is_tensor_like", "is_tensor_method_or_property",
    "wrap_torch_function",
]

has_torch_function = _C._has_torch_function
has_torch_function_unary = _C._has_torch_function_unary
has_torch_function_variadic = _C._has_torch_function_variadic
_is_torch_function_enabled = _C._is_torch_function_enabled
_disabled_torch_function_impl = _C._disabled_torch_function_impl


def _get_overloaded_args(relevant_args, get_type_fn=None):
    """The arguments whose type's __torch_function__ is called, in calling order: one per
    type, a subclass before any of its base classes, otherwise in argument order (NEP 18's
    rule, as PyTorch's)."""
    type_of = type if get_type_fn is None else get_type_fn
    if not _C._is_torch_function_enabled():
        return []
    seen = set()
    ordered = []
    for arg in relevant_args:
        t = type_of(arg)
        if t in seen:
            continue
        impl = getattr(t, "__torch_function__", None)
        if impl is None or impl is _disabled_torch_function_impl:
            continue
        seen.add(t)
        at = len(ordered)
        for i, earlier in enumerate(ordered):
            if issubclass(t, type_of(earlier)):
                at = i
                break
        ordered.insert(at, arg)
    return ordered


def handle_torch_function(public_api, relevant_args, *args, **kwargs):
    """Calls the active TorchFunctionMode, then the __torch_function__ of each overloaded
    argument of relevant_args, with (public_api, types, args, kwargs), and returns the first
    answer that is not NotImplemented; TypeError when none answers."""
    overloaded = _get_overloaded_args(relevant_args)
    return _call_overloads(public_api, overloaded, args, kwargs)


def _handle_from_c(func, relevant, args, kwargs):
    """The entry of calls from C (operators, methods, operator slots, routed functions):
    relevant holds the overloaded arguments in argument order (exact Tensors excluded, as
    PyTorch's C check does).  A routed function's call is first put in PyTorch's form (Note
    [The call __torch_function__ sees])."""
    present = _presented.get(func)
    if present is not None:
        func, args, kwargs = present(func, args, kwargs or {})
    return _call_overloads(func, _get_overloaded_args(relevant), args, kwargs)


def _call_overloads(func, overloaded, args, kwargs):
    types = tuple(type(a) for a in overloaded)
    if _is_torch_function_mode_enabled():
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(func, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        result = arg.__torch_function__(func, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{getattr(func, '__module__', None) or 'torch'}.{getattr(func, '__name__', func)}"
    msg = (f"no implementation found for '{name}' on types that implement "
           f"__torch_function__: {[type(a) for a in overloaded]}")
    if _is_torch_function_mode_enabled():
        msg += f" nor in mode {_get_current_function_mode()}"
    raise TypeError(msg)


_C._set_torch_function_handler(_handle_from_c)


def get_default_nowrap_functions():
    """The functions whose results Tensor.__torch_function__ returns unconverted (their
    tensors are not turned into the subclass): the getters of .grad, ._grad and ._base."""
    from ._tensor import Tensor
    return {getattr(Tensor, name).__get__ for name in ("_base", "grad", "_grad")
            if hasattr(Tensor, name) and hasattr(getattr(Tensor, name), "__get__")}


def _convert(ret, cls):
    """ret with its tensors (also inside tuples and lists) as objects of cls."""
    from ._tensor import Tensor
    if cls is Tensor:
        return ret
    if isinstance(ret, Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        return type(ret)(_convert(r, cls) for r in ret)
    return ret


def is_tensor_like(inp):
    """True for a Tensor (or subclass) and for an object whose type defines
    __torch_function__."""
    from ._tensor import Tensor
    return type(inp) is Tensor or hasattr(inp, "__torch_function__")


def is_tensor_method_or_property(func):
    """Whether func is a method or property of Tensor (so __torch_function__ sees self as
    args[0])."""
    from ._tensor import Tensor
    return func in vars(Tensor).values() or func in vars(_C.TensorBase).values() or \
        getattr(func, "__name__", None) == "__get__"


def wrap_torch_function(dispatcher):
    """A decorator for a function of tensor-likes: dispatcher(*args, **kwargs) returns the
    arguments to check for __torch_function__."""

    def inner(func):
        @functools.wraps(func)
        def wrapped(*args, **kwargs):
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)
        return wrapped
    return inner


# ---- functions written in Python ----

def _route(func):
    """func as a _C._RoutedFunction: the call goes to __torch_function__ with the wrapper
    itself as func when an argument or a mode asks for it, else to func (Note [Torch
    function])."""
    routed = _C._RoutedFunction(func)
    functools.update_wrapper(routed, func)
    return routed


def _route_functions(namespace, skip=(), names=None):
    """Makes _RoutedFunction objects of the Python functions of namespace (a module's
    globals(), or a class): those of names, or else every public function the module
    defines (every function of a class), but those of skip.  PyTorch routes such functions
    (its C ones, and its Python ones through handle_torch_function), so a subclass or a mode
    sees them rather than the operators they call.  Called once at the bottom of each module
    that defines them."""
    owner = namespace if isinstance(namespace, type) else None
    items = vars(owner) if owner is not None else namespace
    module = None if owner is not None else namespace["__name__"]
    if owner is not None:
        _route_properties(owner, skip)
    if names is None:
        names = [n for n, f in items.items() if isinstance(f, types.FunctionType) and
                 (owner is not None or (f.__module__ == module and not n.startswith("_")))]
    for name in names:
        func = items[name]
        if name in skip or not isinstance(func, types.FunctionType):
            continue
        if owner is not None:
            routed = _route(func)   # named as the method, as PyTorch's (Tensor.unique)
            routed.__name__, routed.__module__ = name, owner.__module__
            routed.__qualname__ = f"{owner.__name__}.{name}"
            setattr(owner, name, routed)
        else:
            namespace[name] = _route(func)


def _route_properties(owner, skip=()):
    """Makes _C._RoutedProperty objects of owner's properties (but those of skip): an access
    goes to __torch_function__ with func = owner.<name>.__get__ (an assignment: __set__) when
    the tensor or a mode asks for it, as PyTorch's getters in C do."""
    for name, prop in list(vars(owner).items()):
        if isinstance(prop, property) and name not in skip:
            setattr(owner, name, _C._RoutedProperty(name, prop.fget, prop.fset, prop.__doc__))


# ---- the call __torch_function__ sees ----

# Note [The call __torch_function__ sees]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# PyTorch's Python functions hand __torch_function__ the call in the form written in their
# source, `handle_torch_function(relu, (input,), input, inplace=inplace)`: the required
# parameters by position, every other one by keyword with its value (its default when the
# caller left it out), in the signature's order.  Its C functions hand over the call as made,
# as themselves: F.linear is torch._C._nn.linear, F.conv2d is torch.conv2d.  Handlers see
# the difference, and torch.fx prints it: F.relu(x) traces to
# `torch.nn.functional.relu(x, inplace = False)`, F.linear(x, w) to
# `torch._C._nn.linear(x, w)`.  The routed functions of pytorchlite that PyTorch writes in
# Python are registered with _present_filled, those it writes in C under another name with
# _present_as; the rest pass the call as made, as themselves.

# the func a routed function passes -> present(func, args, kwargs) -> (func, args, kwargs)
_presented = {}


def _present_filled(public, order=None, omit_if_default=()):
    """Calls of public (a routed function) reach __torch_function__ in the form of PyTorch's
    Python functions (Note above).  order: the keyword parameters, where PyTorch's source
    passes them in another order; omit_if_default: those it leaves out (passed here only
    when given a value other than the default, so that the call means the same)."""
    form = None

    def present(func, args, kwargs):
        nonlocal form
        if form is None:
            form = _filled_form(public, order)
        names, params, npositional, required, defaults, keywords, tail = form
        if tail is not None and not kwargs and not omit_if_default and \
                len(required) <= len(args) <= npositional:
            # the common call, its arguments by position: no binding needed
            return func, args[:len(required)], dict(zip(
                keywords, args[len(required):] + tail[len(args) - len(required):]))
        given = names[:len(args)]
        if len(args) > npositional or (kwargs and any(k not in params or k in given
                                                      for k in kwargs)):
            inspect.unwrap(public)(*args, **kwargs)   # raises the function's own TypeError
        values = dict(defaults)
        values.update(zip(names, args))
        values.update(kwargs)
        if len(values) != len(names):
            inspect.unwrap(public)(*args, **kwargs)   # a required argument is missing
        if omit_if_default:
            keywords = [n for n in keywords
                        if n not in omit_if_default or values[n] is not defaults[n]]
        return func, tuple(values[n] for n in required), {n: values[n] for n in keywords}
    _presented[public] = present


def _filled_form(public, order):
    """public's parameter names (a tuple and a set), how many a call may pass by position,
    the required ones PyTorch passes by position, the defaults, the names it passes by
    keyword (in order, when given) and their defaults; worked out on the first call that
    needs them, not at import."""
    params = list(inspect.signature(inspect.unwrap(public)).parameters.values())
    positional = [p for p in params if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    nrequired = 0
    while nrequired < len(positional) and positional[nrequired].default is params[0].empty:
        nrequired += 1
    names = tuple(p.name for p in params)
    keywords = names[nrequired:] if order is None else tuple(order)
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    # the defaults of the keywords, for calls that pass everything by position (None where
    # the keywords are not the signature's tail or one of them is required)
    tail = tuple(defaults[n] for n in keywords) if order is None and \
        all(n in defaults for n in keywords) else None
    return (names, frozenset(names), len(positional), names[:nrequired], defaults, keywords,
            tail)


def _present_as(public, shown):
    """Calls of public reach __torch_function__ as calls of shown, as made (PyTorch's
    F.relu_ is the C function torch.relu_)."""
    _presented[public] = lambda func, args, kwargs: (shown, args, kwargs)


# ---- modes ----

_modes = threading.local()


def _stack():
    stack = getattr(_modes, "stack", None)
    if stack is None:
        stack = _modes.stack = []
    return stack


def _is_torch_function_mode_enabled():
    return bool(_stack()) and _C._is_torch_function_all_enabled()


def _get_current_function_mode():
    stack = _stack()
    return stack[-1] if stack else None


def _get_current_function_mode_stack():
    return list(_stack())


def _len_torch_function_stack():
    return len(_stack())


def _push_mode(mode):
    _stack().append(mode)
    _C._torch_function_mode_count(1)


def _pop_mode():
    stack = _stack()
    if not stack:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = stack.pop()
    _C._torch_function_mode_count(-1)
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily():
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


class TorchFunctionMode:
    """A context manager that sees every pytorchlite call made inside it, tensors of any type:
    override ``__torch_function__(self, func, types, args=(), kwargs=None)``.  While it runs,
    the mode is off (the calls it makes go to the modes below it, or compute)."""

    def __init__(self):
        pass

    def __torch_function__(self, func, types, args=(), kwargs=None):
        raise NotImplementedError

    def __enter__(self):
        _push_mode(self)
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        _pop_mode()


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode that computes every call unchanged (subclass it and call super())."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        return func(*args, **kwargs)
