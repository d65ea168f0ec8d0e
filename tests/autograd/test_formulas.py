"""Derivative formulas of the '(formulas)' section of src/autograd/derivatives.def: a float64
gradcheck for every row (broadcast and non-contiguous inputs where the op takes them), a
gradgradcheck where PyTorch differentiates twice, node names, the tie and zero rules, and a
direct comparison of gradients with torch (live, or its stored answers without it:
tests/golden.py); and div with a rounding mode (DivBackward2)."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
import golden
from helpers import torch

aten = ptl.ops.aten
POS = (0.5, 2.0)
UNIT = (-0.9, 0.9)


def leaf(shape, seed=0, low=-2.0, high=2.0):
    a = np.random.default_rng(seed).uniform(low, high, size=shape)
    return ptl.tensor(a, dtype=ptl.float64, requires_grad=True)


def c(a):
    """A non-leaf copy, so in-place ops may modify it."""
    return a * 1


# (name, function, input shapes, value range, gradgradcheck too)
FORMULAS = [
    # unary (".t()" and "[::2]" feed transposed and sliced views)
    ("exp2", lambda a: a.t().exp2(), [(2, 3)], None, True),
    ("exp2_", lambda a: c(a).exp2_(), [(3,)], None, True),
    ("expm1", lambda a: a.expm1(), [(2, 3)], None, True),
    ("expm1_", lambda a: c(a).expm1_(), [(3,)], None, True),
    ("log2", lambda a: a.t().log2(), [(2, 3)], POS, True),
    ("log2_", lambda a: c(a).log2_(), [(3,)], POS, True),
    ("log10", lambda a: a.log10(), [(2, 3)], POS, True),
    ("log10_", lambda a: c(a).log10_(), [(3,)], POS, True),
    ("log1p", lambda a: a.log1p(), [(2, 3)], POS, True),
    ("log1p_", lambda a: c(a).log1p_(), [(3,)], POS, True),
    ("rsqrt", lambda a: a.t().rsqrt(), [(2, 3)], POS, True),
    ("rsqrt_", lambda a: c(a).rsqrt_(), [(3,)], POS, True),
    ("sin_", lambda a: c(a).sin_(), [(3,)], None, True),
    ("cos_", lambda a: c(a).cos_(), [(3,)], None, True),
    ("tan", lambda a: a.tan(), [(2, 3)], (-1.2, 1.2), True),
    ("tan_", lambda a: c(a).tan_(), [(3,)], (-1.2, 1.2), True),
    ("asin", lambda a: a.asin(), [(2, 3)], UNIT, True),
    ("asin_", lambda a: c(a).asin_(), [(3,)], UNIT, True),
    ("acos", lambda a: a.acos(), [(2, 3)], UNIT, True),
    ("acos_", lambda a: c(a).acos_(), [(3,)], UNIT, True),
    ("atan", lambda a: a.atan(), [(2, 3)], None, True),
    ("atan_", lambda a: c(a).atan_(), [(3,)], None, True),
    ("sinh", lambda a: a.sinh(), [(2, 3)], None, True),
    ("sinh_", lambda a: c(a).sinh_(), [(3,)], None, True),
    ("cosh", lambda a: a.cosh(), [(2, 3)], None, True),
    ("cosh_", lambda a: c(a).cosh_(), [(3,)], None, True),
    ("erf", lambda a: a.erf(), [(2, 3)], None, True),
    ("erf_", lambda a: c(a).erf_(), [(3,)], None, True),
    ("erfinv", lambda a: a.erfinv(), [(2, 3)], UNIT, True),
    ("erfinv_", lambda a: c(a).erfinv_(), [(3,)], UNIT, True),
    ("abs_", lambda a: c(a).abs_(), [(3,)], POS, True),
    ("reciprocal_", lambda a: c(a).reciprocal_(), [(3,)], POS, True),
    ("square_", lambda a: c(a).square_(), [(3,)], None, True),
    ("frac", lambda a: a.frac(), [(2, 3)], None, True),
    ("frac_", lambda a: c(a).frac_(), [(3,)], None, True),
    ("nan_to_num", lambda a: a.nan_to_num(), [(2, 3)], None, True),
    ("nan_to_num_", lambda a: c(a).nan_to_num_(), [(3,)], None, True),
    ("floor", lambda a: a.floor(), [(2, 3)], None, True),
    ("floor_", lambda a: c(a).floor_(), [(3,)], None, True),
    ("ceil", lambda a: a.ceil(), [(2, 3)], None, True),
    ("ceil_", lambda a: c(a).ceil_(), [(3,)], None, True),
    ("trunc", lambda a: a.trunc(), [(2, 3)], None, True),
    ("trunc_", lambda a: c(a).trunc_(), [(3,)], None, True),
    ("round", lambda a: a.round(), [(2, 3)], None, True),
    ("round_", lambda a: c(a).round_(), [(3,)], None, True),
    ("round_decimals", lambda a: a.round(decimals=1), [(2, 3)], (0.01, 0.04), True),
    ("round__decimals", lambda a: c(a).round_(decimals=1), [(3,)], (0.01, 0.04), True),
    ("sign", lambda a: a.sign(), [(2, 3)], POS, True),
    ("sign_", lambda a: c(a).sign_(), [(3,)], POS, True),
    # binary (second shapes broadcast)
    ("remainder", lambda a, b: a.remainder(b), [(2, 3), (3,)], POS, True),
    ("remainder_", lambda a, b: c(a).remainder_(b), [(2, 3), (3,)], POS, True),
    ("fmod", lambda a, b: a.t().fmod(b), [(3, 2), (3,)], POS, True),
    ("fmod_", lambda a, b: c(a).fmod_(b), [(2, 3), (3,)], POS, True),
    ("pow_", lambda a, b: c(a).pow_(b), [(2, 3), (3,)], POS, True),
    ("atan2", lambda a, b: a.atan2(b), [(2, 3), (3,)], None, True),
    ("atan2_", lambda a, b: c(a).atan2_(b), [(2, 3), (2, 3)], None, True),
    ("maximum", lambda a, b: a.maximum(b), [(2, 3), (3,)], None, True),
    ("max_other", lambda a, b: a.max(b), [(2, 3), (2, 1)], None, True),
    ("minimum", lambda a, b: a.t().minimum(b), [(3, 2), (3,)], None, True),
    ("min_other", lambda a, b: a.min(b), [(2, 3), (3,)], None, True),
    ("fmax", lambda a, b: a.fmax(b), [(2, 3), (3,)], None, True),
    ("fmin", lambda a, b: a.fmin(b), [(2, 3), (3,)], None, True),
    ("lerp_Scalar", lambda a, b: a.lerp(b, 0.3), [(2, 3), (3,)], None, True),
    ("lerp__Scalar", lambda a, b: c(a).lerp_(b, 0.3), [(2, 3), (3,)], None, True),
    ("lerp_Tensor", lambda a, b, w: a.lerp(b, w), [(2, 3), (3,), (2, 1)], None, True),
    ("lerp__Tensor", lambda a, b, w: c(a).lerp_(b, w), [(2, 3), (2, 3), (3,)], None, True),
    ("addcmul", lambda a, b, d: a.addcmul(b, d, value=0.5), [(2, 3), (3,), (2, 1)], None, True),
    ("addcmul_", lambda a, b, d: c(a).addcmul_(b, d, value=2), [(2, 3), (2, 3), (3,)], None, True),
    ("addcdiv", lambda a, b, d: a.addcdiv(b, d, value=0.5), [(2, 3), (3,), (2, 1)], POS, True),
    ("addcdiv_", lambda a, b, d: c(a).addcdiv_(b, d), [(2, 3), (2, 3), (3,)], POS, True),
    ("where", lambda a, b: ptl.where(a.detach() > 0, a, b), [(2, 3), (3,)], None, True),
    ("clamp", lambda a: a.clamp(-1, 1), [(2, 3)], None, True),
    ("clamp_min_only", lambda a: a.clamp(min=0.5), [(2, 3)], None, False),
    ("clamp_", lambda a: c(a).clamp_(-1, 1), [(2, 3)], None, True),
    ("clip", lambda a: a.t().clip(-1, 1), [(2, 3)], None, True),
    ("clip_", lambda a: c(a).clip_(max=1), [(2, 3)], None, True),
    ("clamp_min", lambda a: a.clamp_min(0.3), [(2, 3)], None, True),
    ("clamp_max", lambda a: a.clamp_max(0.3), [(2, 3)], None, True),
    ("clamp_Tensor", lambda a, lo, hi: a.clamp(lo, hi + 2.5), [(2, 3), (3,), (2, 1)], None, True),
    ("clamp__Tensor", lambda a, lo: c(a).clamp_(lo), [(2, 3), (3,)], None, True),
    ("clip_Tensor", lambda a, hi: a.clip(max=hi), [(2, 3), (2, 1)], None, True),
    ("clip__Tensor", lambda a, lo, hi: c(a).clip_(lo - 1, hi + 1), [(2, 3), (2, 3), (3,)], None, True),
    # reductions
    ("prod", lambda a: a.prod(), [(2, 3)], POS, True),
    ("prod_dim", lambda a: a.t().prod(1), [(2, 3)], None, True),
    ("prod_dim_keepdim", lambda a: a.prod(-1, keepdim=True), [(2, 3)], None, True),
    ("amax", lambda a: a.amax(1), [(2, 3, 2)], None, True),
    ("amax_all", lambda a: a.amax(), [(2, 3)], None, True),
    ("amin", lambda a: a.amin((0, 2), keepdim=True), [(2, 3, 2)], None, True),
    ("max", lambda a: a.max(), [(2, 3)], None, True),
    ("min", lambda a: a.t().min(), [(2, 3)], None, True),
    ("max_dim", lambda a: a.max(1)[0], [(2, 3)], None, True),
    ("min_dim", lambda a: a.min(0, keepdim=True)[0], [(2, 3)], None, True),
    ("aminmax", lambda a: ptl.aminmax(a, dim=1), [(2, 3)], None, True),
    ("aminmax_all", lambda a: ptl.aminmax(a)[1], [(2, 3)], None, True),
    ("var", lambda a: a.var(), [(2, 3)], None, True),
    ("var_dim", lambda a: a.t().var(0, keepdim=True), [(2, 3)], None, True),
    ("var_correction", lambda a: a.var((0, 2), correction=0), [(2, 3, 2)], None, True),
    ("std", lambda a: a.std(unbiased=False), [(2, 3)], None, True),
    ("std_dim", lambda a: a.std(1), [(2, 3)], None, True),
    ("std_correction", lambda a: a.std(0, correction=2, keepdim=True), [(4, 3)], None, True),
    ("var_mean", lambda a: ptl.var_mean(a), [(2, 3)], None, True),
    ("var_mean_dim", lambda a: ptl.var_mean(a, 1, keepdim=True), [(2, 3)], None, True),
    ("var_mean_correction", lambda a: ptl.var_mean(a, 0, correction=0), [(2, 3)], None, True),
    ("std_mean", lambda a: ptl.std_mean(a), [(2, 3)], None, True),
    ("std_mean_dim", lambda a: ptl.std_mean(a, 1)[1], [(2, 3)], None, True),
    ("std_mean_correction", lambda a: ptl.std_mean(a, None, correction=0), [(2, 3)], None, True),
    ("norm", lambda a: a.norm(), [(2, 3)], None, True),
    ("norm_p1", lambda a: aten.norm.Scalar(a, 1), [(2, 3)], None, True),
    ("norm_p3", lambda a: aten.norm.Scalar(a, 3), [(2, 3)], None, True),
    ("norm_p05", lambda a: aten.norm.Scalar(a, 0.5), [(2, 3)], POS, True),
    ("norm_inf", lambda a: aten.norm.Scalar(a, float("inf")), [(2, 3)], None, True),
    ("norm_dim", lambda a: a.norm(2, 1), [(2, 3)], None, True),
    ("norm_dim_p3", lambda a: a.norm(3, (0,), keepdim=True), [(2, 3)], None, True),
    ("norm_dim_ninf", lambda a: a.norm(float("-inf"), 1), [(2, 3)], None, True),
    ("logsumexp", lambda a: a.logsumexp(1), [(2, 3)], None, True),
    # 20 columns: the column kernels (Note [Softmax columns])
    ("logsumexp_dim0", lambda a: a.logsumexp(0), [(3, 20)], None, True),
    ("logsumexp_keepdim", lambda a: a.t().logsumexp((0, 1), keepdim=True), [(2, 3)], None, True),
    ("cumsum", lambda a: a.t().cumsum(1), [(2, 3)], None, True),
    ("cumprod", lambda a: a.cumprod(-1), [(2, 3)], None, True),
    ("nansum", lambda a: a.nansum(), [(2, 3)], None, True),
    ("nansum_dim", lambda a: a.nansum(1, keepdim=True), [(2, 3)], None, True),
    # views and shape
    ("view_as", lambda a, b: a.view_as(b.detach()), [(2, 3), (3, 2)], None, True),
    ("reshape_as", lambda a, b: a.t().reshape_as(b.detach()), [(2, 3), (6,)], None, True),
    ("expand_as", lambda a, b: a.expand_as(b.detach()), [(3, 1), (2, 3, 4)], None, True),
    ("broadcast_to", lambda a: a.broadcast_to((2, 3)), [(3,)], None, True),
    ("as_strided", lambda a: a.as_strided((2, 2), (1, 3), 1), [(3, 4)], None, False),
    ("as_strided_overlap", lambda a: a.as_strided((3, 3), (1, 1)), [(5,)], None, False),
    ("as_strided_of_view", lambda a: a.t()[1:].as_strided((2, 2), (3, 1), 1), [(3, 3)], None, False),
    ("as_strided_expanded_input", lambda a: a.expand(3, 2).as_strided((2,), (1,)), [(2,)], None, False),
    ("swapaxes", lambda a: a.swapaxes(0, 2), [(2, 3, 2)], None, True),
    ("swapdims", lambda a: a.swapdims(1, -1), [(2, 3, 2)], None, True),
    ("movedim", lambda a: a.movedim(0, -1), [(2, 3, 2)], None, True),
    ("movedim_intlist", lambda a: a.movedim((0, 1), (2, 0)), [(2, 3, 2)], None, True),
    ("moveaxis", lambda a: a.moveaxis(2, 0), [(2, 3, 2)], None, True),
    ("squeeze", lambda a: a.squeeze(), [(2, 1, 3)], None, True),
    ("squeeze_dim", lambda a: a.squeeze(1), [(2, 1, 3)], None, True),
    ("squeeze_dims", lambda a: a.squeeze((0, 1)), [(1, 1, 3)], None, True),
    ("flatten", lambda a: a.t().flatten(), [(2, 3)], None, True),
    ("unflatten", lambda a: a.unflatten(1, (2, 2)), [(3, 4)], None, True),
    ("narrow", lambda a: a.narrow(1, 1, 2), [(2, 4)], None, True),
    ("unbind", lambda a: a.unbind(1), [(2, 3)], None, True),
    ("unbind_some", lambda a: a.unbind(0)[1], [(3, 2)], None, True),
    ("split", lambda a: a.split(2, 1), [(2, 5)], None, True),
    ("split_some", lambda a: a.split(2, 1)[2], [(2, 5)], None, True),
    ("split_sizes", lambda a: a.split([1, 3], 1), [(2, 4)], None, True),
    ("split_with_sizes", lambda a: a.split_with_sizes([2, 1], 0)[0], [(3, 2)], None, True),
    ("chunk", lambda a: a.chunk(2, 1), [(2, 5)], None, True),
    ("cat", lambda a, b: ptl.cat([a, b.t()], 1), [(2, 3), (1, 2)], None, True),
    ("cat_legacy_empty", lambda a, b: ptl.cat([a, b], 0), [(2, 3), (0,)], None, True),
    ("concat", lambda a, b: ptl.concat([a, b], -2), [(2, 3), (1, 3)], None, True),
    ("stack", lambda a, b: ptl.stack([a, b], 1), [(2, 3), (2, 3)], None, True),
    ("hstack", lambda a, b: ptl.hstack([a, b]), [(2, 3), (2, 1)], None, True),
    ("hstack_1d", lambda a, b: ptl.hstack([a, b]), [(3,), ()], None, True),
    ("vstack", lambda a, b: ptl.vstack([a, b]), [(3,), (2, 3)], None, True),
    # linear algebra
    ("bmm", lambda a, b: a.bmm(b.transpose(1, 2)), [(2, 2, 3), (2, 4, 3)], None, True),
    ("matmul_1d_1d", lambda a, b: a.matmul(b), [(3,), (3,)], None, True),
    ("matmul_2d_1d", lambda a, b: a.matmul(b), [(2, 3), (3,)], None, True),
    ("matmul_1d_3d", lambda a, b: a.matmul(b), [(3,), (2, 3, 2)], None, True),
    ("matmul_3d_1d", lambda a, b: a.t().matmul(b) if a.dim() == 2 else a.matmul(b), [(2, 2, 3), (3,)], None, True),
    ("matmul_2d_2d", lambda a, b: a.matmul(b.t()), [(2, 3), (4, 3)], None, True),
    ("matmul_bcast", lambda a, b: a.matmul(b), [(2, 1, 2, 3), (3, 3, 2)], None, True),
    ("matmul_2d_3d", lambda a, b: a.matmul(b), [(2, 3), (2, 3, 2)], None, True),
    ("dot", lambda a, b: a.dot(b), [(3,), (3,)], None, True),
    ("vdot", lambda a, b: a.vdot(b), [(3,), (3,)], None, True),
    ("vdot_sliced", lambda a, b: a[::2].vdot(b), [(5,), (3,)], None, False),
    ("log2_sliced", lambda a: a[:, ::2].log2(), [(2, 5)], POS, False),
    ("mv", lambda a, b: a.t().mv(b), [(3, 2), (3,)], None, True),
    ("outer", lambda a, b: a.outer(b), [(2,), (3,)], None, True),
    ("addmm", lambda s, a, b: s.addmm(a, b, beta=0.5, alpha=2), [(3,), (2, 4), (4, 3)], None, True),
    ("addmv", lambda s, a, b: s.addmv(a.t(), b, alpha=-1), [(1,), (3, 2), (3,)], None, True),
    ("baddbmm", lambda s, a, b: s.baddbmm(a, b, beta=2), [(2, 1), (2, 2, 3), (2, 3, 1)], None, True),
]


def _inputs(shapes, rng_range):
    low, high = rng_range or (-2.0, 2.0)
    return [leaf(s, seed=i, low=low, high=high) for i, s in enumerate(shapes)]


@pytest.mark.parametrize("name, fn, shapes, rng_range, gg", FORMULAS, ids=[f[0] for f in FORMULAS])
def test_gradcheck(name, fn, shapes, rng_range, gg):
    assert gradcheck(fn, _inputs(shapes, rng_range))


GG = [f for f in FORMULAS if f[4]]


@pytest.mark.parametrize("name, fn, shapes, rng_range, gg", GG, ids=[f[0] for f in GG])
def test_gradgradcheck(name, fn, shapes, rng_range, gg):
    assert gradgradcheck(fn, _inputs(shapes, rng_range))


# ---- the same gradients as torch, on inputs with ties, zeros and bounds hit exactly ----

TIES = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, -1.0]])
ZEROS = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0], [1.5, -2.0, 0.5]])
COMPARE = [
    ("max_ties", lambda m, a: a.max(), [TIES]),
    ("min_ties", lambda m, a: a.min(), [TIES]),
    ("amax_ties", lambda m, a: a.amax(1), [TIES]),
    ("amin_ties", lambda m, a: a.amin(0), [TIES]),
    ("max_dim_ties", lambda m, a: a.max(1)[0], [TIES]),
    ("min_dim_ties", lambda m, a: a.min(0, keepdim=True)[0], [TIES]),
    ("aminmax_ties", lambda m, a: m.aminmax(a, dim=1)[1] * 2 + m.aminmax(a, dim=1)[0], [TIES]),
    ("maximum_ties", lambda m, a, b: m.maximum(a, b), [TIES, TIES[::-1].copy()]),
    ("minimum_ties", lambda m, a, b: m.minimum(a, b), [TIES, TIES[:, ::-1].copy()]),
    ("fmax_ties", lambda m, a, b: m.fmax(a, b), [TIES, TIES[::-1].copy()]),
    ("fmin_nan", lambda m, a, b: m.fmin(a, b), [TIES, np.array([np.nan, 1.0, 3.0])]),
    ("prod_one_zero", lambda m, a: a[0].prod(), [ZEROS]),
    ("prod_two_zeros", lambda m, a: a[1].prod(), [ZEROS]),
    ("prod_dim_zeros", lambda m, a: a.prod(1), [ZEROS]),
    ("prod_dim0_zeros", lambda m, a: a.prod(0, keepdim=True), [ZEROS]),
    ("cumprod_zeros", lambda m, a: a.cumprod(1), [ZEROS]),
    ("cumprod_zeros_dim0", lambda m, a: a.cumprod(0), [ZEROS]),
    ("norm_zero", lambda m, a: a.norm(), [np.zeros((2, 2))]),
    ("norm_dim_zero_row", lambda m, a: a.norm(2, 1), [np.array([[0.0, 0.0], [3.0, 4.0]])]),
    ("norm_p1_zero", lambda m, a: m.ops.aten.norm.Scalar(a, 1), [ZEROS]),
    ("norm_p05_zero", lambda m, a: m.ops.aten.norm.Scalar(a, 0.5), [ZEROS]),
    ("norm_p0", lambda m, a: m.ops.aten.norm.Scalar(a, 0) * 1 + a.sum(), [ZEROS]),
    ("norm_inf_ties", lambda m, a: m.ops.aten.norm.Scalar(a, float("inf")), [TIES]),
    ("clamp_at_bounds", lambda m, a: a.clamp(2.0, 3.0), [TIES]),
    ("clamp_min_at_bound", lambda m, a: a.clamp_min(2.0), [TIES]),
    ("clamp_max_at_bound", lambda m, a: a.clamp_max(2.0), [TIES]),
    ("clamp_tensor_ties", lambda m, a, lo, hi: a.clamp(lo, hi),
     [TIES, np.array([1.0, 2.0, 3.0]), np.array([[3.0], [1.5]])]),
    ("std_constant", lambda m, a: a.std(1), [np.ones((2, 3))]),
    ("nansum_nan", lambda m, a: a.nansum(0), [np.array([[np.nan, 1.0], [2.0, 3.0]])]),
    ("nan_to_num_inf", lambda m, a: a.nan_to_num(), [np.array([np.inf, -np.inf, np.nan, 1.0])]),
    ("floor_zero", lambda m, a: a.floor() + a.sign() + a.round(), [TIES]),
    ("remainder", lambda m, a, b: a.remainder(b), [TIES * 1.7, np.array([0.9, -1.3, 2.0])]),
    ("fmod", lambda m, a, b: m.fmod(a, b), [TIES * -1.7, np.array([0.9, -1.3, 2.0])]),
    ("matmul_bcast", lambda m, a, b: a.matmul(b), [np.ones((2, 1, 2, 3)) * 0.5, ZEROS + 1]),
    ("cat_split", lambda m, a, b: m.cat(m.cat([a, b]).split([1, 4])[1:], 0), [TIES, ZEROS]),
    ("as_strided_overlap", lambda m, a: a.as_strided((3, 3), (1, 1), 1), [ZEROS.ravel()]),
    ("as_strided_expanded", lambda m, a: a.expand(3, 3).as_strided((2, 2), (1, 1)), [ZEROS[0]]),
    ("as_strided_past_view", lambda m, a: a.t()[1:].as_strided((2, 3), (2, 1), 2), [ZEROS]),
    ("as_strided_view", lambda m, a: a.t()[1:].as_strided((2, 2), (3, 1), 2), [ZEROS]),
    ("unbind_partial", lambda m, a: a.unbind(1)[2] * 3, [ZEROS]),
]


def _grads(mod, fn, arrays):
    ins = [mod.tensor(a, dtype=mod.float64, requires_grad=True) for a in arrays]
    out = fn(mod, *ins)
    w = mod.tensor(np.arange(1, 1 + int(np.prod(out.shape))).reshape(tuple(out.shape)) * 0.5,
                   dtype=mod.float64)
    (out * w).sum().backward()
    return {f"grad of input {k}": np.array(x.grad.tolist()) for k, x in enumerate(ins)}


@pytest.mark.parametrize("name, fn, arrays", COMPARE, ids=[c_[0] for c_ in COMPARE])
def test_same_gradients_as_torch(name, fn, arrays):
    golden.assert_same_results(lambda m: _grads(m, fn, arrays), rtol=1e-12, atol=1e-12)


NODE_NAMES = [
    (lambda m, a: a.exp2(), "Exp2Backward0"), (lambda m, a: a.log1p(), "Log1PBackward0"),
    (lambda m, a: a.floor(), "FloorBackward0"), (lambda m, a: a.round(decimals=1), "RoundBackward1"),
    (lambda m, a: a.remainder(a), "RemainderBackward1"), (lambda m, a: a.max(a), "MaximumBackward0"),
    (lambda m, a: a.lerp(a, 0.5), "LerpBackward0"), (lambda m, a: a.lerp(a, a), "LerpBackward1"),
    (lambda m, a: m.where(a > 0, a, a), "WhereBackward0"), (lambda m, a: a.clamp(0, 1), "ClampBackward1"),
    (lambda m, a: a.clamp(a, a), "ClampBackward0"), (lambda m, a: a.clip(0, 1), "ClampBackward1"),
    (lambda m, a: a.clamp_min(0), "ClampMinBackward0"), (lambda m, a: a.prod(), "ProdBackward0"),
    (lambda m, a: a.prod(1), "ProdBackward1"), (lambda m, a: a.max(), "MaxBackward1"),
    (lambda m, a: a.max(1)[0], "MaxBackward0"), (lambda m, a: a.var(1), "VarBackward0"),
    (lambda m, a: m.std_mean(a)[1], "StdMeanBackward0"), (lambda m, a: m.aminmax(a)[0], "AminmaxBackward0"),
    (lambda m, a: m.ops.aten.norm.Scalar(a, 1), "NormBackward0"), (lambda m, a: a.cumprod(0), "CumprodBackward0"),
    (lambda m, a: a.swapaxes(0, 1), "TransposeBackward0"), (lambda m, a: a.movedim(0, 1), "PermuteBackward0"),
    (lambda m, a: a.unsqueeze(1).squeeze(1), "SqueezeBackward1"), (lambda m, a: a.narrow(1, 0, 1), "SliceBackward0"),
    (lambda m, a: a.unbind(0)[0], "UnbindBackward0"), (lambda m, a: a.split(1)[0], "SplitBackward0"),
    (lambda m, a: a.split([1, 1])[0], "SplitWithSizesBackward0"), (lambda m, a: m.cat([a, a]), "CatBackward0"),
    (lambda m, a: m.stack([a, a]), "StackBackward0"), (lambda m, a: m.vstack([a, a]), "CatBackward0"),
    (lambda m, a: a.mm(a).unsqueeze(0).bmm(a.unsqueeze(0)), "BmmBackward0"),
    (lambda m, a: a.mv(a[0]), "MvBackward0"), (lambda m, a: a[0].dot(a[1]), "DotBackward0"),
    (lambda m, a: a.addmm(a, a), "AddmmBackward0"), (lambda m, a: a.floor_divide(a), "NotImplemented"),
]


@pytest.mark.parametrize("fn, name", NODE_NAMES, ids=[n_[1] for n_ in NODE_NAMES])
def test_node_names_match_torch(fn, name):
    arr = np.array([[0.5, -1.0], [2.0, 1.5]])

    def node(mod):
        return type(fn(mod, mod.tensor(arr, dtype=mod.float64, requires_grad=True)).grad_fn)
    assert node(ptl).__name__ == name
    golden.assert_equal(name, lambda: node(torch).__name__)


def test_floor_divide_refuses_backward():
    a = leaf((3,))
    y = a.floor_divide(a.detach() + 3)
    with pytest.raises(RuntimeError, match=re.escape("derivative for aten::floor_divide is not implemented")):
        y.sum().backward()
    b = c(a)
    b.floor_divide_(2)
    with pytest.raises(RuntimeError, match=re.escape("derivative for aten::floor_divide is not implemented")):
        b.sum().backward()


def test_out_variants_refuse_grad():
    a = leaf((3,))
    with pytest.raises(RuntimeError, match=re.escape(
            "floor(): functions with out=... arguments don't support automatic differentiation, "
            "but one of the arguments requires grad.")):
        ptl.floor(a, out=ptl.empty(3, dtype=ptl.float64))


def test_multi_output_only_one_used():
    a = leaf((2, 3))
    v, m = ptl.var_mean(a, 1)
    (m * 2).sum().backward()
    np.testing.assert_allclose(np.array(a.grad.tolist()), np.full((2, 3), 2 / 3))
    b = leaf((2, 5))
    b.chunk(3, 1)[1].sum().backward()
    assert b.grad.tolist() == [[0, 0, 1, 1, 0]] * 2


def test_as_strided_overlapping_double_backward():
    a = leaf((5,))
    y = a.as_strided((3, 3), (1, 1))
    (g,) = ptl.autograd.grad(y.sum(), a, create_graph=False)
    count = np.array([1.0, 2.0, 3.0, 2.0, 1.0])   # how often each element appears in y
    assert g.tolist() == count.tolist()
    y = a.as_strided((3, 3), (1, 1))
    (g,) = ptl.autograd.grad((y * y).sum(), a, create_graph=True)   # 2 * count * a
    np.testing.assert_allclose(g.tolist(), 2 * count * np.array(a.tolist()), rtol=1e-12)
    (gg,) = ptl.autograd.grad(g.sum(), a)
    np.testing.assert_allclose(gg.tolist(), 2 * count, rtol=1e-12)


def _run_all(create_graph):
    for name, fn, shapes, rng_range, gg in FORMULAS:
        ins = _inputs(shapes, rng_range)
        out = fn(*ins)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        total = sum((o * o).sum() for o in outs)
        grads = ptl.autograd.grad(total, ins, create_graph=create_graph and gg, allow_unused=True)
        second = sum(g.sum() for g in grads if g is not None)
        if create_graph and gg and second.requires_grad:
            second.backward()
    if not create_graph:
        for name, fn, arrays in COMPARE:
            _grads(ptl, fn, arrays)
    a = leaf((3,))
    try:
        a.floor_divide(a.detach() + 3).sum().backward()
    except RuntimeError:
        pass


@pytest.mark.parametrize("create_graph", [False, True])
def test_formulas_do_not_leak(create_graph):
    import gc

    from pytorchlite import _C
    _run_all(create_graph)   # warm up caches
    gc.collect()
    before = _C._live_counts()
    _run_all(create_graph)
    gc.collect()
    assert _C._live_counts() == before


def test_unbind_and_cat_with_many_pieces():
    a = leaf((300, 2))
    parts = a.unbind(0)
    (parts[0] + parts[299] * 2).sum().backward()
    assert a.grad.tolist() == [[float(i == 0) + 2 * (i == 299)] * 2 for i in range(300)]
    b = leaf((2, 200))
    (b.split(1, 1)[7] * 3).sum().backward()
    assert b.grad.tolist() == [[3.0 * (i == 7) for i in range(200)]] * 2


# ---- div with a rounding mode (DivBackward2) ----

def f64(a, requires_grad=True):
    return ptl.tensor(np.asarray(a, dtype=np.float64), dtype=ptl.float64,
                      requires_grad=requires_grad)


def div_inputs(layout):
    rng = np.random.default_rng(3)
    a = rng.uniform(-3, 3, size=(3, 4))
    b = rng.uniform(0.5, 2, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    if layout == "contiguous":
        return f64(a), f64(b)
    if layout == "transposed":
        return f64(a.T.copy()).t(), f64(b.T.copy()).t()
    if layout == "sliced":
        return f64(np.repeat(a, 2, axis=1))[:, ::2], f64(b)
    return f64(a), f64(b[0])   # broadcast: other is (4,)


# the op and its in-place form, each with its gradient-check function
DIV_ROWS = {
    "div_Tensor_mode": lambda a, b, mode: ptl.div(a, b, rounding_mode=mode),
    "div__Tensor_mode": lambda a, b, mode: (a * 1).div_(b, rounding_mode=mode),
}


@pytest.mark.parametrize("row", sorted(DIV_ROWS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "broadcast"])
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_mode_gradcheck(row, layout, mode):
    a, b = div_inputs(layout)
    fn = DIV_ROWS[row]
    assert ptl.autograd.gradcheck(lambda x, y: fn(x, y, mode), (a, b))
    assert ptl.autograd.gradgradcheck(lambda x, y: fn(x, y, mode), (a, b))


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_mode_grads_match_torch(mode):
    # ties: equal quotients, exact integers, and a negative zero-crossing
    a = np.array([[3.0, -3.0, 6.0], [4.5, -4.5, 0.0]])
    b = np.array([1.5, 1.5, -2.0])

    def run(lib):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = lib.div(x, y, rounding_mode=mode)
        (out * lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64)).sum().backward()
        return {"node": type(out.grad_fn).__name__, "x.grad": x.grad, "y.grad": y.grad}
    assert run(ptl)["node"] == "DivBackward2"
    golden.assert_same_results(run, rtol=1e-12, atol=0)
