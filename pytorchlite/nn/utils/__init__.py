"""torch.nn.utils.  nn.modules imports utils.rnn while it is itself being imported, so what
needs nn.modules (parametrize, prune, fusion, ...) is imported at its first use (PEP 562)."""
import importlib

from . import rnn  # noqa: F401
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_,  # noqa: F401
                        clip_grads_with_norm_, get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters  # noqa: F401
# the functions, not their modules of the same name (as in PyTorch)
from .spectral_norm import remove_spectral_norm, spectral_norm  # noqa: F401
from .weight_norm import remove_weight_norm, weight_norm  # noqa: F401

_SUBMODULES = ("parametrizations", "parametrize", "prune", "stateless", "fusion",
               "memory_format", "init")
# name -> (submodule, attribute): the functions PyTorch's nn.utils exports from them
_FUNCTIONS = {
    "fuse_conv_bn_eval": "fusion", "fuse_conv_bn_weights": "fusion",
    "fuse_linear_bn_eval": "fusion", "fuse_linear_bn_weights": "fusion",
    "skip_init": "init",
    "convert_conv2d_weight_memory_format": "memory_format",
    "convert_conv3d_weight_memory_format": "memory_format",
}


def __getattr__(name):
    if name in _FUNCTIONS:
        value = getattr(importlib.import_module(f"{__name__}.{_FUNCTIONS[name]}"), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_FUNCTIONS))
