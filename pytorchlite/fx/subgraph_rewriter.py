"""torch.fx.subgraph_rewriter: replace_pattern finds every occurrence of a pattern (a
function or module, traced) in a GraphModule's graph and puts in its place the graph of a
replacement that takes the same inputs.

A match is found from the pattern's output backwards: a pattern node matches a graph node
of the same op and target whose arguments match in turn (constants by equality); a pattern
placeholder matches any value, the same one at each of its uses.  A match is kept when no
node inside it (other than its output) is used outside it and it shares no node with an
earlier match; matches are taken in graph order.  Each replacement goes just before the
first user of the match's output, and Match.anchor is the pattern's output node."""
from typing import NamedTuple

from .graph import Graph
from .graph_module import GraphModule, _copy_attr
from .node import Node

__all__ = ["Match", "replace_pattern"]


class Match(NamedTuple):
    anchor: Node
    nodes_map: dict


def _as_graph(obj):
    from ._symbolic_trace import symbolic_trace
    if isinstance(obj, GraphModule):
        return obj.graph, obj
    if isinstance(obj, Graph):
        return obj, None
    gm = symbolic_trace(obj)
    return gm.graph, gm


def _match_node(pn, gn, nodes_map):
    if pn in nodes_map:
        return nodes_map[pn] is gn
    if pn.op == "placeholder":
        nodes_map[pn] = gn
        return True
    if pn.op != gn.op or pn.target != gn.target or len(pn.args) != len(gn.args) or \
            set(pn.kwargs) != set(gn.kwargs):
        return False
    nodes_map[pn] = gn
    pairs = list(zip(pn.args, gn.args)) + [(pn.kwargs[k], gn.kwargs[k]) for k in pn.kwargs]
    return all(_match_arg(pa, ga, nodes_map) for pa, ga in pairs)


def _match_arg(pa, ga, nodes_map):
    if isinstance(pa, Node):
        return isinstance(ga, Node) and _match_node(pa, ga, nodes_map)
    if isinstance(pa, (tuple, list)):
        return type(pa) is type(ga) and len(pa) == len(ga) and \
            all(_match_arg(a, b, nodes_map) for a, b in zip(pa, ga))
    return not isinstance(ga, Node) and type(pa) is type(ga) and pa == ga


def replace_pattern(gm, pattern, replacement):
    """Replaces each match of pattern in gm with replacement (both functions or modules
    of the same inputs); recompiles gm and returns the matches."""
    pattern_graph, _ = _as_graph(pattern)
    replacement_graph, replacement_root = _as_graph(replacement)
    p_nodes = list(pattern_graph.nodes)
    p_placeholders = [n for n in p_nodes if n.op == "placeholder"]
    p_output = p_nodes[-1]
    if p_output.op != "output" or not isinstance(p_output.args[0], Node):
        raise NotImplementedError("replace_pattern: the pattern must return one value")
    p_anchor = p_output.args[0]
    r_placeholders = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(r_placeholders) != len(p_placeholders):
        raise ValueError("replace_pattern: the pattern and the replacement must take the "
                         "same number of inputs")
    graph = gm.graph
    matches = []
    claimed = set()
    for gn in list(graph.nodes):
        nodes_map = {}
        if not _match_node(p_anchor, gn, nodes_map):
            continue
        internal = [nodes_map[pn] for pn in p_nodes if pn.op not in ("placeholder", "output")]
        inside = set(internal)
        if inside & claimed or any(u not in inside for n in internal if n is not gn
                                   for u in n.users):
            continue
        claimed |= inside
        matches.append(Match(anchor=p_anchor, nodes_map=nodes_map))
    order = {n: i for i, n in enumerate(graph.nodes)}
    replaced = {}
    for match in matches:
        anchor = match.nodes_map[p_anchor]

        def current(n):
            while n in replaced:
                n = replaced[n]
            return n
        val_map = {r: current(match.nodes_map[p])
                   for r, p in zip(r_placeholders, p_placeholders)}
        users = sorted(anchor.users, key=lambda u: order.get(u, len(order)))
        with graph.inserting_before(users[0] if users else anchor.next):
            new_out = graph.graph_copy(replacement_graph, val_map)
        anchor.replace_all_uses_with(new_out)
        replaced[anchor] = new_out
        for pn in reversed(p_nodes):
            if pn.op not in ("placeholder", "output"):
                graph.erase_node(match.nodes_map[pn])
    if replacement_root is not None:
        for node in replacement_graph.nodes:
            if node.op in ("get_attr", "call_module") and not hasattr(gm, node.target):
                _copy_attr(replacement_root, gm, node.target)
    gm.recompile()
    return matches
