"""jit.script (torch/jit/_script.py, torch/csrc/jit/frontend/ir_emitter.cpp): compiles the
Python source of a function or of a module's forward into a Graph with blocks (Note [Blocks]
in _ir.py), without running it.

Note [Scripting]
~~~~~~~~~~~~~~~~
The compiler reads the function's AST and emits one node per operation, in SSA form: a name
maps to the Value it holds now, and assigning it again maps it to a new Value.  The types are
TorchScript's: an argument without an annotation is a Tensor; int, float, bool, str, List[T]
(`T[]`), Tuple[...] (`(T, U)`) and Optional[T] (`T?`) are read from annotations.

- `if` becomes prim::If; the names either branch assigns, and that exist after it, are its
  outputs, and both branches must give them one type.  A condition known when compiling
  (`self.bias is not None` on a module whose bias is None, a constant) compiles only the
  branch taken, as TorchScript does.  `x is not None` on an Optional value refines x to its
  element type in the branch (prim::unchecked_cast).
- `for` over range(...), a list or a tensor, and `while`, become prim::Loop; the names the
  body assigns that exist before the loop are carried.  `for` over a ModuleList, a
  Sequential or a tuple is unrolled.
- `return`, `break` and `continue` inside an `if`: the statements after the `if` are
  compiled into the branches that do not leave, so each block ends at the exit (TorchScript's
  exit transform); the If returns the function's result, or the loop's condition and carried
  values.
- `raise` ends its block (prim::RaiseException); `assert` is an If whose false block raises.

Note [Return inside a loop]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
A loop whose body returns carries two more values, as TorchScript's exit transform does: a
flag, False on entry, and the result, a prim::Uninitialized on entry whose type the first
compiled `return` sets.  A `return` ends the iteration with the condition False, the flag True
and its value as the result; after the loop, `prim::If(flag)` returns the result in one block
and runs the statements after the loop in the other.  A return in a loop nested inside
another loop is refused (NotSupportedError).
- A call resolves, in order: a submodule (prim::CallMethod on its scripted forward), a
  nn.functional function that has a lowering here (linear, dropout, layer_norm, embedding,
  conv1d/2d, relu), a dispatcher operator or TorchScript builtin of the function's name,
  matched by schema (as the tracer records `aten::` nodes), and last any other Python
  function, whose source is compiled in place (inlined) with the caller's argument values.
- A module's parameters and buffers, its submodules, `training` and its int/float/bool/str
  attributes are read with prim::GetAttr; the names in `__constants__`, and tuples, are
  constants.
"""
import ast
import builtins
import inspect
import re
import textwrap
import typing

from .. import _C
from .._tensor import Tensor
from ..nn import functional as F
from ..nn import modules as _nn
from ..nn.modules.module import Module
from . import _annotations, _ir, passes
from ._builtins import NUMBER_OVERLOADS
from ._interpreter import Interpreter
from ._trace import ScriptFunction, _module_type
from .frontend import NotSupportedError, UnsupportedNodeError

_INT_MAX = 9223372036854775807
_NUMBER = ("int", "float")
_INT_LIST = re.compile(r"(?:Sym)?int\[(\d*)\]")


# ---- source ranges and errors -------------------------------------------------------------

class _Source:
    """The source of one function: its file, first line and lines, for error messages."""

    def __init__(self, fn):
        try:
            lines, first = inspect.getsourcelines(fn)
            self.file = inspect.getsourcefile(fn) or inspect.getfile(fn)
        except (OSError, TypeError) as e:
            raise RuntimeError(f"Can't get source for {fn}. TorchScript requires source access "
                               "in order to carry out compilation, make sure original .py "
                               "files are available.") from e
        self.first = first
        self.lines = [ln.rstrip("\n") for ln in lines]
        text = textwrap.dedent("".join(lines))
        self.indent = len(self.lines[0]) - len(self.lines[0].lstrip())
        self.tree = ast.parse(text).body[0]

    def highlight(self, node):
        """TorchScript's picture of where node is: the file and line, the lines around it and
        a row of `~` under the node ending in `<--- HERE`."""
        row = getattr(node, "lineno", 1)
        col = getattr(node, "col_offset", 0) + self.indent
        end_col = getattr(node, "end_col_offset", None)
        end_row = getattr(node, "end_lineno", row)
        width = (end_col + self.indent - col) if end_col is not None and end_row == row else \
            max(len(self.lines[row - 1]) - col, 1)
        out = [f'  File "{self.file}", line {self.first + row - 1}']
        if row >= 2:
            out.append(self.lines[row - 2])
        out.append(self.lines[row - 1])
        out.append(" " * col + "~" * max(width, 1) + " <--- HERE")
        if row < len(self.lines):
            out.append(self.lines[row])
        return "\n".join(out) + "\n"


class _Undefined:
    """A name an `if` defines in one branch only (or gives two types), or a loop defines:
    reading it raises TorchScript's error.  message is (text, the statement's AST node)."""

    def __init__(self, message):
        self.message = message


# ---- sugared values: what a name can hold besides a graph Value ---------------------------

class _ModuleValue:
    """A module in the graph: its Value (self or a prim::GetAttr) and the module object."""

    def __init__(self, value, module):
        self.value = value
        self.module = module


class _PythonValue:
    """A Python object the compiler resolves at compile time (a function, torch, math)."""

    def __init__(self, obj):
        self.obj = obj


class _Method:
    def __init__(self, owner, fn):
        self.owner = owner
        self.fn = fn


def _has_exit(stmts, loops_too):
    """Whether stmts contain a return (or, with loops_too, a break/continue outside nested
    loops)."""
    for s in stmts:
        for node in _walk_no_defs(s, loops_too):
            if isinstance(node, ast.Return) or (loops_too and isinstance(node, (ast.Break,
                                                                                ast.Continue))):
                return True
    return False


def _walk_no_defs(node, stop_at_loops):
    yield node
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if stop_at_loops and isinstance(child, (ast.For, ast.While)):
            yield from (n for n in _walk_no_defs(child, False) if isinstance(n, ast.Return))
            continue
        yield from _walk_no_defs(child, stop_at_loops)


def _assigned_names(stmts):
    out = []
    for s in stmts:
        for node in _walk_no_defs(s, False):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and \
                    node.id not in out:
                out.append(node.id)
    return out


# ---- types --------------------------------------------------------------------------------

def annotation_type(ann, where):
    """The TorchScript type of a Python annotation (a class or a typing form)."""
    if ann is inspect.Parameter.empty or ann is None:
        return "Tensor" if ann is inspect.Parameter.empty else "NoneType"
    if ann is Tensor:
        return "Tensor"
    if ann in (int, float, bool, str):
        return ann.__name__
    origin = typing.get_origin(ann)
    args = typing.get_args(ann)
    if origin in (list, typing.List) and len(args) == 1:
        return annotation_type(args[0], where) + "[]"
    if origin in (dict, typing.Dict) and len(args) == 2:
        key = annotation_type(args[0], where)
        if key not in ("str", "int"):
            raise RuntimeError(f"Dict keys must be str or int, not {_py_type_name(key)} {where}")
        return f"Dict({key}, {annotation_type(args[1], where)})"
    if origin in (tuple, typing.Tuple) and args:
        return "(" + ", ".join(annotation_type(a, where) for a in args) + ")"
    if origin is typing.Union and len(args) == 2 and type(None) in args:
        inner = args[0] if args[1] is type(None) else args[1]
        return annotation_type(inner, where) + "?"
    raise RuntimeError(f"Unknown type annotation: '{ann}' {where}")


def _py_type_name(ty):
    """The type as TorchScript's messages write it (List[int], Optional[Tensor])."""
    if ty.endswith("[]"):
        return f"List[{_py_type_name(ty[:-2])}]"
    if ty.endswith("?"):
        return f"Optional[{_py_type_name(ty[:-1])}]"
    if ty.startswith("("):
        return "Tuple[" + ", ".join(_py_type_name(t) for t in _ir.split_top(ty[1:-1])) + "]"
    if _ir.is_dict_type(ty):
        return "Dict[" + ", ".join(_py_type_name(t) for t in _ir.dict_types(ty)) + "]"
    return "Tensor" if _ir.is_tensor_type(ty) else ty


def _unify(a, b):
    """The type both a and b are, allowing None into an Optional; None if they differ."""
    if a == b:
        return a
    if a == "NoneType":
        a, b = b, a
    if b == "NoneType":
        return a if a.endswith("?") else a + "?"
    if a.endswith("?") and a[:-1] == b:
        return a
    if b.endswith("?") and b[:-1] == a:
        return b
    return None


def _value_matches(ty, x):
    """Whether the Python value x may be passed for an input of type ty."""
    if ty.endswith("?"):
        return x is None or _value_matches(ty[:-1], x)
    if _ir.is_tensor_type(ty):
        return isinstance(x, Tensor)
    if ty == "float":
        return isinstance(x, (float, int)) and not isinstance(x, bool)
    if ty == "int":
        return isinstance(x, int) and not isinstance(x, bool)
    if ty in ("bool", "str"):
        return type(x).__name__ == ty
    if ty.endswith("[]"):
        return isinstance(x, list) and all(_value_matches(ty[:-2], e) for e in x)
    if ty.startswith("("):
        items = _ir.split_top(ty[1:-1])
        return isinstance(x, tuple) and len(x) == len(items) and \
            all(_value_matches(t, e) for t, e in zip(items, x))
    if _ir.is_dict_type(ty):
        key, value = _ir.dict_types(ty)
        return isinstance(x, dict) and all(_value_matches(key, k) and _value_matches(value, v)
                                           for k, v in x.items())
    return True


def _constant_type(x):
    if x is None:
        return "NoneType"
    if isinstance(x, bool):
        return "bool"
    if isinstance(x, int):
        return "int"
    if isinstance(x, float):
        return "float"
    if isinstance(x, str):
        return "str"
    return None


# ---- operator overloads -------------------------------------------------------------------

