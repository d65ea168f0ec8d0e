"""pytorchlite.library: define operators and register their kernels from Python.

Mirrors torch/library.py and torch/_library/ (custom_ops.py, infer_schema.py, autograd.py).
A kernel goes into the operator's own per-key table in the C dispatcher (Note [Python
kernels] in src/python/library.c), so `pytorchlite.ops.<ns>.<name>` calls take the same route
as built-in operators. What this module keeps in Python is bookkeeping PyTorch also keeps
outside its dispatch tables: where each namespace and operator was defined (for the messages).

Note [Fake kernels]
~~~~~~~~~~~~~~~~~~~
register_fake (and impl(..., "Meta")) registers the function as the operator's kernel for the
Meta dispatch key, through the same Python-kernel trampoline as a CPU kernel: a call whose
tensors are on the meta device runs it, and it returns meta tensors of the outputs' sizes and
dtypes (Note [Meta tensors] in src/c10/device.h). pytorchlite has meta tensors but no
FakeTensor mode, so PyTorch's fake tensors are meta tensors here. opcheck's test_faketensor
runs the operator on meta twins of the sample inputs and compares the outputs' shapes and
dtypes with the real kernel's.
"""
import collections.abc
import inspect
import sys
import types
import typing
import warnings
import weakref

from . import _C, _ops_namespace
from ._tensor import Tensor
from .autograd.function import Function
from .autograd.grad_mode import no_grad

__all__ = ["Library", "define", "impl", "register_autograd", "register_fake", "custom_op",
           "infer_schema", "opcheck", "CustomOpDef"]

_KINDS = ("DEF", "IMPL", "FRAGMENT")
_DEVICE_KEYS = {"cpu": "CPU", "cuda": "CUDA", "meta": "Meta",
                "default": "CompositeExplicitAutograd"}

_namespace_sites = {"aten": "src/aten/ops.def"}   # namespace -> where its DEF library was made
_define_sites = {}                                # "ns::name[.overload]" -> where it was defined
_autograd_impls = {}                              # "ns::name[.overload]" -> its _OpAutograd
_keep_alive = []                                  # the libraries of library.define and friends


def _site():
    """file:line of the first frame outside this module (the user's registration)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}" if frame else "no debug info"


def _qualname(op, ns=None):
    """ "ns::name" or "ns::name.overload" for a name, an op callable or a CustomOpDef."""
    if isinstance(op, CustomOpDef):
        return op._qualname
    if isinstance(op, _ops_namespace.OpOverloadPacket):
        return op._qualname
    if isinstance(op, _ops_namespace.OpOverload):
        return op.name()
    if not isinstance(op, str):
        raise TypeError(f"expected an operator name (str) or a custom op, got {type(op).__name__}")
    if "::" in op or ns is None:
        return op
    return f"{ns}::{op}"


def _schema_of(qualname):
    """The operator's schema; AttributeError as pytorchlite.ops.<ns>.<name> when there is none."""
    schema = _C._dispatch_schema(qualname)
    if schema is None:
        ns, _, name = qualname.partition("::")
        raise AttributeError(f"'_OpNamespace' '{ns}' object has no attribute '{name}'")
    return schema


def _release(defs, registrations, namespace):
    """What Library._destroy (or the garbage collector) undoes, in PyTorch's order."""
    for qualname, key, fn in registrations:
        if _C._dispatch_schema(qualname) is not None:
            _C._dispatch_library_remove(qualname, key, fn)
    registrations.clear()
    for qualname in defs:
        if _C._dispatch_schema(qualname) is not None:
            _C._dispatch_library_undefine(qualname)
        _define_sites.pop(qualname, None)
        _autograd_impls.pop(qualname, None)
        _ops_namespace.forget(qualname)
    defs.clear()
    if namespace is not None:
        _namespace_sites.pop(namespace, None)


