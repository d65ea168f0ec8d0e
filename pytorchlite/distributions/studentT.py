"""StudentT(df, loc, scale).  Mirrors torch/distributions/studentT.py."""
import math

import pytorchlite as torch
from . import constraints
from .chi2 import Chi2
from .distribution import Distribution
from .utils import _standard_normal, broadcast_all

__all__ = ["StudentT"]


class StudentT(Distribution):
    """Student's t with df degrees of freedom, shifted by loc and scaled by scale."""
    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        batch_shape = torch.Size(batch_shape)
        new.df = self.df.expand(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new._chi2 = self._chi2.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        """loc, undefined (nan) for df <= 1."""
        return torch.where(self.df <= 1, torch.full_like(self.loc, math.nan), self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        """scale^2 df / (df - 2); inf for 1 < df <= 2, nan for df <= 1."""
        df = self.df
        finite = self.scale.pow(2) * df / (df - 2)
        result = torch.where(df > 2, finite, torch.full_like(finite, math.inf))
        return torch.where(df <= 1, torch.full_like(finite, math.nan), result)

    def rsample(self, sample_shape=torch.Size()):
        """loc + scale X / sqrt(Z / df), X standard normal and Z ~ Chi2(df)."""
        shape = self._extended_shape(sample_shape)
        x = _standard_normal(shape, dtype=self.df.dtype, device=self.df.device)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * (x * torch.rsqrt(z / self.df))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        log_norm = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
                    + torch.lgamma(0.5 * self.df) - torch.lgamma(0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * torch.log1p(y ** 2.0 / self.df) - log_norm

    def entropy(self):
        half, half_next = 0.5 * self.df, 0.5 * (self.df + 1)
        lbeta = torch.lgamma(half) + math.lgamma(0.5) - torch.lgamma(half_next)
        return (self.scale.log()
                + half_next * (torch.digamma(half_next) - torch.digamma(half))
                + 0.5 * self.df.log() + lbeta)
