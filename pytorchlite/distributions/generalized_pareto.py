"""GeneralizedPareto(loc, scale, concentration).  Mirrors
torch/distributions/generalized_pareto.py."""
import math
import numbers

import pytorchlite as torch
from . import constraints
from .distribution import Distribution
from .utils import _batch_shape_of, broadcast_all

__all__ = ["GeneralizedPareto"]


class GeneralizedPareto(Distribution):
    """Survival (1 + xi z)^(-1/xi), z = (x - loc) / scale, xi = concentration (exp(-z) at
    xi = 0); the support is [loc, inf) for xi >= 0 and [loc, loc - scale / xi] for xi < 0."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        super().__init__(_batch_shape_of(loc, scale, concentration),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(GeneralizedPareto, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.concentration = self.concentration.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def _zero_and_safe(self):
        """Where concentration is 0 (within isclose), and the concentration with those
        entries replaced by 1 so that the xi != 0 formulas stay finite there."""
        conc = self.concentration
        eq_zero = torch.isclose(conc, torch.zeros_like(conc))
        return eq_zero, torch.where(eq_zero, torch.ones_like(conc), conc)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        y = 1 / safe + torch.ones_like(z)
        nonzero = torch.where(y == 0, y, y * torch.log1p(safe * z))
        log_scale = (math.log(self.scale) if isinstance(self.scale, numbers.Real)
                     else self.scale.log())
        return -log_scale - torch.where(eq_zero, z, nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe = self._zero_and_safe()
        return torch.where(eq_zero, -z, -torch.log1p(safe * z) / safe)

    def log_cdf(self, value):
        return torch.log1p(-torch.exp(self.log_survival_function(value)))

    def cdf(self, value):
        return torch.exp(self.log_cdf(value))

    def icdf(self, value):
        eq_zero, safe = self._zero_and_safe()
        logu = torch.log1p(-value)
        nonzero = self.loc + self.scale / safe * torch.expm1(-safe * logu)
        return torch.where(eq_zero, self.loc - self.scale * logu, nonzero)

    def _z(self, x):
        return (x - self.loc) / self.scale

    @property
    def mean(self):
        """loc + scale / (1 - xi), nan for xi >= 1."""
        valid = self.concentration < 1
        safe = torch.where(valid, self.concentration, torch.full_like(self.concentration, 0.5))
        result = self.loc + self.scale / (1 - safe)
        return torch.where(valid, result, torch.full_like(result, math.nan))

    @property
    def variance(self):
        """scale^2 / ((1 - xi)^2 (1 - 2 xi)), nan for xi >= 1/2."""
        valid = self.concentration < 0.5
        safe = torch.where(valid, self.concentration,
                           torch.full_like(self.concentration, 0.25))
        result = self.scale ** 2 / ((1 - safe) ** 2 * (1 - 2 * safe))
        return torch.where(valid, result, torch.full_like(result, math.nan))

    def entropy(self):
        ans = torch.log(self.scale) + self.concentration + 1
        return torch.broadcast_to(ans, self._batch_shape)

    @property
    def mode(self):
        return self.loc

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = torch.where(self.concentration < 0, lower - self.scale / self.concentration,
                            torch.full_like(lower, math.inf))
        return constraints.interval(lower, upper)