class Library:
    """Library(ns, kind): a set of operator definitions ("DEF", "FRAGMENT") or kernels
    ("IMPL", "FRAGMENT") in namespace ns. Its registrations last until _destroy() or until
    the object is garbage-collected."""

    def __init__(self, ns, kind, dispatch_key=""):
        if kind not in _KINDS:
            raise ValueError(f"Unsupported kind: {kind}")
        site = _site()
        if kind == "DEF" and ns in _namespace_sites:
            raise RuntimeError(
                f"Only a single TORCH_LIBRARY can be used to register the namespace {ns}; please "
                "put all of your definitions in a single TORCH_LIBRARY block.  If you were trying "
                "to specify implementations, consider using TORCH_LIBRARY_IMPL (which can be "
                "duplicated).  If you really intended to define operators for a single namespace "
                "in a distributed way, you can use TORCH_LIBRARY_FRAGMENT to explicitly indicate "
                f"this.  Previous registration of TORCH_LIBRARY was registered at "
                f"{_namespace_sites[ns]}; latest registration was registered at {site}")
        if kind == "DEF":
            _namespace_sites[ns] = site
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._site = site
        self._op_defs = set()
        self._registrations = []
        self._finalizer = weakref.finalize(self, _release, self._op_defs, self._registrations,
                                           ns if kind == "DEF" else None)

    def __repr__(self):
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})>"

    def define(self, schema, alias_analysis="", *, tags=()):
        """Defines an operator of this namespace from its schema; returns its name."""
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"Invalid alias_analysis type {alias_analysis}")
        if self.kind == "IMPL":
            raise RuntimeError(f"define() is not allowed in an IMPL library (namespace {self.ns}); "
                               "use a DEF or FRAGMENT library")
        head = schema.split("(", 1)[0]
        text = schema if "::" in head else f"{self.ns}::{schema}"
        canonical = _C._parse_schema(text)
        qualname = canonical.split("(", 1)[0]
        site = _site()
        if _C._dispatch_schema(qualname) is not None:
            raise RuntimeError(
                f"Tried to register an operator ({canonical}) with the same name and overload "
                "name multiple times. Each overload's schema should only be registered with a "
                "single call to def(). Duplicate registration: registered at "
                f"{site}. Original registration: registered at "
                f"{_define_sites.get(qualname, 'no debug info')}")
        name = _C._dispatch_library_define(text)
        self._op_defs.add(qualname)
        _define_sites[qualname] = site
        return name

    def impl(self, op_name, fn, dispatch_key="", *, with_keyset=False):
        """Registers fn as the kernel of op_name for dispatch_key (CPU, CUDA, Autograd,
        CompositeImplicitAutograd, CompositeExplicitAutograd, Meta); with_keyset passes the
        call's DispatchKeySet first. A second kernel for the same key warns and overrides."""
        if not callable(fn):
            raise TypeError(f"Input function is required to be a callable but found type "
                            f"{type(fn)}")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        if isinstance(key, _C.DispatchKey):
            key = key.name
        qualname = _qualname(op_name, self.ns)
        site = _site()
        previous = _C._dispatch_library_impl(qualname, key, fn, with_keyset, site)
        if previous is not None:
            warnings.warn(
                "Warning only once for all operators,  other operators may also be "
                "overridden.\n  Overriding a previously registered kernel for the same "
                "operator and the same dispatch key\n"
                f"  operator: {_C._dispatch_schema(qualname)}\n"
                f"    registered at {_define_sites.get(qualname, 'no debug info')}\n"
                f"  dispatch key: {key}\n"
                f"  previous kernel: registered at {previous}\n"
                f"       new kernel: registered at {site}", UserWarning, stacklevel=2)
        self._registrations.append((qualname, key, fn))

    def _destroy(self):
        self._finalizer()


def _library_for(qualname, lib):
    if lib is not None:
        return lib
    lib = Library(qualname.split("::")[0], "FRAGMENT")
    _keep_alive.append(lib)
    return lib


def define(qualname, schema, *, lib=None, tags=()):
    """define("ns::name", "(Tensor x) -> Tensor"): defines an operator; returns its name."""
    name = qualname.split("::")[1]
    return _library_for(qualname, lib).define(name + schema, tags=tags)


def _keys_for(types_):
    if isinstance(types_, str):
        types_ = (types_,)
    keys = []
    for t in types_:
        t = str(t)
        keys.append(_DEVICE_KEYS.get(t, t))
    return keys


def impl(qualname, types_, func=None, *, lib=None):
    """impl("ns::name", "cpu", fn) registers fn for each device type ("cpu", "cuda", "meta",
    "default" = CompositeExplicitAutograd) or dispatch key name; a decorator without fn."""
    def register(fn):
        _schema_of(qualname)
        target = _library_for(qualname, lib)
        for key in _keys_for(types_):
            target.impl(qualname, fn, key)
        return fn
    return register if func is None else register(func)


def register_fake(op, func=None, /, *, lib=None):
    """Registers the function that computes the outputs' metadata as the operator's Meta
    kernel (Note [Fake kernels])."""
    qualname = _qualname(op)

    def register(fn):
        _schema_of(qualname)
        _library_for(qualname, lib).impl(qualname, fn, "Meta")
        return fn
    return register if func is None else register(func)


