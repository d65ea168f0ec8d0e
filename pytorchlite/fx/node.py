"""torch.fx.node: one operation of an FX Graph, and the helpers that walk the nested
arguments (tuples, lists, dicts, slices) a node holds.

A Node is an entry of its Graph's doubly linked list.  It knows its inputs (the Nodes in
its args and kwargs, in the order they first appear) and its users (the Nodes that read
it), and every change of args or kwargs updates both sides, so `users` is always the
reverse of `all_input_nodes` (Note [FX use lists] in pytorchlite/fx/graph.py)."""
import builtins
import operator

__all__ = ["Argument", "Node", "Target", "has_side_effect", "map_aggregate", "map_arg"]

Target = object
Argument = object

_OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")


def map_aggregate(a, fn):
    """Applies fn to every leaf of a (through tuples, namedtuples, lists, dicts and slices)
    and rebuilds the same structure around the results."""
    if isinstance(a, tuple):
        t = tuple(map_aggregate(elem, fn) for elem in a)
        return t if not hasattr(a, "_fields") else type(a)(*t)
    if isinstance(a, list):
        return [map_aggregate(elem, fn) for elem in a]
    if isinstance(a, dict):
        return {k: map_aggregate(v, fn) for k, v in a.items()}
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn),
                     map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a, fn):
    """Applies fn to every Node inside a, leaving other leaves as they are."""
    if not callable(fn):
        raise AssertionError("torch.fx.map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _namespaces():
    """The public modules whose functions FX names as torch.<path>.<name>: torch._C._nn first
    (F.linear is torch._C._nn.linear, as in PyTorch), then the most common."""
    import pytorchlite
    return (("torch._C._nn", pytorchlite._C._nn), ("torch", pytorchlite),
            ("torch.nn.functional", pytorchlite.nn.functional),
            ("torch.special", pytorchlite.special), ("torch.linalg", pytorchlite.linalg),
            ("torch.fft", pytorchlite.fft), ("torch.Tensor", pytorchlite.Tensor))


def _get_qualified_name(func):
    """The dotted name a call_function target prints as: builtins by their bare name,
    operator functions as operator.<name>, pytorchlite's as torch.<path>.<name>."""
    name = func.__name__
    if getattr(builtins, name, None) is func:
        return name
    if getattr(func, "__module__", None) == "_operator":
        return f"operator.{name}"
    for path, ns in _namespaces():
        if getattr(ns, name, None) is func:
            return f"{path}.{name}"
    module = getattr(func, "__module__", None) or ""
    if module == "pytorchlite" or module.startswith("pytorchlite."):
        module = "torch" + module[len("pytorchlite"):]
    qualname = getattr(func, "__qualname__", name)
    return f"{module}.{qualname}" if module else qualname


def _type_repr(obj):
    """How a type annotation prints in a graph and in generated code."""
    if isinstance(obj, type):
        if obj.__module__ == "builtins":
            return obj.__qualname__
        return _get_qualified_name(obj)
    if obj is ...:
        return "..."
    return repr(obj).replace("pytorchlite._tensor.Tensor", "torch.Tensor").replace(
        "pytorchlite.", "torch.")


def _format_arg(arg):
    """A node's argument as str(graph) prints it: Nodes as %name, strings bare."""
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, tuple):
        return "(" + ", ".join(_format_arg(a) for a in arg) + ("," if len(arg) == 1 else "") + ")"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if isinstance(arg, Node):
        return "%" + str(arg)
    return str(arg)


