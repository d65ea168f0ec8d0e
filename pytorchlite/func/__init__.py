"""torch.func: function transforms (grad, vjp, jvp, jacrev, jacfwd, hessian, vmap) and
functional_call over pytorchlite's eager autograd.

Note [Function transforms over eager autograd]
PyTorch's torch.func (functorch) wraps tensors in per-transform levels and batches operators
with batching rules.  Here each transform is built from the eager autograd engine:
- grad / vjp / jacrev run the function on inputs that require grad (a detached leaf, or a
  view of the input when it already requires grad, so that an outer transform or ordinary
  autograd differentiates through the result) and call autograd.grad with create_graph
  while grad mode is on, which is what lets grad(grad(f)) and hessian compose.  A result that
  depends only on the leaves a transform made is returned detached (requires_grad False), as
  PyTorch's; one that depends on anything else that requires grad (a closure's parameters, an
  outer transform's input) stays differentiable.
- jvp / jacfwd / linearize get forward-mode values from two reverse passes (the jvp is the
  vjp of the vjp, which is linear in its cotangent), so they need the function's backward to
  be differentiable, which every derivative formula here is (a custom Function's jvp stands
  in for its backward there: Note [Custom Functions under torch.func]).
- vmap calls the function once per index of the mapped dimension and stacks the results: the
  values are the batched ones, for any function.  What differs from PyTorch's batching: a
  function may call .item() or branch on a value (PyTorch raises), an in-place update of an
  unmapped tensor by a mapped one is applied once per sample (PyTorch raises), and an output
  with out_dims=None is refused only when it differs between samples.  randomness="error"
  compares the default generator's state around each call; "same" restores it before each.
  A mapped dimension of size 0 calls the function once on zeros to learn the output shapes.
- jacfwd is forward mode: one first pass (create_graph, a dummy cotangent per output) and one
  second pass per input element, each giving a column of the Jacobian.

Note [Custom Functions under torch.func]
While a transform's function runs (autograd.function._transform), a custom Function must use
the setup_context style, and under vmap (and jacfwd, which is vmap over jvp in PyTorch) it
must have a vmap staticmethod or generate_vmap_rule = True, else apply raises PyTorch's
errors.  grad / vjp / jacrev use the Function's backward; jvp / jacfwd / linearize / hessian's
forward half use its jvp (Note [Custom Function jvp over the double vjp]).  Under vmap,
generate_vmap_rule = True is the per-sample call that vmap makes anyway; a vmap staticmethod
is called once per sample, with every tensor argument as a batch of one at dimension 0
(in_dims 0, info.batch_size 1; PyTorch calls it once, with the whole batch and in_dims None
for unbatched arguments), and the sample is taken back out of its outputs at out_dims.
"""
import functools

from .. import _C, autograd, equal, ones_like, stack, zeros, zeros_like
from .._tensor import Tensor
from ..autograd.function import _tangent_pass, _tangent_sources, _transform
from ..autograd.grad_mode import enable_grad
from ._einops import rearrange

# ---- pytrees: tuples, lists, dicts and namedtuples of leaves ----


def _flatten(obj, leaves):
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return ("namedtuple", type(obj), [_flatten(o, leaves) for o in obj])
    if isinstance(obj, (tuple, list)):
        return (type(obj), None, [_flatten(o, leaves) for o in obj])
    if isinstance(obj, dict):
        return (dict, list(obj), [_flatten(v, leaves) for v in obj.values()])
    leaves.append(obj)
    return None


def _unflatten(spec, it):
    if spec is None:
        return next(it)
    kind, extra, children = spec
    items = [_unflatten(c, it) for c in children]
    if kind == "namedtuple":
        return extra(*items)
    if kind is dict:
        return dict(zip(extra, items))
    return kind(items)


def _tree_leaves(obj):
    leaves = []
    spec = _flatten(obj, leaves)
    return leaves, spec


