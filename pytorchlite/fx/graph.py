"""torch.fx.graph: the Graph (a list of Nodes), its names, and the Python source a
GraphModule runs.

Note [FX use lists]
~~~~~~~~~~~~~~~~~~~
A Graph is a doubly linked list of Nodes around a sentinel root node, in execution order.
Each Node keeps `_input_nodes` (what it reads) and `users` (who reads it), both insertion
ordered dicts used as ordered sets.  Node._update_args_kwargs is the only place that
changes either, so the two stay each other's reverse: replace_all_uses_with, erase_node and
dead-code elimination only ever call it.  Names are unique per Graph (_Namespace): a
candidate taken from the target (`add`, `linear`, `layer1.0.conv` -> `layer1_0_conv`) gets
`_1`, `_2`... when taken, and a name that would shadow a Python builtin or keyword (`sum`,
`getattr`) starts at `_1`, as PyTorch's do.

Note [FX generated code]
~~~~~~~~~~~~~~~~~~~~~~~~
python_code() prints the graph as the body of `def forward(self, ...)`, one statement a
node, in PyTorch's form: operators as operators (`add = x + y`), methods as methods,
submodules and attributes through `self`, other functions by their torch.<path> name, and
after each statement `;  a = b = None` for the values read there for the last time, so
that the generated forward frees memory as early as the graph allows.  Names from
pytorchlite resolve through the global `torch`, which is pytorchlite itself.  The graph's
CodeGen writes the `def` line and the return statement (Graph.set_codegen swaps it)."""
import builtins
import contextlib
import copy
import inspect
import keyword
import math
import re
import typing
from dataclasses import dataclass

from .node import Node, _get_qualified_name, _type_repr, map_arg

__all__ = ["CodeGen", "Graph", "PythonCode"]

reflectable_magic_methods = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}",
    "truediv": "{} / {}", "div": "{} / {}", "mod": "{} % {}", "pow": "{} ** {}",
    "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}", "or_": "{} | {}",
    "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}",
}
magic_methods = {
    "eq": "{} == {}", "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}",
    "ge": "{} >= {}", "pos": "+{}", "neg": "-{}", "invert": "~{}", **reflectable_magic_methods,
}
inplace_methods = {
    "iadd": "{} += {}", "iand": "{} &= {}", "ifloordiv": "{} //= {}", "ilshift": "{} <<= {}",
    "imod": "{} %= {}", "imul": "{} *= {}", "imatmul": "{} @= {}", "ior": "{} |= {}",
    "ipow": "{} **= {}", "irshift": "{} >>= {}", "isub": "{} -= {}", "itruediv": "{} /= {}",
    "ixor": "{} ^= {}", "setitem": "{}[{}] = {}",
}

# The typing aliases that generics of builtin containers print as.
_TYPING_ORIGINS = {list: typing.List, dict: typing.Dict, set: typing.Set,
                   frozenset: typing.FrozenSet, tuple: typing.Tuple}

_name_regex = re.compile(r"^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$")
_illegal_char_regex = re.compile("[^0-9a-zA-Z_]+")
_snake_case_regex = re.compile(r"(?<=[a-z])([A-Z])")


def _custom_builtins():
    """The globals every generated forward sees besides Python's builtins."""
    import pytorchlite
    return {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": pytorchlite,
            "device": pytorchlite.device}


def _dtype_abbrs():
    """How print_readable() names a dtype in a shape annotation ("f32[5, 4]")."""
    import pytorchlite as t
    return {t.bool: "b8", t.uint8: "u8", t.int8: "i8", t.int16: "i16", t.int32: "i32",
            t.int64: "i64", t.float16: "f16", t.bfloat16: "bf16", t.float32: "f32",
            t.float64: "f64", t.complex64: "c64", t.complex128: "c128"}


def _illegal_names():
    names = dict(builtins.__dict__)
    names.update({kw: object() for kw in keyword.kwlist})
    names.update(_custom_builtins())
    return names