class _OpAutograd:
    """The Autograd kernel of one operator: an autograd.Function named as PyTorch names it
    (GeneratedBackwardFor_<ns>_<name>_<overload>), whose forward runs the operator below
    Autograd and whose backward is the registered one."""

    def __init__(self, qualname):
        ns, _, rest = qualname.partition("::")
        name, _, overload = rest.partition(".")
        overload = overload or "default"
        call = _C._op(f"{ns}::{name}", overload if overload != "default" else "")
        kwnames = tuple(n for n, _, kwarg_only in _schema_arguments(_schema_of(qualname))
                        if kwarg_only)
        npos = -len(kwnames) or None
        dotted = f"{ns}.{name}.{overload}"
        self.backward_fn = None
        self.setup_fn = None
        owner = self

        # Function.apply takes every argument positionally (inputs, needs_input_grad and the
        # gradients count them all); the call below splits the keyword-only ones out again
        def forward(*args):
            return call(*args[:npos], **dict(zip(kwnames, args[npos:] if npos else ())))

        def setup_context(ctx, inputs, output):
            if owner.setup_fn is not None:
                owner.setup_fn(ctx, inputs, output)

        def backward(ctx, *grads):
            if owner.backward_fn is None:
                raise RuntimeError(f"Trying to backward through {dotted} but no autograd "
                                   "formula was registered. Please use register_autograd to "
                                   "add one.")
            return owner.backward_fn(ctx, *grads)

        self.function = type(f"GeneratedBackwardFor_{ns}_{name}_{overload}", (Function,),
                             {"forward": staticmethod(forward),
                              "setup_context": staticmethod(setup_context),
                              "backward": staticmethod(backward)})
        apply = self.function.apply

        def autograd_kernel(*args, **kwargs):
            return apply(*args, *kwargs.values())
        self.kernel = autograd_kernel


def _autograd_for(qualname, lib):
    entry = _autograd_impls.get(qualname)
    if entry is None:
        entry = _OpAutograd(qualname)
        lib.impl(qualname, entry.kernel, "Autograd")
        _autograd_impls[qualname] = entry
    return entry


def register_autograd(op, backward, /, *, setup_context=None, lib=None):
    """Registers backward(ctx, *grads) (and setup_context(ctx, inputs, output)) as the
    operator's derivative: its Autograd kernel records a GeneratedBackwardFor_... node."""
    qualname = _qualname(op)
    if any(mutable for _, mutable, _ in _schema_arguments(_schema_of(qualname))):
        raise RuntimeError(f"register_autograd({qualname}): operators that mutate their inputs "
                           "are not supported")
    if isinstance(op, CustomOpDef):
        lib = lib or op._lib
    entry = _autograd_for(qualname, _library_for(qualname, lib))
    entry.backward_fn = backward
    entry.setup_fn = setup_context


# ---- custom_op and schema inference ----