def _broadcast(prefix, spec, out, what):
    """Spreads a prefix tree (an int/None at a node covers the node's leaves) over spec."""
    if prefix is None or isinstance(prefix, int):
        n = [0]

        def count(s):
            if s is None:
                n[0] += 1
            else:
                for c in s[2]:
                    count(c)
        count(spec)
        out.extend([prefix] * n[0])
        return
    if spec is None:
        raise ValueError(what)
    kind, extra, children = spec
    if kind is dict:
        if not isinstance(prefix, dict) or set(prefix) != set(extra):
            raise ValueError(what)
        for key, c in zip(extra, children):
            _broadcast(prefix[key], c, out, what)
        return
    if not isinstance(prefix, (tuple, list)) or len(prefix) != len(children):
        raise ValueError(what)
    for p, c in zip(prefix, children):
        _broadcast(p, c, out, what)


# ---- the leaves a transform differentiates ----

def _enter(values):
    """Each tensor leaf of values made to require grad: a view of it when it already does
    (an outer level differentiates through it), else a detached leaf.  Returns the new tree,
    its tensor leaves and the ids of the leaves made here."""
    leaves, spec = _tree_leaves(values)
    made, new = set(), []
    for t in leaves:
        if isinstance(t, Tensor):
            if t.requires_grad:
                t = t.view_as(t)
            else:
                t = t.detach().requires_grad_()
                made.add(id(t))
        new.append(t)
    return _unflatten(spec, iter(new)), [t for t in new if isinstance(t, Tensor)], made


def _reaches_other_leaf(t, made):
    """Whether t's graph reaches a tensor that requires grad other than the leaves in made."""
    fn = t.grad_fn
    if fn is None:
        return t.requires_grad and id(t) not in made
    seen, stack = {}, [fn]   # seen holds the node objects: their ids stay unique
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen[id(node)] = node
        var = getattr(node, "variable", None)
        if var is not None and id(var) not in made:
            return True
        stack.extend(f for f, _ in node.next_functions)
    return False


def _leave(obj, made, outer):
    """A transform's results: detached unless they still depend on something outside."""
    def one(t):
        if not isinstance(t, Tensor) or not t.requires_grad:
            return t
        return t if outer and _reaches_other_leaf(t, made) else t.detach()
    leaves, spec = _tree_leaves(obj)
    return _unflatten(spec, iter([one(t) for t in leaves]))


def _vjp(outputs, inputs, cotangents, create_graph):
    """autograd.grad with unused inputs (and outputs that need no grad) giving zeros."""
    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs or not inputs:
        return [zeros_like(x) for x in inputs]
    grads = autograd.grad([o for o, _ in pairs], inputs, [c for _, c in pairs],
                          retain_graph=True, create_graph=create_graph, allow_unused=True)
    return [zeros_like(x) if g is None else g for g, x in zip(grads, inputs)]


def _tangent_graph(outputs, inputs):
    """Forward mode's first pass: a dummy cotangent per output, and the inputs' gradients as
    functions of them; differentiating those w.r.t. the dummies along tangents gives J t."""
    dummies = [zeros_like(o).requires_grad_() for o in outputs]
    with _tangent_pass():
        return dummies, _vjp(outputs, inputs, dummies, create_graph=True)


def _argnums(argnums, nargs):
    if isinstance(argnums, tuple):
        if not argnums:
            raise RuntimeError("argnums must be non-empty")
        nums = argnums
    else:
        nums = (argnums,)
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool):
            raise RuntimeError(f"argnum must be int, got: {type(n)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnum={n}, but only {nargs} positional inputs")
    nums = tuple(n % nargs for n in nums)
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums must be unique, got {argnums}")
    return nums


def _split_aux(out, has_aux, api):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{api}(f)(*args): output of function f should be a tuple: "
                           "(output, aux) if has_aux is True")
    return out


