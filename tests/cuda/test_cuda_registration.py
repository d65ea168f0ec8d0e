"""The CUDA dispatch key's kernels (src/cuda/register_cuda.c), checked on the host: which ops
have one, what CUDA availability says with and without a device, and the errors of a CUDA
tensor where no device is visible.  Runs everywhere; the kernels themselves run in
test_cuda_kernels.py on a GPU."""
import pytest

import pytorchlite as ptl
from pytorchlite import _C

BUILT = bool(_C._config()["cuda_built"])
CUDA_OPS = [
    "aten::copy_", "aten::_to_copy", "aten::fill_.Scalar", "aten::fill_.Tensor", "aten::zero_",
    "aten::contiguous", "aten::add.Tensor", "aten::add_.Tensor", "aten::add.out",
    "aten::sub.Tensor", "aten::sub_.Tensor", "aten::sub.out", "aten::mul.Tensor",
    "aten::mul_.Tensor", "aten::mul.out", "aten::div.Tensor", "aten::div_.Tensor",
    "aten::div.out", "aten::neg", "aten::neg_", "aten::neg.out", "aten::relu", "aten::relu_",
    "aten::relu.out", "aten::sigmoid", "aten::sigmoid_", "aten::sigmoid.out", "aten::tanh",
    "aten::tanh_", "aten::tanh.out", "aten::exp", "aten::exp_", "aten::exp.out", "aten::log",
    "aten::log_", "aten::log.out", "aten::_gelu", "aten::gelu_backward",
    "aten::threshold_backward",
    "aten::acosh", "aten::acosh_", "aten::acosh.out", "aten::asinh", "aten::atanh",
    "aten::erfc", "aten::erfc_", "aten::i0", "aten::i0.out", "aten::special_i0e",
    "aten::special_i1", "aten::special_i1e.out", "aten::hypot", "aten::hypot_",
    "aten::hypot.out", "aten::igamma", "aten::igammac", "aten::igammac_",
    "aten::_ptl_igamma_density",
    "aten::silu", "aten::silu_", "aten::silu_backward", "aten::mish", "aten::mish_backward",
    "aten::elu", "aten::elu_", "aten::elu_backward", "aten::softplus",
    "aten::softplus_backward", "aten::log_sigmoid_forward", "aten::log_sigmoid_forward.output",
    "aten::log_sigmoid_backward",
    "aten::hardswish", "aten::hardswish_", "aten::hardswish_backward", "aten::hardsigmoid",
    "aten::hardsigmoid_", "aten::hardsigmoid_backward", "aten::leaky_relu",
    "aten::leaky_relu_", "aten::leaky_relu_backward", "aten::hardtanh", "aten::hardtanh_",
    "aten::hardtanh_backward", "aten::softshrink", "aten::softshrink_backward",
    "aten::hardshrink", "aten::hardshrink_backward", "aten::celu", "aten::celu_",
    "aten::rsub.Tensor", "aten::abs", "aten::abs_", "aten::abs.out", "aten::sign",
    "aten::sign_", "aten::sign.out", "aten::sqrt", "aten::sqrt_", "aten::sqrt.out",
    "aten::reciprocal", "aten::reciprocal_", "aten::reciprocal.out", "aten::clamp",
    "aten::clamp_", "aten::clamp.out", "aten::clip", "aten::clip_", "aten::clip.out",
    "aten::clamp_min", "aten::clamp_max", "aten::pow.Tensor_Scalar", "aten::pow_.Scalar",
    "aten::pow.Tensor_Scalar_out", "aten::mse_loss", "aten::mse_loss_backward",
    "aten::smooth_l1_loss", "aten::smooth_l1_loss_backward", "aten::huber_loss",
    "aten::huber_loss_backward",
    "aten::sum", "aten::sum.dim_IntList", "aten::nansum", "aten::mean", "aten::mean.dim",
    "aten::prod", "aten::prod.dim_int", "aten::amax", "aten::amin", "aten::max", "aten::min",
    "aten::max.dim", "aten::min.dim", "aten::argmax", "aten::argmin", "aten::var",
    "aten::var.dim", "aten::var.correction", "aten::std", "aten::std.dim",
    "aten::std.correction", "aten::var_mean", "aten::var_mean.dim",
    "aten::var_mean.correction", "aten::std_mean", "aten::std_mean.dim",
    "aten::std_mean.correction", "aten::norm.Scalar", "aten::norm.ScalarOpt_dim",
    "aten::_softmax", "aten::_log_softmax", "aten::_softmax_backward_data",
    "aten::_log_softmax_backward_data",
    "aten::native_layer_norm", "aten::native_layer_norm_backward", "aten::nll_loss_nd",
    "aten::nll_loss_nd_backward", "aten::embedding", "aten::embedding_dense_backward",
    "aten::mm", "aten::mm.out", "aten::bmm", "aten::addmm", "aten::baddbmm", "aten::addmv",
    "aten::mv", "aten::dot",
    "aten::rand", "aten::rand.generator", "aten::randn", "aten::randn.generator",
    "aten::normal.float_float", "aten::randint", "aten::randint.low", "aten::randperm",
    "aten::randperm.generator", "aten::multinomial",
    "aten::adaptive_max_pool2d", "aten::adaptive_max_pool2d_backward", "aten::max_unpool2d",
    "aten::max_unpool2d_backward", "aten::adaptive_max_pool3d",
    "aten::adaptive_max_pool3d_backward", "aten::masked_fill.Scalar", "aten::masked_fill.Tensor",
    "aten::masked_fill_.Scalar", "aten::masked_fill_.Tensor", "aten::take", "aten::flip",
    "aten::roll", "aten::rot90", "aten::repeat", "aten::tril", "aten::tril_", "aten::triu",
    "aten::triu_", "aten::cumsum", "aten::cumprod", "aten::clone", "aten::constant_pad_nd",
    "aten::where.self", "aten::where.self_out", "aten::eq.Tensor", "aten::ne.Tensor",
    "aten::native_batch_norm", "aten::native_batch_norm_backward", "aten::reflection_pad2d",
    "aten::replication_pad2d_backward", "aten::_pad_circular", "aten::upsample_nearest2d",
    "aten::upsample_bilinear2d_backward", "aten::upsample_bicubic2d", "aten::im2col",
    "aten::col2im", "aten::all", "aten::any.dim", "aten::count_nonzero",
    "aten::linalg_vector_norm", "aten::logsumexp", "aten::binary_cross_entropy",
    "aten::binary_cross_entropy_backward", "aten::_ptl_embedding_bag",
    "aten::affine_grid_generator", "aten::affine_grid_generator_backward", "aten::one_hot",
    "aten::bincount", "aten::clamp.Tensor", "aten::clip.Tensor", "aten::nextafter", "aten::gcd",
    "aten::lcm", "aten::repeat_interleave.Tensor", "aten::nonzero", "aten::_unique2",
    "aten::grid_sampler_2d", "aten::grid_sampler_2d_backward", "aten::grid_sampler_3d",
    "aten::grid_sampler_3d_backward", "aten::_ptl_rnn_layer", "aten::_ptl_rnn_layer_backward",
    "aten::lt.Tensor", "aten::le.Tensor", "aten::gt.Tensor", "aten::ge.Tensor", "aten::gt_.Tensor",
    "aten::eq.out", "aten::logical_and", "aten::logical_or", "aten::logical_xor",
    "aten::vdot", "aten::linalg_cross", "aten::unfold_backward", "aten::_cdist_forward",
    "aten::_cdist_backward", "aten::embedding_renorm_", "aten::frexp.Tensor",
    "aten::frexp.Tensor_out", "aten::_linalg_svd", "aten::linalg_lu_factor_ex",
    "aten::_linalg_solve_ex", "aten::linalg_inv_ex", "aten::_linalg_det", "aten::_linalg_slogdet",
    "aten::linalg_solve_triangular", "aten::linalg_cholesky_ex", "aten::linalg_qr",
    "aten::_linalg_eigh", "aten::_linalg_eig_split", "aten::_standard_gamma_grad",
    "aten::_dirichlet_grad", "aten::_sample_dirichlet",
    # the views share their kernels with the CPU (view.c)
    "aten::view", "aten::reshape", "aten::t", "aten::transpose.int", "aten::permute",
    "aten::expand", "aten::unsqueeze", "aten::squeeze.dim", "aten::select.int",
    "aten::slice.Tensor", "aten::as_strided", "aten::alias", "aten::detach", "aten::narrow",
    "aten::flatten.using_ints", "aten::unflatten.int", "aten::unbind.int", "aten::split.Tensor",
    "aten::chunk", "aten::movedim.int",
]


