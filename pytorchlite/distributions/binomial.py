"""Binomial(total_count, probs or logits).  Mirrors torch/distributions/binomial.py.

pytorchlite has no aten::binomial sampler, so draws are composed from existing ops (see
_binomial_draw): Beta splitting (Knuth, TAOCP vol. 2, 3.4.1) halves each large count with one
Beta variate per step, and the at most _TRIALS_PER_BLOCK trials left are counted directly, so a
draw costs O(log total_count) tensor passes."""
import pytorchlite as torch
from . import constraints
from .distribution import Distribution
from .utils import _BinaryParameter, broadcast_all

__all__ = ["Binomial"]

_TRIALS_PER_BLOCK = 64


def _count_trials(count, probs):
    """Successes among count[i] <= _TRIALS_PER_BLOCK Bernoulli(probs[i]) trials: uniforms
    below probs, the trials past count masked off."""
    n_max = int(count.max()) if count.numel() else 0
    if n_max == 0:
        return torch.zeros_like(probs)
    u = torch.rand(tuple(probs.shape) + (n_max,), dtype=probs.dtype, device=probs.device)
    trial = torch.arange(n_max, dtype=probs.dtype, device=probs.device)
    hit = (u < probs.unsqueeze(-1)) & (trial < count.unsqueeze(-1))
    return hit.to(probs.dtype).sum(-1)


def _binomial_draw(count, probs):
    """Successes among count[i] trials of probability probs[i] (tensors of one shape).

    Beta splitting: of n uniforms, the a-th smallest X (a = n // 2 + 1) is Beta(a, n + 1 - a).
    If X >= p the successes (uniforms below p) are among the a - 1 uniforms below X, each
    below p with probability p / X; otherwise all a uniforms up to X succeed and each of the
    n - a above X does with probability (p - X) / (1 - X).  Every step halves n."""
    count, probs = count.clone(), probs.clone()
    base = torch.zeros_like(probs)
    one = torch.ones_like(probs)
    while count.numel() and bool((count > _TRIALS_PER_BLOCK).any()):
        big = count > _TRIALS_PER_BLOCK
        a = torch.where(big, torch.floor(count / 2) + 1, one)
        b = torch.where(big, count + 1 - a, one)
        ga, gb = torch._standard_gamma(a), torch._standard_gamma(b)
        x = (ga / (ga + gb)).clamp(min=torch.finfo(probs.dtype).tiny,
                                   max=1 - torch.finfo(probs.dtype).eps)
        below = x >= probs
        base = base + torch.where(big & ~below, a, torch.zeros_like(a))
        count = torch.where(big, torch.where(below, a - 1, b - 1), count)
        split_p = torch.where(below, probs / x, (probs - x) / (1 - x))
        probs = torch.where(big, split_p.clamp(min=0, max=1), probs)
    return base + _count_trials(count, probs)


class _CountDistribution(_BinaryParameter, Distribution):
    """A count law of total_count and probs or logits (Binomial, NegativeBinomial): the
    parameters broadcast together, total_count in their dtype; expand keeps whichever of
    probs/logits was given."""

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        given = self._set_binary_param(probs, logits)
        self.total_count, self._param = broadcast_all(total_count, given)
        self.total_count = self.total_count.type_as(self._param)
        setattr(self, "probs" if probs is not None else "logits", self._param)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_binary(type(self), batch_shape, _instance)
        new.total_count = self.total_count.expand(new.batch_shape)
        return new


class Binomial(_CountDistribution):
    """The number of successes in total_count independent trials of probability probs (or
    sigmoid(logits))."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        super().__init__(total_count, probs, logits, validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=torch.Size()):
        shape = self._extended_shape(sample_shape)
        with torch.no_grad():
            return _binomial_draw(self.total_count.expand(shape).contiguous(),
                                  self.probs.expand(shape).contiguous())

    def log_prob(self, value):
        """log C(n, k) + k logits - n log(1 + exp(logits)), the last term as
        n (max(logits, 0) + log1p(exp(-|logits|))) (averaging the two one-sided limits at
        logits = 0 keeps its gradient symmetric)."""
        if self._validate_args:
            self._validate_sample(value)
        n, logits = self.total_count, self.logits
        positive_part = (logits.clamp(min=0) + logits - logits.clamp(max=0)) / 2
        normalize = (n * positive_part + n * torch.log1p(torch.exp(-torch.abs(logits)))
                     - torch.lgamma(n + 1))
        return (value * logits - torch.lgamma(value + 1) - torch.lgamma(n - value + 1)
                - normalize)

    def entropy(self):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(torch.exp(log_prob) * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = int(self.total_count.max())
        if not self.total_count.min() == total_count:
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`.")
        values = torch.arange(1 + total_count, dtype=self._param.dtype,
                              device=self._param.device)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values