def _call_on_diff_args(func, args, kwargs, argnums, forward=None):
    """Runs func with args[argnums] replaced by leaves that require grad; forward: None for
    reverse mode, else the randomness of forward mode's vmap (Note [Custom Functions under
    torch.func])."""
    nums = _argnums(argnums, len(args))
    diff, inputs, made = _enter(tuple(args[i] for i in nums))
    call_args = list(args)
    for i, v in zip(nums, diff):
        call_args[i] = v
    with _transform(forward), _tangent_sources(inputs if forward else ()):
        out = func(*call_args, **kwargs)
    return out, diff, inputs, made


def _per_argnum(argnums, diff, flat_grads):
    """Grads (flat, in diff's leaf order) rebuilt into diff's structure, one per argnum."""
    it = iter(flat_grads)
    per = []
    for d in diff:
        leaves, spec = _tree_leaves(d)
        per.append(_unflatten(spec, iter([next(it) if isinstance(x, Tensor) else x
                                          for x in leaves])))
    return tuple(per) if isinstance(argnums, tuple) else per[0]


# ---- grad, vjp, jvp, jacobians ----

def grad_and_value(func, argnums=0, has_aux=False):
    """Returns a function computing (gradient of func w.r.t. args[argnums], func's value);
    func must return a scalar tensor (and aux when has_aux)."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = _C.is_grad_enabled()
        with enable_grad():
            out, diff, inputs, made = _call_on_diff_args(func, args, kwargs, argnums)
            out, aux = _split_aux(out, has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"scalar Tensor, got tensor with {out.dim()} dims. Maybe you "
                                   "wanted to use the vjp or jacrev APIs instead?")
            grads = _vjp([out], inputs, [ones_like(out)], create_graph=outer)
        grads = _leave(_per_argnum(argnums, diff, grads), made, outer)
        value = _leave(out, made, outer)
        if has_aux:
            return grads, (value, _leave(aux, made, outer))
        return grads, value
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """Returns a function computing the gradient of func (a scalar) w.r.t. args[argnums]."""
    both = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) gives the cotangents of primals."""
    outer = _C.is_grad_enabled()
    with enable_grad():
        diff, inputs, made = _enter(primals)
        with _transform():
            out = func(*diff)
        out, aux = _split_aux(out, has_aux, "vjp")
    out_leaves, out_spec = _tree_leaves(out)
    for o in out_leaves:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"vjp(f, *primals): Expected f to be a function that has only "
                               f"Tensors as outputs, got {type(o)}")

    def vjp_fn(*cotangents):
        ct = cotangents[0] if len(cotangents) == 1 else cotangents
        ct_leaves, ct_spec = _tree_leaves(ct)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as "
                               "pytree structure of outputs to the function")
        with enable_grad():
            grads = _vjp(out_leaves, inputs, ct_leaves, create_graph=_C.is_grad_enabled())
        return _leave(_per_argnum(tuple(range(len(primals))), diff, grads), made,
                      _C.is_grad_enabled())

    result = (_leave(out, made, outer), vjp_fn)
    return result + (_leave(aux, made, outer),) if has_aux else result


