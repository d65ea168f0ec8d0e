"""jit.freeze and jit.optimize_for_inference (torch/jit/_freeze.py): a traced module whose
parameters and buffers are constants of its graph, optimised by jit.passes."""
from . import passes
from ._trace import TracedModule, _GuardedCache, _Traced


def _frozen(traced, module, fuse):
    graph = passes.copy_graph(traced.graph)
    passes.inline_parameters(graph, module)
    passes.optimize(graph)
    if fuse:
        passes.fuse_pointwise(graph)
    return _Traced(graph, traced.key)


def _freeze(mod, fuse):
    if not isinstance(mod, TracedModule):
        raise RuntimeError("Freezing expects a ScriptModule as input. Please use "
                           "torch.jit.script or torch.jit.trace to script your 'nn.Module'.")
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. "
                           "Please call .eval() on your module before freezing.")
    source = mod._cache
    cache = _GuardedCache(source.maxsize, source.on_guard_failure)
    cache.key_of, cache.fields = source.key_of, source.fields
    frozen = TracedModule(None, _frozen(source.first, mod, fuse), cache)
    frozen.training = False

    def retrace(inputs):
        traced = mod._retrace(inputs)
        return None if traced is None else _frozen(traced, mod, fuse)

    object.__setattr__(frozen, "_retrace", retrace)
    return frozen


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """A copy of the traced module mod (in eval mode) whose parameters and buffers are
    constants of its graph, then constant-propagated, peephole-optimised, CSE'd and DCE'd."""
    if preserved_attrs:
        raise RuntimeError("freeze: preserved_attrs is not supported")
    return _freeze(mod, fuse=False)


def optimize_for_inference(mod, other_methods=None):
    """freeze, then fuse chains of elementwise operators into prim::FusionGroup nodes."""
    if isinstance(mod, TracedModule):
        mod = mod.eval()   # as torch.jit.optimize_for_inference does
    return _freeze(mod, fuse=True)