_overloads_by_name = {}


def _overloads(name):
    """Every Schema of the operator name (dispatcher operators, then builtins), without the
    out= overloads."""
    if not _overloads_by_name:
        from ._builtins import BUILTINS
        texts = [s["schema"] for s in _C._schemas()] + [t for t, _ in BUILTINS.values()]
        for text in texts:
            head = text.split("(")[0]
            op, _, overload = head.partition(".")
            if overload.endswith("out") or "Tensor(a!) out" in text:
                continue
            _overloads_by_name.setdefault(op, []).append(overload)
    return [_ir.schema(name, o) for o in _overloads_by_name.get(name, [])]


def _accepts(schema_type, value_type, wrap):
    """arg_accepts, where a number passes for a Tensor argument only with wrap: an overload
    that takes the number as it is wins over wrapping it into a tensor (as in eager mode)."""
    if schema_type.rstrip("?") == "Tensor" and value_type in _NUMBER + ("bool",):
        return wrap
    return _ir.arg_accepts(schema_type, value_type)


_FUNCTIONAL_ALIASES = {"input": "self", "training": "train"}
_BINARY_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div",
               ast.FloorDiv: "floordiv", ast.Mod: "remainder", ast.Pow: "pow",
               ast.MatMult: "matmul", ast.BitAnd: "__and__", ast.BitOr: "__or__"}
_TENSOR_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "pow": "pow",
                  "floordiv": "floor_divide", "remainder": "remainder", "matmul": "matmul",
                  "__and__": "logical_and", "__or__": "logical_or"}
_COMPARE_OPS = {ast.Lt: "lt", ast.Gt: "gt", ast.LtE: "le", ast.GtE: "ge", ast.Eq: "eq",
                ast.NotEq: "ne"}
_UNSUPPORTED = {ast.Lambda: "Lambda", ast.Try: "try blocks", ast.With: "with statements",
                ast.Global: "global variables", ast.Nonlocal: "nonlocal variables",
                ast.FunctionDef: "function definitions", ast.ClassDef: "class definitions",
                ast.Delete: "del statements",
                ast.Import: "import statements", ast.ImportFrom: "import statements",
                ast.ListComp: "list comprehensions", ast.DictComp: "dict comprehensions",
                ast.SetComp: "set comprehensions", ast.GeneratorExp: "generator expressions",
                ast.Yield: "yield", ast.Await: "await",
                ast.Set: "set literals", ast.JoinedStr: "f-strings", ast.Starred: "starred"}


class _Raises:
    """What compiling a statement list returns when every path through it raises: the rest
    of the block is dead, and an If whose branch raises takes its values from the other
    branch (the raising block returns prim::Uninitialized values of their types)."""

    def __repr__(self):
        return "<raises>"


_RAISES = _Raises()


class _FunctionExit:
    """How a function body leaves: `return` gives the result; falling off the end, None."""
    loop = False

    def on_return(self, comp, node, env):
        v = comp.value(comp.expr(node.value, env), node) if node.value is not None else \
            comp.const(None)
        return [v]

    def on_end(self, comp, env):
        return [comp.const(None)]


_UNKNOWN = "$unknown"   # the result type of a loop that returns, until a return sets it
_RETURNED, _RESULT = "$returned", "$result"   # names no source can use


class _LoopExit:
    """How a loop body leaves: the condition to run again (False for break) and the carried
    values (Note [Blocks])."""
    loop = True

    def __init__(self, carried, next_cond, returns=None):
        self.carried = carried
        self.next_cond = next_cond
        self.returns = returns   # a loop that may return: (flag name, result name, node)

    def values(self, comp, env, cond, node):
        out = [cond]
        for name in self.carried:
            v = env.get(name)
            if not isinstance(v, _ir.Value):
                comp.error(node, f"{name} is not defined at the end of the loop body")
            out.append(v)
        return out

    def on_return(self, comp, node, env):
        """A return in the loop body: the loop stops with its flag set and the value carried
        out (Note [Return inside a loop])."""
        if self.returns is None:
            comp.error(node, "return statements inside nested loops aren't supported",
                       NotSupportedError)
        flag, result, _ = self.returns
        v = comp.value(comp.expr(node.value, env), node) if node.value is not None else \
            comp.const(None)
        param = env[result]
        ty = v.type if param.type == _UNKNOWN else _unify(param.type, v.type)
        if ty is None:
            comp.error(node, f"Previous return statement returned a value of type "
                             f"{_py_type_name(param.type)} but this return statement returns "
                             f"a value of type {_py_type_name(v.type)}")
        param.type = ty
        env = dict(env)
        env[flag], env[result] = comp.const(True), v
        return self.values(comp, env, comp.const(False), node)

    def on_end(self, comp, env):
        return self.values(comp, env, self.next_cond(env), None)


