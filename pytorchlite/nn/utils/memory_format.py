"""convert_conv2d_weight_memory_format / convert_conv3d_weight_memory_format: the weights of
every (transposed) convolution in a module tree stored in the given memory format."""

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module, memory_format, classes):
    if isinstance(module, classes):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, memory_format, classes)
    return module


def convert_conv2d_weight_memory_format(module, memory_format):
    """Stores the weight of every Conv2d / ConvTranspose2d in module (recursively) in
    memory_format (torch.channels_last for NHWC); returns module."""
    from ..modules.conv import Conv2d, ConvTranspose2d
    return _convert(module, memory_format, (Conv2d, ConvTranspose2d))


def convert_conv3d_weight_memory_format(module, memory_format):
    """As convert_conv2d_weight_memory_format, for Conv3d / ConvTranspose3d
    (torch.channels_last_3d)."""
    from ..modules.conv import Conv3d, ConvTranspose3d
    return _convert(module, memory_format, (Conv3d, ConvTranspose3d))
