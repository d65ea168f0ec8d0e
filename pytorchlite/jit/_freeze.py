"""jit.freeze and jit.optimize_for_inference (torch/jit/_freeze.py): a traced or scripted
module whose parameters, buffers and attributes are constants of its graph, optimised by
jit.passes."""
from . import passes
from ._script import RecursiveScriptModule
from ._trace import TracedModule, _GuardedCache, _Traced


def _frozen(traced, module, fuse):
    graph = passes.copy_graph(traced.graph)
    passes.inline_parameters(graph, module)
    passes.optimize(graph)
    if fuse:
        passes.fuse_pointwise(graph)
    return _Traced(graph, traced.key)


def _freeze_scripted(mod, fuse):
    """A scripted module frozen: its forward with the submodules' forwards inlined, every
    attribute it reads a constant, and the control flow those constants decide folded; the
    Ifs and Loops that depend on the inputs stay, with their blocks frozen too."""
    graph = passes.inline_calls(passes.copy_graph(mod.graph), mod)
    passes.inline_parameters(graph, mod)
    passes.optimize(graph)
    if fuse:
        passes.fuse_pointwise(graph)
    frozen = RecursiveScriptModule(mod._type_name, False)
    frozen._set_graph(graph, mod._inputs, "forward")
    return frozen


def _freeze(mod, fuse):
    if isinstance(mod, RecursiveScriptModule):
        if mod.training:
            raise RuntimeError("Freezing is currently only implemented for modules in eval "
                               "mode. Please call .eval() on your module before freezing.")
        if mod.graph is None:
            raise RuntimeError(f"'{mod.original_name}' has no forward to freeze")
        return _freeze_scripted(mod, fuse)
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
    """A copy of the traced or scripted module mod (in eval mode) whose parameters and
    buffers (and, scripted, plain attributes) are constants of its graph, then
    constant-propagated (folding the Ifs it decides), peephole-optimised, CSE'd and DCE'd."""
    if preserved_attrs:
        raise RuntimeError("freeze: preserved_attrs is not supported")
    return _freeze(mod, fuse=False)


def optimize_for_inference(mod, other_methods=None):
    """freeze, then fuse chains of elementwise operators into prim::FusionGroup nodes."""
    if isinstance(mod, TracedModule) or isinstance(mod, RecursiveScriptModule):
        mod = mod.eval()   # as torch.jit.optimize_for_inference does
    return _freeze(mod, fuse=True)
