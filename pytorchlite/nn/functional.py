"""nn.functional (torch/nn/functional.py): the functional API over pytorchlite's ops."""
from .. import _C

_F = _C._functions


def linear(input, weight, bias=None):
    if input.dim() == 2 and bias is not None:
        return _F["addmm"](bias, input, weight.t())
    out = _F["matmul"](input, weight.t())
    return out + bias if bias is not None else out


def relu(input, inplace=False):
    return input.relu_() if inplace else input.relu()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()

from ._functional_conv import *  # noqa: E402,F401,F403  (convolution, pooling, padding, resampling)


def one_hot(tensor, num_classes=-1):
    """A LongTensor of tensor's shape + [num_classes] with a 1 at each value's class
    (num_classes=-1: one more than the largest value).  Kernel: aten::one_hot."""
    return _C._op("aten::one_hot")(tensor, num_classes)
