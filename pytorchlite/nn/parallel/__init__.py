"""torch.nn.parallel: DataParallel, and DistributedDataParallel (distributed.py).

pytorchlite has no CUDA devices, so DataParallel does what PyTorch's does when none is
available: it keeps the module as `.module` and runs it unchanged (its state_dict keys carry
the "module." prefix, so checkpoints move between the two)."""
from ..modules.module import Module
from .distributed import DistributedDataParallel


class DataParallel(Module):
    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = []
        self.output_device = None
        self.dim = dim

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """The functional form: module(*inputs, **module_kwargs) on the one device there is."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return module(*inputs, **(module_kwargs or {}))


__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