class _Compiler:
    """Emits the nodes of one function's body (Note [Scripting]).  `self.nodes` is the node
    list of the graph or block being filled."""

    def __init__(self, graph, source, fn, stack, scripted, nodes=None):
        self.graph = graph
        self.src = source
        self.fn = fn
        self.globals = getattr(fn, "__globals__", {})
        self.closure = inspect.getclosurevars(fn).nonlocals if fn.__closure__ else {}
        self.stack = stack             # the functions being compiled, outermost first
        self.scripted = scripted       # id(module) -> its RecursiveScriptModule
        self.nodes = graph.nodes if nodes is None else nodes

    # -- emitting --

    def error(self, node, msg, kind=RuntimeError):
        where = self.src.highlight(node) if node is not None else ""
        if kind is RuntimeError:
            raise RuntimeError("\n" + msg + ":\n" + where)
        raise kind(where, msg)

    def emit(self, kind, inputs, out_types, overload="", attrs=None, blocks=()):
        node = _ir.Node(kind, inputs, [_ir.Value(t) for t in out_types], overload, attrs,
                        blocks=blocks)
        self.nodes.append(node)
        return node

    def const(self, x, node=None):
        ty = _constant_type(x)
        if ty is None and isinstance(x, (list, tuple)):
            items = [self.const(e, node) for e in x]
            elem = items[0].type if items else "int"
            if isinstance(x, list) or (items and elem in _NUMBER and
                                       all(v.type == elem for v in items)):
                return self.emit("prim::ListConstruct", items, [elem + "[]"]).outputs[0]
            return self.emit("prim::TupleConstruct", items,
                             ["(" + ", ".join(v.type for v in items) + ")"]).outputs[0]
        if ty is None:
            if type(x).__name__ == "dtype":
                return self.emit("prim::Constant", [], ["ScalarType"],
                                 attrs={"value": x}).outputs[0]
            self.error(node, f"Unsupported value kind: {type(x).__name__}")
        return self.emit("prim::Constant", [], [ty], attrs={"value": x}).outputs[0]

    def in_block(self, block, fn):
        saved = self.nodes
        self.nodes = block.nodes
        try:
            return fn()
        finally:
            self.nodes = saved

    def static(self, v):
        """The Python value of v when a constant produces it, else _ir.NO_DEFAULT."""
        if isinstance(v, _ir.Value) and v.node is not None and v.node.kind == "prim::Constant" \
                and "tensor" not in v.node.attrs:
            return v.node.attrs.get("value")
        return _ir.NO_DEFAULT

    def value(self, v, node):
        """v as a graph Value (a module or Python object is an error here)."""
        if isinstance(v, _ir.Value):
            return v
        if isinstance(v, _PythonValue):
            x = v.obj
            if _constant_type(x) is not None or type(x).__name__ == "dtype" or \
                    isinstance(x, (tuple, list)):
                return self.const(x, node)
            self.error(node, f"Python value of type '{type(x).__name__}' cannot be used as a "
                             "value")
        if isinstance(v, _ModuleValue):
            return v.value
        self.error(node, "cannot be used as a value")

    # -- statements --

    def body(self, stmts, env, exit_, terminal):
        """Compiles stmts; returns the exit values when the sequence leaves (terminal: falling
        off its end leaves too), else None."""
        for i, s in enumerate(stmts):
            if isinstance(s, ast.If) and _has_exit([s], exit_.loop):
                return self.if_exit(s, stmts[i + 1:], env, exit_)
            if isinstance(s, (ast.For, ast.While)) and not exit_.loop and \
                    _has_exit(s.body, False):
                return self.loop_return(s, stmts[i + 1:], env, exit_)
            if isinstance(s, ast.Return):
                return exit_.on_return(self, s, env)
            if isinstance(s, ast.Raise):
                self.raise_stmt(s, env)
                return _RAISES
            if isinstance(s, (ast.Break, ast.Continue)):
                if not exit_.loop:
                    self.error(s, f"{'break' if isinstance(s, ast.Break) else 'continue'} "
                                  "outside of a loop")
                cond = self.const(False) if isinstance(s, ast.Break) else \
                    exit_.next_cond(env)
                return exit_.values(self, env, cond, s)
            if self.stmt(s, env, exit_) is _RAISES:
                return _RAISES
        return exit_.on_end(self, env) if terminal else None

    def stmt(self, s, env, exit_):
        """Compiles one statement; _RAISES when every path through it raises."""
        if isinstance(s, ast.Assign):
            v = self.expr(s.value, env)
            for target in s.targets:
                self.assign(target, v, env)
        elif isinstance(s, ast.AnnAssign):
            ty = self.annotation(s.annotation)
            v = self.typed_expr(s.value, ty, env)
            self.assign(s.target, v, env)
        elif isinstance(s, ast.AugAssign):
            target = s.target
            if not isinstance(target, ast.Name):
                self.error(s, "augmented assignment to anything but a name isn't supported",
                           NotSupportedError)
            cur = self.expr(target, env)
            rhs = self.expr(s.value, env)
            self.assign(target, self.binop(s, type(s.op), cur, rhs, inplace=True), env)
        elif isinstance(s, ast.Expr):
            if not isinstance(s.value, ast.Constant):
                self.expr(s.value, env)
        elif isinstance(s, ast.Pass):
            pass
        elif isinstance(s, ast.If):
            return self.if_stmt(s, env, exit_)
        elif isinstance(s, ast.For):
            return self.for_stmt(s, env)
        elif isinstance(s, ast.While):
            self.while_stmt(s, env)
        elif isinstance(s, ast.Assert):
            self.assert_stmt(s, env)
        else:
            self.unsupported(s)
        return None

    # -- raise and assert --

    def raise_stmt(self, s, env):
        """`raise E(msg)`: prim::RaiseException(msg, "builtins.E"); `raise E` passes "" and
        None, and an AssertionError's message is prefixed with its name (TorchScript's
        forms)."""
        if s.exc is None:
            self.error(s, "bare raise statements aren't supported", NotSupportedError)
        if s.cause is not None:
            self.error(s.cause, "raise ... from ... isn't supported", NotSupportedError)
        exc = s.exc
        call = isinstance(exc, ast.Call)
        cls = self.expr(exc.func if call else exc, env)
        if not (isinstance(cls, _PythonValue) and isinstance(cls.obj, type) and
                issubclass(cls.obj, BaseException)):
            self.error(exc, "exceptions must derive from BaseException")
        cls = cls.obj
        if call and (len(exc.args) > 1 or exc.keywords):
            self.error(exc, "an exception takes at most one argument, its message",
                       NotSupportedError)
        msg = self.message(exc.args[0], env) if call and exc.args else self.const("")
        if cls is AssertionError:
            self.emit_raise(self.prefixed("AssertionError: ", msg), None, s)
        else:
            name = f"{cls.__module__}.{cls.__qualname__}" if call else None
            self.emit_raise(msg, name, s)

    def assert_stmt(self, s, env):
        """`assert test, msg`: prim::If(test) with an empty true block and a false block that
        raises "AssertionError: msg" (as TorchScript lowers it)."""
        c, _, _ = self.cond(s.test, env)
        if c is True:
            return

        def fail():
            msg = self.message(s.msg, env) if s.msg is not None else self.const("")
            self.emit_raise(self.prefixed("AssertionError: ", msg), None, s)
            return []

        if c is False:
            fail()
            return
        self.emit_if(c, lambda: [], fail, s)

    def message(self, node, env):
        v = self.value(self.expr(node, env), node)
        if v.type != "str":
            self.error(node, f"an exception message must be a str, not "
                             f"{_py_type_name(v.type)}")
        return v

    def prefixed(self, prefix, msg):
        text = self.static(msg)
        if isinstance(text, str):
            return self.const(prefix + text)
        return self.emit("aten::add", [self.const(prefix), msg], ["str"],
                         overload="str").outputs[0]

    def emit_raise(self, msg, name, node):
        self.emit("prim::RaiseException", [msg, self.const(name)], [],
                  attrs={"source": self.src.highlight(node)})

    def uninitialized(self, types):
        return [self.emit("prim::Uninitialized", [], [t]).outputs[0] for t in types]

    def unsupported(self, node):
        name = _UNSUPPORTED.get(type(node), type(node).__name__)
        self.error(node, f"{name} aren't supported", UnsupportedNodeError)

    def annotation(self, ann):
        names = dict(vars(typing))
        names.update(self.globals)
        try:
            obj = eval(compile(ast.Expression(ann), "<annotation>", "eval"), names)  # noqa: S307
        except Exception as e:   # noqa: BLE001  (any failure is an unknown annotation)
            self.error(ann, f"Unknown type annotation: {e}")
        return annotation_type(obj, "")

    def typed_expr(self, node, ty, env):
        if isinstance(node, ast.List) and not node.elts and ty.endswith("[]"):
            return self.emit("prim::ListConstruct", [], [ty]).outputs[0]
        if isinstance(node, ast.Dict) and not node.keys and _ir.is_dict_type(ty):
            return self.emit("prim::DictConstruct", [], [ty]).outputs[0]
        v = self.value(self.expr(node, env), node)
        if _unify(ty, v.type) != ty:
            self.error(node, f"Variable annotated with type {_py_type_name(ty)} cannot be "
                             f"assigned a value of type {_py_type_name(v.type)}")
        if v.type != ty:
            v = self.emit("prim::unchecked_cast", [v], [ty]).outputs[0]
        return v

    def assign(self, target, v, env):
        if isinstance(target, ast.Name):
            if isinstance(v, _ir.Value) and v.name is None and v.node is not None and \
                    v.node.kind != "prim::Constant":
                v.name = target.id
            env[target.id] = v
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.unpack(target, v, len(target.elts))
            for t, item in zip(target.elts, items):
                self.assign(t, item, env)
        elif isinstance(target, ast.Subscript):
            v = self.value(v, target)
            d = self.value(self.expr(target.value, env), target.value)
            if not _ir.is_dict_type(d.type):
                self.error(target, "assignment to an item of a "
                                   f"{_py_type_name(d.type)} isn't supported",
                           NotSupportedError)
            key, value = _ir.dict_types(d.type)
            k = self.dict_key(target.slice, d, env)
            if _unify(value, v.type) != value:
                self.error(target, f"a {_py_type_name(d.type)} cannot hold a value of type "
                                   f"{_py_type_name(v.type)}")
            self.emit("aten::_set_item", [d, k, v], [], overload=key)
        else:
            self.error(target, "assignment to this target isn't supported", NotSupportedError)

    def unpack(self, node, v, n):
        if isinstance(v, _PythonValue) and isinstance(v.obj, tuple):
            v = self.value(v, node)
        if not isinstance(v, _ir.Value) or not _ir.is_tuple_type(v.type):
            self.error(node, f"cannot unpack a value of type "
                             f"{_py_type_name(getattr(v, 'type', 'object'))}")
        types = _ir.split_top(v.type[1:-1])
        if len(types) != n:
            self.error(node, f"too many values to unpack: need {n} but found {len(types)}")
        return self.emit("prim::TupleUnpack", [v], types).outputs

    # -- control flow --

    def cond(self, node, env):
        """(bool Value or Python bool when known, refinements of the true branch, refinements
        of the false branch); a refinement maps a name to the type it has in that branch."""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            c, then_r, else_r = self.cond(node.operand, env)
            if isinstance(c, bool):
                return not c, else_r, then_r
            return self.emit("aten::__not__", [c], ["bool"]).outputs[0], else_r, then_r
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and \
                isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            return self.is_none(node, env)
        if isinstance(node, ast.BoolOp):
            return self.bool_op(node, env)
        c = self.to_bool(self.expr(node, env), node)
        known = self.static(c)
        return (known if known is not _ir.NO_DEFAULT else c), {}, {}

    def is_none(self, node, env):
        negate = isinstance(node.ops[0], ast.IsNot)
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant) and left.value is None:
            left, right = right, left
        lv = self.value(self.expr(left, env), left)
        rv = self.value(self.expr(right, env), right)
        if rv.type != "NoneType":
            out = self.emit("aten::__isnot__" if negate else "aten::__is__", [lv, rv],
                            ["bool"]).outputs[0]
            return out, {}, {}
        if lv.type == "NoneType" or not lv.type.endswith("?"):
            is_none = lv.type == "NoneType"
            return is_none != negate, {}, {}
        out = self.emit("aten::__isnot__" if negate else "aten::__is__", [lv, rv],
                        ["bool"]).outputs[0]
        refine = {}
        if isinstance(left, ast.Name):
            refine = {left.id: lv.type[:-1]}
        return (out, refine, {}) if negate else (out, {}, refine)

    def bool_op(self, node, env):
        is_and = isinstance(node.op, ast.And)
        c, then_r, else_r = self.cond(node.values[0], env)
        rest = node.values[1:]
        if isinstance(c, bool):
            if c != is_and:
                return c, then_r, else_r
            if len(rest) == 1:
                return self.cond(rest[0], env)
            return self.bool_op(ast.BoolOp(node.op, rest), env)
        sub = rest[0] if len(rest) == 1 else ast.copy_location(ast.BoolOp(node.op, rest),
                                                               node)

        def second():
            inner = dict(env)
            self.refine(inner, then_r if is_and else else_r)
            c2, _, _ = self.cond(sub, inner)
            return [c2 if isinstance(c2, _ir.Value) else self.const(c2)]

        def short():
            return [self.const(not is_and)]

        out = self.emit_if(c, second if is_and else short, short if is_and else second,
                           node)
        return out[0], (then_r if is_and else {}), ({} if is_and else else_r)

    def refine(self, env, refinements):
        for name, ty in refinements.items():
            v = env[name]
            cast = self.emit("prim::unchecked_cast", [v], [ty]).outputs[0]
            cast.name = name
            env[name] = cast

    def emit_if(self, cond, then_fn, else_fn, node):
        """prim::If on cond whose blocks are filled by then_fn/else_fn (each returns the block's
        output Values); returns the node's outputs."""
        blocks = [_ir.Block(), _ir.Block()]
        outs = [self.in_block(blocks[0], then_fn), self.in_block(blocks[1], else_fn)]
        if outs[0] is _RAISES and outs[1] is _RAISES:
            self.emit("prim::If", [cond], [], blocks=blocks)
            return _RAISES
        for k in (0, 1):
            if outs[k] is _RAISES:
                other = [v.type for v in outs[1 - k]]
                outs[k] = self.in_block(blocks[k], lambda: self.uninitialized(other))
        types = []
        for a, b in zip(*outs):
            t = _unify(a.type, b.type)
            if t is None:
                self.error(node, f"Type mismatch: the true branch gives {_py_type_name(a.type)} "
                                 f"and the false branch {_py_type_name(b.type)}")
            types.append(t)
        blocks[0].outputs, blocks[1].outputs = outs
        return self.emit("prim::If", [cond], types, blocks=blocks).outputs

    def if_stmt(self, s, env, exit_):
        c, then_r, else_r = self.cond(s.test, env)
        if isinstance(c, bool):
            branch_env = env
            self.refine(branch_env, then_r if c else else_r)
            return self.body(s.body if c else s.orelse, branch_env, exit_, False)
        names = _assigned_names(s.body + s.orelse)
        envs = [dict(env), dict(env)]
        raised = [False, False]

        def branch(k, stmts, refinements):
            def fill():
                self.refine(envs[k], refinements)
                raised[k] = self.body(stmts, envs[k], exit_, False) is _RAISES
                return []
            return fill

        blocks = [_ir.Block(), _ir.Block()]
        self.in_block(blocks[0], branch(0, s.body, then_r))
        self.in_block(blocks[1], branch(1, s.orelse, else_r))
        if all(raised):
            self.emit("prim::If", [c], [], blocks=blocks)
            return _RAISES
        merged, types = [], []
        for name in names:
            a, b = envs[0].get(name), envs[1].get(name)
            if raised[0] or raised[1]:
                k = 0 if raised[0] else 1
                live = b if raised[0] else a
                if live is env.get(name) or not isinstance(live, _ir.Value):
                    if live is not None:
                        env[name] = live
                    continue
                merged.append(name)
                types.append(live.type)
                blocks[k].outputs.append(
                    self.in_block(blocks[k], lambda: self.uninitialized([live.type]))[0])
                blocks[1 - k].outputs.append(live)
                continue
            if a is b:
                if a is not None:
                    env[name] = a
                continue
            side = "false" if a is not None else "true"
            if a is None or b is None or isinstance(a, _Undefined) or isinstance(b, _Undefined):
                env[name] = _Undefined((f"{name} is not defined in the {side} branch", s))
                continue
            if not (isinstance(a, _ir.Value) and isinstance(b, _ir.Value)):
                env[name] = _Undefined((f"{name} holds different Python values in the two "
                                        "branches", s))
                continue
            t = _unify(a.type, b.type)
            if t is None:
                env[name] = _Undefined((f"Type mismatch: {name} is set to type "
                                        f"{_py_type_name(a.type)} in the true branch and type "
                                        f"{_py_type_name(b.type)} in the false branch", s))
                continue
            merged.append(name)
            types.append(t)
            blocks[0].outputs.append(a)
            blocks[1].outputs.append(b)
        node = self.emit("prim::If", [c], types, blocks=blocks)
        for name, o in zip(merged, node.outputs):
            o.name = name
            env[name] = o
        return None

    def if_exit(self, s, rest, env, exit_):
        """An `if` that returns, breaks or continues: the statements after it go into each
        branch, so that both blocks end where the body leaves."""
        c, then_r, else_r = self.cond(s.test, env)
        if isinstance(c, bool):
            self.refine(env, then_r if c else else_r)
            return self.body((s.body if c else s.orelse) + rest, env, exit_, True)

        def branch(stmts, refinements):
            def fill():
                inner = dict(env)
                self.refine(inner, refinements)
                return self.body(stmts + rest, inner, exit_, True)
            return fill

        return self.emit_if(c, branch(s.body, then_r), branch(s.orelse, else_r), s)

    def loop_return(self, s, rest, env, exit_):
        """A loop whose body returns (Note [Return inside a loop]): it carries a flag and the
        result; after it, `if flag: return result` and the statements that follow go in the
        other branch (as after an if that returns)."""
        init = self.uninitialized([_UNKNOWN])[0]
        env[_RETURNED], env[_RESULT] = self.const(False), init
        self.returning_loop = s
        if self.stmt(s, env, exit_) is _RAISES:
            return _RAISES
        flag, result = env.pop(_RETURNED), env.pop(_RESULT)
        if result.type == _UNKNOWN:   # no return was compiled (a branch known not taken)
            result.type = init.type = "NoneType"
        init.type = result.type

        def after():
            return self.body(rest, dict(env), exit_, True)

        return self.emit_if(flag, lambda: [result], after, s)

    def emit_loop(self, node, trip, cond0, env, bind, body, next_cond):
        """prim::Loop(trip, cond0, carried...): bind(iteration Value, body env) binds the loop
        target; next_cond(env) is the condition at the end of an iteration."""
        returns = None
        if getattr(self, "returning_loop", None) is node:
            self.returning_loop = None
            returns = (_RETURNED, _RESULT, node)
        carried = [n for n in _assigned_names(body) if isinstance(env.get(n), _ir.Value)]
        if returns is not None:
            carried += [_RETURNED, _RESULT]
        block = _ir.Block()
        it = _ir.Value("int")
        params = [_ir.Value(env[n].type, n if n.isidentifier() else None) for n in carried]
        block.inputs = [it] + params
        inner = dict(env)
        inner.update(zip(carried, params))

        def fill():
            bind(it, inner)
            return self.body(body, inner, _LoopExit(carried, next_cond, returns), True)

        outs = self.in_block(block, fill)
        if outs is _RAISES:
            outs = self.in_block(block, lambda: [self.const(False)] + self.uninitialized(
                [p.type for p in params]))
        for name, p, v in zip(carried, params, outs[1:]):
            if _unify(p.type, v.type) != p.type:
                self.error(node, f"Variable '{name}' previously had type "
                                 f"{_py_type_name(p.type)} but is now being assigned to a "
                                 f"value of type {_py_type_name(v.type)}")
        block.outputs = outs
        loop = self.emit("prim::Loop", [trip, cond0] + [env[n] for n in carried],
                         [p.type for p in params], blocks=[block])
        for name, o in zip(carried, loop.outputs):
            o.name = name if name.isidentifier() else None
            env[name] = o
        for name in _assigned_names(body):
            if name not in carried:
                env[name] = _Undefined((f"{name} is not defined in the loop", node))

    def for_stmt(self, s, env):
        if s.orelse:
            self.error(s, "else branches of for loops aren't supported", NotSupportedError)
        it = s.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and \
                it.func.id == "range" and "range" not in env:
            return self.for_range(s, env)
        if isinstance(it, ast.Tuple):
            return self.unrolled(s, [self.expr(e, env) for e in it.elts], env)
        seq = self.expr(it, env)
        if isinstance(seq, _ModuleValue):
            children = [self.submodule(seq, name, s) for name in seq.module._modules]
            return self.unrolled(s, children, env)
        seq = self.value(seq, it)
        if _ir.is_dict_type(seq.type):   # iterating a dict iterates its keys
            key = _ir.dict_types(seq.type)[0]
            seq = self.emit("aten::keys", [seq], [key + "[]"], overload=key).outputs[0]
        if _ir.is_tuple_type(seq.type):
            return self.unrolled(s, self.unpack(it, seq, len(_ir.split_top(seq.type[1:-1]))),
                                 env)
        if seq.type.endswith("[]"):
            trip = self.emit("aten::len", [seq], ["int"], overload="t").outputs[0]

            def bind(i, inner):
                item = self.emit("aten::__getitem__", [seq, i], [seq.type[:-2]],
                                 overload="t").outputs[0]
                self.assign(s.target, item, inner)
        elif _ir.is_tensor_type(seq.type):
            trip = self.emit("aten::len", [seq], ["int"], overload="Tensor").outputs[0]

            def bind(i, inner):
                item = self.emit("aten::select", [seq, self.const(0), i], ["Tensor"],
                                 overload="int").outputs[0]
                self.assign(s.target, item, inner)
        else:
            self.error(it, f"'{_py_type_name(seq.type)}' object is not iterable")
        self.emit_loop(s, trip, self.const(True), env, bind, s.body,
                       lambda inner: self.const(True))

    def for_range(self, s, env):
        args = [self.value(self.expr(a, env), a) for a in s.iter.args]
        if not 1 <= len(args) <= 3 or s.iter.keywords or \
                any(a.type not in ("int", "bool") for a in args):
            self.error(s.iter, "range expected 1 to 3 int arguments")
        if len(args) == 1:
            trip = args[0]

            def bind(i, inner):
                self.assign(s.target, i, inner)
        else:
            start, stop = args[0], args[1]
            step = args[2] if len(args) == 3 else self.const(1)
            trip = self.emit("aten::__range_length", [start, stop, step], ["int"]).outputs[0]

            def bind(i, inner):
                v = self.emit("aten::__derive_index", [i, start, step], ["int"]).outputs[0]
                self.assign(s.target, v, inner)
        self.emit_loop(s, trip, self.const(True), env, bind, s.body,
                       lambda inner: self.const(True))

    def unrolled(self, s, items, env):
        for node in ast.walk(ast.Module(s.body, [])):
            if isinstance(node, (ast.Break, ast.Continue, ast.Return)):
                self.error(node, "break, continue and return in a loop over modules or a "
                                 "tuple aren't supported", NotSupportedError)
        for item in items:
            self.assign(s.target, item, env)
            if self.body(s.body, env, _FunctionExit(), False) is _RAISES:
                return _RAISES
        return None

    def while_stmt(self, s, env):
        if s.orelse:
            self.error(s, "else branches of while loops aren't supported", NotSupportedError)
        c, _, _ = self.cond(s.test, env)
        if c is False:
            return
        cond0 = c if isinstance(c, _ir.Value) else self.const(True)

        def next_cond(inner):
            c2, _, _ = self.cond(s.test, inner)
            return c2 if isinstance(c2, _ir.Value) else self.const(c2)

        self.emit_loop(s, self.const(_INT_MAX), cond0, env, lambda i, inner: None, s.body,
                       next_cond)

    # -- expressions --

    def expr(self, node, env):
        if isinstance(node, ast.Name):
            return self.name(node, env)
        if isinstance(node, ast.Constant):
            if node.value is Ellipsis or isinstance(node.value, bytes):
                self.unsupported(node)
            return self.const(node.value, node)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, self.expr(node.value, env))
        if isinstance(node, ast.Call):
            return self.call(node, env)
        if isinstance(node, ast.BinOp):
            return self.binop(node, type(node.op), self.expr(node.left, env),
                              self.expr(node.right, env))
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, env)
        if isinstance(node, ast.Compare):
            return self.compare(node, env)
        if isinstance(node, (ast.BoolOp, ast.IfExp)):
            if isinstance(node, ast.BoolOp):
                c, _, _ = self.bool_op(node, env)
                return c if isinstance(c, _ir.Value) else self.const(c)
            return self.if_exp(node, env)
        if isinstance(node, ast.List):
            items = [self.value(self.expr(e, env), e) for e in node.elts]
            elem = items[0].type if items else "Tensor"
            for v in items[1:]:
                elem = _unify(elem, v.type) or self.error(
                    node, "Lists must contain only a single type")
            return self.emit("prim::ListConstruct", items, [elem + "[]"]).outputs[0]
        if isinstance(node, ast.Tuple):
            items = [self.value(self.expr(e, env), e) for e in node.elts]
            return self.emit("prim::TupleConstruct", items,
                             ["(" + ", ".join(v.type for v in items) + ")"]).outputs[0]
        if isinstance(node, ast.Subscript):
            return self.subscript(node, env)
        if isinstance(node, ast.Dict):
            return self.dict_literal(node, env)
        self.unsupported(node)

    # -- dicts --

    def dict_literal(self, node, env):
        """prim::DictConstruct(k0, v0, k1, v1, ...) -> Dict(K, V): the keys one type, str or
        int; the values one type (None joins an Optional)."""
        if not node.keys:
            self.error(node, "an empty dict literal needs a type: annotate it, as in "
                             "`d: Dict[str, int] = {}`")
        if any(k is None for k in node.keys):
            self.error(node, "dict unpacking (**) isn't supported", NotSupportedError)
        keys = [self.value(self.expr(k, env), k) for k in node.keys]
        values = [self.value(self.expr(v, env), v) for v in node.values]
        key = keys[0].type
        if key not in ("str", "int") or any(k.type != key for k in keys):
            self.error(node, "Dict keys must all be str or all be int, got " +
                             ", ".join(_py_type_name(k.type) for k in keys))
        value = values[0].type
        for v in values[1:]:
            value = _unify(value, v.type) or self.error(
                node, "Dict values must all be of one type")
        items = [x for kv in zip(keys, values) for x in kv]
        return self.emit("prim::DictConstruct", items, [f"Dict({key}, {value})"]).outputs[0]

    def dict_key(self, node, d, env):
        k = self.value(self.expr(node, env), node)
        key = _ir.dict_types(d.type)[0]
        if k.type != key:
            self.error(node, f"a {_py_type_name(d.type)} is indexed by {key}, not "
                             f"{_py_type_name(k.type)}")
        return k

    def dict_method(self, node, d, name, args, kwargs):
        key, value = _ir.dict_types(d.type)
        if kwargs:
            self.error(node, f"dict.{name}() takes no keyword arguments")
        if name in ("keys", "values", "items") and not args:
            out = {"keys": key + "[]", "values": value + "[]",
                   "items": f"({key}, {value})[]"}[name]
            return self.emit("aten::" + name, [d], [out], overload=key).outputs[0]
        if name == "get" and len(args) in (1, 2):
            k = self.value(args[0], node)
            if k.type != key:
                self.error(node, f"a {_py_type_name(d.type)} is indexed by {key}, not "
                                 f"{_py_type_name(k.type)}")
            if len(args) == 1:
                out = value if value.endswith("?") else value + "?"
                return self.emit("aten::get", [d, k], [out], overload=key).outputs[0]
            default = self.value(args[1], node)
            out = _unify(value, default.type)
            if out is None:
                self.error(node, f"the default of get() has type "
                                 f"{_py_type_name(default.type)}, the dict's values "
                                 f"{_py_type_name(value)}")
            return self.emit("aten::get", [d, k, default], [out],
                             overload="default_" + key).outputs[0]
        self.error(node, f"Tried to access nonexistent attribute or method '{name}' of type "
                         f"'{_py_type_name(d.type)}'")

    def name(self, node, env):
        if node.id in env:
            v = env[node.id]
            if isinstance(v, _Undefined):
                msg, where = v.message
                raise RuntimeError("\n" + msg + ":\n" + self.src.highlight(where) +
                                   "and was used here:\n" + self.src.highlight(node))
            return v
        for table in (self.closure, self.globals, vars(builtins)):
            if node.id in table:
                return _PythonValue(table[node.id])
        self.error(node, f"undefined value {node.id}")

    def if_exp(self, node, env):
        c, then_r, else_r = self.cond(node.test, env)
        if isinstance(c, bool):
            self.refine(env, then_r if c else else_r)
            return self.expr(node.body if c else node.orelse, env)

        def side(expr, refinements):
            def fill():
                inner = dict(env)
                self.refine(inner, refinements)
                return [self.value(self.expr(expr, inner), expr)]
            return fill

        return self.emit_if(c, side(node.body, then_r), side(node.orelse, else_r), node)[0]

    def to_bool(self, v, node):
        v = self.value(v, node)
        if v.type == "bool":
            return v
        if _ir.is_tensor_type(v.type):
            return self.emit("aten::Bool", [v], ["bool"], overload="Tensor").outputs[0]
        if v.type == "int":
            return self.emit("aten::Bool", [v], ["bool"], overload="int").outputs[0]
        self.error(node, f"Could not cast value of type {_py_type_name(v.type)} to bool")

    def unary(self, node, env):
        if isinstance(node.op, ast.Not):
            c, _, _ = self.cond(node, env)
            return c if isinstance(c, _ir.Value) else self.const(c)
        v = self.value(self.expr(node.operand, env), node.operand)
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.USub):
            if v.type in _NUMBER:
                return self.emit("aten::neg", [v], [v.type], overload=v.type).outputs[0]
            return self.call_op(node, "aten::neg", [v], {})
        if isinstance(node.op, ast.Invert) and _ir.is_tensor_type(v.type):
            return self.call_op(node, "aten::bitwise_not", [v], {})
        self.unsupported(node.op)

    def binop(self, node, op_type, a, b, inplace=False):
        op = _BINARY_OPS.get(op_type)
        if op is None:
            self.unsupported(node)
        a, b = self.value(a, node), self.value(b, node)
        types = (a.type if a.type != "bool" else "int", b.type if b.type != "bool" else "int")
        if types in NUMBER_OVERLOADS and op in ("add", "sub", "mul", "div", "floordiv",
                                                "remainder", "pow"):
            s = _ir.schema("aten::" + op, NUMBER_OVERLOADS[types])
            return self.emit("aten::" + op, [a, b], s.returns,
                             overload=NUMBER_OVERLOADS[types]).outputs[0]
        if op in ("__and__", "__or__") and a.type == b.type == "bool":
            return self.emit("aten::" + op, [a, b], ["bool"], overload="bool").outputs[0]
        if _ir.is_tensor_type(a.type):
            name = "aten::" + _TENSOR_BINARY[op] + ("_" if inplace else "")
            return self.call_op(node, name, [a, b], {})
        if _ir.is_tensor_type(b.type) and a.type in _NUMBER:
            if op in ("add", "mul"):
                return self.call_op(node, "aten::" + op, [b, a], {})
            if op == "sub":
                return self.call_op(node, "aten::rsub", [b, a], {})
            if op == "div":
                return self.call_op(node, "aten::mul",
                                    [self.call_op(node, "aten::reciprocal", [b], {}), a], {})
        self.error(node, f"Arguments for call are not valid: unsupported operand types for "
                         f"{op}: '{_py_type_name(a.type)}' and '{_py_type_name(b.type)}'")

    def compare(self, node, env):
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Is, ast.IsNot)):
            c, _, _ = self.is_none(node, env)
            return c if isinstance(c, _ir.Value) else self.const(c)
        result = None
        left = self.value(self.expr(node.left, env), node.left)
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.value(self.expr(right_node, env), right_node)
            if isinstance(op_node, (ast.In, ast.NotIn)):
                if not _ir.is_dict_type(right.type):
                    self.error(node, f"'in' on a {_py_type_name(right.type)} isn't supported",
                               NotSupportedError)
                key = _ir.dict_types(right.type)[0]
                if left.type != key:
                    self.error(node, f"a {_py_type_name(right.type)} is indexed by {key}, not "
                                     f"{_py_type_name(left.type)}")
                out = self.emit("aten::__contains__", [right, left], ["bool"],
                                overload=key).outputs[0]
                if isinstance(op_node, ast.NotIn):
                    out = self.emit("aten::__not__", [out], ["bool"]).outputs[0]
                result = out if result is None else self.binop(node, ast.BitAnd, result, out)
                left = right
                continue
            op = _COMPARE_OPS.get(type(op_node))
            if op is None:
                self.unsupported(op_node)
            types = (left.type if left.type != "bool" else "int",
                     right.type if right.type != "bool" else "int")
            if types in NUMBER_OVERLOADS:
                out = self.emit("aten::" + op, [left, right], ["bool"],
                                overload=NUMBER_OVERLOADS[types]).outputs[0]
            elif left.type == right.type and left.type in ("str", "bool") and \
                    op in ("eq", "ne"):
                out = self.emit("aten::" + op, [left, right], ["bool"],
                                overload=left.type).outputs[0]
            elif _ir.is_tensor_type(left.type):
                out = self.call_op(node, "aten::" + op, [left, right], {})
            elif _ir.is_tensor_type(right.type):
                flipped = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le"}.get(op, op)
                out = self.call_op(node, "aten::" + flipped, [right, left], {})
            else:
                self.error(node, f"Arguments for call are not valid: cannot compare "
                                 f"'{_py_type_name(left.type)}' and "
                                 f"'{_py_type_name(right.type)}'")
            if result is None:
                result = out
            else:
                result = self.binop(node, ast.BitAnd, self.to_bool(result, node),
                                    self.to_bool(out, node))
            left = right
        return result

    def subscript(self, node, env):
        base = self.expr(node.value, env)
        if isinstance(base, _ModuleValue):
            key = self.static(self.value(self.expr(node.slice, env), node.slice))
            names = list(base.module._modules)
            if not isinstance(key, int) or not -len(names) <= key < len(names):
                self.error(node, "a module container can only be indexed by a constant int in "
                                 "range")
            return self.submodule(base, names[key], node)
        base = self.value(base, node.value)
        if _ir.is_tuple_type(base.type):
            idx = self.static(self.value(self.expr(node.slice, env), node.slice))
            types = _ir.split_top(base.type[1:-1])
            if not isinstance(idx, int) or not -len(types) <= idx < len(types):
                self.error(node, "tuple indices must be integer constants in range")
            return self.emit("prim::TupleIndex", [base, self.const(idx)],
                             [types[idx]]).outputs[0]
        if base.type.endswith("[]"):
            idx = self.value(self.expr(node.slice, env), node.slice)
            return self.emit("aten::__getitem__", [base, idx], [base.type[:-2]],
                             overload="t").outputs[0]
        if _ir.is_dict_type(base.type):
            key, value = _ir.dict_types(base.type)
            k = self.dict_key(node.slice, base, env)
            return self.emit("aten::__getitem__", [base, k], [value],
                             overload="Dict_" + key).outputs[0]
        if not _ir.is_tensor_type(base.type):
            self.error(node, f"'{_py_type_name(base.type)}' object is not subscriptable")
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        dim = 0
        out = base
        for p in parts:
            if isinstance(p, ast.Slice):
                lo, hi, st = (self.value(self.expr(e, env), e) if e is not None else
                              self.const(None if k < 2 else 1)
                              for k, e in enumerate((p.lower, p.upper, p.step)))
                out = self.call_op(p, "aten::slice", [out, self.const(dim), lo, hi, st], {})
                dim += 1
            elif isinstance(p, ast.Constant) and p.value is None:
                out = self.call_op(p, "aten::unsqueeze", [out, self.const(dim)], {})
                dim += 1
            else:
                idx = self.value(self.expr(p, env), p)
                if idx.type in ("int", "bool"):
                    out = self.call_op(p, "aten::select", [out, self.const(dim), idx], {})
                elif _ir.is_tensor_type(idx.type) and len(parts) == 1:
                    lst = self.emit("prim::ListConstruct", [idx], ["Tensor?[]"]).outputs[0]
                    out = self.call_op(p, "aten::index", [out, lst], {})
                else:
                    self.error(p, f"Unsupported index of type {_py_type_name(idx.type)}")
        return out

    # -- attributes and calls --

    def attribute(self, node, base):
        if isinstance(base, _ModuleValue):
            return self.module_attr(base, node.attr, node)
        if isinstance(base, _PythonValue):
            try:
                return _PythonValue(getattr(base.obj, node.attr))
            except AttributeError:
                self.error(node, f"Python object has no attribute '{node.attr}'")
        v = self.value(base, node)
        if _ir.is_tensor_type(v.type) and node.attr == "shape":
            return self.emit("aten::size", [v], ["int[]"]).outputs[0]
        if _ir.is_tensor_type(v.type) and node.attr == "dtype":
            return self.emit("prim::dtype", [v], ["ScalarType"]).outputs[0]
        self.error(node, f"Tried to access nonexistent attribute or method '{node.attr}' of "
                         f"type '{_py_type_name(v.type)}'")

    def submodule(self, mv, name, node):
        child = mv.module._modules[name]
        v = self.emit("prim::GetAttr", [mv.value], [_module_type(type(child))],
                      attrs={"name": name}).outputs[0]
        v.name = name if name.isidentifier() else "_" + name
        return _ModuleValue(v, child)

    def module_attr(self, mv, name, node):
        m = mv.module
        if m._modules.get(name) is not None:
            return self.submodule(mv, name, node)
        for table in (m._parameters, m._buffers):
            if name in table:
                if table[name] is None:
                    return self.const(None)
                v = self.emit("prim::GetAttr", [mv.value], ["Tensor"],
                              attrs={"name": name}).outputs[0]
                v.name = name
                return v
        if not hasattr(m, name):
            self.error(node, f"Module '{type(m).__name__}' has no attribute '{name}'")
        x = getattr(m, name)
        if name in getattr(type(m), "__constants__", ()) or isinstance(x, (tuple, list)) or \
                x is None:
            return self.value(_PythonValue(x), node)
        if callable(x) and hasattr(x, "__func__"):
            return _Method(mv, x.__func__)
        ty = _constant_type(x)
        if ty is None:
            self.error(node, f"Module '{type(m).__name__}' has no attribute '{name}' of a type "
                             f"TorchScript supports ({type(x).__name__})")
        v = self.emit("prim::GetAttr", [mv.value], [ty], attrs={"name": name}).outputs[0]
        v.name = name
        return v

    def call(self, node, env):
        for a in node.args:
            if isinstance(a, ast.Starred):
                self.unsupported(a)
        for k in node.keywords:
            if k.arg is None:
                self.error(k.value, "Compiled functions can't take variable number of "
                                    "arguments or use keyword-only arguments with defaults",
                           NotSupportedError)
        func = node.func
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value, env)
            if isinstance(base, _ir.Value):
                args = [self.expr(a, env) for a in node.args]
                kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords}
                return self.method_call(node, base, func.attr, args, kwargs)
            callee = self.attribute(func, base)
        else:
            callee = self.expr(func, env)
        if isinstance(callee, _PythonValue) and callee.obj is _annotations.annotate and \
                len(node.args) == 2 and not node.keywords:
            return self.typed_expr(node.args[1], self.annotation(node.args[0]), env)
        args = [self.expr(a, env) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, env) for k in node.keywords}
        if isinstance(callee, _ModuleValue):
            return self.call_module(node, callee, args, kwargs)
        if isinstance(callee, _Method):
            if _annotations.modifier(callee.fn) in (_annotations._UNUSED, _annotations._IGNORE):
                return self.call_left_to_python(node, callee.fn)
            return self.inline(callee.fn, [callee.owner] + args, kwargs, node)
        if isinstance(callee, _PythonValue):
            return self.call_python(node, callee.obj, args, kwargs)
        self.error(node, f"'{_py_type_name(callee.type)}' object is not callable")

    def call_module(self, node, mv, args, kwargs):
        sm = self.scripted.get(id(mv.module))
        if sm is None or sm._graph is None:
            self.error(node, f"'{type(mv.module).__name__}' object is not callable in "
                             "TorchScript (it has no forward to compile)")
        inputs = sm._bind_call([self.value(a, node) for a in args],
                               {k: self.value(v, node) for k, v in kwargs.items()},
                               self.const, lambda msg: self.error(node, msg))
        out = sm._graph.outputs[0].type
        return self.emit("prim::CallMethod", [mv.value] + inputs, [out],
                         attrs={"name": "forward"}).outputs[0]

    def method_call(self, node, v, name, args, kwargs):
        if v.type.endswith("[]") and name == "append" and len(args) == 1 and not kwargs:
            item = self.value(args[0], node)
            if _unify(v.type[:-2], item.type) != v.type[:-2]:
                self.error(node, f"Could not append a value of type {_py_type_name(item.type)} "
                                 f"to a {_py_type_name(v.type)}")
            return self.emit("aten::append", [v, item], [v.type], overload="t").outputs[0]
        if _ir.is_dict_type(v.type):
            return self.dict_method(node, v, name, args, kwargs)
        if not _ir.is_tensor_type(v.type):
            self.error(node, f"Tried to access nonexistent attribute or method '{name}' of "
                             f"type '{_py_type_name(v.type)}'")
        if name in ("dim", "numel") and not args and not kwargs:
            return self.emit("aten::" + name, [v], ["int"]).outputs[0]
        if name == "size" and not kwargs and len(args) <= 1:
            if not args:
                return self.emit("aten::size", [v], ["int[]"]).outputs[0]
            return self.emit("aten::size", [v, self.value(args[0], node)], ["int"],
                             overload="int").outputs[0]
        return self.call_op(node, "aten::" + name, [v] + args, kwargs)

    def call_python(self, node, obj, args, kwargs):
        if obj in (len, int, float, bool) and len(args) == 1 and not kwargs:
            return self.convert(node, obj, self.value(args[0], node))
        if obj is range:
            self.error(node, "range can only be used as the iterable of a for loop",
                       NotSupportedError)
        if isinstance(obj, ScriptFunction):
            obj = obj._fn
        if obj is _annotations.is_scripting or obj is _annotations.is_tracing:
            return self.const(obj is _annotations.is_scripting)
        if _annotations.modifier(obj) in (_annotations._UNUSED, _annotations._IGNORE):
            return self.call_left_to_python(node, obj)
        lowering = next((f for k, f in _LOWERINGS.items() if k is obj), None)
        if lowering is not None:
            return lowering(self, node, self.py_args(obj, args, kwargs, node))
        if isinstance(obj, _C._RoutedFunction):   # a Python function (Note [Torch function])
            obj = obj.__wrapped__
        lib = getattr(obj, "__module__", None) or ""
        name = getattr(obj, "__name__", "")
        if type(obj).__name__ == "_OpFunction" or lib.startswith("pytorchlite") or \
                lib == "math":
            op = "aten::" + name
            if _overloads(op):
                if not (inspect.isfunction(obj) and lib.startswith("pytorchlite")):
                    return self.call_op(node, op, args, kwargs, _FUNCTIONAL_ALIASES)
                try:
                    return self.call_op(node, op, args, kwargs, _FUNCTIONAL_ALIASES)
                except RuntimeError:
                    pass
        if inspect.isfunction(obj):
            return self.inline(obj, args, kwargs, node)
        self.error(node, f"Python builtin {obj} is currently not supported in Torchscript")

    def call_left_to_python(self, node, fn):
        """A call of a function marked @unused compiles to PyTorch's raise; of one marked
        @ignore is refused (TorchScript calls it in Python; our graphs hold operators)."""
        if _annotations.modifier(fn) == _annotations._UNUSED:
            self.emit_raise(self.const("This Python function is annotated to be ignored and "
                                       "cannot be run"), None, node)
            return self.const(None)
        self.error(node, f"{getattr(fn, '__name__', fn)} is marked @torch.jit.ignore: "
                         "TorchScript would call it in Python, and a pytorchlite graph holds "
                         "operators only; script the caller without it, or trace instead",
                   NotSupportedError)

    def convert(self, node, fn, v):
        name = fn.__name__
        if name == "len":
            if v.type.endswith("[]"):
                return self.emit("aten::len", [v], ["int"], overload="t").outputs[0]
            if _ir.is_dict_type(v.type):
                key = _ir.dict_types(v.type)[0]
                return self.emit("aten::len", [v], ["int"], overload="Dict_" + key).outputs[0]
            if _ir.is_tensor_type(v.type):
                return self.emit("aten::len", [v], ["int"], overload="Tensor").outputs[0]
        elif v.type == name:
            return v
        elif name == "bool":
            return self.to_bool(v, node)
        elif _ir.is_tensor_type(v.type):
            return self.emit("aten::" + name.capitalize(), [v], [name],
                             overload="Tensor").outputs[0]
        elif v.type in _NUMBER:
            return self.emit("aten::" + name.capitalize(), [v], [name],
                             overload=v.type).outputs[0]
        self.error(node, f"{name}() cannot take a value of type {_py_type_name(v.type)}")

    def py_args(self, fn, args, kwargs, node):
        """fn's parameters bound to args and kwargs (defaults filled in) as Values."""
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except TypeError as e:
            self.error(node, f"{getattr(fn, '__name__', fn)}(): {e}")
        bound.apply_defaults()
        return {k: (v if isinstance(v, (_ir.Value, _ModuleValue)) else
                    self.value(v if isinstance(v, _PythonValue) else _PythonValue(v), node))
                for k, v in bound.arguments.items()}

    def inline(self, fn, args, kwargs, node):
        """Compiles fn's body in place, its parameters bound to the caller's values."""
        if fn in self.stack:
            self.error(node, f"Recursive calls aren't supported ({fn.__name__} calls itself)",
                       NotSupportedError)
        src = _Source(fn)
        sig = _check_signature(fn, src)
        comp = _Compiler(self.graph, src, fn, self.stack + [fn], self.scripted, self.nodes)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            self.error(node, f"{fn.__name__}(): {e}")
        bound.apply_defaults()
        env = {}
        for p in sig.parameters.values():
            v = bound.arguments[p.name]
            if not isinstance(v, (_ir.Value, _ModuleValue, _PythonValue)):
                v = _PythonValue(v)
            if p.annotation is not inspect.Parameter.empty and \
                    not isinstance(v, _ModuleValue):
                ty = annotation_type(_resolve(p.annotation, fn), f"for argument '{p.name}'")
                v = self.value(v, node)
                if _unify(ty, v.type) != ty:
                    self.error(node, f"Expected a value of type '{_py_type_name(ty)}' for "
                                     f"argument '{p.name}' but instead found type "
                                     f"'{_py_type_name(v.type)}'")
            env[p.name] = v
        out = comp.body(src.tree.body, env, _FunctionExit(), True)
        return comp.const(None) if out is _RAISES else out[0]

    def call_op(self, node, name, args, kwargs, aliases=None, all_outputs=False):
        """The node of the first overload of operator name that args and kwargs match (numbers
        for Tensor arguments only when no overload takes them as they are)."""
        args = [self.value(a, node) for a in args]
        kwargs = {(aliases or {}).get(k, k): self.value(v, node) for k, v in kwargs.items()}
        schemas = _overloads(name)
        if not schemas:
            self.error(node, f"Unknown builtin op: {name}")
        reasons = []
        for wrap in (False, True):
            for s in schemas:
                plan = _bind_schema(s, args, kwargs, wrap)
                if isinstance(plan, str):
                    if wrap:
                        reasons.append(f"  {s.text}:\n  {plan}\n")
                    continue
                inputs = [self.materialize(p) for p in plan]
                outs = [_return_type(r, inputs) for r in s.returns]
                n = self.emit(s.name, inputs, outs, overload=s.overload)
                if all_outputs or len(n.outputs) == 1:
                    return n.outputs if all_outputs else n.outputs[0]
                return self.emit("prim::TupleConstruct", n.outputs,
                                 ["(" + ", ".join(outs) + ")"]).outputs[0]
        raise RuntimeError("\nArguments for call are not valid.\nThe following variants are "
                           "available:\n  \n" + "  \n".join(reasons) +
                           "\nThe original call is:\n" + self.src.highlight(node))

    def materialize(self, plan):
        kind, x = plan
        if kind == "value":
            return x
        if kind == "default":
            return self.const(x)
        return self.emit("prim::ListConstruct", x, ["int[]"]).outputs[0]