def _annotation_type(annotation, where):
    """The schema type of one parameter's annotation (torch/_library/infer_schema.py)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            inner = _annotation_type(rest[0], where)
            if inner is not None and not inner.endswith("?"):
                return inner + "?"
        return None
    if origin in (list, collections.abc.Sequence, typing.List) and len(args) == 1:
        inner = _annotation_type(args[0], where)
        if inner in ("Tensor", "Tensor?", "SymInt", "float", "bool"):
            return inner + "[]"
        return None
    if origin in (typing.Union, types.UnionType) and set(args) <= {int, float, bool}:
        return "Scalar"
    simple = {Tensor: "Tensor", _C.TensorBase: "Tensor", int: "SymInt", float: "float",
              bool: "bool", str: "str"}
    from . import dtype, device
    simple[dtype] = "ScalarType"
    simple[device] = "Device"
    return simple.get(annotation)


def _default_text(value):
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, float, str)):
        return repr(value) if not isinstance(value, str) else f'"{value}"'
    raise ValueError(f"infer_schema(func): default value {value!r} is not supported")


def infer_schema(prototype_function, /, *, mutates_args, op_name=None):
    """The schema of a function from its type annotations, as torch.library.infer_schema."""
    sig = inspect.signature(prototype_function)
    hints = typing.get_type_hints(prototype_function)

    def error(what):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    if isinstance(mutates_args, str):
        mutable = set() if mutates_args != "unknown" else None
    else:
        mutable = set(mutates_args)
    params, seen_kwonly, alias = [], False, 0
    for name, p in sig.parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            error("We don't support varargs or varkwargs.")
        if p.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        annotation = hints.get(name, p.annotation)
        kind = _annotation_type(annotation, name)
        if kind is None:
            error(f"Parameter {name} has unsupported type {annotation}.")
        if mutable is None or name in mutable:
            if kind.startswith("Tensor"):
                kind = kind.replace("Tensor", f"Tensor(a{alias}!)", 1)
                alias += 1
            elif mutable is not None:
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of "
                      "Tensors can be mutated")
        text = f"{kind} {name}"
        if p.default is not inspect.Parameter.empty:
            text += "=" + _default_text(p.default)
        if p.kind == p.KEYWORD_ONLY and not seen_kwonly:
            params.append("*")
            seen_kwonly = True
        params.append(text)
    if mutable:
        missing = mutable - set(sig.parameters)
        if missing:
            raise ValueError(f"{sorted(missing)} in mutates_args were not found in the custom "
                             f"op's signature. mutates_args should contain the names of all "
                             f"args that the custom op mutates, or just the string 'unknown' if "
                             f"you don't know.")
    if sig.return_annotation is inspect.Signature.empty:
        error("No return type annotation was provided. Please add one.")
    ret = hints.get("return", sig.return_annotation)
    if ret is None or ret is type(None):
        rets = "()"
    elif typing.get_origin(ret) is tuple:
        parts = [_annotation_type(a, "return") for a in typing.get_args(ret)]
        if None in parts:
            error(f"Return has unsupported type {ret}.")
        rets = "(" + ", ".join(parts) + ")"
    else:
        rets = _annotation_type(ret, "return")
        if rets is None:
            error(f"Return has unsupported type {ret}.")
    return f"{op_name or ''}({', '.join(params)}) -> {rets}"


class CustomOpDef:
    """What @custom_op returns: callable as the operator, with register_fake,
    register_autograd and register_kernel."""

    def __init__(self, namespace, name, schema, fn, lib):
        self._namespace = namespace
        self._name = name
        self._qualname = f"{namespace}::{name}"
        self._schema = schema
        self._init_fn = fn
        self._lib = lib
        self._opoverload = _C._op(self._qualname, "")
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def __repr__(self):
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs):
        return self._opoverload(*args, **kwargs)

    def register_kernel(self, device_types, fn=None, /):
        def register(func):
            for key in _keys_for(device_types):
                self._lib.impl(self._name, func, key)
            return func
        return register if fn is None else register(fn)

    def register_fake(self, fn, /):
        return register_fake(self._qualname, fn)

    def register_autograd(self, backward, /, *, setup_context=None):
        register_autograd(self, backward, setup_context=setup_context)


def custom_op(name, fn=None, /, *, mutates_args, device_types=None, schema=None, tags=None):
    """@custom_op("ns::name", mutates_args=()): turns a function into an operator whose schema
    comes from its annotations (or `schema`); the function is its kernel for device_types
    (every device when None)."""
    def wrap(func):
        text = schema if schema is not None else infer_schema(func, mutates_args=mutates_args)
        namespace, opname = name.split("::")
        lib = Library(namespace, "FRAGMENT")
        lib.define(opname + text, tags=tags or ())
        keys = ["CompositeExplicitAutograd"] if device_types is None else _keys_for(device_types)
        for key in keys:
            lib.impl(opname, func, key)
        qualname = f"{namespace}::{opname}"
        _autograd_for(qualname, lib)
        return CustomOpDef(namespace, opname, _C._dispatch_schema(qualname), func, lib)
    return wrap if fn is None else wrap(fn)


# ---- opcheck ----

class OpCheckError(Exception):
    pass


def _flatten_tensors(values):
    out = []
    for v in values:
        if isinstance(v, _C.TensorBase):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(t for t in v if isinstance(t, _C.TensorBase))
    return out


def _as_tuple(result):
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def _schema_arguments(schema):
    """[(name, mutable, kwarg_only)] of the schema's arguments."""
    inner = schema.split("(", 1)[1].rsplit(") ->", 1)[0]
    out, kwarg_only = [], False
    for part in inner.split(", "):
        if part == "*":
            kwarg_only = True
        elif part:
            kind, name = part.split(" ")[:2]
            out.append((name.split("=")[0], "!)" in kind, kwarg_only))
    return out


