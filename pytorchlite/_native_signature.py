"""PyTorch's argument checks for the functions written in Python here whose PyTorch twin is a
native function (Note [Native signatures] in src/python/arg_parse.c).

    @native
    def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None): ...

checks each call against PyTorch's schemas of aten::addbmm (pytorchlite/_native_schemas.py,
by the function's name): a call that none of them accepts raises the TypeError PyTorch's
argument parser gives ("addbmm(): argument 'batch1' (position 2) must be Tensor, not str")
before the body runs; an accepted call runs the body with its own arguments.  The schemas are
defined, without kernels, in the `native_signature` operator namespace on the first call."""
import functools

from . import _C
from ._native_schemas import SCHEMAS

_NAMESPACE = "native_signature"


def _checker(schemas):
    """The _C._signature checker of schemas, defining those not yet defined."""
    qualname = None
    for schema in schemas:
        text = f"{_NAMESPACE}::{schema}"
        canonical = _C._parse_schema(text)
        head = canonical.split("(", 1)[0]
        qualname = head.split(".", 1)[0]
        if _C._dispatch_schema(head) is None:
            _C._dispatch_library_define(text)
    return _C._signature(qualname)


def native(fn):
    """Decorator: checks each call of fn against PyTorch's schemas of its native twin, the
    aten operator of fn's name (every overload), before running it."""
    schemas = SCHEMAS[fn.__name__]
    check = None

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        nonlocal check
        if check is None:
            check = _checker(schemas)
        if kwargs:
            check(*args, **kwargs)
        else:
            check(*args)
        return fn(*args, **kwargs)
    return checked