def _check_tuple(x, name):
    if not isinstance(x, (tuple, list)):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected {name} to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the directional derivative along tangents[, aux]), from two reverse
    passes (Note [Function transforms over eager autograd])."""
    _check_tuple(primals, "primals")
    _check_tuple(tangents, "tangents")
    p_leaves, _ = _tree_leaves(tuple(primals))
    t_leaves, _ = _tree_leaves(tuple(tangents))
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                           "the same python structure.")
    for p, t in zip(p_leaves, t_leaves):
        if isinstance(p, Tensor) and tuple(p.shape) != tuple(t.shape):
            raise RuntimeError("Trying to set a forward gradient that has a different size than "
                               "that of the original Tensor, this is not supported. Tensor is "
                               f"of size {list(p.shape)} while the given forward gradient is of "
                               f"size {list(t.shape)}.")
    outer = _C.is_grad_enabled()
    with enable_grad():
        diff, inputs, made = _enter(tuple(primals))
        with _transform(), _tangent_sources(inputs):
            out = func(*diff)
        out, aux = _split_aux(out, has_aux, "jvp")
        out_leaves, out_spec = _tree_leaves(out)
        dummies, back = _tangent_graph(out_leaves, inputs)
        pairs = [(b, t) for b, t in zip(back, [t for t in t_leaves if isinstance(t, Tensor)])
                 if b.requires_grad]
        if pairs:
            fwd = autograd.grad([b for b, _ in pairs], dummies, [t for _, t in pairs],
                                create_graph=outer, allow_unused=True)
        else:
            fwd = [None] * len(dummies)
        fwd = [zeros_like(o) if f is None else f for f, o in zip(fwd, out_leaves)]
    result = (_leave(out, made, outer), _leave(_unflatten(out_spec, iter(fwd)), made, outer))
    return result + (_leave(aux, made, outer),) if has_aux else result


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is jvp(func, primals, tangents)[1]."""
    out = jvp(func, primals, tuple(zeros_like(p) for p in primals))[0]

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]
    return out, jvp_fn


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """Returns a function computing the Jacobian of func w.r.t. args[argnums] by reverse
    mode: one backward pass per output element."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = _C.is_grad_enabled()
        with enable_grad():
            out, diff, inputs, made = _call_on_diff_args(func, args, kwargs, argnums)
            out, aux = _split_aux(out, has_aux, "jacrev")
            out_leaves, out_spec = _tree_leaves(out)
            jacs = []
            for o in out_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError("jacrev(func, ...)(*args): expected f(*args) to return "
                                       f"only tensors, got unsupported type {type(o)}")
                flat = o.reshape(-1)
                rows = [_vjp([flat[k]], inputs, [ones_like(flat[k])], create_graph=outer)
                        for k in range(flat.numel())]
                per_input = []
                for j, x in enumerate(inputs):
                    shape = tuple(o.shape) + tuple(x.shape)
                    if rows:
                        per_input.append(stack([r[j] for r in rows]).reshape(shape))
                    else:
                        per_input.append(zeros(shape, dtype=x.dtype))
                jacs.append(_per_argnum(argnums, diff, per_input))
        jac = _leave(_unflatten(out_spec, iter(jacs)), made, outer)
        return (jac, _leave(aux, made, outer)) if has_aux else jac
    return wrapper


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """Returns a function computing the Jacobian of func w.r.t. args[argnums] by forward
    mode: one tangent per input element (Note [Function transforms over eager autograd])."""
    _check_randomness(randomness)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outer = _C.is_grad_enabled()
        with enable_grad():
            out, diff, inputs, made = _call_on_diff_args(func, args, kwargs, argnums,
                                                         forward=randomness)
            out, aux = _split_aux(out, has_aux, "jacfwd")
            out_leaves, out_spec = _tree_leaves(out)
            for o in out_leaves:
                if not isinstance(o, Tensor):
                    raise RuntimeError("jacfwd(func, ...)(*args): expected f(*args) to return "
                                       f"only tensors, got unsupported type {type(o)}")
            dummies, back = _tangent_graph(out_leaves, inputs)
            blocks = [[] for _ in out_leaves]     # blocks[j][i]: d out j / d input i
            for x, b in zip(inputs, back):
                columns = []
                for e in range(x.numel() if b.requires_grad else 0):
                    t = zeros(x.numel(), dtype=x.dtype)
                    t[e] = 1
                    fwd = autograd.grad([b], dummies, [t.reshape(x.shape)], retain_graph=True,
                                        create_graph=outer, allow_unused=True)
                    columns.append([zeros_like(o) if f is None else f
                                    for f, o in zip(fwd, out_leaves)])
                for j, o in enumerate(out_leaves):
                    shape = tuple(o.shape) + tuple(x.shape)
                    blocks[j].append(stack([c[j] for c in columns], -1).reshape(shape)
                                     if columns else zeros(shape, dtype=o.dtype))
            jacs = [_per_argnum(argnums, diff, per_input) for per_input in blocks]
        jac = _leave(_unflatten(out_spec, iter(jacs)), made, outer)
        return (jac, _leave(aux, made, outer)) if has_aux else jac
    return wrapper


def hessian(func, argnums=0):
    """The Hessian of a scalar func w.r.t. args[argnums]: jacfwd(jacrev(func))."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---- vmap ----