class _Namespace:
    """Unique names for objects: each object gets one name, each name is used once, and a
    name shadows a builtin only when it is that builtin.  See Note [FX use lists]."""

    def __init__(self):
        self._obj_to_name = {}
        self._used_names = set()
        self._base_count = {}
        self._illegal = _illegal_names()

    def create_name(self, candidate, obj):
        if obj is not None and obj in self._obj_to_name:
            return self._obj_to_name[obj]
        match = _name_regex.match(candidate)
        if match is None:
            candidate = _illegal_char_regex.sub("_", candidate) or "_unnamed"
            if candidate[0].isdigit():
                candidate = f"_{candidate}"
            match = _name_regex.match(candidate)
        base, num = match.group(1, 2)
        if num is None or candidate in self._used_names:
            num = self._base_count.get(base, 0)
            if self._illegal.get(candidate, obj) is not obj:
                num += 1
                candidate = f"{base}_{num}"
        else:
            num = int(num)
        while candidate in self._used_names:
            num += 1
            candidate = f"{base}_{num}"
        self._used_names.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[obj] = candidate
        return candidate

    def forget(self, obj):
        self._obj_to_name.pop(obj, None)


def _snake_case(s):
    return _snake_case_regex.sub(r"_\1", s).lower()


@dataclass
class PythonCode:
    """The source of a generated forward and the globals it runs with."""
    src: str
    globals: dict


class _NodeList:
    """graph.nodes: a live view of the linked list (len, iteration, reversed)."""

    def __init__(self, graph, direction="_next"):
        self._graph = graph
        self._direction = direction

    def __len__(self):
        return self._graph._len

    def __iter__(self):
        root = self._graph._root
        cur = getattr(root, self._direction)
        while cur is not root:
            nxt = getattr(cur, self._direction)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self):
        return iter(_NodeList(self._graph, "_prev" if self._direction == "_next" else "_next"))

    def __repr__(self):
        return repr(list(self))


def _format_target(base, target):
    """self.a.b for the path a.b, with getattr(..., "0") for parts that are not names."""
    r = base
    for elem in target.split("."):
        r = f"{r}.{elem}" if elem.isidentifier() else f'getattr({r}, "{elem}")'
    return r


def _resolves_from_torch(qualified_name, obj):
    import pytorchlite
    parts = qualified_name.split(".")
    if parts[0] != "torch":
        return False
    cur = pytorchlite
    for p in parts[1:]:
        cur = getattr(cur, p, None)
        if cur is None:
            return False
    return cur is obj