def has_cuda_kernel(name):
    return _C._dispatch_has_kernel_for_dispatch_key(name, "CUDA")


@pytest.mark.skipif(not BUILT, reason="the CPU-only build registers no CUDA kernels")
@pytest.mark.parametrize("name", CUDA_OPS)
def test_the_training_ops_have_a_cuda_kernel(name):
    assert has_cuda_kernel(name)


# register_cuda_math.c's: every form of each pointwise math op
MATH_OPS = [f"aten::{n}{suffix}" for n in (
    "exp2", "expm1", "log2", "log10", "log1p", "rsqrt", "sin", "cos", "tan", "asin", "acos",
    "atan", "sinh", "cosh", "erf", "erfinv", "lgamma", "digamma", "frac", "floor", "ceil",
    "trunc", "square", "round", "bitwise_not", "logical_not", "nan_to_num", "polygamma",
    "atan2", "floor_divide", "addcmul", "addcdiv") for suffix in ("", "_", ".out")] + [
    f"aten::{n}" for n in (
        "round.decimals", "round_.decimals", "round.decimals_out", "isnan", "isinf",
        "isfinite", "isclose", "allclose", "threshold", "threshold_", "div.Tensor_mode",
        "div_.Tensor_mode", "div.Tensor_mode_out", "remainder.Tensor", "remainder_.Tensor",
        "remainder.out", "fmod.Tensor", "fmod_.Tensor", "fmod.out",
        "pow.Tensor_Tensor", "pow_.Tensor_Tensor", "pow.Tensor_Tensor_out", "pow.Scalar",
        "pow.Scalar_out", "maximum", "maximum.out", "minimum", "minimum.out", "max.other",
        "min.other", "fmax", "fmax.out", "fmin", "fmin.out", "bitwise_and.Tensor",
        "bitwise_and_.Tensor", "bitwise_and.out", "bitwise_or.Tensor",
        "bitwise_xor.Tensor", "bitwise_left_shift.Tensor", "bitwise_right_shift_.Tensor",
        "lerp.Scalar", "lerp.Tensor", "lerp_.Scalar", "lerp_.Tensor")]