_RANDOM_IN_ERROR_MODE = ("vmap: called random operation while in randomness error mode. Please "
                         "either use the 'same' or 'different' randomness flags on vmap or "
                         "perform the randomness operation out of vmap")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """Maps func over dimension in_dims of its inputs, stacking the results at out_dims: one
    call per index (Note [Function transforms over eager autograd])."""
    _check_randomness(randomness)
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    name = getattr(func, "__name__", repr(func))

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             "inputs, or you are trying to vmap over a function with no inputs. "
                             "The latter is unsupported.")
        where = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
        if isinstance(in_dims, bool) or not isinstance(in_dims, (int, tuple)):
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: {type(in_dims)}.")
        leaves, spec = _tree_leaves(args)
        dims = []
        _broadcast(in_dims if isinstance(in_dims, int) else tuple(in_dims), spec, dims,
                   f"{where}: in_dims is not compatible with the structure of `inputs`.")
        sizes = []
        for leaf, d in zip(leaves, dims):
            if d is None:
                continue
            if not isinstance(leaf, Tensor):
                raise ValueError(f"{where}: Got in_dim={d} for an input but the input is of type "
                                 f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                                 "use None as the respective in_dim")
            n = leaf.dim()
            if not -n <= d < n:
                raise ValueError(f"{where}: Got in_dim={d} for some input, but that input is a "
                                 f"Tensor of dimensionality {n} so expected in_dim to satisfy "
                                 f"-{n} <= in_dim < {n}.")
            sizes.append(leaf.shape[d])
        if not sizes:
            raise ValueError("vmap: Expected at least one Tensor to vmap over")
        if len(set(sizes)) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        batch = sizes[0]

        def sample(i):
            return [leaf if d is None else
                    (leaf.select(d, i) if batch else
                     zeros(tuple(s for k, s in enumerate(leaf.shape) if k != d % leaf.dim()),
                              dtype=leaf.dtype))
                    for leaf, d in zip(leaves, dims)]

        gen = _C.default_generator
        start = gen.get_state() if randomness != "different" else None
        outs = []
        for i in range(max(batch, 1)):
            if randomness == "same":
                gen.set_state(start)
            elif randomness == "error":
                before = gen.get_state()
            with _transform(randomness):
                out = func(*_unflatten(spec, iter(sample(i))), **kwargs)
            if randomness == "error" and not equal(gen.get_state(), before):
                gen.set_state(before)
                raise RuntimeError(_RANDOM_IN_ERROR_MODE)
            outs.append(_tree_leaves(out))
        return _stack_outputs(name, outs, out_dims, batch)
    return wrapped


def _stack_outputs(name, outs, out_dims, batch):
    out_spec = outs[0][1]
    odims = []
    _broadcast(out_dims, out_spec, odims,
               f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
               "with the structure of `outputs`.")
    stacked = []
    for j, od in enumerate(odims):
        column = [leaves[j] for leaves, _ in outs]
        if od is None:
            first = column[0]
            if isinstance(first, Tensor) and batch and \
                    not all(equal(first, c) for c in column[1:]):
                raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor "
                                 "when out_dim is None")
            stacked.append(first)
            continue
        if not isinstance(column[0], Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(column[0])}. Did you mean to set out_dims= to None for "
                             "output?")
        if batch:
            stacked.append(stack(column, od))
        else:
            stacked.append(column[0].unsqueeze(od).narrow(od, 0, 0).contiguous())
    return _unflatten(out_spec, iter(stacked))


# ---- modules ----