class Graph:
    """The nodes of a traced program in execution order; see Note [FX use lists]."""

    def __init__(self, owning_module=None, tracer_cls=None, tracer_extras=None):
        self._root = Node(self, "", "placeholder", "", (), {})
        self._root.op = "root"
        self._len = 0
        self._graph_namespace = _Namespace()
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._insert = self._root.prepend
        self._codegen = CodeGen()

    @property
    def owning_module(self):
        return self._owning_module

    @owning_module.setter
    def owning_module(self, mod):
        self._owning_module = mod

    @property
    def nodes(self):
        return _NodeList(self)

    def find_nodes(self, *, op, target=None, sort=True):
        """The nodes with this op (and target, when given), in graph order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    # ---- building ----
    def create_node(self, op, target, args=None, kwargs=None, name=None, type_expr=None):
        """Inserts a new Node at the insert point (the end, unless inserting_before/after)."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        candidate = name if name is not None else self._target_to_str(target)
        name = self._graph_namespace.create_name(candidate, None)
        n = Node(self, name, op, target, args, kwargs, type_expr)
        self._graph_namespace._obj_to_name[n] = name
        self._insert(n)
        self._len += 1
        return n

    def placeholder(self, name, type_expr=None, default_value=inspect.Signature.empty):
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args=args, type_expr=type_expr)

    def get_attr(self, qualified_name, type_expr=None):
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name, args=None, kwargs=None, type_expr=None):
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function, args=None, kwargs=None, type_expr=None, name=None):
        return self.create_node("call_function", the_function, args, kwargs, name=name,
                                type_expr=type_expr)

    def output(self, result, type_expr=None):
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node, arg_transform=lambda x: x):
        """A copy of node (from any graph) in this graph, its Node arguments mapped by
        arg_transform."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        result = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        result.meta = dict(node.meta)
        return result

    def graph_copy(self, g, val_map, return_output_node=False):
        """Copies the nodes of g into this graph (val_map: g's nodes -> this graph's, filled
        in); returns the value g outputs, mapped."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                rv = map_arg(node.args[0], lambda n: val_map[n])
                return rv if not return_output_node else (rv, node)
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def erase_node(self, to_erase):
        """Removes a node that nobody uses."""
        if len(to_erase.users) > 0:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had "
                               f"{len(to_erase.users)} users in the graph: {to_erase.users}!")
        if to_erase.graph is not self:
            raise RuntimeError(f"Attempting to remove {to_erase} from wrong graph!")
        if to_erase._erased:
            return
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})

    @contextlib.contextmanager
    def _insert_point(self, insert):
        saved = self._insert
        self._insert = insert
        try:
            yield
        finally:
            self._insert = saved

    def inserting_before(self, n=None):
        """A context in which new nodes go just before n (before the first node: None)."""
        if n is None:
            return self.inserting_after(self._root)
        return self._insert_point(n.prepend)

    def inserting_after(self, n=None):
        """A context in which new nodes go just after n (after the last node: None)."""
        if n is None:
            return self.inserting_before(self._root)
        return self._insert_point(n.append)

    # ---- passes ----
    def eliminate_dead_code(self, is_impure_node=None):
        """Removes the nodes whose value nobody uses and that have no side effect; returns
        whether anything changed."""
        self.lint()
        impure = is_impure_node if is_impure_node is not None else Node.is_impure
        changed = False
        for node in reversed(self.nodes):
            if len(node.users) == 0 and not impure(node):
                self.erase_node(node)
                changed = True
        return changed

    def lint(self):
        """Checks the graph's invariants: unique names, use lists, inputs defined before
        use, targets that exist in the owning module."""
        seen_names = set()
        seen = set()
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node}' does not belong to this Graph!")
            if node.name in seen_names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            seen_names.add(node.name)
            for arg in node._input_nodes:
                if arg.graph is not self:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' does not belong "
                                       "to this Graph, but was used as an argument! If you "
                                       "are copying nodes from another graph, make sure to "
                                       "use ``arg_transform`` on node_copy() to remap values\n"
                                       f"{self}")
                if arg not in seen:
                    raise RuntimeError(f"Argument '{arg}' of Node '{node}' was used before it "
                                       "has been defined! Please check that Nodes in the graph "
                                       "are topologically ordered\n" + str(self))
                if node not in arg.users:
                    raise RuntimeError(f"Node '{node}' reads '{arg}' but is not in its users")
            seen.add(node)
        if self.owning_module is None:
            return
        for node in self.nodes:
            if node.op not in ("get_attr", "call_module"):
                continue
            m_itr = self.owning_module
            atoms = node.target.split(".")
            for i, atom in enumerate(atoms):
                if not hasattr(m_itr, atom):
                    raise RuntimeError(f"Node {node} target {node.target} references "
                                       f"nonexistent attribute {atom} of "
                                       f"{'.'.join(atoms[:i]) or 'root'}")
                m_itr = getattr(m_itr, atom)

    # ---- printing ----
    def _target_to_str(self, target):
        if callable(target):
            op = target.__name__
        else:
            op = target
            if op.startswith("__") and op.endswith("__"):
                op = op[2:-2]
        return _snake_case(op)

    def __str__(self):
        lines = ["graph():"]
        lines += ["    " + n.format_node() for n in self.nodes]
        return "\n".join(lines)

    def print_tabular(self):
        """Prints the nodes as a table (needs the tabulate package, as PyTorch's does)."""
        try:
            from tabulate import tabulate
        except ImportError:
            print("`print_tabular` relies on the library `tabulate`, which could not be found "
                  "on this machine. Run `pip install tabulate` to install the library.")
            raise
        rows = [[n.op, n.name, n.target, n.args, n.kwargs] for n in self.nodes]
        print(tabulate(rows, headers=["opcode", "name", "target", "args", "kwargs"]))

    def python_code(self, root_module, *, verbose=False):
        """The generated forward (PythonCode: source and globals); see Note [FX generated
        code]."""
        return _gen_python_code(self._codegen, self, root_module, verbose)

    def set_codegen(self, codegen):
        """Generates this graph's code with codegen (a CodeGen) from now on."""
        self._codegen = codegen

    def process_inputs(self, *args):
        """args as the graph takes them (the codegen's process_inputs)."""
        return self._codegen.process_inputs(*args)

    def process_outputs(self, out):
        """The graph's output as the generated code returns it (the codegen's
        process_outputs)."""
        return self._codegen.process_outputs(out)

    def __deepcopy__(self, memo=None):
        memo = {} if memo is None else memo
        g = Graph(tracer_cls=self._tracer_cls)
        g._codegen = copy.deepcopy(self._codegen, memo)
        out = g.graph_copy(self, {}, return_output_node=True)
        memo[id(self)] = g
        if out is not None:
            rv, old_out = out
            g.output(rv, type_expr=old_out.type).meta = dict(old_out.meta)
        return g


