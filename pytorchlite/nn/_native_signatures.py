"""The signatures of the native functions behind torch.nn.functional, as PyTorch's argument
parser checks them (torch's native_functions.yaml), for the functions written here in Python:
fault(name, ...) raises the TypeError PyTorch gives for a call that fits none of them (Note
[Native signatures of composites] in pytorchlite/_arg_check.py)."""
from .._arg_check import native_fault

_SIGNATURES = {
    # convolution
    "conv1d": (
        "conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], "
        "SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1) -> Tensor",
        "conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], "
        "str padding=\"valid\", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor"),
    "conv2d": (
        "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
        "SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor",
        "conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
        "str padding=\"valid\", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor"),
    "conv3d": (
        "conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
        "SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor",
        "conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, "
        "SymInt[3] stride=[1, 1, 1], str padding=\"valid\", SymInt[3] dilation=[1, 1, 1], "
        "SymInt groups=1) -> Tensor"),
    "conv_transpose1d": (
        "conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], "
        "SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, "
        "SymInt[1] dilation=[1]) -> Tensor",),
    "conv_transpose2d": (
        "conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, "
        "SymInt[2] stride=[1, 1], SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], "
        "SymInt groups=1, SymInt[2] dilation=[1, 1]) -> Tensor",),
    "conv_transpose3d": (
        "conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, "
        "SymInt[3] stride=[1, 1, 1], SymInt[3] padding=[0, 0, 0], "
        "SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, SymInt[3] dilation=[1, 1, 1]) "
        "-> Tensor",),
    "conv_tbc": ("conv_tbc(Tensor self, Tensor weight, Tensor bias, int pad=0) -> Tensor",),
    # pooling
    "avg_pool1d": (
        "avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
        "bool ceil_mode=False, bool count_include_pad=True) -> Tensor",),
    "max_pool1d": (
        "max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
        "int[1] dilation=[1], bool ceil_mode=False) -> Tensor",),
    "max_pool2d": (
        "max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
        "int[2] dilation=1, bool ceil_mode=False) -> Tensor",),
    "max_pool3d": (
        "max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
        "int[3] dilation=1, bool ceil_mode=False) -> Tensor",),
    "max_pool1d_with_indices": (
        "max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], "
        "int[1] padding=[0], int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)",),
    "adaptive_avg_pool1d": ("adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor",),
    "adaptive_avg_pool2d": (
        "adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor",),
    "adaptive_avg_pool3d": (
        "adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor",),
    "adaptive_max_pool1d": (
        "adaptive_max_pool1d(Tensor self, int[1] output_size) -> (Tensor, Tensor)",),
    "adaptive_max_pool2d": (
        "adaptive_max_pool2d(Tensor self, int[2] output_size) -> (Tensor, Tensor)",),
    "adaptive_max_pool3d": (
        "adaptive_max_pool3d(Tensor self, int[3] output_size) -> (Tensor, Tensor)",),
    # shuffles
    "pixel_shuffle": ("pixel_shuffle(Tensor self, int upscale_factor) -> Tensor",),
    "pixel_unshuffle": ("pixel_unshuffle(Tensor self, int downscale_factor) -> Tensor",),
    "channel_shuffle": ("channel_shuffle(Tensor self, SymInt groups) -> Tensor",),
    "native_channel_shuffle": ("native_channel_shuffle(Tensor self, SymInt groups) -> Tensor",),
    # linear
    "linear": ("linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor",),
    "bilinear": (
        "bilinear(Tensor input1, Tensor input2, Tensor weight, Tensor? bias=None) -> Tensor",),
    # activations
    "relu": ("relu(Tensor self) -> Tensor",),
    "relu_": ("relu_(Tensor(a!) self) -> Tensor(a!)",),
    "relu6": ("relu6(Tensor self) -> Tensor",),
    "relu6_": ("relu6_(Tensor(a!) self) -> Tensor(a!)",),
    "selu": ("selu(Tensor self) -> Tensor",),
    "selu_": ("selu_(Tensor(a!) self) -> Tensor(a!)",),
    "prelu": ("prelu(Tensor self, Tensor weight) -> Tensor",),
    "hardtanh_": (
        "hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)",),
    "rrelu_": (
        "rrelu_(Tensor(a!) self, Scalar lower=0.125, Scalar upper=0.3333333333333333, "
        "bool training=False, Generator? generator=None) -> Tensor(a!)",),
    "glu": ("glu(Tensor self, int dim=-1) -> Tensor",),
    # losses (reduction is the enum torch's Python passes)
    "cross_entropy_loss": (
        "cross_entropy_loss(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
        "SymInt ignore_index=-100, float label_smoothing=0.0) -> Tensor",),
    "nll_loss_nd": (
        "nll_loss_nd(Tensor self, Tensor target, Tensor? weight=None, int reduction=1, "
        "SymInt ignore_index=-100) -> Tensor",),
    "kl_div": (
        "kl_div(Tensor self, Tensor target, int reduction=1, *, bool log_target=False) "
        "-> Tensor",),
    "hinge_embedding_loss": (
        "hinge_embedding_loss(Tensor self, Tensor target, float margin=1.0, int reduction=1) "
        "-> Tensor",),
    "multilabel_margin_loss": (
        "multilabel_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",),
    "multi_margin_loss": (
        "multi_margin_loss(Tensor self, Tensor target, Scalar p=1, Scalar margin=1, "
        "Tensor? weight=None, int reduction=1) -> Tensor",),
    "soft_margin_loss": (
        "soft_margin_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",),
    "cosine_embedding_loss": (
        "cosine_embedding_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
        "int reduction=1) -> Tensor",),
    "margin_ranking_loss": (
        "margin_ranking_loss(Tensor input1, Tensor input2, Tensor target, float margin=0.0, "
        "int reduction=1) -> Tensor",),
    "poisson_nll_loss": (
        "poisson_nll_loss(Tensor input, Tensor target, bool log_input, bool full, float eps, "
        "int reduction) -> Tensor",),
    "binary_cross_entropy_with_logits": (
        "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
        "Tensor? pos_weight=None, int reduction=1) -> Tensor",),
    # normalization
    "batch_norm": (
        "batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
        "Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled) "
        "-> Tensor",),
    "instance_norm": (
        "instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, "
        "Tensor? running_var, bool use_input_stats, float momentum, float eps, "
        "bool cudnn_enabled) -> Tensor",),
    "layer_norm": (
        "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
        "Tensor? bias=None, float eps=1e-05, bool cudnn_enable=True) -> Tensor",),
    "group_norm": (
        "group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1e-05, bool cudnn_enabled=True) -> Tensor",),
    "rms_norm": (
        "rms_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, "
        "float? eps=None) -> Tensor",),
    "grid_sampler": (
        "grid_sampler(Tensor input, Tensor grid, int interpolation_mode, int padding_mode, "
        "bool align_corners) -> Tensor",),
    "scaled_dot_product_attention": (
        "scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, "
        "Tensor? attn_mask=None, float dropout_p=0.0, bool is_causal=False, *, "
        "float? scale=None, bool enable_gqa=False) -> Tensor",),
    "pad": ("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",),
}


def fault(name, *args, defaults=(), **kwargs):
    """Raises the TypeError PyTorch's parser gives for this call of the native function
    `name`, or returns when its arguments fit one of its signatures (defaults: see
    native_fault)."""
    native_fault(_SIGNATURES[name], *args, defaults=defaults, **kwargs)