def _return_type(ret, inputs):
    if ret == "t":
        lists = [v.type for v in inputs if v.type.endswith("[]")]
        return lists[0][:-2] if lists else "Tensor"
    if ret == "t[]":
        return next(v.type for v in inputs if v.type.endswith("[]"))
    if ret == "Scalar":
        return "float"
    return ret


def _bind_schema(s, args, kwargs, wrap):
    """How args and kwargs fill the arguments of schema s: a list of ("value", Value),
    ("default", python value) and ("pack", [int Values]) plans; or why they do not, as text."""
    positional = [a for a in s.args if not a[2]]
    names = [a[0] for a in s.args]
    args = list(args)
    given = {}
    for k, (aname, aty, _) in enumerate(positional):
        if k >= len(args):
            break
        rest = args[k:]
        if _INT_LIST.fullmatch(aty.rstrip("?")) and len(rest) > len(positional) - k and \
                all(v.type == "int" for v in rest):
            given[aname] = ("pack", rest)
            args = args[:k]
            break
        given[aname] = ("value", args[k])
    if len(args) > len(positional):
        return f"Expected at most {len(positional)} arguments but found {len(args)}"
    for k, v in kwargs.items():
        if k not in names:
            return f"Keyword argument {k} unknown."
        if k in given:
            return f"Argument {k} specified twice."
        given[k] = ("value", v)
    plan = []
    for (aname, aty, _), default in zip(s.args, s.defaults):
        g = given.get(aname)
        if g is None:
            if default is _ir.NO_DEFAULT:
                return f"Argument {aname} not provided."
            plan.append(("default", default))
            continue
        if g[0] == "pack":
            plan.append(g)
            continue
        v = g[1]
        base = aty.rstrip("?")
        m = _INT_LIST.fullmatch(base)
        if m and v.type == "int":
            plan.append(("pack", [v] * (int(m.group(1)) if m.group(1) else 1)))
            continue
        if not _accepts(aty, v.type, wrap):
            return (f"Expected a value of type '{_py_type_name(aty.rstrip('?'))}' for argument "
                    f"'{aname}' but instead found type '{_py_type_name(v.type)}'.")
        plan.append(("value", v))
    return plan


