"""torch.__future__: switches for behaviour that PyTorch plans to change.

Both concern what nn.Module._apply (``.to()``, ``.float()``, ``.double()``, ...) does with a
parameter whose converted tensor could be set in place.  By default the Parameter object is
kept and its data replaced (``param.data = converted``), so tied weights stay tied and an
optimizer built before the move keeps updating the model."""

_overwrite_module_params_on_conversion = False
_swap_module_params_on_conversion = False


def set_overwrite_module_params_on_conversion(value):
    """True: converting a module makes new Parameter objects instead of setting the data of
    the existing ones."""
    global _overwrite_module_params_on_conversion
    _overwrite_module_params_on_conversion = value


def get_overwrite_module_params_on_conversion():
    return _overwrite_module_params_on_conversion


def set_swap_module_params_on_conversion(value):
    """True: converting a module swaps the converted tensor into the existing Parameter
    object.  Here that is what setting its data does, so the Parameter keeps its identity
    either way."""
    global _swap_module_params_on_conversion
    _swap_module_params_on_conversion = value


def get_swap_module_params_on_conversion():
    return _swap_module_params_on_conversion
