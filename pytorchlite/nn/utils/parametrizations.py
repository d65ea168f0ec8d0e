"""torch.nn.utils.parametrizations: weight_norm, spectral_norm and orthogonal as
parametrizations (nn.utils.parametrize), written afresh for pytorchlite.

weight_norm keeps g and v as parametrizations.<name>.original0 / original1; spectral_norm
keeps the weight as parametrizations.<name>.original and its power-iteration vectors as the
buffers parametrizations.<name>.0._u / _v; orthogonal maps a matrix (or batch of them) onto
the orthogonal (unitary) ones by the matrix exponential, the Cayley map or Householder
products of the lower triangle.  pytorchlite has no geqrf: the Householder QR that
use_trivialization=False needs to store a matrix is _householder_qr below."""
from enum import Enum, auto

# loaded at first use of nn.utils.parametrizations, after the package (nn/utils/__init__.py)
import pytorchlite as torch
from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..modules.module import Module
from . import parametrize
from .weight_norm import norm_except_dim, weight_norm_

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _is_orthogonal(Q):
    n, k = Q.size(-2), Q.size(-1)
    eye = torch.eye(k, dtype=Q.dtype, device=Q.device)
    return torch.allclose(Q.mH @ Q, eye, atol=10.0 * n * torch.finfo(Q.dtype).eps)


def _make_orthogonal(A):
    """The Q of A's QR decomposition, with R's diagonal made positive (real) by scaling Q's
    columns by its signs."""
    Q, R = torch.linalg.qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


def _householder_qr(A):
    """geqrf of a real (batch of) n x k matrix, n >= k: R in the upper triangle, below the
    diagonal the Householder vectors v_j (v_j[j] = 1 implied) with A = H_1 ... H_k R,
    H_j = I - tau_j v_j v_j^T; tau_j = 0 where column j needs no reflection (LAPACK's dlarfg
    convention: R's diagonal is -sign(a_jj) times the column's norm)."""
    A = A.clone()
    n, k = A.size(-2), A.size(-1)
    taus = []
    for j in range(k):
        x = A[..., j:, j]
        alpha = x[..., 0]
        rest = (x[..., 1:] * x[..., 1:]).sum(-1)
        norm = (alpha * alpha + rest).sqrt()
        beta = torch.where(alpha >= 0, -norm, norm)
        skip = rest == 0
        safe_beta = torch.where(skip, torch.ones_like(beta), beta)
        tau = torch.where(skip, torch.zeros_like(beta), (beta - alpha) / safe_beta)
        scale = torch.where(skip, torch.zeros_like(beta), 1.0 / (alpha - safe_beta))
        v = torch.cat([torch.ones_like(alpha).unsqueeze(-1),
                       x[..., 1:] * scale.unsqueeze(-1)], dim=-1)
        # apply H_j to the remaining columns: A[j:, j:] -= tau v (v^T A[j:, j:])
        block = A[..., j:, j:]
        w = (v.unsqueeze(-1) * block).sum(-2)
        block -= tau.unsqueeze(-1).unsqueeze(-1) * v.unsqueeze(-1) * w.unsqueeze(-2)
        A[..., j + 1:, j] = v[..., 1:]
        A[..., j, j] = torch.where(skip, alpha, beta)
        taus.append(tau)
    return A, torch.stack(taus, -1)


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map, *, use_trivialization=True):
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X):
        n, k = X.size(-2), X.size(-1)
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            X = X.tril()
            if n != k:
                X = torch.cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
            A = X - X.mH
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                Q = torch.matrix_exp(A)
            else:
                eye = torch.eye(n, dtype=A.dtype, device=A.device)
                Q = torch.linalg.solve(eye - 0.5 * A, eye + 0.5 * A)
            if n != k:
                Q = Q[..., :k]
        else:
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            Q = torch.linalg.householder_product(A, tau)
            Q = Q * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def right_inverse(self, Q):
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, Q):
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        q_init = Q
        n, k = Q.size(-2), Q.size(-1)
        if n < k:
            Q = Q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map in (_OrthMaps.cayley, _OrthMaps.matrix_exp):
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            A, tau = _householder_qr(Q)
            A.diagonal(dim1=-2, dim2=-1).sign_()
            # a column LAPACK left unreflected (tau 0) is reflected by forward: flip its sign
            A.diagonal(dim1=-2, dim2=-1)[tau == 0.0] *= -1
            return A.mT if q_init.size(-2) < q_init.size(-1) else A
        if n == k:
            Q = _make_orthogonal(Q) if not _is_orthogonal(Q) else Q.clone()
        else:
            N = torch.randn(*(Q.size()[:-2] + (n, n - k)), dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(torch.cat([Q, N], dim=-1))
        self.base = Q
        neg_eye = torch.zeros_like(q_init)
        neg_eye.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_eye


def orthogonal(module, name="weight", orthogonal_map=None, *, use_trivialization=True):
    """Makes module.<name> orthogonal (unitary): "matrix_exp" (the default for square or
    complex matrices), "cayley" or "householder" (the default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.TensorBase):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) or \
            weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_norm_(weight_v, weight_g, self.dim)

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """module.<name> = g * v / ||v|| with g = parametrizations.<name>.original0 and
    v = original1; state dicts of the older weight_norm (<name>_g, <name>_v) load too."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def old_keys_to_new(state_dict, prefix, local_metadata, strict, missing_keys,
                        unexpected_keys, error_msgs):
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            g, v = state_dict.pop(g_key), state_dict.pop(v_key)
            state_dict[f"{prefix}parametrizations.{name}.original0"] = g
            state_dict[f"{prefix}parametrizations.{name}.original1"] = v

    from ..modules.module import RemovableHandle
    handle = RemovableHandle(module._load_state_dict_pre_hooks)
    module._load_state_dict_pre_hooks[handle.id] = old_keys_to_new
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.size()
            with no_grad():
                u = F.normalize(mat.new_empty(h).normal_(0, 1), dim=0, eps=self.eps)
                v = F.normalize(mat.new_empty(w).normal_(0, 1), dim=0, eps=self.eps)
            self.register_buffer("_u", u)
            self.register_buffer("_v", v)
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, mat, n_power_iterations):
        """Refines _u, _v (in place) towards mat's leading singular vectors."""
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(mat.mv(self._v), dim=0, eps=self.eps))
                self._v.copy_(F.normalize(mat.mH.mv(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u = self._u.clone()
        v = self._v.clone()
        return weight / torch.vdot(u, mat.mv(v))

    def right_inverse(self, value):
        return value


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """module.<name> divided by its largest singular value, estimated by power iteration."""
    weight = getattr(module, name, None)
    if not isinstance(weight, _C.TensorBase):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        from ..modules.conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    parametrize.register_parametrization(module, name,
                                         _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
