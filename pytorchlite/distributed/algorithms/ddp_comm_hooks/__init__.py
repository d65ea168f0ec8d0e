"""DDP communication hooks (torch.distributed.algorithms.ddp_comm_hooks): register one with
DistributedDataParallel.register_comm_hook(state, hook)."""
from . import default_hooks  # noqa: F401
