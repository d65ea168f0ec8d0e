"""Binomial(total_count, probs or logits).  Mirrors torch/distributions/binomial.py: draws
come from aten::binomial (Note [Binomial sampling] in src/aten/native/random_binomial.c)."""
import pytorchlite as torch
from . import constraints
from .distribution import Distribution
from .utils import _BinaryParameter, broadcast_all

__all__ = ["Binomial"]


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
            return torch.binomial(self.total_count.expand(shape), self.probs.expand(shape))

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
