"""NegativeBinomial(total_count, probs or logits).  Mirrors
torch/distributions/negative_binomial.py."""
import pytorchlite as torch
import pytorchlite.nn.functional as F
from . import constraints
from .binomial import _CountDistribution
from .gamma import Gamma
from .utils import lazy_property

__all__ = ["NegativeBinomial"]


class NegativeBinomial(_CountDistribution):
    """The number of successes (probability probs each) before total_count failures:
    P(k) = C(k + r - 1, k) p^k (1 - p)^r, r = total_count (real, >= 0)."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer


    @property
    def mean(self):
        return self.total_count * torch.exp(self.logits)

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / torch.sigmoid(-self.logits)

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=torch.exp(-self.logits),
                     validate_args=False)

    def sample(self, sample_shape=torch.Size()):
        """A Poisson draw of a Gamma(total_count, (1 - p) / p) rate (the gamma-Poisson
        mixture)."""
        with torch.no_grad():
            return torch.poisson(self._gamma.sample(sample_shape=sample_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized = (self.total_count * F.logsigmoid(-self.logits)
                            + value * F.logsigmoid(self.logits))
        log_normalization = (-torch.lgamma(self.total_count + value)
                             + torch.lgamma(1.0 + value) + torch.lgamma(self.total_count))
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized - log_normalization