def _resolve(ann, fn):
    if isinstance(ann, str):
        names = dict(vars(typing))
        names.update(getattr(fn, "__globals__", {}))
        return eval(ann, names)  # noqa: S307  (an annotation of the scripted source)
    return ann


def _check_signature(fn, src):
    sig = inspect.signature(fn)
    args = src.tree.args
    bad = args.vararg or args.kwarg or (args.kwonlyargs and any(args.kw_defaults))
    if bad:
        node = args.vararg or args.kwarg or args.kwonlyargs[0]
        raise NotSupportedError(src.highlight(node),
                                "Compiled functions can't take variable number of arguments "
                                "or use keyword-only arguments with defaults")
    return sig


# ---- nn.functional lowerings: functions whose Python bodies are not scriptable -------------

def _lower_linear(comp, node, a):
    out = comp.call_op(node, "aten::matmul",
                       [a["input"], comp.call_op(node, "aten::t", [a["weight"]], {})], {})
    if a["bias"].type == "NoneType":
        return out
    return comp.call_op(node, "aten::add", [out, a["bias"]], {})


def _lower_relu(comp, node, a):
    inplace = comp.static(a["inplace"])
    if inplace is _ir.NO_DEFAULT:
        return comp.emit_if(a["inplace"],
                            lambda: [comp.call_op(node, "aten::relu_", [a["input"]], {})],
                            lambda: [comp.call_op(node, "aten::relu", [a["input"]], {})],
                            node)[0]
    return comp.call_op(node, "aten::relu_" if inplace else "aten::relu", [a["input"]], {})


