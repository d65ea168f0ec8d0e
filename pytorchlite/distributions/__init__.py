"""torch.distributions: parameterised probability distributions with sampling
(reparameterised where the family allows), log densities, moments, entropies and KL
divergences.  Mirrors torch/distributions/."""
from . import constraints
from .bernoulli import Bernoulli
from .beta import Beta
from .categorical import Categorical
from .dirichlet import Dirichlet
from .distribution import Distribution
from .gamma import Gamma
from .independent import Independent
from .kl import kl_divergence, register_kl
from .multivariate_normal import MultivariateNormal
from .normal import Normal
from .uniform import Uniform

__all__ = [
    "Bernoulli", "Beta", "Categorical", "Dirichlet", "Distribution", "Gamma", "Independent",
    "MultivariateNormal", "Normal", "Uniform", "constraints", "kl_divergence", "register_kl",
]
