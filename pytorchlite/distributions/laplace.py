"""Laplace(loc, scale).  Mirrors torch/distributions/laplace.py."""
import math

import pytorchlite as torch
from . import constraints
from .distribution import Distribution
from .utils import _batch_shape_of, _expand_params, broadcast_all

__all__ = ["Laplace"]


class Laplace(Distribution):
    """The Laplace (double exponential) distribution: density exp(-|x - loc| / scale) /
    (2 scale)."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape_of(loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Laplace, batch_shape, ("loc", "scale"), _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=torch.Size()):
        """Inverse CDF of u uniform on (-1, 1) (open at -1): loc - scale sign(u) log(1-|u|)."""
        shape = self._extended_shape(sample_shape)
        eps = torch.finfo(self.loc.dtype).eps
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        u = u * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * torch.log1p(-u.abs())

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -torch.log(2 * self.scale) - torch.abs(value - self.loc) / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * torch.expm1(-z.abs() / self.scale)

    def icdf(self, value):
        t = value - 0.5
        return self.loc - self.scale * t.sign() * torch.log1p(-2 * t.abs())

    def entropy(self):
        return 1 + torch.log(2 * self.scale)
