"""pytorchlite.ops.<namespace>.<op>.<overload>: every registered operator, by name.

    pytorchlite.ops.aten.add(x, y)            # all overloads of aten::add
    pytorchlite.ops.aten.add.Tensor(x, y)     # one overload
"""
from . import _C


class OpOverloadPacket:
    def __init__(self, qualname):
        self._qualname = qualname
        self._fn = _C._op(qualname)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        fn = _C._op(self._qualname, "" if overload == "default" else overload)
        setattr(self, overload, fn)
        return fn

    def __repr__(self):
        return f"<OpOverloadPacket(op='{self._qualname}')>"


class _OpNamespace:
    def __init__(self, name):
        self._name = name

    def __getattr__(self, op):
        if op.startswith("__"):
            raise AttributeError(op)
        try:
            packet = OpOverloadPacket(f"{self._name}::{op}")
        except AttributeError:
            raise AttributeError(f"'_OpNamespace' '{self._name}' object has no attribute '{op}'")
        setattr(self, op, packet)
        return packet


class _Ops:
    def __getattr__(self, namespace):
        if namespace.startswith("__"):
            raise AttributeError(namespace)
        ns = _OpNamespace(namespace)
        setattr(self, namespace, ns)
        return ns


ops = _Ops()


def forget(qualname):
    """Drops the cached callables of "ns::name[.overload]" (its operator was removed)."""
    ns, _, name = qualname.partition("::")
    namespace = ops.__dict__.get(ns)
    if namespace is not None:
        namespace.__dict__.pop(name.partition(".")[0], None)
