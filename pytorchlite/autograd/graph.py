"""torch.autograd.graph: hooks on the tensors the graph saves (saved_tensors_hooks,
save_on_cpu, disable_saved_tensors_hooks; Note [Saved tensor hooks] in src/autograd/node.c),
and tools to walk the backward graph, write it as Graphviz DOT (like torchviz's make_dot) and
render it with the `dot` program.  Written afresh for pytorchlite."""
import contextlib
import shutil
import subprocess

from .. import _C


class saved_tensors_hooks:
    """Context manager: every tensor a node made inside saves for backward is passed to
    pack_hook(tensor), and what it returns is kept instead; backward (or reading
    grad_fn._saved_*) gets unpack_hook(packed) back.  Nested managers: the innermost applies.
    Hooks are process-wide here (PyTorch's are per thread)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._saved_tensors_hooks_push(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args):
        _C._saved_tensors_hooks_pop()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward.
    pin_memory asks for page-locked copies, which need an accelerator."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            from .. import cuda
            packed = tensor.cpu().pin_memory() if cuda.is_available() else tensor.cpu()
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Inside, entering saved_tensors_hooks (or save_on_cpu) raises RuntimeError with
    error_message."""
    previous = _C._saved_tensors_hooks_set_disabled(error_message)
    try:
        yield
    finally:
        _C._saved_tensors_hooks_set_disabled(previous)


class _MultiHandle:
    def __init__(self, handles):
        self._handles = handles

    def remove(self):
        for h in self._handles:
            h.remove()
        self._handles = []


def register_multi_grad_hook(tensors, fn, *, mode="all"):
    """Runs fn once per backward pass over the gradients of tensors: mode "all" calls
    fn(grads) (a list in the order of tensors) once each tensor's gradient is computed,
    mode "any" calls fn(grad) at the first.  Unlike PyTorch, "all" waits for every tensor:
    one that gets no gradient in that pass keeps fn from running (PyTorch asks the engine
    which tensors it will reach and passes None for the others)."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    state = {"task": None, "grads": None}

    def begin():
        task = _C._current_graph_task_id()
        if state["task"] != task:
            state["task"], state["grads"] = task, [None] * len(tensors)
            state["seen"] = set()
        return state

    def make_hook(i):
        def hook(grad):
            st = begin()
            if mode == "any":
                if not st["seen"]:
                    st["seen"].add(i)
                    fn(grad)
                return None
            st["grads"][i] = grad
            st["seen"].add(i)
            if len(st["seen"]) == len(tensors):
                fn(st["grads"])
            return None
        return hook

    return _MultiHandle([t.register_hook(make_hook(i)) for i, t in enumerate(tensors)])


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