class Node:
    """One operation of a Graph: op is one of placeholder, get_attr, call_function,
    call_method, call_module, output; target names what it calls or reads; args and kwargs
    hold constants and other Nodes."""

    def __init__(self, graph, name, op, target, args, kwargs, return_type=None):
        if op not in _OPCODES:
            raise AssertionError(f"Invalid op: {op!r}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a Callable is expected")
        if op in ("get_attr", "call_method", "call_module", "placeholder", "output") and \
                not isinstance(target, str):
            raise ValueError(f"Node [graph = {graph}, name = '{name}'] target {target} has type "
                             f"{type(target)} but a str is expected")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self._input_nodes = {}
        self.users = {}
        self.type = return_type
        self._prev = self
        self._next = self
        self._erased = False
        self.meta = {}
        self._args = ()
        self._kwargs = {}
        self._update_args_kwargs(args, kwargs)

    # ---- the linked list ----
    @property
    def next(self):
        return self._next

    @property
    def prev(self):
        return self._prev

    def prepend(self, x):
        """Moves (or inserts) x just before this node."""
        if x is self:
            return
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x):
        """Moves (or inserts) x just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self):
        p, n = self._prev, self._next
        p._next, n._prev = n, p

    # ---- arguments and uses ----
    @property
    def args(self):
        return self._args

    @args.setter
    def args(self, a):
        self._update_args_kwargs(a, self._kwargs)

    @property
    def kwargs(self):
        return self._kwargs

    @kwargs.setter
    def kwargs(self, k):
        self._update_args_kwargs(self._args, k)

    @property
    def all_input_nodes(self):
        """The Nodes this node reads, in the order they first appear in args then kwargs."""
        return list(self._input_nodes)

    def update_arg(self, idx, arg):
        args = list(self.args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key, arg):
        self.kwargs = {**self.kwargs, key: arg}

    def _update_args_kwargs(self, new_args, new_kwargs):
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = tuple(map_arg(tuple(new_args), self._add_input))
        self._kwargs = dict(map_arg(dict(new_kwargs), self._add_input))
        for n in self._input_nodes:
            n.users.setdefault(self)

    def _add_input(self, n):
        if n.graph is not self.graph:
            raise AssertionError(f"Node {n} is in another graph than {self}")
        self._input_nodes.setdefault(n)
        return n

    def replace_all_uses_with(self, replace_with, delete_user_cb=lambda user: True, *,
                              propagate_meta=False):
        """Makes every user of this node (for which delete_user_cb is true) read replace_with
        instead; returns the users changed."""
        if propagate_meta:
            for k, v in self.meta.items():
                replace_with.meta.setdefault(k, v)
        changed = []
        for user in list(self.users):
            if not delete_user_cb(user):
                continue
            user.replace_input_with(self, replace_with)
            changed.append(user)
        return changed

    def replace_input_with(self, old_input, new_input):
        """Replaces every occurrence of old_input in this node's args and kwargs."""
        def swap(n):
            return new_input if n is old_input else n
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    # ---- queries ----
    def is_impure(self):
        """True for the nodes dead-code elimination keeps without users: placeholders,
        outputs, side-effecting functions and modules marked _is_impure."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            return self.target in _side_effectful_functions()
        if self.op == "call_module":
            root = self.graph.owning_module
            if root is None:
                raise AssertionError("self.graph.owning_module not set for purity check")
            return getattr(root.get_submodule(self.target), "_is_impure", False)
        return False

    @property
    def stack_trace(self):
        return self.meta.get("stack_trace", None)

    @stack_trace.setter
    def stack_trace(self, trace):
        self.meta["stack_trace"] = trace

    def _pretty_print_target(self, target):
        if isinstance(target, str):
            return target
        module = getattr(target, "__module__", None)
        if module == "builtins":
            return f"builtins.{target.__name__}"
        if module == "_operator":
            return f"operator.{target.__name__}"
        return _get_qualified_name(target)

    def format_node(self):
        """This node as one line of str(graph)."""
        typename = f"{_type_repr(self.type)} " if self.type is not None else ""
        if self.op == "placeholder":
            default = f"(default={self.args[0]})" if self.args else ""
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"placeholder[target={self.target}]{default}")
        if self.op == "get_attr":
            return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                    f"get_attr[target={self._pretty_print_target(self.target)}]")
        if self.op == "output":
            return f"return {self.args[0]}"
        return (f"%{self.name} : {typename}[num_users={len(self.users)}] = "
                f"{self.op}[target={self._pretty_print_target(self.target)}]"
                f"(args = {_format_arg(self.args)}, kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self):
        return self.name


# Functions registered with has_side_effect: dead-code elimination keeps their calls.
_registered_side_effects = set()


def has_side_effect(fn):
    """Marks fn as having side effects, so that eliminate_dead_code keeps its unused calls;
    returns fn (usable as a decorator)."""
    _registered_side_effects.add(fn)
    return fn


def _side_effectful_functions():
    import pytorchlite
    from ._symbolic_trace import _assert_is_none
    return {pytorchlite._assert, _assert_is_none, operator.setitem, *_registered_side_effects}

