"""torch._dynamo.eval_frame.OptimizedModule: what torch.compile returns for an nn.Module."""
from ..nn.modules.module import Module


class OptimizedModule(Module):
    """Wraps the compiled module as its submodule `_orig_mod`, as PyTorch's does: state_dict()
    keys carry the prefix "_orig_mod.", attribute reads and writes go to the original module,
    and a call runs `runs`: the original module (hooks included), or for a callable backend
    what the backend made of the module's torch.fx graph (Note [torch.compile runs the code as
    written] in pytorchlite/compiler/__init__.py)."""

    _opt_mod_attributes = {"_orig_mod", "dynamo_ctx", "_compile_options", "_runs", "forward"}

    def __init__(self, mod, options, runs=None):
        super().__init__()
        self._modules["_orig_mod"] = mod
        object.__setattr__(self, "_compile_options", options)
        object.__setattr__(self, "_runs", mod if runs is None else runs)

    def forward(self, *args, **kwargs):
        return self._runs(*args, **kwargs)

    def __getattr__(self, name):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        return getattr(self._modules["_orig_mod"], name)

    def __setattr__(self, name, value):
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            return super().__setattr__(name, value)
        setattr(self._modules["_orig_mod"], name, value)
