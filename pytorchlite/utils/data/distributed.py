"""torch.utils.data.distributed: DistributedSampler's PyTorch path
(`from torch.utils.data.distributed import DistributedSampler`)."""
from .sampler import DistributedSampler

__all__ = ["DistributedSampler"]