@pytest.mark.skipif(not BUILT, reason="the CPU-only build registers no CUDA kernels")
@pytest.mark.parametrize("name", MATH_OPS)
def test_the_pointwise_math_ops_have_a_cuda_kernel(name):
    assert has_cuda_kernel(name)


# register_cuda_math.c's special_unary_cuda: torch.special's functions of special.c
SPECIAL_OPS = [f"aten::special_{n}{suffix}" for n in (
    "ndtr", "log_ndtr", "ndtri", "erfcx", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai") for suffix in ("", ".out")]


@pytest.mark.skipif(not BUILT, reason="the CPU-only build registers no CUDA kernels")
@pytest.mark.parametrize("name", SPECIAL_OPS)
def test_the_special_functions_have_a_cuda_kernel(name):
    assert has_cuda_kernel(name)


@pytest.mark.skipif(not BUILT, reason="the CPU-only build registers no CUDA kernels")
def test_ops_without_a_cuda_kernel_are_left_to_the_dispatcher():
    # the grid sampler's double backward stays on the CPU (Note [CUDA grid sampler]):
    # training does not reach it
    for name in ("aten::_grid_sampler_backward_backward", "aten::view_as_complex",
                 "aten::to_dense"):
        assert not has_cuda_kernel(name), name
    assert "CUDA" in _C._dispatch_dump("aten::add.Tensor")


@pytest.mark.skipif(not BUILT, reason="the CPU-only build registers no CUDA kernels")
@pytest.mark.parametrize("name", [
    "_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell_backward_impl", "_thnn_fused_gru_cell",
    "_thnn_fused_gru_cell_backward", "cummax", "cummin", "logcumsumexp", "kthvalue", "median",
    "median.dim", "nanmedian", "nanmedian.dim", "mode", "aminmax", "trace", "diag_embed",
    "renorm", "renorm_", "masked_scatter", "masked_scatter_", "histc", "searchsorted.Tensor",
    "searchsorted.Scalar", "bucketize.Tensor", "bucketize.Scalar"])
def test_the_cells_scans_and_selections_have_a_cuda_kernel(name):
    assert has_cuda_kernel("aten::" + name)


@pytest.mark.skipif(BUILT, reason="the extension was built with nvcc")
def test_the_cpu_only_build_has_no_cuda_copy():
    assert not has_cuda_kernel("aten::copy_")
    assert not ptl.cuda.is_available()


@pytest.mark.skipif(not BUILT or ptl.cuda.is_available(), reason="needs nvcc and no device")
def test_kernels_without_a_device_leave_cuda_unavailable():
    config = _C._config()
    assert config["cuda_available"] is False and ptl.cuda.device_count() == 0
    assert config["cuda_unavailable_reason"] != ""
    assert "no CUDA backend" not in config["cuda_unavailable_reason"]
    # the first CUDA tensor initialises CUDA, which fails as PyTorch's CUDA build does
    for make in (lambda: ptl.zeros(2, device="cuda"), lambda: ptl.ones(2).cuda(),
                 lambda: ptl.ones(2).to("cuda"), lambda: ptl.arange(3, device="cuda"),
                 lambda: ptl.rand(2, device="cuda"), lambda: ptl.randperm(2, device="cuda")):
        with pytest.raises(RuntimeError, match="^No CUDA GPUs are available$"):
            make()


def test_a_factory_without_a_cuda_kernel_raises_the_dispatchers_error():
    # the CUDA key comes from the device argument; every aten factory has a CUDA kernel now,
    # so a library op with a CPU kernel only stands for one without
    lib = ptl.library.Library("ptlcudafactory", "DEF")
    lib.define("make(int n, *, Device? device=None) -> Tensor")
    lib.impl("make", lambda n, device=None: ptl.zeros(n), "CPU")
    with pytest.raises(NotImplementedError, match=(
            r"^Could not run 'ptlcudafactory::make' with arguments from the 'CUDA' backend\. "
            r"'ptlcudafactory::make' is only available for these backends: \[CPU\]\.$")):
        ptl.ops.ptlcudafactory.make(2, device="cuda")
