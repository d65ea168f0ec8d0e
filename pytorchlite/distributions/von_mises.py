"""VonMises(loc, concentration): the circular normal distribution.  Mirrors
torch/distributions/von_mises.py.

The Bessel functions come from torch.special.i0e / i1e (double accuracy; PyTorch uses
single-precision polynomial fits); sampling is Best and Fisher's (1979) rejection scheme,
run in float64."""
import math

import pytorchlite as torch
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


def _log_modified_bessel_fn(x, order=0):
    """log I_order(x) for x > 0, order 0 or 1: log(i{order}e(x)) + x."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    scaled = torch.special.i0e(x) if order == 0 else torch.special.i1e(x)
    return scaled.log() + x


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best-Fisher: accept f = (1 + r z) / (r + z), z = cos(pi U1), with the wrapped-Cauchy
    envelope test; the angle is +-acos(f), shifted by loc and wrapped into [-pi, pi)."""
    done = torch.zeros(x.shape, dtype=torch.bool, device=loc.device)
    while not bool(done.all()):
        u = torch.rand((3,) + tuple(x.shape), dtype=loc.dtype, device=loc.device)
        u1, u2, u3 = u.unbind()
        z = torch.cos(math.pi * u1)
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        accept = accept & ~done
        x = torch.where(accept, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """Density exp(concentration cos(x - loc)) / (2 pi I0(concentration)) on the circle
    (values in [-pi, pi))."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, torch.Size(), validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration * torch.cos(value - self.loc) - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    @lazy_property
    def _loc(self):
        return self.loc.to(torch.double)

    @lazy_property
    def _concentration(self):
        return self.concentration.to(torch.double)

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        r = (1 + rho ** 2) / (2 * rho)
        return torch.where(kappa < 1e-5, 1 / kappa + kappa, r)

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            shape = self._extended_shape(sample_shape)
            x = torch.zeros(shape, dtype=torch.double, device=self.loc.device)
            return _rejection_sample(self._loc, self._concentration, self._proposal_r,
                                     x).to(self.loc.dtype)

    def expand(self, batch_shape, _instance=None):
        validate_args = self.__dict__.get("_validate_args")
        return type(self)(self.loc.expand(batch_shape),
                          self.concentration.expand(batch_shape), validate_args=validate_args)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance 1 - I1(k) / I0(k)."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
