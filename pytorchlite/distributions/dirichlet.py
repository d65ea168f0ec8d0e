"""Dirichlet(concentration): random points of the simplex.  Mirrors
torch/distributions/dirichlet.py."""
import pytorchlite as torch
from . import constraints
from .distribution import Distribution
from .utils import _xlogy

__all__ = ["Dirichlet"]


class Dirichlet(Distribution):
    """The Dirichlet distribution over the last dim of concentration."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = torch.Size(batch_shape)
        new.concentration = self.concentration.expand(tuple(batch_shape) +
                                                      tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=torch.Size()):
        """Independent Gamma(concentration_k, 1) draws divided by their sum.  The gradient
        flows through each reparameterised gamma draw (aten::_standard_gamma_grad) and the
        normalisation; PyTorch differentiates the normalised sample directly
        (aten::_dirichlet_grad), an estimator with the same expectation."""
        shape = self._extended_shape(sample_shape)
        gammas = torch._standard_gamma(self.concentration.expand(shape))
        value = gammas / gammas.sum(-1, keepdim=True)
        return value.clamp(min=torch.finfo(value.dtype).tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return (_xlogy(c - 1.0, value).sum(-1) + torch.lgamma(c.sum(-1))
                - torch.lgamma(c).sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        """(c - 1) / sum(c - 1) with c - 1 floored at 0; where every c < 1 the mode is the
        corner of the largest concentration."""
        excess = (self.concentration - 1).clamp(min=0.0)
        mode = excess / excess.sum(-1, True)
        corner = torch.nn.functional.one_hot(self.concentration.argmax(-1),
                                             self.concentration.shape[-1]).to(mode.dtype)
        all_below_one = (self.concentration < 1).all(-1, keepdim=True)
        return torch.where(all_below_one, corner, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return (self.concentration * (total - self.concentration)
                / (total.pow(2) * (total + 1)))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        total = c.sum(-1)
        return (torch.lgamma(c).sum(-1) - torch.lgamma(total)
                - (k - total) * torch.digamma(total)
                - ((c - 1.0) * torch.digamma(c)).sum(-1))
