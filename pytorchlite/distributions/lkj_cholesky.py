"""LKJCholesky(dim, concentration): Cholesky factors of LKJ-distributed correlation
matrices.  Mirrors torch/distributions/lkj_cholesky.py.

Sampling is the onion method (Lewandowski, Kurowicka and Joe, 2009, section 3.2) in its
Cholesky form: row i of the factor is sqrt(y_i) times a uniform direction on the sphere of
its first i coordinates, y_i ~ Beta(i/2, concentration + (dim - 2)/2 - i/2), and the
diagonal entry completes the row to unit norm."""
import math

import pytorchlite as torch
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["LKJCholesky"]


class LKJCholesky(Distribution):
    """The law of L, a dim x dim lower Cholesky factor, with density proportional to
    det(L L^T)^(concentration - 1)."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError("Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        batch_shape = self.concentration.size()
        event_shape = torch.Size((dim, dim))
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        # row i >= 1 draws y_i ~ Beta(i / 2, marginal_conc - (i - 1) / 2); row 0 has no
        # off-diagonal part (its Beta(1/2, marginal_conc) draw is unused)
        offset = torch.arange(self.dim - 1, dtype=self.concentration.dtype,
                              device=self.concentration.device)
        offset = torch.cat([offset.new_zeros((1,)), offset])
        rows = torch.arange(self.dim, dtype=self.concentration.dtype,
                            device=self.concentration.device).clamp(min=1)
        self._beta = Beta(rows / 2, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(batch_shape, event_shape, validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = torch.Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=torch.Size()):
        with torch.no_grad():
            y = self._beta.sample(sample_shape).unsqueeze(-1)
            u = torch.randn(self._extended_shape(sample_shape), dtype=y.dtype,
                            device=y.device).tril(-1)
            # the first row has no off-diagonal part: its 0 / 0 direction is zeroed
            norms = torch.linalg.vector_norm(u, dim=-1, keepdim=True)
            sphere = torch.where(norms > 0, u / norms.clamp(min=torch.finfo(u.dtype).tiny),
                                 torch.zeros_like(u))
            w = torch.sqrt(y) * sphere
            tiny = torch.finfo(w.dtype).tiny
            diag = torch.clamp(1 - torch.sum(w ** 2, dim=-1), min=tiny).sqrt()
            return w + torch.diag_embed(diag)

    def log_prob(self, value):
        """sum_i (dim - i + 2 (concentration - 1)) log L_ii over i = 2..dim, less the log
        normaliser (Lewandowski et al., 2009, section 3.2)."""
        if self._validate_args:
            self._validate_sample(value)
        diag = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = torch.arange(2, self.dim + 1, dtype=self.concentration.dtype,
                             device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized = torch.sum(order * diag.log(), dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = torch.lgamma(alpha) * dm1
        numerator = torch.mvlgamma(alpha - 0.5, dm1)
        return unnormalized - (0.5 * dm1 * math.log(math.pi) + numerator - denominator)
