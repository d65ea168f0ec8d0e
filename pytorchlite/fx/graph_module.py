"""torch.fx.graph_module: GraphModule, an nn.Module whose forward is generated from a Graph.

Each GraphModule gets a class of its own (made in __new__), so that recompile() can set
`forward` on that class without touching any other instance; the class takes the traced
module's name, which is how print(gm) and print_readable() name it.  The submodules,
parameters and buffers the graph reads (call_module and get_attr targets) are copied from
the root by reference, under the same dotted paths; a tensor attribute that was neither a
parameter nor a buffer becomes a buffer."""
import copy
import itertools
import linecache

from .. import nn
from ..nn.modules.module import _addindent
from .._tensor import Tensor
from .graph import Graph, _custom_builtins

__all__ = ["GraphModule"]

_source_counter = itertools.count()


def _exec_with_source(src, globals_):
    """Compiles the generated source under a unique file name that linecache knows, so
    tracebacks through forward show its lines."""
    key = f"<eval_with_key>.{next(_source_counter)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _forward_from_src(src, globals_):
    globals_copy = dict(globals_)
    _exec_with_source(src, globals_copy)
    return globals_copy["forward"]


def _copy_attr(from_module, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, Tensor) and not isinstance(orig, nn.Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj, to_module, target):
    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = nn.Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, Tensor) and not isinstance(from_obj, nn.Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _import_block(globals_):
    """Import statements that define the non-torch globals of generated code again."""
    lines = []
    for name, obj in globals_.items():
        if name in _custom_builtins():
            continue
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None)
        if module is None or qualname is None:
            raise RuntimeError(f"GraphModule pickling: cannot import the global {name} "
                               f"({obj!r}) of the generated code")
        lines.append(f"from {module} import {qualname.split('.')[0]} as {name}"
                     if "." not in qualname else
                     f"from {module} import {qualname.split('.')[0]}; "
                     f"{name} = {qualname}")
    return "\n".join(lines)


class _CodeOnlyModule(nn.Module):
    def __init__(self, body):
        super().__init__()
        self.__dict__ = body


def _reduce_graph_module(body, import_block):
    """Unpickling: the module's state with the saved forward source, traced again with
    every submodule kept as a call_module."""
    from ._symbolic_trace import Tracer

    class KeepModules(Tracer):
        def is_leaf_module(self, m, qualified_name):
            return True

    globals_ = dict(_custom_builtins())
    exec(import_block, globals_)
    fn_src = body["_code"]
    forward = _forward_from_src(fn_src, globals_)
    com = type("CodeOnlyModule", (_CodeOnlyModule,), {"forward": forward})(body)
    graph = KeepModules().trace(com)
    return GraphModule(com, graph)


class GraphModule(nn.Module):
    """An nn.Module made from a root (a module, or a dict of qualified name -> module or
    tensor) and a Graph; its forward is the graph's generated code (gm.code)."""

    def __new__(cls, *args, **kwargs):
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):
            pass
        return super().__new__(GraphModuleImpl)

    def __init__(self, root, graph, class_name="GraphModule"):
        super().__init__()
        type(self).__name__ = class_name
        if isinstance(root, nn.Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError("Node " + str(node) + " referenced target " +
                                           node.target + " but that target was not provided "
                                           "in ``root``!")
                    targets.append(node.target)
            for target in sorted(targets, key=lambda t: t.count(".")):
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.meta = {}
        self.graph = graph

    @property
    def graph(self):
        return self._graph

    @graph.setter
    def graph(self, g):
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self.__dict__["_graph"] = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self):
        """The Python source of forward, generated from the graph."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self):
        """Generates forward again from self.graph (call it after changing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self.__dict__["_code"] = python_code.src
        type(self).forward = _forward_from_src(python_code.src, python_code.globals)
        return python_code

    def print_readable(self, print_output=True, include_stride=False, include_device=False,
                       colored=False):
        """The generated code as a class, with nested GraphModules; printed unless
        print_output is False, and returned."""
        return self._print_readable(type(self).__name__, print_output)

    def _print_readable(self, module_name, print_output):
        src = self._graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
        module_code = _addindent(f"class {module_name}(torch.nn.Module):\n" + src, 4)
        subs = [""]
        for name, sub in self.named_children():
            if isinstance(sub, GraphModule):
                subs.append(sub._print_readable(name, False))
        output = module_code + _addindent("\n".join(subs), 4)
        if print_output:
            print(output)
        return output

    def __str__(self):
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    def __reduce__(self):
        """Pickles the state and the generated source (never the graph's function
        objects); unpickling traces that source again, as PyTorch's does (the copy is
        named GraphModule, as PyTorch's copies are)."""
        body = {k: v for k, v in self.__dict__.items() if k != "_graph"}
        import_block = _import_block(self._graph.python_code(root_module="self").globals)
        return (_reduce_graph_module, (body, import_block))

    def __deepcopy__(self, memo):
        res = GraphModule.__new__(GraphModule)
        memo[id(self)] = res
        body = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        fake_mod = _CodeOnlyModule(copy.deepcopy(body, memo))
        GraphModule.__init__(res, fake_mod, copy.deepcopy(self._graph, memo))
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __copy__(self):
        res = GraphModule(self, self._graph)
        res.meta = getattr(self, "meta", {})
        return res
