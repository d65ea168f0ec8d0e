"""Helpers the distributions share: broadcasting parameters, probabilities <-> logits, lazily
computed attributes.  Mirrors torch/distributions/utils.py."""
import numbers

import pytorchlite as torch

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property",
           "logits_to_probs", "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060   # the Euler-Mascheroni constant


def broadcast_all(*values):
    """The values as tensors of one broadcast shape; numbers become tensors of the first
    tensor's dtype (the default dtype when all are numbers)."""
    if not all(isinstance(v, (torch.Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, "
                         "torch.Tensor or objects implementing __torch_function__.")
    if not all(isinstance(v, torch.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, torch.Tensor)), None)
        dtype = like.dtype if like is not None else torch.get_default_dtype()
        values = [v if isinstance(v, torch.Tensor) else torch.tensor(v, dtype=dtype)
                  for v in values]
    return torch.broadcast_tensors(*values)


def _sum_rightmost(value, dim):
    """value summed over its rightmost dim dims."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def clamp_probs(probs):
    """probs clamped to [eps, 1 - eps] of their dtype, so that their logits are finite."""
    eps = torch.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    """sigmoid(logits) for a binary variable, else softmax over the last dim."""
    if is_binary:
        return torch.sigmoid(logits)
    return torch.softmax(logits, dim=-1)


def probs_to_logits(probs, is_binary=False):
    """log(p) - log(1 - p) for a binary variable, else log(p), from clamped probabilities."""
    p = clamp_probs(probs)
    if is_binary:
        return p.log() - (-p).log1p()
    return p.log()


def _xlogy(x, y):
    """x * log(y), 0 where x is 0 (also where y is 0)."""
    return torch.where(x == 0, torch.zeros_like(x * y), x * y.log())


def _expand_params(dist, cls, batch_shape, names, _instance=None):
    """dist.expand for a family whose parameters `names` all have the batch shape: a new
    instance (or _instance) with each parameter expanded, without revalidating."""
    from .distribution import Distribution
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = torch.Size(batch_shape)
    for name in names:
        if name in dist.__dict__:
            setattr(new, name, dist.__dict__[name].expand(batch_shape))
    Distribution.__init__(new, batch_shape, validate_args=False)
    new._validate_args = dist._validate_args
    return new


def _batch_shape_of(*params):
    """torch.Size() when every parameter was given as a number, else the broadcast shape of
    the tensors."""
    if all(isinstance(p, numbers.Number) for p in params):
        return torch.Size()
    return torch.broadcast_shapes(*[p.shape for p in params
                                    if isinstance(p, torch.Tensor)])


def _standard_normal(shape, dtype, device):
    return torch.randn(shape, dtype=dtype, device=device)


class lazy_property:
    """A property computed on first access and then stored in the instance's __dict__, so
    that `name in obj.__dict__` tells whether it was given or computed (Distribution's repr
    and argument checks rely on that)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        with torch.enable_grad():
            value = self.wrapped(instance)
        instance.__dict__[self.wrapped.__name__] = value
        return value


class _BinaryParameter:
    """Mixin of the families whose parameter is one probability, given as probs or as logits
    (log-odds): each is computed from the other on first use, _param is the one given."""

    def _set_binary_param(self, probs, logits):
        """Stores probs or logits, whichever was given, broadcast to a tensor, in self and
        self._param; returns it as given (a number or a tensor)."""
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        if probs is not None:
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
            return probs
        (self.logits,) = broadcast_all(logits)
        self._param = self.logits
        return logits

    def _expand_binary(self, cls, batch_shape, _instance=None):
        """expand's new instance of cls with probs and/or logits expanded; the caller copies
        any other parameter."""
        new = _expand_params(self, cls, batch_shape, ("probs", "logits"), _instance)
        new._param = new.logits if "logits" in new.__dict__ else new.probs
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        return self._param.size()


def _tril_mask(n, diag, device=None):
    """The (n, n) bool mask of the entries on or below diagonal `diag`."""
    rows = torch.arange(n, device=device).reshape(-1, 1)
    return torch.arange(n, device=device) < rows + (diag + 1)


def tril_matrix_to_vec(mat, diag=0):
    """The entries of mat on or below diagonal `diag`, in row order, as a vector."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    return mat[..., _tril_mask(n, diag, mat.device)]


def vec_to_tril_matrix(vec, diag=0):
    """The (D, D) lower-triangular matrix whose entries on or below diagonal `diag`, in row
    order, are vec's; D solves D^2 + (1 + 2 diag) D - |diag| (diag + 1) = 2 len(vec)."""
    b = 1 + 2 * diag
    n = (-b + (b * b + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > torch.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(n)
    mask = _tril_mask(n, diag, vec.device).reshape(-1)
    flat = vec.new_zeros(tuple(vec.shape[:-1]) + (n * n,))
    index = torch.nonzero(mask).reshape(-1)
    flat = flat.index_copy(-1, index, vec)
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))
