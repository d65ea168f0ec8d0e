"""pytorchlite.nn.functional: functions of torch.nn.functional."""
from .. import _C


def one_hot(tensor, num_classes=-1):
    """A LongTensor of tensor's shape + [num_classes] with a 1 at each value's class
    (num_classes=-1: one more than the largest value).  Kernel: aten::one_hot."""
    return _C._op("aten::one_hot")(tensor, num_classes)