def _lower_dropout(comp, node, a):
    """input * bernoulli(1 - p) / (1 - p) while training (out of place: an inplace=True
    dropout gives the same values in a new tensor)."""
    x, p, training = a["input"], a["p"], a["training"]
    if comp.static(training) is False or comp.static(p) == 0:
        return x

    def drop():
        keep = comp.binop(node, ast.Sub, comp.const(1.0), p)
        ones = comp.call_op(node, "aten::ones_like", [x], {})
        mask = comp.call_op(node, "aten::bernoulli", [ones, keep], {})
        return [comp.call_op(node, "aten::mul", [x, comp.call_op(node, "aten::div",
                                                                  [mask, keep], {})], {})]

    if comp.static(training) is True:
        return drop()[0]
    return comp.emit_if(training, drop, lambda: [x], node)[0]


def _lower_layer_norm(comp, node, a):
    outs = comp.call_op(node, "aten::native_layer_norm",
                        [a["input"], a["normalized_shape"], a["weight"], a["bias"], a["eps"]],
                        {}, all_outputs=True)
    return outs[0]


def _lower_embedding(comp, node, a):
    if a["max_norm"].type != "NoneType":
        comp.error(node, "embedding with max_norm isn't supported", NotSupportedError)
    pad = a["padding_idx"]
    known = comp.static(pad)
    if known is None:
        pad = comp.const(-1)
    elif isinstance(known, int) and known < 0:
        rows = comp.emit("aten::size", [a["weight"], comp.const(0)], ["int"],
                         overload="int").outputs[0]
        pad = comp.emit("aten::add", [rows, pad], ["int"], overload="int").outputs[0]
    return comp.call_op(node, "aten::embedding", [a["weight"], a["input"], pad,
                                                  a["scale_grad_by_freq"], a["sparse"]], {})


