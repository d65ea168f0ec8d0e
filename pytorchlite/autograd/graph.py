"""Graph tools: walk the backward graph, write it as Graphviz DOT (like torchviz's make_dot),
render it with the `dot` program.  Written afresh for pytorchlite."""
import shutil
import subprocess

from .. import _C


def walk(roots):
    """Yields every node reachable from roots (grad_fn objects), each once, parents first."""
    seen = {}   # id -> node: holding the wrappers keeps their ids unique
    stack = [r for r in reversed(list(roots)) if r is not None]
    while stack:
        fn = stack.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        yield fn
        stack.extend(nf for nf, _ in reversed(fn.next_functions) if nf is not None)


def _shape(t):
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _quote(s):
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def to_dot(tensor, params=None, show_saved=False):
    """DOT text of the graph behind tensor (or a sequence of tensors).

    Op nodes are labelled with their name, leaves (AccumulateGrad) with the parameter name from
    `params` ({name: tensor}, e.g. dict(model.named_parameters())) and shape, outputs with
    their shape.  show_saved adds each node's saved tensors."""
    outputs = [tensor] if isinstance(tensor, _C.TensorBase) else list(tensor)
    names = {id(p): n for n, p in (params or {}).items()}
    lines = ["digraph {", '\tgraph [size="12,12"]',
             '\tnode [align=left fontname=monospace fontsize=10 height=0.2 ranksep=0.1 '
             'shape=box style=filled]']
    nodes = list(walk(o.grad_fn for o in outputs))   # alive while ids name them
    for fn in nodes:
        nid = str(id(fn))
        if type(fn).__name__ == "AccumulateGrad":
            var = fn.variable
            name = names.get(id(var))
            label = f"{name}\n {_shape(var)}" if name else _shape(var)
            lines.append(f"\t{nid} [label={_quote(label)} fillcolor=lightblue]")
        else:
            label = fn.name()
            if show_saved:
                for attr in ("self", "other", "mat2", "input", "weight", "result"):
                    try:
                        saved = getattr(fn, "_saved_" + attr)
                    except (AttributeError, RuntimeError):
                        continue
                    if isinstance(saved, _C.TensorBase):
                        label += f"\n{attr}: {_shape(saved)}"
            lines.append(f"\t{nid} [label={_quote(label)}]")
        for nf, _ in fn.next_functions:
            if nf is not None:
                lines.append(f"\t{id(nf)} -> {nid}")
    for o in outputs:
        oid = "out" + str(id(o))
        lines.append(f"\t{oid} [label={_quote(_shape(o))} fillcolor=darkolivegreen1]")
        if o.grad_fn is not None:
            lines.append(f"\t{id(o.grad_fn)} -> {oid}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text, path, format="svg"):
    """Writes dot_text rendered by Graphviz's `dot` to path (returns path)."""
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError("render() needs the Graphviz `dot` program, which is not installed: "
                           "install it with your system's package manager (e.g. "
                           "`apt-get install graphviz` or `brew install graphviz`); "
                           "`pip install graphviz` alone does not provide the binary. "
                           "The DOT text itself works without it.")
    subprocess.run([exe, "-T" + format, "-o", str(path)], input=dot_text.encode(), check=True)
    return path
