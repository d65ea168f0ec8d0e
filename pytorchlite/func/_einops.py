"""torch.func.rearrange: einops-style reordering of a tensor's dimensions by a pattern
(functorch/einops in PyTorch).

Note [rearrange as reshape, permute, reshape]
A pattern "b (h h1) w -> b h (w h1)" names the *elementary* axes of the input (b, h, h1, w):
each parenthesised group of the left side is one input dimension split into its axes.  The
rearrangement is three ordinary view-or-copy steps:
1. reshape the input to the sizes of its elementary axes (the ellipsis stands for the input
   dimensions it covers; a top-level "1" is an axis that must have size 1 and is dropped),
2. permute the elementary axes into the order the right side lists them,
3. reshape to the right side's groups (the product of each group; a top-level "1" or "()"
   adds a dimension of size 1).
The sizes of the elementary axes come from the input's shape and from axes_lengths; at most
one axis per group may be left to infer.  So the result is a view whenever reshape can make
one, and autograd, dtypes and devices need nothing of their own here.
Errors in the pattern are PyTorch's (its parser is einops's, the messages are copied).  Where
the sizes do not fit, PyTorch's first-class dimensions raise their own DimensionBindError,
ZeroDivisionError, or sum a top-level "1" axis of another size away (an accident of its
implementation); here that is a ValueError with einops's messages ("Shape mismatch, ..."),
a pattern of one group on the left ("(a b) -> a b"), which PyTorch's code generation
turns into two indices and refuses, works, and a 0-dim input gets the axes the right side
adds (" -> 1" gives shape (1,); PyTorch returns the 0-dim input unchanged).
"""
import keyword
import warnings

_ELLIPSIS = "\u2026"   # one character stands for "..." while parsing, as in einops


class _Expression:
    """One side of a pattern: `groups` is a list whose items are the ellipsis marker or a
    list of axis names (an empty list is a top-level anonymous axis of length 1)."""

    def __init__(self, text):
        self.has_ellipsis = False
        self.ellipsis_parenthesized = False
        self.identifiers = set()
        self.non_unitary_anonymous = False
        self.groups = []
        if "." in text:
            if "..." not in text:
                raise ValueError("Expression may contain dots only inside ellipsis (...)")
            if text.count("...") != 1 or text.count(".") != 3:
                raise ValueError("Expression may contain dots only inside ellipsis (...); "
                                 "only one ellipsis for tensor ")
            text = text.replace("...", _ELLIPSIS)
            self.has_ellipsis = True
        self._bracket = None
        word = None
        for char in text:
            if char in "() ":
                if word is not None:
                    self._add(word)
                word = None
                if char == "(":
                    if self._bracket is not None:
                        raise ValueError("Axis composition is one-level (brackets inside "
                                         "brackets not allowed)")
                    self._bracket = []
                elif char == ")":
                    if self._bracket is None:
                        raise ValueError("Brackets are not balanced")
                    self.groups.append(self._bracket)
                    self._bracket = None
            elif char.isalnum() or char in ("_", _ELLIPSIS):
                word = char if word is None else word + char
            else:
                raise ValueError(f"Unknown character '{char}'")
        if self._bracket is not None:
            raise ValueError(f"Imbalanced parentheses in expression: '{text}'")
        if word is not None:
            self._add(word)

    def _add(self, name):
        if name in self.identifiers:
            raise ValueError(f"Indexing expression contains duplicate dimension '{name}'")
        if name == _ELLIPSIS:
            self.identifiers.add(_ELLIPSIS)
            if self._bracket is None:
                self.groups.append(_ELLIPSIS)
            else:
                self._bracket.append(_ELLIPSIS)
                self.ellipsis_parenthesized = True
            return
        if name.isdecimal():
            value = int(name)
            if value == 1:
                if self._bracket is None:
                    self.groups.append([])
                return
            if value < 1:
                raise ValueError(f"Anonymous axis should have positive length, not {value}")
            self.non_unitary_anonymous = True
            name = _Anonymous(value)
        else:
            _check_axis_name(name)
        self.identifiers.add(name)
        if self._bracket is None:
            self.groups.append([name])
        else:
            self._bracket.append(name)


class _Anonymous:
    """A numbered axis other than 1 (rearrange refuses them once both sides are parsed);
    two of them never compare equal, as in einops."""

    def __init__(self, value):
        self.value = value


def _check_axis_name(name):
    if not name.isidentifier():
        reason = "not a valid python identifier"
    elif name[0] == "_" or name[-1] == "_":
        reason = "axis name should should not start or end with underscore"
    else:
        if keyword.iskeyword(name):
            warnings.warn(f"It is discouraged to use axes names that are keywords: {name}",
                          RuntimeWarning, stacklevel=6)
        if name == "axis":
            warnings.warn("It is discouraged to use 'axis' as an axis name and will raise an "
                          "error in future", FutureWarning, stacklevel=6)
        return
    raise ValueError(f"Invalid axis identifier: {name}\n{reason}")


