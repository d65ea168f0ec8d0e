"""Dirichlet(concentration): random points of the simplex.  Mirrors
torch/distributions/dirichlet.py."""
import pytorchlite as torch
from pytorchlite.autograd import Function, once_differentiable
from . import constraints
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .utils import _xlogy

__all__ = ["Dirichlet"]


def _Dirichlet_backward(x, concentration, grad_output):
    """The reparameterised gradient of a Dirichlet sample x: coordinate j moves as a
    Beta(c_j, sum c - c_j) variate at its quantile and the others shrink in proportion,
    so the concentrations' gradient is _dirichlet_grad(x, c, sum c) (g - sum(x g))."""
    total = concentration.sum(-1, True).expand_as(concentration)
    grad = torch._dirichlet_grad(x, concentration, total)
    return grad * (grad_output - (x * grad_output).sum(-1, True))


class _Dirichlet(Function):
    @staticmethod
    def forward(ctx, concentration):
        x = torch._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        return _Dirichlet_backward(x, concentration, grad_output)


class Dirichlet(ExponentialFamily):
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
        """aten::_sample_dirichlet, differentiated through aten::_dirichlet_grad."""
        shape = self._extended_shape(sample_shape)
        return _Dirichlet.apply(self.concentration.expand(shape))

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

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - torch.lgamma(x.sum(-1))

    def entropy(self):
        c = self.concentration
        k = c.size(-1)
        total = c.sum(-1)
        return (torch.lgamma(c).sum(-1) - torch.lgamma(total)
                - (k - total) * torch.digamma(total)
                - ((c - 1.0) * torch.digamma(c)).sum(-1))
