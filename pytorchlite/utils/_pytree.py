"""torch.utils._pytree: nested containers (tuples, lists, dicts, namedtuples, OrderedDict,
defaultdict, deque, and classes registered with register_pytree_node) flattened into their
leaves and a TreeSpec that rebuilds the structure.  None and every other object is a leaf.
The printed TreeSpec is PyTorch's ("TreeSpec(tuple, None, [*, ...])", leaves as "*")."""
import collections
import functools

__all__ = ["TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten",
           "tree_leaves", "tree_structure", "tree_map", "tree_map_", "tree_map_only",
           "tree_map_only_", "tree_all", "tree_any", "tree_all_only", "tree_any_only",
           "tree_iter", "tree_is_leaf", "is_namedtuple", "is_namedtuple_instance",
           "treespec_pprint"]

# type -> (flatten(obj) -> (children, context), unflatten(children, context) -> obj)
SUPPORTED_NODES = {}


def register_pytree_node(cls, flatten_fn, unflatten_fn, *, serialized_type_name=None,
                         to_dumpable_context=None, from_dumpable_context=None,
                         flatten_with_keys_fn=None):
    """Makes cls a container: flatten_fn(obj) -> (children, context) and
    unflatten_fn(children, context) -> obj."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = (flatten_fn, unflatten_fn)


def is_namedtuple_class(cls):
    return isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")


def is_namedtuple(obj):
    """Whether obj is a namedtuple or a namedtuple class."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_instance(obj):
    return is_namedtuple_class(type(obj))


def _node_type(obj):
    """The registered node type obj flattens as, or None for a leaf."""
    t = type(obj)
    if t in SUPPORTED_NODES:
        return t
    if is_namedtuple_class(t):
        return collections.namedtuple
    return None


register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c))
register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c))
register_pytree_node(dict, lambda d: (list(d.values()), list(d)),
                     lambda c, keys: dict(zip(keys, c)))
register_pytree_node(collections.OrderedDict, lambda d: (list(d.values()), list(d)),
                     lambda c, keys: collections.OrderedDict(zip(keys, c)))
register_pytree_node(collections.defaultdict,
                     lambda d: (list(d.values()), [d.default_factory, list(d)]),
                     lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)))
register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen),
                     lambda c, maxlen: collections.deque(c, maxlen=maxlen))
register_pytree_node(collections.namedtuple, lambda t: (list(t), type(t)),
                     lambda c, cls: cls(*c))


class TreeSpec:
    """A container's type, its context (dict keys, a namedtuple's class...) and its
    children's specs; a LeafSpec stands for one leaf."""

    def __init__(self, type, context, children_specs):  # noqa: A002 - PyTorch's name
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self):
        return False

    def children(self):
        return list(self.children_specs)

    def child(self, index):
        return self.children_specs[index]

    def __eq__(self, other):
        return isinstance(other, TreeSpec) and not isinstance(other, LeafSpec) and \
            (self.type, self.context, self.children_specs) == \
            (other.type, other.context, other.children_specs)

    def __hash__(self):
        return hash((self.type, repr(self)))

    def __repr__(self, indent=0):
        name = "namedtuple" if self.type is collections.namedtuple else self.type.__name__
        inner = indent + 2
        kids = [c.__repr__(inner) for c in self.children_specs]
        body = kids[0] + "," + ",".join("\n" + " " * inner + k for k in kids[1:]) \
            if len(kids) > 1 else "".join(kids)
        return f"TreeSpec({name}, {self.context}, [{body}])"

    def flatten_up_to(self, tree):
        """tree's subtrees at this spec's leaves (tree must have this structure above them)."""
        out = []
        _flatten_up_to(self, tree, out)
        return out

    def unflatten(self, leaves):
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} "
                             f"but the spec refers to a pytree that holds {self.num_leaves} "
                             f"items ({self}).")
        return _build(self, iter(leaves))


class LeafSpec(TreeSpec):
    def __init__(self):
        super().__init__(None, None, [])
        self.num_nodes = 1
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __hash__(self):
        return hash("*")

    def __repr__(self, indent=0):
        return "*"


def _build(spec, it):
    if spec.is_leaf():
        return next(it)
    children = [_build(c, it) for c in spec.children_specs]
    return SUPPORTED_NODES[spec.type][1](children, spec.context)


def _flatten_up_to(spec, tree, out):
    if spec.is_leaf():
        out.append(tree)
        return
    kind = _node_type(tree)
    if kind is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = SUPPORTED_NODES[kind][0](tree)
    if context != spec.context or len(children) != spec.num_children:
        raise ValueError(f"Node context mismatch for node type {spec.type}; expected "
                         f"{spec.context}, but got {context}.")
    for c, s in zip(children, spec.children_specs):
        _flatten_up_to(s, c, out)


def tree_is_leaf(tree, is_leaf=None):
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) is None


def tree_flatten(tree, is_leaf=None):
    """(leaves, TreeSpec) of tree; is_leaf(x) True stops the descent at x."""
    leaves = []

    def walk(node):
        if tree_is_leaf(node, is_leaf):
            leaves.append(node)
            return LeafSpec()
        kind = _node_type(node)
        children, context = SUPPORTED_NODES[kind][0](node)
        return TreeSpec(kind, context, [walk(c) for c in children])

    return leaves, walk(tree)


def tree_unflatten(leaves, treespec):
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of "
                        f"type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree, is_leaf=None):
    yield from tree_flatten(tree, is_leaf)[0]


def tree_leaves(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func, tree, *rests, is_leaf=None):
    """tree with each leaf x replaced by func(x, *the same leaf of each of rests) (rests
    have tree's structure, or a deeper one below its leaves)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(leaves, *others))


def tree_map_(func, tree, *rests, is_leaf=None):
    """func applied to the leaves for its effect; returns tree."""
    leaves, spec = tree_flatten(tree, is_leaf)
    others = [spec.flatten_up_to(r) for r in rests]
    for xs in zip(leaves, *others):
        func(*xs)
    return tree


def _only(type_or_types, func):
    @functools.wraps(func)
    def wrapped(x):
        return func(x) if isinstance(x, type_or_types) else x
    return wrapped


def tree_map_only(type_or_types, func, tree, is_leaf=None):
    """tree_map of func over the leaves that are instances of type_or_types."""
    return tree_map(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types, func, tree, is_leaf=None):
    return tree_map_(_only(type_or_types, func), tree, is_leaf=is_leaf)


def tree_all(pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_iter(tree, is_leaf))


def tree_any(pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_iter(tree, is_leaf))


def tree_all_only(type_or_types, pred, tree, is_leaf=None):
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types, pred, tree, is_leaf=None):
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def treespec_pprint(treespec):
    return repr(treespec)
