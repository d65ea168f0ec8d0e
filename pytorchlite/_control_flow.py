"""torch.cond and torch.while_loop in eager mode (torch/_higher_order_ops/cond.py and
while_loop.py).  PyTorch runs a tensor predicate's cond, and every while_loop, through
torch.compile even outside compilation, tracing both branches; here they run as plain Python:
the branch pred chooses, the body while cond_fn holds.  PyTorch's argument checks come first,
with its messages.  What only tracing finds (the untaken branch's outputs differing in
structure from the taken one's) is not checked: the untaken branch never runs."""
from ._C import bool as _BOOL
from ._tensor import Tensor
from .utils import _pytree

__all__ = ["cond", "while_loop"]

# how PyTorch's messages print the tensor class
_TENSOR_CLASS = "<class 'torch.Tensor'>"


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands); pred a Python bool / int / float
    or a one-element tensor."""
    if isinstance(pred, (bool, int, float)):
        return true_fn(*operands) if pred else false_fn(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or _pytree.tree_any(
            lambda t: not isinstance(t, Tensor), operands):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                           f"that only consists of tensor leaves, but got {operands}.")
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def _check_predicate(pred):
    if isinstance(pred, bool) or (isinstance(pred, Tensor) and pred.dim() == 0 and
                                  pred.dtype is _BOOL):
        return
    raise RuntimeError(f"cond_fn must return a boolean scalar tensor or a boolean but got {pred}")


def while_loop(cond_fn, body_fn, carried_inputs):
    """Runs carried = body_fn(*carried) while cond_fn(*carried) is True and returns the last
    carried values (clones of carried_inputs, as a tuple, when the loop never runs)."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    leaves = _pytree.tree_leaves(carried_inputs)
    if not all(isinstance(t, (Tensor, int)) for t in leaves):
        types = ", ".join(_TENSOR_CLASS if isinstance(t, Tensor) else str(type(t))
                          for t in leaves) + ("," if len(leaves) == 1 else "")
        raise AssertionError(f"{leaves} can only be of ({_TENSOR_CLASS}, <class 'int'>, "
                             f"<class 'torch.SymInt'>) but got ({types})")
    if not isinstance(carried_inputs, (tuple, list)):
        kind = _TENSOR_CLASS if isinstance(carried_inputs, Tensor) else type(carried_inputs)
        raise RuntimeError(f"carried_inputs must be a tuple or list but got {kind}")
    should_loop = cond_fn(*carried_inputs)
    _check_predicate(should_loop)
    if not should_loop:
        return tuple(v.clone() if isinstance(v, Tensor) else v for v in carried_inputs)
    carried = carried_inputs
    while should_loop:
        out = body_fn(*carried)
        carried = out if isinstance(out, (tuple, list)) else (out,)
        if len(carried) != len(carried_inputs):
            raise RuntimeError("body_fn should return the same number of elements as "
                               f"carried_inputs, got {len(carried)} vs {len(carried_inputs)}")
        should_loop = cond_fn(*carried)
        _check_predicate(should_loop)
    return out