def _named_tensors(module):
    """(name, tensor, owner, attr, kind) of every parameter and buffer, tied names included."""
    out = []
    for mod_name, mod in module.named_modules(remove_duplicate=False):
        prefix = mod_name + "." if mod_name else ""
        for kind in ("_parameters", "_buffers"):
            for attr, t in mod.__dict__[kind].items():
                if t is not None:
                    out.append((prefix + attr, t, mod, attr, kind))
    return out


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):
    """Calls module with its parameters and buffers replaced by the given tensors for the
    call (tied weights follow their partner when tie_weights)."""
    if isinstance(parameter_and_buffer_dicts, dict):
        values = dict(parameter_and_buffer_dicts)
    else:
        values, seen = {}, set()
        for d in parameter_and_buffer_dicts:
            dup = sorted(seen.intersection(d))
            if dup:
                raise ValueError(f"{dup} appeared in multiple dictionaries; behavior of "
                                 "functional call is ambiguous")
            seen.update(d)
            values.update(d)
    entries = _named_tensors(module)
    by_name = {e[0]: e for e in entries}
    if tie_weights:
        groups = {}
        for name, t, *_ in entries:
            groups.setdefault(id(t), []).append(name)
        for names in groups.values():
            given = [n for n in names if n in values]
            if len(given) > 1 and not all(values[n] is values[given[0]] for n in given):
                raise ValueError(f"functional_call got multiple values for keys {given}, which "
                                 "are tied. Consider using tie_weights=False")
            if given:
                for n in names:
                    values.setdefault(n, values[given[0]])
    if strict:
        missing = [n for n in by_name if n not in values]
        unexpected = [n for n in values if n not in by_name]
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): " + ", ".join(f"'{k}'" for k in unexpected) + ".")
            if missing:
                msgs.append("Missing key(s): " + ", ".join(f"'{k}'" for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(msgs))
    saved, added = [], []
    try:
        for name, value in values.items():
            entry = by_name.get(name)
            if entry is not None:
                _, old, owner, attr, kind = entry
                saved.append((owner.__dict__[kind], attr, old))
                owner.__dict__[kind][attr] = value
                continue
            owner_name, _, attr = name.rpartition(".")
            owner = module.get_submodule(owner_name)
            if hasattr(owner, attr):
                raise RuntimeError(f"functional_call: '{name}' is not a parameter or buffer of "
                                   f"{type(module).__name__}")
            object.__setattr__(owner, attr, value)
            added.append((owner, attr))
        if args is None:
            args = ()
        elif not isinstance(args, tuple):
            args = (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for table, attr, old in reversed(saved):
            table[attr] = old
        for owner, attr in added:
            object.__delattr__(owner, attr)


def stack_module_state(models):
    """(params, buffers): each parameter and buffer of models stacked along a new first
    dimension; the stacked parameters are new leaves that require grad as the originals."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same "
                           "training/eval mode.")
    first = type(models[0])
    if any(type(m) is not first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    names = [n for n, _ in models[0].named_parameters()]
    params = {n: stack([dict(m.named_parameters())[n] for m in models]).detach()
              .requires_grad_(dict(models[0].named_parameters())[n].requires_grad)
              for n in names}
    bnames = [n for n, _ in models[0].named_buffers()]
    buffers = {n: stack([dict(m.named_buffers())[n] for m in models]) for n in bnames}
    return params, buffers


def functionalize(func, *, remove="mutations"):
    """Returns func: its outputs and input mutations are what functionalization preserves,
    and eager execution already gives exactly those."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument "
                           f"for remove={remove}. Valid options are: 'mutations', "
                           "'mutations_and_views'.")
    return func


def replace_all_batch_norm_modules_(root):
    """Makes every batch norm of root stop tracking running statistics (functorch's fix for
    vmap over batch norm), in place; returns root."""
    from ..nn.modules.batchnorm import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean = None
            m.running_var = None
            m.num_batches_tracked = None
            m.track_running_stats = False
    return root


def debug_unwrap(tensor, *, recurse=True):
    """The tensor under a transform's wrapper: tensors are never wrapped here."""
    return tensor


__all__ = ["grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian",
           "vmap", "functional_call", "stack_module_state", "functionalize",
           "replace_all_batch_norm_modules_", "debug_unwrap", "rearrange"]
