"""torch._dynamo.config: the settings programs commonly write before torch.compile.

pytorchlite captures no bytecode (Note [torch.compile runs the code as written] in
pytorchlite/compiler/__init__.py), so these keep their values and change nothing.  They are
kept so that a program which sets them runs unchanged; a name PyTorch does not have is an
AttributeError, as PyTorch's config module raises, never silently stored."""
import sys
import types

_DEFAULTS = {
    "suppress_errors": False,
    "verbose": False,
    "cache_size_limit": 8,
    "recompile_limit": 8,
    "accumulated_cache_size_limit": 256,
    "accumulated_recompile_limit": 256,
    "capture_scalar_outputs": False,
    "capture_dynamic_output_shape_ops": False,
    "optimize_ddp": True,
    "automatic_dynamic_shapes": True,
    "assume_static_by_default": True,
    "force_parameter_static_shapes": True,
    "inline_inbuilt_nn_modules": True,
}


class _ConfigModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"{self.__name__}.{name} does not exist")

    def __setattr__(self, name, value):
        if name not in _DEFAULTS and not name.startswith("__"):
            raise AttributeError(f"{self.__name__}.{name} does not exist")
        super().__setattr__(name, value)


globals().update(_DEFAULTS)
sys.modules[__name__].__class__ = _ConfigModule
