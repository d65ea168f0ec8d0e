"""The complex coverage net: every public callable pytorchlite shares with PyTorch, called
with complex64 arguments in both (tests/aten/complex_coverage.py), must behave as PyTorch's
(compute where it computes, refuse with the same exception type where it refuses) unless
EXPECTED_GAPS lists it.  An op made to work must leave the list: a stale entry fails too.
`python tests/aten/complex_coverage.py FILE` writes the sweep's full report."""
import pytest

from helpers import torch_ref

# Why each callable still differs, by the area that owns it (the kernels' homes: complex
# pointwise math, complex shape/index/scan/reduction ops, complex norms/std/var/linalg, and the
# rest: nn.functional, random, sparse, creation and conversions), then the two calls refuse
# with different exception types, then pytorchlite computes what PyTorch refuses.
REASONS = {
    "cplxpoint": "no complex kernel for this pointwise op yet",
    "cplxshape": "no complex kernel for this shape, index, scan or reduction op yet",
    "cplxlinalg": "no complex kernel for this norm, variance or linear-algebra op yet",
    "cplxsweep": "no complex kernel for this nn.functional, random, sparse or creation op yet",
    "type": "both refuse complex, with another exception type than PyTorch's",
    "extra": "pytorchlite computes what PyTorch refuses: repeat_interleave() without repeats "
             "(the real dtypes too), and convolution and its backward, which take complex "
             "tensors themselves (Note [Complex ops by parts] in native/complex_parts.c) where "
             "PyTorch's take them only through conv1d/conv2d/conv3d/conv_transpose*",
}

