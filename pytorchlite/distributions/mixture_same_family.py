"""MixtureSameFamily(mixture_distribution, component_distribution): a finite mixture whose
components are the rightmost batch dim of one distribution.  Mirrors
torch/distributions/mixture_same_family.py."""
import pytorchlite as torch
from . import constraints
from .categorical import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Draws component k ~ mixture_distribution (a Categorical over K), then a value from
    component_distribution's k-th member along its last batch dim (of size K)."""
    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError(" The Mixture distribution needs to be an  instance of "
                             "torch.distributions.Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError("The Component distribution needs to be an instance of "
                             "torch.distributions.Distribution")
        mdbs = mixture_distribution.batch_shape
        cdbs = component_distribution.batch_shape[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(f"`mixture_distribution.batch_shape` ({mdbs}) is not "
                                 f"compatible with `component_distribution.batch_shape`({cdbs})")
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(f"`mixture_distribution component` ({km}) does not equal "
                             f"`component_distribution.batch_shape[-1]` ({kc})")
        self._num_component = km
        event_shape = component_distribution.event_shape
        self._event_ndims = len(event_shape)
        super().__init__(batch_shape=cdbs, event_shape=event_shape,
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = torch.Size(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,))
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, new._component_distribution.event_shape,
                              validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return constraints.MixtureSameFamilyConstraint(self._component_distribution.support)

    @property
    def mixture_distribution(self):
        return self._mixture_distribution

    @property
    def component_distribution(self):
        return self._component_distribution

    def _weights(self):
        """The mixture probabilities shaped to broadcast against the components' moments:
        (..., K) + (1,) * event dims."""
        probs = self.mixture_distribution.probs
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        return torch.sum(self._weights() * self.component_distribution.mean,
                         dim=-1 - self._event_ndims)

    @property
    def variance(self):
        """Law of total variance: E[Var | k] + Var[E | k]."""
        w = self._weights()
        comp = self.component_distribution
        within = torch.sum(w * comp.variance, dim=-1 - self._event_ndims)
        between = torch.sum(w * (comp.mean - self._pad(self.mean)).pow(2.0),
                            dim=-1 - self._event_ndims)
        return within + between

    def cdf(self, x):
        cdf_x = self.component_distribution.cdf(self._pad(x))
        return torch.sum(cdf_x * self.mixture_distribution.probs, dim=-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        log_prob_x = self.component_distribution.log_prob(self._pad(x))
        log_mix = torch.log_softmax(self.mixture_distribution.logits, dim=-1)
        return torch.logsumexp(log_prob_x + log_mix, dim=-1)

    def sample(self, sample_shape=torch.Size()):
        """Draws from every component and picks the chosen one with gather."""
        with torch.no_grad():
            sample_shape = torch.Size(sample_shape)
            gather_dim = len(sample_shape) + len(self.batch_shape)
            es = tuple(self.event_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)
            comp_samples = self.component_distribution.sample(sample_shape)
            # the chosen index, its batch dims aligned with the components' (the mixture's
            # batch may be shorter and broadcast), then a singleton component dim and the
            # event dims
            missing = len(self.batch_shape) - len(self.mixture_distribution.batch_shape)
            index = mix_sample.reshape(tuple(sample_shape) + (1,) * missing
                                       + tuple(self.mixture_distribution.batch_shape)
                                       + (1,) * (len(es) + 1))
            index = index.expand(tuple(comp_samples.shape[:gather_dim]) + (1,) + es)
            return torch.gather(comp_samples, gather_dim, index.contiguous()).squeeze(
                gather_dim)

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def __repr__(self):
        return (f"MixtureSameFamily(\n  {self.mixture_distribution},\n  "
                f"{self.component_distribution})")
