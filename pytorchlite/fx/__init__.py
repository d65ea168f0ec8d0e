"""torch.fx: capture a program as a graph of calls (symbolic_trace), inspect and rewrite the
graph, and run it again as Python (GraphModule) or node by node (Interpreter).  See the
handbook page docs/handbook/fx.md."""
from . import passes, subgraph_rewriter  # noqa: F401
from ._symbolic_trace import PH, Tracer, symbolic_trace, wrap
from .graph import CodeGen, Graph
from .graph_module import GraphModule
from .interpreter import Interpreter, Transformer
from .node import Node, has_side_effect, map_arg
from .proxy import Proxy
from .subgraph_rewriter import replace_pattern

__all__ = ["CodeGen", "Graph", "GraphModule", "Interpreter", "Node", "PH", "Proxy", "Tracer",
           "Transformer", "has_side_effect", "map_arg", "replace_pattern", "symbolic_trace",
           "wrap"]