GAPS_BY_AREA = {
    'cplxpoint': """
        Tensor.acos Tensor.acos_ Tensor.acosh Tensor.acosh_ Tensor.arccos Tensor.arccos_
        Tensor.arccosh Tensor.arccosh_ Tensor.arcsin Tensor.arcsin_ Tensor.arcsinh Tensor.arcsinh_
        Tensor.arctan Tensor.arctan_ Tensor.arctanh Tensor.arctanh_ Tensor.asin Tensor.asin_
        Tensor.asinh Tensor.asinh_ Tensor.atan Tensor.atan_ Tensor.atanh Tensor.atanh_ Tensor.cos
        Tensor.cos_ Tensor.cosh Tensor.cosh_ Tensor.eq_ Tensor.exp2 Tensor.exp2_ Tensor.expm1
        Tensor.expm1_ Tensor.log10 Tensor.log10_ Tensor.log1p Tensor.log1p_ Tensor.log2
        Tensor.log2_ Tensor.logaddexp Tensor.logical_and Tensor.logical_and_ Tensor.logical_not
        Tensor.logical_not_ Tensor.logical_or Tensor.logical_or_ Tensor.logical_xor
        Tensor.logical_xor_ Tensor.nan_to_num Tensor.nan_to_num_ Tensor.ne_ Tensor.not_equal_
        Tensor.rsqrt Tensor.rsqrt_ Tensor.sgn_ Tensor.sigmoid Tensor.sigmoid_ Tensor.sin
        Tensor.sin_ Tensor.sinc Tensor.sinc_ Tensor.sinh Tensor.sinh_ Tensor.square Tensor.square_
        Tensor.tan Tensor.tan_ Tensor.tanh Tensor.tanh_ aten::acos aten::acos_ aten::acosh
        aten::acosh_ aten::asin aten::asin_ aten::asinh aten::asinh_ aten::atan aten::atan_
        aten::atanh aten::atanh_ aten::cos aten::cos_ aten::cosh aten::cosh_ aten::div.Tensor_mode
        aten::div_.Tensor_mode aten::eq_.Tensor aten::exp2 aten::exp2_ aten::expm1 aten::expm1_
        aten::log10 aten::log10_ aten::log1p aten::log1p_ aten::log2 aten::log2_ aten::logical_and
        aten::logical_and_ aten::logical_not aten::logical_not_ aten::logical_or aten::logical_or_
        aten::logical_xor aten::logical_xor_ aten::nan_to_num aten::nan_to_num_ aten::ne_.Tensor
        aten::rsqrt aten::rsqrt_ aten::sigmoid aten::sigmoid_ aten::silu aten::silu_
        aten::silu_backward aten::sin aten::sin_ aten::sinh aten::sinh_ aten::square aten::square_
        aten::tan aten::tan_ aten::tanh aten::tanh_ torch.acos torch.acos_ torch.acosh
        torch.acosh_ torch.arccos torch.arccos_ torch.arccosh torch.arccosh_ torch.arcsin
        torch.arcsin_ torch.arcsinh torch.arcsinh_ torch.arctan torch.arctan_ torch.arctanh
        torch.arctanh_ torch.asin torch.asin_ torch.asinh torch.asinh_ torch.atan torch.atan_
        torch.atanh torch.atanh_ torch.cos torch.cos_ torch.cosh torch.cosh_ torch.exp2
        torch.exp2_ torch.expm1 torch.expm1_ torch.log10 torch.log10_ torch.log1p torch.log1p_
        torch.log2 torch.log2_ torch.logaddexp torch.logical_and torch.logical_not
        torch.logical_or torch.logical_xor torch.nan_to_num torch.nan_to_num_
        torch.nn.functional.sigmoid torch.nn.functional.silu torch.nn.functional.soft_margin_loss
        torch.nn.functional.tanh torch.nn.functional.tanhshrink torch.rsqrt torch.rsqrt_
        torch.sigmoid torch.sigmoid_ torch.sin torch.sin_ torch.sinc torch.sinc_ torch.sinh
        torch.sinh_ torch.special.exp2 torch.special.expit torch.special.expm1 torch.special.log1p
        torch.special.sinc torch.square torch.square_ torch.tan torch.tan_ torch.tanh torch.tanh_
    """,
    'cplxshape': """
        Tensor.all Tensor.any Tensor.argwhere Tensor.broadcast_to Tensor.chunk Tensor.corrcoef
        Tensor.count_nonzero Tensor.cumprod Tensor.cumprod_ Tensor.cumsum Tensor.cumsum_
        Tensor.logcumsumexp Tensor.logsumexp Tensor.moveaxis Tensor.movedim Tensor.nonzero
        Tensor.prod Tensor.repeat Tensor.roll Tensor.rot90 Tensor.split Tensor.split_with_sizes
        Tensor.swapaxes Tensor.swapdims Tensor.tile Tensor.trace Tensor.unflatten Tensor.unfold
        Tensor.unsafe_chunk Tensor.unsafe_split aten::_pad_circular aten::all aten::all.dim
        aten::all.dims aten::any aten::any.dim aten::any.dims aten::argwhere aten::broadcast_to
        aten::chunk aten::concat aten::constant_pad_nd aten::count_nonzero
        aten::count_nonzero.dim_IntList aten::cumprod aten::cumsum aten::hstack aten::logcumsumexp
        aten::logsumexp aten::moveaxis.int aten::movedim.int aten::movedim.intlist aten::nonzero
        aten::prod aten::prod.dim_int aten::reflection_pad1d aten::reflection_pad1d_backward
        aten::reflection_pad2d aten::reflection_pad2d_backward aten::reflection_pad3d
        aten::reflection_pad3d_backward aten::repeat aten::replication_pad1d
        aten::replication_pad1d_backward aten::replication_pad2d aten::replication_pad2d_backward
        aten::replication_pad3d aten::replication_pad3d_backward aten::roll aten::rot90
        aten::split.Tensor aten::split.sizes aten::split_with_sizes aten::squeeze.dims
        aten::swapaxes aten::swapdims aten::tile aten::trace aten::unflatten.int aten::unfold
        aten::unfold_backward aten::vstack aten::where torch.all torch.any torch.argwhere
        torch.broadcast_to torch.chunk torch.concat torch.constant_pad_nd torch.corrcoef
        torch.count_nonzero torch.cumprod torch.cumsum torch.cumulative_trapezoid
        torch.fft.fftshift torch.fft.ifftshift torch.hstack torch.linalg.vander torch.logcumsumexp
        torch.logsumexp torch.moveaxis torch.movedim torch.nonzero torch.prod torch.roll
        torch.rot90 torch.special.logsumexp torch.split torch.split_copy torch.split_with_sizes
        torch.swapaxes torch.swapdims torch.tile torch.trace torch.unflatten torch.unsafe_chunk
        torch.unsafe_split torch.vstack torch.where
    """,
    'cplxlinalg': """
        Tensor.cross Tensor.dist Tensor.logdet Tensor.norm Tensor.renorm Tensor.renorm_ Tensor.std
        Tensor.var aten::_pdist_forward aten::cross aten::linalg_cross aten::linalg_vector_norm
        aten::norm.Scalar aten::norm.ScalarOpt_dim aten::renorm aten::renorm_ aten::std
        aten::std.correction aten::std.dim aten::std_mean aten::std_mean.correction
        aten::std_mean.dim aten::var aten::var.correction aten::var.dim aten::var_mean
        aten::var_mean.correction aten::var_mean.dim torch.cross torch.dist torch.frobenius_norm
        torch.linalg.cross torch.linalg.lstsq torch.linalg.matrix_norm torch.linalg.norm
        torch.linalg.vecdot torch.linalg.vector_norm torch.logdet torch.nn.functional.normalize
        torch.nn.functional.triplet_margin_loss
        torch.nn.functional.triplet_margin_with_distance_loss torch.norm torch.nuclear_norm
        torch.renorm torch.std torch.std_mean torch.triplet_margin_loss torch.var torch.var_mean
    """,
    'cplxsweep': """
        Tensor.to_dense aten::embedding_renorm_
        aten::sparse_coo_tensor.indices aten::to_dense aten::to_sparse aten::to_sparse.sparse_dim
        torch.adaptive_avg_pool1d torch.embedding_renorm_
        torch.nn.functional.adaptive_avg_pool1d
        torch.nn.functional.adaptive_avg_pool2d torch.nn.functional.dropout3d
        torch.sparse_coo_tensor
    """,
    'type': """
        aten::_cdist_forward aten::_pin_memory aten::_scaled_dot_product_flash_attention_for_cpu
        aten::log_sigmoid_backward aten::nansum aten::native_group_norm
    """,
    'extra': """
        Tensor.repeat_interleave aten::convolution aten::convolution_backward torch.convolution
    """,
}

