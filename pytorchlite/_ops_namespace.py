"""pytorchlite.ops.<namespace>.<op>.<overload>: every registered operator, by name.

    pytorchlite.ops.aten.add(x, y)            # all overloads of aten::add
    pytorchlite.ops.aten.add.Tensor(x, y)     # one overload (an OpOverload)
"""
from . import _C


def _split_top_level(text):
    """text split at the commas outside brackets (a default such as [1, 1] stays whole)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return parts + [tail] if tail else parts


class Argument:
    """One argument or return of a FunctionSchema: name, type (as spelled), kwarg_only,
    is_write (Tensor(a!)) and default_value (its text, or None)."""

    def __init__(self, text, kwarg_only):
        decl, _, default = text.partition("=")
        type_, _, name = decl.strip().rpartition(" ")
        if not type_:
            type_, name = name, ""
        self.name, self.type, self.kwarg_only = name, type_, kwarg_only
        self.is_write = "!" in type_
        self.default_value = default.strip() or None

    def __repr__(self):
        return f"{self.type} {self.name}".strip()


class FunctionSchema:
    """An operator's schema (torch._C.FunctionSchema): str() is its canonical text."""

    def __init__(self, text):
        self._text = text
        head, _, rets = text.rpartition(" -> ")
        qual, _, args = head.partition("(")
        name, _, self.overload_name = qual.partition(".")
        self.name = name
        self.arguments, kwarg_only = [], False
        for part in _split_top_level(args[:-1]):
            if part == "*":
                kwarg_only = True
                continue
            self.arguments.append(Argument(part, kwarg_only))
        rets = rets[1:-1] if rets.startswith("(") else rets
        self.returns = [Argument(r, False) for r in _split_top_level(rets)]

    def __str__(self):
        return self._text

    def __repr__(self):
        return self._text


class _CachedNamespace:
    """The one attribute cache of the ops namespaces: an attribute is made on first use
    (_make_attribute) and kept in the instance's __dict__, so that later lookups find it
    without __getattr__; _forget drops it (its operator was removed)."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._make_attribute(name)
        setattr(self, name, value)
        return value

    def _forget(self, name):
        self.__dict__.pop(name, None)


class OpOverload:
    """One overload of an operator (torch._ops.OpOverload): callable, and what a dispatch
    mode's __torch_dispatch__ receives as func.  str() is PyTorch's "aten.add.Tensor"."""

    def __init__(self, packet, overload, fn):
        self.overloadpacket = packet
        self._overloadname = overload
        self._op = fn
        self.__name__ = f"{packet.__name__}.{overload}"
        self._schema_cache = None

    def __call__(self, /, *args, **kwargs):
        return self._op(*args, **kwargs)

    def __getattr__(self, name):
        """The rest (_schemas, __doc__ ...) is the callable's."""
        if name == "_op":
            raise AttributeError(name)
        return getattr(self._op, name)

    def name(self):
        """ "aten::add.Tensor", or "aten::sum" for a default overload."""
        suffix = "" if self._overloadname == "default" else f".{self._overloadname}"
        return self.overloadpacket._qualname + suffix

    @property
    def namespace(self):
        return self.overloadpacket._qualname.partition("::")[0]

    @property
    def _opname(self):
        return self.overloadpacket.__name__

    @property
    def _schema(self):
        if self._schema_cache is None:
            self._schema_cache = FunctionSchema(_C._dispatch_schema(self.name()))
        return self._schema_cache

    def __str__(self):
        return f"{self.namespace}.{self.__name__}"

    def __repr__(self):
        return (f"<OpOverload(op='{self.namespace}.{self._opname}', "
                f"overload='{self._overloadname}')>")


class OpOverloadPacket(_CachedNamespace):
    def __init__(self, qualname):
        self._qualname = qualname
        self._fn = _C._op(qualname, None, True)
        self.__name__ = qualname.partition("::")[2]

    def __call__(self, /, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def _make_attribute(self, overload):
        fn = _C._op(self._qualname, "" if overload == "default" else overload, True)
        return OpOverload(self, overload, fn)

    def __str__(self):
        return self._qualname.replace("::", ".")

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self}')>"


class _OpNamespace(_CachedNamespace):
    def __init__(self, name):
        self._name = name

    def _make_attribute(self, op):
        try:
            return OpOverloadPacket(f"{self._name}::{op}")
        except AttributeError:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{op}'")


class _Ops(_CachedNamespace):
    def _make_attribute(self, namespace):
        return _OpNamespace(namespace)


ops = _Ops()


class _BindingNamespace(_CachedNamespace):
    """aten's operators as the Python bindings call them (torch.nn.functional's `aten`): a bad
    argument is the binding's TypeError in its words ("elu_(): argument 'input' (position 1)
    must be Tensor, not int"), as PyTorch's C functions raise, where torch.ops' packets raise
    torch.ops' RuntimeError (Note [Boxed call messages])."""

    def _make_attribute(self, op):
        return _C._op(f"aten::{op}")


aten_bindings = _BindingNamespace()


def forget(qualname):
    """Drops the cached callables of "ns::name[.overload]" (its operator was removed)."""
    ns, _, name = qualname.partition("::")
    namespace = ops.__dict__.get(ns)
    if namespace is not None:
        namespace._forget(name.partition(".")[0])
    if ns == "aten":
        aten_bindings._forget(name.partition(".")[0])


def overload(qualname):
    """The OpOverload of "ns::name" or "ns::name.overload" (the one without an overload name
    is .default)."""
    ns, _, name = qualname.partition("::")
    op, _, over = name.partition(".")
    return getattr(getattr(getattr(ops, ns), op), over or "default")