def _last_uses(nodes):
    """user -> the nodes it reads for the last time, in argument order."""
    seen = set()
    last = {}
    for node in reversed(nodes):
        for inp in node._input_nodes:
            if inp not in seen:
                seen.add(inp)
                last.setdefault(node, []).append(inp)
    return last


class CodeGen:
    """Writes a Graph as the Python source of a function (Note [FX generated code]).  A
    subclass set with Graph.set_codegen changes the parts around the body: the `def` line
    (gen_fn_def), the return statement (generate_output), the globals the source needs
    (additional_globals), and, to match, how Interpreter.run takes the function's inputs and
    gives its output (process_inputs, process_outputs)."""

    def __init__(self):
        self._func_name = "forward"

    def gen_fn_def(self, free_vars, maybe_return_annotation):
        """The `def` line, e.g. `def forward(self, a, b):` for free_vars ['a', 'b'] (self is
        put first when it is not there)."""
        if not free_vars or free_vars[0] != "self":
            free_vars.insert(0, "self")
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(self, output_args, *, repr_fn=repr):
        """The return statement (not indented) of the graph's output value."""
        return f"return {repr_fn(output_args)}"

    def process_inputs(self, *args):
        """The graph's inputs from the generated function's arguments."""
        return args

    def process_outputs(self, outputs):
        """The generated function's result from the graph's output value."""
        return outputs

    def additional_globals(self):
        """(name, value) pairs the generated source needs besides the graph's own."""
        return []


def _accepts(method, name):
    """Whether method (a CodeGen override, perhaps written for an older signature) takes the
    keyword name."""
    return name in inspect.signature(method).parameters


