"""The schema-driven functions: one per operator name of src/aten/ops.def (flag F).

They are C objects (see src/python/arg_parse.c, Note [Binding from schemas]); this module
only exposes them under their PyTorch names, and under the alias names PyTorch gives some of
them (native_functions.yaml's "alias for" entries: torch.divide is torch.div)."""
from . import _C
from ._native_signature import native
from ._out_arguments import check_result_cast as _check_result_cast
from ._out_arguments import write_same_dtype as _write_out  # noqa: F401  (composites' out=)

# alias -> operator, ORDER: none.  PyTorch's aliases are CompositeImplicitAutograd kernels that
# call the operator, so binding the operator's own function and methods under the alias gives
# the same results, gradients (with the operator's grad_fn) and errors.
_ALIASES = {
    "divide": "div", "true_divide": "div", "multiply": "mul", "subtract": "sub",
    "negative": "neg", "absolute": "abs", "fix": "trunc",
    "not_equal": "ne", "greater": "gt", "greater_equal": "ge", "less": "lt",
    "less_equal": "le", "arccos": "acos", "arcsin": "asin", "arctan": "atan",
    "arccosh": "acosh", "arcsinh": "asinh", "arctanh": "atanh",
    "arctan2": "atan2", "concatenate": "cat", "row_stack": "vstack", "ger": "outer",
}
# Which aliases PyTorch has as functions only, and which as methods without an in-place form;
# every other alias is a function, a Tensor method and an in-place method.
_FUNCTION_ONLY_ALIASES = ("concatenate", "row_stack")
_NO_IN_PLACE_ALIASES = ("ger",)

# the in-place forms PyTorch has as functions too (torch.arccos_, torch.negative_, ...)
_IN_PLACE_ALIASES = {alias + "_": _C._functions[op + "_"] for alias, op in _ALIASES.items()
                     if op + "_" in _C._functions and alias not in _FUNCTION_ONLY_ALIASES
                     and alias not in _NO_IN_PLACE_ALIASES}

__all__ = sorted(list(_C._functions) + list(_ALIASES) + list(_IN_PLACE_ALIASES))
globals().update(_C._functions)
globals().update({alias: _C._functions[op] for alias, op in _ALIASES.items()})
globals().update(_IN_PLACE_ALIASES)


def _install(tensor_class):
    """Binds the alias methods (and their in-place forms) to the operators' methods."""
    for alias, op in _ALIASES.items():
        if alias in _FUNCTION_ONLY_ALIASES:
            continue
        setattr(tensor_class, alias, getattr(tensor_class, op))
        if alias not in _NO_IN_PLACE_ALIASES:
            setattr(tensor_class, alias + "_", getattr(tensor_class, op + "_"))


def _in_place(fn):
    """The in-place method self.NAME_(...) of a composite NAME(self, ...): the composite's
    result copied into self, which must be able to hold its dtype (PyTorch's "result type"
    error otherwise).  When self requires grad, the composite runs on a clone: it may save
    its input for backward, and the copy_ into self would leave that saved tensor modified."""
    def method(self, *args, **kwargs):
        result = fn(self.clone() if self.requires_grad else self, *args, **kwargs)
        _check_result_cast(result.dtype, self.dtype)
        return self.copy_(result)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place {fn.__name__}."
    return method


def _method_function(name):
    """torch.NAME(input, ...) for a Tensor method NAME that has no operator of its own
    (torch.ldexp_, torch.clamp_min_: PyTorch has both forms)."""
    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    function.__name__ = name
    function.__doc__ = f"input.{name}(...)"
    return native(function)