EXPECTED_GAPS = {name: (area, REASONS[area]) for area, names in GAPS_BY_AREA.items()
                 for name in names.split()}


@pytest.fixture(scope="module")
def sweep():
    import complex_coverage
    found, _ = complex_coverage.sweep()
    return found


def _kind(area):
    return area if area in ("type", "extra") else "gap"


@torch_ref
def test_every_difference_is_listed(sweep):
    unlisted = {n: v for n, v in sweep.items() if n not in EXPECTED_GAPS}
    assert not unlisted, "complex64 calls that differ from torch's:\n" + "\n".join(
        f"{kind} {n} {sample}: ours={ours} torch={theirs}"
        for n, (kind, sample, ours, theirs) in sorted(unlisted.items()))


@torch_ref
def test_no_stale_entry(sweep):
    stale = sorted(n for n, (area, _) in EXPECTED_GAPS.items()
                   if n not in sweep or sweep[n][0] != _kind(area))
    assert not stale, "EXPECTED_GAPS entries that no longer differ (remove them): " + \
        " ".join(stale)


# The complex128 gradients (vector-Jacobian products with the same random complex
# grad_outputs in both) of the ops whose forward runs in both libraries: where they still
# differ from PyTorch's, and why.
EXPECTED_GRAD_GAPS = {
    "aten::linalg_cholesky": ("grad-value", "cplxlinalg: the gradient is projected on "
                              "Hermitian matrices (real diagonal); PyTorch's is not"),
    "aten::linalg_cholesky_ex": ("grad-value", "cplxlinalg: as linalg_cholesky"),
    "aten::pow.Scalar": ("grad-gap", "cplxpoint: a zero base's exponent gradient masks with "
                         "exponent >= 0, which complex refuses (PyTorch: imag == 0 and "
                         "real >= 0)"),
}


@torch_ref
def test_complex_gradients_match_torch():
    import complex_coverage
    found = complex_coverage.sweep_grads()
    unlisted = {n: v for n, v in found.items() if n not in EXPECTED_GRAD_GAPS}
    stale = sorted(n for n, (kind, _) in EXPECTED_GRAD_GAPS.items()
                   if n not in found or found[n][0] != kind)
    assert not unlisted, "complex gradients that differ from torch's:\n" + "\n".join(
        f"{kind} {n} {sample}: {detail}" for n, (kind, sample, detail) in sorted(unlisted.items()))
    assert not stale, "EXPECTED_GRAD_GAPS entries that no longer differ: " + " ".join(stale)