def _gen_python_code(codegen, graph, root_module, verbose):
    nodes = list(graph.nodes)
    namespace = _Namespace()
    globals_ = {}
    for name, obj in _custom_builtins().items():
        globals_[namespace.create_name(name, obj)] = obj
    for node in nodes:
        namespace.create_name(node.name, node)

    def add_global(name_hint, obj):
        if _resolves_from_torch(name_hint, obj):
            return name_hint
        if getattr(builtins, name_hint, None) is obj:
            return name_hint
        name = namespace.create_name(name_hint, obj)
        globals_[name] = obj
        return name

    def type_repr(t):
        # a generic (typing.Optional[Tensor], list[int]) prints as its origin, made a global
        # (typing_Union), and its arguments without spaces, as PyTorch's code does
        if t == ():
            return "()"
        origin = getattr(t, "__origin__", None)
        if origin is None:
            return add_global(_type_repr(t), t)
        if isinstance(t, typing._GenericAlias):
            origin = _TYPING_ORIGINS.get(origin, origin)
        name = add_global(_type_repr(origin), origin)
        args = typing.get_args(t)
        return f"{name}[{','.join(type_repr(a) for a in args)}]" if args else name

    def get_repr(arg):
        if isinstance(arg, Node):
            return repr(arg)
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            name = add_global(_get_qualified_name(type(arg)), type(arg))
            return f"{name}{tuple(arg)!r}"
        return repr(arg)

    def format_args(args, kwargs):
        args_s = ", ".join(get_repr(a) for a in args)
        kwargs_s = ", ".join(f"{k} = {get_repr(v)}" for k, v in kwargs.items())
        return f"{args_s}, {kwargs_s}" if args_s and kwargs_s else args_s or kwargs_s

    last_uses = _last_uses(nodes)
    free_vars = []
    body = []
    wrapped = {}
    return_annotation = ""
    prev_summary = None

    def emit(node):
        nonlocal return_annotation
        annotation = "" if node.type is None else f" : {type_repr(node.type)}"
        if verbose:
            from .passes.shape_prop import TensorMetadata
            meta = node.meta.get("val", node.meta.get("tensor_meta"))
            if isinstance(meta, TensorMetadata):
                shape = ", ".join(str(s) for s in meta.shape)
                annotation = f': "{_dtype_abbrs()[meta.dtype]}[{shape}]"'
        name = repr(node)
        if node.op == "placeholder":
            default = f" = {get_repr(node.args[0])}" if node.args else ""
            free_vars.append(f"{node.target}{annotation}{default}")
            raw = node.target.replace("*", "")
            if raw != name:
                body.append(f"{name} = {raw}\n")
            return
        if node.op == "call_method":
            method = _format_target(get_repr(node.args[0]), node.target)
            body.append(f"{name}{annotation} = {method}({format_args(node.args[1:], node.kwargs)})")
        elif node.op == "call_function":
            fname = getattr(node.target, "__name__", "")
            if getattr(node.target, "__module__", "") == "_operator" and fname in magic_methods:
                body.append(f"{name}{annotation} = "
                            f"{magic_methods[fname].format(*(get_repr(a) for a in node.args))}")
            elif getattr(node.target, "__module__", "") == "_operator" and \
                    fname in inplace_methods:
                body.append(f"{inplace_methods[fname].format(*(get_repr(a) for a in node.args))};"
                            f"  {name}{annotation} = {get_repr(node.args[0])}")
            else:
                global_name = add_global(_get_qualified_name(node.target), node.target)
                if global_name == "getattr" and len(node.args) == 2 and \
                        isinstance(node.args[1], str) and node.args[1].isidentifier():
                    body.append(f"{name}{annotation} = "
                                f"{_format_target(get_repr(node.args[0]), node.args[1])}")
                else:
                    body.append(f"{name}{annotation} = {global_name}"
                                f"({format_args(node.args, node.kwargs)})")
                if node.meta.get("is_wrapped", False):
                    wrapped.setdefault(global_name)
        elif node.op == "call_module":
            body.append(f"{name}{annotation} = {_format_target(root_module, node.target)}"
                        f"({format_args(node.args, node.kwargs)})")
        elif node.op == "get_attr":
            body.append(f"{name}{annotation} = {_format_target(root_module, node.target)}")
        elif node.op == "output":
            if node.type is not None:
                return_annotation = f" -> {type_repr(node.type)}"
            if _accepts(codegen.generate_output, "repr_fn"):
                body.append(codegen.generate_output(node.args[0], repr_fn=get_repr) + "\n")
            else:
                body.append(codegen.generate_output(node.args[0]) + "\n")
            return
        to_delete = list(last_uses.get(node, []))
        if not node.users:
            to_delete.append(node)
        if to_delete:
            body.append(";  " + " = ".join([repr(n) for n in to_delete] + ["None"]) + "\n")
        else:
            body.append("\n")

    for node in nodes:
        if verbose and node.op not in ("placeholder", "output"):
            summary = "\n# No stacktrace found for following nodes\n"
            if summary != prev_summary:
                prev_summary = summary
                body.append(summary)
        emit(node)
    if not body:
        body.append("pass\n")
    if wrapped:
        from ._symbolic_trace import wrap
        wrap_name = add_global(_get_qualified_name(wrap), wrap)
        wrap_stmts = "\n".join(f'{wrap_name}("{name}")' for name in wrapped)
    else:
        wrap_stmts = ""
    for name, value in codegen.additional_globals():
        add_global(name, value)
    prologue = codegen.gen_fn_def(free_vars, return_annotation)
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    src = f"\n{wrap_stmts}\n\n{prologue}\n{code}"
    return PythonCode(src, globals_)