def _test_schema(qualname, op, args, kwargs):
    schema = _C._dispatch_schema(qualname)
    arguments = _schema_arguments(schema)
    values = list(args) + [kwargs[n] for n, _, _ in arguments[len(args):] if n in kwargs]
    before = []
    for (name, mutable, _), v in zip(arguments, values):
        for t in _flatten_tensors([v]):
            before.append((name, mutable, t, t._version, t.detach().clone()))
    with no_grad():
        result = op(*args, **kwargs)
    for name, mutable, t, version, copy in before:
        changed = not bool((t.detach() == copy).all()) or t._version != version
        if changed and not mutable:
            raise OpCheckError(f"{qualname}: argument {name} is not defined as mutable but was "
                               "mutated")
    inputs = {t.data_ptr() for t in _flatten_tensors(values) if t.numel() > 0}
    for k, out in enumerate(_flatten_tensors(_as_tuple(result))):
        if out.numel() > 0 and out.data_ptr() in inputs:
            raise OpCheckError(f"{qualname}: output {k} aliases an input, which its schema "
                               "does not declare; return a new tensor (e.g. x.clone())")


def _test_autograd_registration(qualname, op, args, kwargs):
    if not any(t.requires_grad for t in _flatten_tensors(list(args) + list(kwargs.values()))):
        return
    has = _C._dispatch_has_kernel_for_dispatch_key
    if has(qualname, "Autograd") or has(qualname, "CompositeImplicitAutograd"):
        return
    raise OpCheckError(
        f"{qualname}: at least one input requires grad but the operator has no autograd "
        "kernel: register one with library.register_autograd (or a "
        "CompositeImplicitAutograd kernel written in terms of differentiable operators)")


def _meta_twin(x):
    """x with every tensor replaced by a meta tensor of its sizes, strides and dtype."""
    if isinstance(x, _C.TensorBase):
        return _C._op("aten::empty_strided")(list(x.shape), list(x.stride()), dtype=x.dtype,
                                             device="meta")
    if isinstance(x, (list, tuple)):
        return type(x)(_meta_twin(y) for y in x)
    return x


def _test_faketensor(qualname, op, args, kwargs):
    has = _C._dispatch_has_kernel_for_dispatch_key
    if not (has(qualname, "Meta") or has(qualname, "CompositeImplicitAutograd")):
        name = qualname.split("::")[1]
        raise OpCheckError(f"There was no fake impl registered for {qualname}. Please use "
                           f"`{name}.register_fake` or library.register_fake to add one.")
    with no_grad():
        real = _as_tuple(op(*args, **kwargs))
        predicted = _as_tuple(op(*_meta_twin(args), **{k: _meta_twin(v)
                                                        for k, v in kwargs.items()}))
    if len(real) != len(predicted):
        raise OpCheckError(f"{qualname}: the fake function returned {len(predicted)} values, "
                           f"the kernel {len(real)}")
    for k, (r, p) in enumerate(zip(real, predicted)):
        if isinstance(r, _C.TensorBase) != isinstance(p, _C.TensorBase):
            raise OpCheckError(f"{qualname}: output {k}: the fake function returned "
                               f"{type(p).__name__}, the kernel {type(r).__name__}")
        if isinstance(r, _C.TensorBase):
            if p.device.type != "meta":
                raise OpCheckError(f"{qualname}: output {k}: the fake function returned a "
                                   f"tensor on {p.device} for meta inputs; it must return meta "
                                   "tensors (e.g. x.new_empty(...))")
            for what in ("shape", "dtype"):
                if getattr(r, what) != getattr(p, what):
                    raise OpCheckError(f"{qualname}: output {k}: the fake function gives "
                                       f"{what} {getattr(p, what)}, the kernel "
                                       f"{getattr(r, what)}")


_OPCHECK_TESTS = {"test_schema": _test_schema,
                  "test_autograd_registration": _test_autograd_registration,
                  "test_faketensor": _test_faketensor}


def opcheck(op, args, kwargs=None, *, test_utils=tuple(_OPCHECK_TESTS), raise_exception=True,
            atol=None, rtol=None):
    """Checks a registered operator on sample inputs: the schema matches what the kernel does
    (test_schema), the autograd registration (test_autograd_registration) and the fake
    function against the kernel (test_faketensor; Note [Fake kernels]). Returns
    {test: "SUCCESS" or the exception}; raises the first failure when raise_exception."""
    kwargs = kwargs or {}
    if isinstance(test_utils, str):
        test_utils = (test_utils,)
    qualname = _qualname(op)
    _schema_of(qualname)
    name, _, overload = qualname.partition(".")
    call = _C._op(name, overload)
    results = {}
    for name in test_utils:
        if name not in _OPCHECK_TESTS:
            raise ValueError(f"test_utils: {name} is not one of {tuple(_OPCHECK_TESTS)}")
        try:
            _OPCHECK_TESTS[name](qualname, call, args, kwargs)
            results[name] = "SUCCESS"
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {name} failed with {e} (scroll up for "
                                   "stack trace)") from e
            results[name] = e
    return results