def _parse(pattern, axes_lengths):
    try:
        left_text, right_text = pattern.split("->")
    except ValueError:
        raise ValueError("Pattern must contain a single '->' separator") from None
    if _ELLIPSIS in axes_lengths:
        raise ValueError(f"'{_ELLIPSIS}' is not an allowed axis identifier")
    left, right = _Expression(left_text), _Expression(right_text)
    if not left.has_ellipsis and right.has_ellipsis:
        raise ValueError(f"Ellipsis found in right side, but not left side of a pattern "
                         f"{pattern}")
    if left.has_ellipsis and left.ellipsis_parenthesized:
        raise ValueError(f"Ellipsis is parenthesis in the left side is not allowed: {pattern}")
    for length in axes_lengths.values():
        if type(length) is not int:
            raise TypeError(f"rearrange axis lengths must be integers, got: {type(length)}")
    if left.non_unitary_anonymous or right.non_unitary_anonymous:
        raise ValueError("rearrange only supports unnamed axes of size 1")
    difference = left.identifiers ^ right.identifiers
    if difference:
        raise ValueError("Identifiers only on one side of rearrange expression (should be on "
                         f"both): {difference}")
    unmatched = axes_lengths.keys() - left.identifiers
    if unmatched:
        raise ValueError(f"Identifiers not found in rearrange expression: {unmatched}")
    return left, right


def _ellipsis_count(left, ndim):
    anonymous = sum(1 for g in left.groups if not g)
    if left.has_ellipsis:
        named = len(left.identifiers) - 1
        if anonymous + named > ndim:
            raise ValueError(f"Number of dimensions in pattern ({anonymous + named}) must be "
                             "less than or equal to the number of dimensions in the tensor "
                             f"({ndim})")
        return ndim - (len(left.groups) - 1)
    if len(left.groups) != ndim:
        raise ValueError(f"Number of dimensions in pattern ({len(left.groups)}) must be equal "
                         f"to the number of dimensions in the tensor ({ndim})")
    return 0


def _group_sizes(names, length, axes_lengths, sizes):
    """Sizes of the axes of one input dimension of `length` into `sizes` (name -> size)."""
    known = 1
    unknown = []
    for name in names:
        if name in axes_lengths:
            if axes_lengths[name] < 0:
                raise ValueError(f"rearrange axis lengths must be non-negative, got: {name}="
                                 f"{axes_lengths[name]}")
            known *= axes_lengths[name]
        else:
            unknown.append(name)
    if len(unknown) > 1:
        raise ValueError(f"Could not infer sizes for {set(unknown)}")
    if not unknown and known != length:
        raise ValueError(f"Shape mismatch, {length} != {known}")
    if unknown and (known == 0 or length % known != 0):
        raise ValueError(f"Shape mismatch, can't divide axis of length {length} in chunks of "
                         f"{known}")
    for name in names:
        sizes[name] = axes_lengths[name] if name in axes_lengths else length // known


def rearrange(tensor, pattern, **axes_lengths):
    """Reorders, splits, merges, adds and removes dimensions as the einops pattern says
    (see Note [rearrange as reshape, permute, reshape]); a list or tuple of tensors is
    stacked along a new first dimension first."""
    from .. import stack
    if isinstance(tensor, (list, tuple)):
        tensor = stack(tensor)
    left, right = _parse(pattern, axes_lengths)
    n_ellipsis = _ellipsis_count(left, tensor.dim())
    ellipsis_axes = [(_ELLIPSIS, i) for i in range(n_ellipsis)]
    sizes, order, dim = {}, [], 0
    for group in left.groups:
        if group == _ELLIPSIS:
            for axis in ellipsis_axes:
                sizes[axis] = tensor.shape[dim]
                order.append(axis)
                dim += 1
            continue
        length = tensor.shape[dim]
        dim += 1
        if not group:
            if length != 1:
                raise ValueError(f"Shape mismatch, {length} != 1")
            continue
        _group_sizes(group, length, axes_lengths, sizes)
        order.extend(group)
    tensor = tensor.reshape([sizes[a] for a in order])

    def expand(group):
        return ellipsis_axes if group == _ELLIPSIS else [
            a for name in group for a in (ellipsis_axes if name == _ELLIPSIS else [name])]

    right_order = [a for g in right.groups for a in expand(g)]
    tensor = tensor.permute([order.index(a) for a in right_order])
    shape = []
    for group in right.groups:
        if group == _ELLIPSIS:
            shape.extend(sizes[a] for a in ellipsis_axes)
            continue
        product = 1
        for a in expand(group):
            product *= sizes[a]
        shape.append(product)
    return tensor.reshape(shape)
