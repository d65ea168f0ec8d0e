"""ExponentialFamily: densities p(x) = h(x) exp(<t(x), theta> - F(theta)).  Mirrors
torch/distributions/exp_family.py.

A subclass gives its natural parameters theta, the log normaliser F and E[log h(X)]; the
entropy (and the KL divergence between two members of one family, kl.py) then follow from
the Bregman divergence of F, its gradient taken by autograd."""
import pytorchlite as torch
from .distribution import Distribution

__all__ = ["ExponentialFamily"]


class ExponentialFamily(Distribution):
    """A distribution of an exponential family."""

    @property
    def _natural_params(self):
        """The natural parameters theta, a tuple of tensors."""
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        """F(theta)."""
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self):
        """E[log h(X)]."""
        raise NotImplementedError

    def entropy(self):
        """H = F(theta) - <theta, grad F(theta)> - E[log h(X)]."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_norm = self._log_normalizer(*params)
        grads = torch.autograd.grad(log_norm.sum(), params, create_graph=True)
        result = result + log_norm
        for p, g in zip(params, grads):
            result = result - (p * g).reshape(tuple(self._batch_shape) + (-1,)).sum(-1)
        return result
