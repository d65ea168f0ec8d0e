"""PyTorch's argument checks for the functions written in Python here whose PyTorch twin is a
native function (Note [Native signatures] in src/python/arg_parse.c).

    @native
    def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None): ...

checks each call against PyTorch's schemas of aten::addbmm (pytorchlite/_native_schemas.py,
by the function's name, or by the name given: native(fn, "linalg_svd")): a call that none of
them accepts raises the TypeError PyTorch's argument parser gives ("addbmm(): argument
'batch1' (position 2) must be Tensor, not str") before the body runs; an accepted call runs
the body with its own arguments.  native_fault(name, ...) runs the same check where a
composite chooses to (Note [Native signatures of composites]).  The schemas are defined,
without kernels, in the `native_signature` operator namespace on the first check."""
import functools
import inspect
import re

from . import _C
from ._native_schemas import SCHEMAS

_NAMESPACE = "native_signature"
_OUT = re.compile(r"Tensor\(a!\)(\[\])? out\)")
_checks = {}


def _checker(schemas, method=False):
    """The _C._signature checker of schemas, defining those not yet defined (method: of the
    Tensor method, self first and not counted in positions)."""
    qualname = None
    for schema in schemas:
        text = f"{_NAMESPACE}::{schema}"
        canonical = _C._parse_schema(text)
        head = canonical.split("(", 1)[0]
        qualname = head.split(".", 1)[0]
        if _C._dispatch_schema(head) is None:
            _C._dispatch_library_define(text)
    return _C._signature(qualname, method)


def checker(name, method=False):
    """The checker of the native function `name` (a key of SCHEMAS; method: of its Tensor
    method), made once."""
    check = _checks.get((name, method))
    if check is None:
        check = _checks[name, method] = _checker(SCHEMAS[name], method)
    return check


# PyTorch's messages for an out= of another dtype than the result's where they are not the
# common one (_out_arguments.SAME_DTYPE), as templates of _out_arguments.strict_message
_OUT_DTYPE_MESSAGES = {
    "nonzero": "nonzero: Expected out tensor to have scalar type {result} but got scalar "
               "type{out}",
    "narrow_copy": "Expected self.dtype() == output.dtype() to be true, but got false.  (Could "
                   "this error message be improved?  If so, please report an enhancement "
                   "request to PyTorch.)",
    "linalg_matrix_norm": "linalg.matrix_norm expected out tensor dtype {result} but got: {out}",
    "linalg_norm": "linalg.norm expected out tensor dtype {result} but got: {out}",
}


def native(fn, name=None, method=False):
    """Decorator: checks each call of fn against PyTorch's schemas of its native twin, the
    aten operator `name` (fn's name by default; every overload), before running it; method:
    fn is the Tensor method (self first; PyTorch's messages count positions without it).  Where
    fn has no out parameter and the twin has an out= overload, the wrapper gives it one:
    fn's result written into out (_out_arguments.write_same_dtype: resized, the dtype checked,
    with PyTorch's message for that function)."""
    name = fn.__name__ if name is None else name
    if name not in SCHEMAS:
        raise KeyError(f"no schemas of aten::{name}: run tools/native_schemas.py {name}")
    writes_out = "out" not in inspect.signature(fn).parameters and \
        any(_OUT.search(schema) for schema in SCHEMAS[name])
    check = None

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        nonlocal check
        if check is None:
            check = checker(name, method)
        if not kwargs:
            check(*args)
            return fn(*args)
        check(*args, **kwargs)
        if writes_out and "out" in kwargs:
            from ._out_arguments import SAME_DTYPE, write_same_dtype as _write_out
            out = kwargs.pop("out")
            return _write_out(fn(*args, **kwargs), out, _OUT_DTYPE_MESSAGES.get(name, SAME_DTYPE))
        return fn(*args, **kwargs)
    checked.native_name = name   # kept by the route wrapper (functools.update_wrapper)
    return checked


def native_prefixed(prefix):
    """The decorator @native under the aten name prefix + the function's name, as the
    functions of torch.linalg (prefix "linalg_"), torch.special and torch.fft are named."""
    return lambda fn: native(fn, prefix + fn.__name__)


# Note [Native signatures of composites]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Many functions written here in Python are native functions in PyTorch (conv2d, avg_pool1d,
# cross_entropy_loss, ...): PyTorch's argument parser refuses a call whose arguments fit none
# of their signatures before anything runs, with a TypeError that names the function and the
# fault ("conv1d() received an invalid combination of arguments - ...").  native_fault gives
# that TypeError with the checker of Note [Native signatures] (src/python/arg_parse.c): the
# schemas of SCHEMAS declared once as operators without kernels, and the bindings' parser run
# over them (src/python/arg_errors.c, Note [Bad call messages]).  The nn.functional
# composites call it where they fail (an exception of their own) or where a cheap check finds
# a type their body would take, so that a good call pays nothing for it; the torch
# namespace's composites (and torch.linalg's, torch.special's, torch.fft's) check every call
# (@native).

def _is_default(value, default):
    return value is default or (type(value) is type(default) and value == default)


def native_fault(name, *args, defaults=(), **kwargs):
    """Raises PyTorch's parser TypeError when args and kwargs fit none of the schemas of the
    native function `name` (a key of SCHEMAS); returns when they fit one.  defaults: those
    of the last parameters of the Python function, whose trailing arguments equal to them are
    left out, as a call that did not give them (PyTorch's message lists the arguments
    given)."""
    args = list(args)
    for default in reversed(defaults):
        if not args or not _is_default(args[-1], default):
            break
        args.pop()
    checker(name)(*args, **kwargs)