def _conv_lowering(n):
    def lower(comp, node, a):
        lists = []
        for key in ("stride", "padding", "dilation"):
            v = a[key]
            if v.type == "str":
                comp.error(node, f"conv{n}d with padding='{comp.static(v)}' isn't supported",
                           NotSupportedError)
            lists.append(comp.emit("prim::ListConstruct", [v] * n, ["int[]"]).outputs[0]
                         if v.type == "int" else v)
        return comp.call_op(node, "aten::convolution",
                            [a["input"], a["weight"], a["bias"], *lists, comp.const(False),
                             comp.const([0] * n), a["groups"]], {})
    return lower


def _conv1d_forward(self, input):
    return F.conv1d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)


def _conv2d_forward(self, input):
    return F.conv2d(input, self.weight, self.bias, self.stride, self.padding, self.dilation,
                    self.groups)


_LOWERINGS = {F.linear: _lower_linear, F.relu: _lower_relu, F.dropout: _lower_dropout,
              F.layer_norm: _lower_layer_norm, F.embedding: _lower_embedding,
              F.conv1d: _conv_lowering(1), F.conv2d: _conv_lowering(2)}
# forwards scripted in place of a layer's own, whose Python picks the function at run time
_FORWARDS = {_nn.Conv1d: _conv1d_forward, _nn.Conv2d: _conv2d_forward}


