"""Geometric(probs or logits): the number of failures before the first success.  Mirrors
torch/distributions/geometric.py."""
import pytorchlite as torch
import pytorchlite.nn.functional as F
from . import constraints
from .distribution import Distribution
from .utils import _batch_shape_of, _BinaryParameter, broadcast_all

__all__ = ["Geometric"]

class Geometric(_BinaryParameter, Distribution):
    """P(k) = (1 - p)^k p for k = 0, 1, ..., p = probs (in (0, 1]) or sigmoid(logits)."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        given = self._set_binary_param(probs, logits)
        super().__init__(_batch_shape_of(given), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not bool(valid.all()):
                raise ValueError(
                    f"Expected parameter probs ({type(value).__name__} of shape "
                    f"{tuple(value.shape)}) of distribution {self!r} to be positive but found "
                    f"invalid values:\n{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        return self._expand_binary(Geometric, batch_shape, _instance)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return torch.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=torch.Size()):
        """floor(log U / log(1 - p)) for U uniform on [tiny, 1)."""
        shape = self._extended_shape(sample_shape)
        tiny = torch.finfo(self.probs.dtype).tiny
        with torch.no_grad():
            u = torch.rand(shape, dtype=self.probs.dtype, device=self.probs.device)
            u = u.clamp(min=tiny)
            return (u.log() / (-self.probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # 0 log(1 - 1) is 0: a certain success at k = 0
        probs = torch.where((probs == 1) & (value == 0), torch.zeros_like(probs), probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs,
                                                  reduction="none") / self.probs