# ---- compiling, and what script() returns --------------------------------------------------

def _compile(fn, module, scripted):
    """The graph of fn (a method of module when module is not None) and its parameters'
    (name, type, default) after self."""
    src = _Source(fn)
    sig = _check_signature(fn, src)
    graph = _ir.Graph()
    params = list(sig.parameters.values())
    env = {}
    if module is not None:
        self_value = graph.add_input(_module_type(type(module)), params[0].name)
        env[params[0].name] = _ModuleValue(self_value, module)
        params = params[1:]
    inputs = []
    for p in params:
        ty = annotation_type(_resolve(p.annotation, fn), f"for argument '{p.name}'")
        env[p.name] = graph.add_input(ty, p.name)
        inputs.append((p.name, ty, p.default))
    comp = _Compiler(graph, src, fn, [fn], scripted)
    out = comp.body(src.tree.body, env, _FunctionExit(), True)
    out = comp.const(None) if out is _RAISES else out[0]
    ret = sig.return_annotation
    if ret is not inspect.Signature.empty:
        ty = annotation_type(_resolve(ret, fn), "for the return value")
        if _unify(ty, out.type) != ty:
            raise RuntimeError(f"\nReturn value was annotated as having type "
                               f"{_py_type_name(ty)} but is actually of type "
                               f"{_py_type_name(out.type)}:\n" + src.highlight(src.tree))
        if ty != out.type:
            comp.nodes = graph.nodes
            out = comp.emit("prim::unchecked_cast", [out], [ty]).outputs[0]
    graph.outputs = [out]
    passes.eliminate_dead_code(graph)
    return graph, inputs


class _Scripted:
    """What a scripted function and a scripted module share: the graph, its interpreter, the
    inputs' names, types and defaults, .code and the call that checks its arguments."""

    def _set_graph(self, graph, inputs, name):
        object.__setattr__(self, "_graph", graph)
        object.__setattr__(self, "_inputs", inputs)
        object.__setattr__(self, "_code_name", name)
        object.__setattr__(self, "_interp", Interpreter(graph) if graph is not None else None)

    @property
    def graph(self):
        return self._graph

    @property
    def code(self):
        from ._code import graph_code
        return graph_code(self._graph, self._code_name, self._self_name)

    def _bind_call(self, args, kwargs, default, fail):
        """The inputs of a call (defaults filled in by default(value)); fail(message) on a
        missing, unknown or mistyped argument."""
        if len(args) > len(self._inputs):
            fail(f"{self._code_name}() expected at most {len(self._inputs)} argument(s) but "
                 f"received {len(args)} argument(s)")
        out = list(args)
        for name, ty, dflt in self._inputs[len(args):]:
            if name in kwargs:
                out.append(kwargs.pop(name))
            elif dflt is not inspect.Parameter.empty:
                out.append(default(dflt))
            else:
                fail(f"{self._code_name}() is missing value for argument '{name}'.")
        if kwargs:
            fail(f"{self._code_name}() got an unexpected keyword argument "
                 f"'{next(iter(kwargs))}'")
        for (name, ty, _), v in zip(self._inputs, out):
            ok = _unify(ty, v.type) == ty if isinstance(v, _ir.Value) else \
                _value_matches(ty, v)
            if not ok:
                got = v.type if isinstance(v, _ir.Value) else type(v).__name__
                fail(f"{self._code_name}() Expected a value of type '{_py_type_name(ty)}' for "
                     f"argument '{name}' but instead found type '{_py_type_name(got)}'.")
        return out

    def _run(self, self_obj, args, kwargs):
        def fail(msg):
            raise RuntimeError(msg)
        inputs = self._bind_call(list(args), dict(kwargs), lambda d: d, fail)
        if self_obj is not None:
            return self._interp.run(self_obj, *inputs)
        return self._interp.run(*inputs)


class ScriptedFunction(_Scripted, ScriptFunction):
    """A scripted function (torch.jit.ScriptFunction): its graph keeps the control flow of
    the source, so it runs right for any inputs of its argument types."""

    def __init__(self, fn, graph, inputs):
        self._fn = fn
        self._self_name = None
        self.__name__ = getattr(fn, "__name__", "forward")
        self.__doc__ = getattr(fn, "__doc__", None)
        self._set_graph(graph, inputs, self.__name__)

    @property
    def inlined_graph(self):
        return self._graph

    def __call__(self, *args, **kwargs):
        return self._run(None, args, kwargs)

    def __repr__(self):
        return f"<pytorchlite.jit.ScriptFunction object {self.__name__}>"


class ScriptModule(Module):
    """The base of scripted modules (torch.jit.ScriptModule)."""


class RecursiveScriptModule(_Scripted, ScriptModule):
    """A scripted module (torch.jit.RecursiveScriptModule): its parameters and buffers are
    those of the module it scripted (shared, not copied), its submodules are scripted in turn,
    and its int/float/bool/str attributes are copied.  `.graph` calls submodules with
    prim::CallMethod; `.inlined_graph` has their graphs in place (what jit.save writes)."""

    def __init__(self, type_name, training):
        Module.__init__(self)
        object.__setattr__(self, "_type_name", type_name)
        object.__setattr__(self, "_self_name", "self")
        self._set_graph(None, [], "forward")
        self.training = training

    @property
    def original_name(self):
        return self._type_name.rsplit(".", 1)[-1]

    @property
    def inlined_graph(self):
        return passes.inline_calls(passes.copy_graph(self._graph), self)

    def forward(self, *args, **kwargs):
        if self._interp is None:
            raise RuntimeError(f"'{self.original_name}' has no forward to run")
        return self._run(self, args, kwargs)

    def __call__(self, *args, **kwargs):
        d = self.__dict__
        if d["_forward_pre_hooks"] or d["_forward_hooks"] or d.get("_full_backward_hooks") or \
                d.get("_backward_pre_hooks"):
            return Module.__call__(self, *args, **kwargs)
        return self.forward(*args, **kwargs)

    def save(self, f, _extra_files=None):
        from ._serialization import save
        save(self, f, _extra_files)

    def _get_name(self):
        return self.original_name

    def __getitem__(self, idx):
        """A submodule of a scripted ModuleList or Sequential by position."""
        return list(self._modules.values())[idx]

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


def _script_module(m, scripted):
    if id(m) in scripted:
        return scripted[id(m)]
    sm = RecursiveScriptModule(_module_type(type(m)), m.training)
    for name, child in m._modules.items():
        if child is not None:
            sm._modules[name] = _script_module(child, scripted)
    sm._parameters.update(m._parameters)
    sm._buffers.update(m._buffers)
    sm._non_persistent_buffers_set = set(m._non_persistent_buffers_set)
    for name, x in m.__dict__.items():
        if not name.startswith("_") and name != "training" and \
                (_constant_type(x) is not None or isinstance(x, tuple)):
            object.__setattr__(sm, name, x)
    scripted[id(m)] = sm
    forward = _FORWARDS.get(type(m))
    if forward is not None and getattr(m, "padding_mode", "zeros") != "zeros":
        raise NotSupportedError("", f"{type(m).__name__} with padding_mode="
                                    f"'{m.padding_mode}' isn't supported")
    if forward is None:
        forward = getattr(type(m).forward, "__func__", type(m).forward)
        if isinstance(m, (_nn.ModuleList, _nn.ModuleDict)) or forward is Module.forward:
            return sm
    graph, inputs = _compile(forward, m, scripted)
    sm._set_graph(graph, inputs, "forward")
    return sm


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Compiles a function or a Module's forward (and its submodules, recursively) from its
    Python source into a graph with control flow (Note [Scripting]).  Returns a ScriptFunction
    or a RecursiveScriptModule; optimize, _frames_up, _rcb and example_inputs are accepted for
    PyTorch's signature and have no effect."""
    if isinstance(obj, (ScriptedFunction, RecursiveScriptModule)):
        return obj
    if isinstance(obj, Module):
        return _script_module(obj, {})
    if isinstance(obj, _C._RoutedFunction):   # a Python function (Note [Torch function])
        obj = obj.__wrapped__
    if not inspect.isfunction(obj):
        raise RuntimeError(f"Type '{type(obj).__name__}' cannot be compiled since it is not a "
                           "function or a Module")
    graph, inputs = _compile(obj, None, {})
    return ScriptedFunction(obj, graph, inputs)
