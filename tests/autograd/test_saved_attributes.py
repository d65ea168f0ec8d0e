"""grad_fn._saved_<name>: the names PyTorch 2.13's nodes give what they save, listed by
dir(grad_fn) and readable (Note [Saved attributes] in src/python/autograd_object.c).  TORCH
holds torch 2.13's dir() of ~60 common nodes (golden, recorded from PyTorch); our nodes list
the same names, less PyTorch's size/stride records (`*_sym_*`), except for the cases in
DIFFERENT, whose reason is given."""
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref


def cases(lib):
    g = lib.Generator().manual_seed(0)
    x = lib.randn(3, 4, generator=g).requires_grad_()
    y = lib.randn(3, 4, generator=g).requires_grad_()
    m = lib.randn(4, 5, generator=g).requires_grad_()
    b = lib.randn(5, generator=g).requires_grad_()
    img = lib.randn(1, 2, 5, 5, generator=g).requires_grad_()
    w = lib.randn(3, 2, 3, 3, generator=g).requires_grad_()
    idx = lib.tensor([0, 2])
    F = lib.nn.functional
    return {
        "add": lambda: x + y, "add_scalar": lambda: x + 2, "sub": lambda: x - y,
        "mul": lambda: x * y, "mul_scalar": lambda: x * 2, "div": lambda: x / y,
        "div_scalar": lambda: x / 2, "pow": lambda: x ** 2, "pow_tensor": lambda: x.abs() ** y,
        "neg": lambda: -x, "exp": lambda: x.exp(), "log": lambda: x.abs().log(),
        "sqrt": lambda: x.abs().sqrt(), "sin": lambda: x.sin(), "cos": lambda: x.cos(),
        "tanh": lambda: x.tanh(), "sigmoid": lambda: x.sigmoid(), "relu": lambda: x.relu(),
        "abs": lambda: x.abs(), "sum": lambda: x.sum(), "sum_dim": lambda: x.sum(1),
        "mean": lambda: x.mean(), "mean_dim": lambda: x.mean(1, keepdim=True),
        "max_dim": lambda: x.max(1)[0], "mm": lambda: x.mm(m),
        "addmm": lambda: lib.addmm(b, x, m), "linear": lambda: F.linear(x, m.t(), b),
        "t": lambda: x.t(), "view": lambda: x.view(12), "reshape": lambda: x.reshape(2, 6),
        "transpose": lambda: x.transpose(0, 1), "permute": lambda: x.permute(1, 0),
        "unsqueeze": lambda: x.unsqueeze(0), "squeeze": lambda: x.unsqueeze(0).squeeze(0),
        "expand": lambda: x[:1].expand(3, 4), "cat": lambda: lib.cat([x, y]),
        "stack": lambda: lib.stack([x, y]), "index": lambda: x[idx], "select": lambda: x[1],
        "slice": lambda: x[1:], "softmax": lambda: x.softmax(1),
        "log_softmax": lambda: x.log_softmax(1), "mse_loss": lambda: F.mse_loss(x, y),
        "cross_entropy": lambda: F.cross_entropy(x, lib.tensor([0, 1, 2])),
        "conv2d": lambda: F.conv2d(img, w, padding=1), "max_pool2d": lambda: F.max_pool2d(img, 2),
        "gelu": lambda: F.gelu(x), "clamp": lambda: x.clamp(-1, 1),
        "where": lambda: lib.where(x > 0, x, y), "matmul": lambda: x @ m,
        "bmm": lambda: lib.bmm(x.unsqueeze(0), m.unsqueeze(0)),
        "layer_norm": lambda: F.layer_norm(x, (4,)),
        "dropout_eval": lambda: F.dropout(x, 0.5, training=False) * 1,
        "exp_": lambda: (x * 1).exp_(), "gather": lambda: x.gather(1, idx.view(1, 2).expand(3, 2)),
        "clone": lambda: x.clone(), "to_double": lambda: x.double(), "norm": lambda: x.norm(),
    }


# torch 2.13: case -> (node name, sorted _saved_ names of dir(grad_fn))
TORCH = {
    "add": ("AddBackward0", ['_saved_alpha']),
    "add_scalar": ("AddBackward0", ['_saved_alpha']),
    "sub": ("SubBackward0", ['_saved_alpha']),
    "mul": ("MulBackward0", ['_saved_other', '_saved_self']),
    "mul_scalar": ("MulBackward0", ['_saved_other', '_saved_self']),
    "div": ("DivBackward0", ['_saved_other', '_saved_self']),
    "div_scalar": ("DivBackward0", ['_saved_other', '_saved_self']),
    "pow": ("PowBackward0", ['_saved_exponent', '_saved_self']),
    "pow_tensor": ("PowBackward1", ['_saved_exponent', '_saved_result', '_saved_self']),
    "neg": ("NegBackward0", []),
    "exp": ("ExpBackward0", ['_saved_result']),
    "log": ("LogBackward0", ['_saved_self']),
    "sqrt": ("SqrtBackward0", ['_saved_result']),
    "sin": ("SinBackward0", ['_saved_self']),
    "cos": ("CosBackward0", ['_saved_self']),
    "tanh": ("TanhBackward0", ['_saved_result']),
    "sigmoid": ("SigmoidBackward0", ['_saved_result']),
    "relu": ("ReluBackward0", ['_saved_result']),
    "abs": ("AbsBackward0", ['_saved_self']),
    "sum": ("SumBackward0", ['_saved_self_sym_sizes']),
    "sum_dim": ("SumBackward1", ['_saved_dim', '_saved_keepdim', '_saved_self_sym_sizes']),
    "mean": ("MeanBackward0", ['_saved_self_sym_numel', '_saved_self_sym_sizes']),
    "mean_dim": ("MeanBackward1", ['_saved_dim', '_saved_keepdim', '_saved_self_sym_numel', '_saved_self_sym_sizes']),
    "max_dim": ("MaxBackward0", ['_saved_dim', '_saved_indices', '_saved_keepdim', '_saved_self_sym_sizes']),
    "mm": ("MmBackward0", ['_saved_mat2', '_saved_mat2_sym_sizes', '_saved_mat2_sym_strides', '_saved_self', '_saved_self_sym_sizes', '_saved_self_sym_strides']),
    "addmm": ("AddmmBackward0", ['_saved_alpha', '_saved_beta', '_saved_mat1', '_saved_mat1_sym_sizes', '_saved_mat1_sym_strides', '_saved_mat2', '_saved_mat2_sym_sizes', '_saved_mat2_sym_strides']),
    "linear": ("AddmmBackward0", ['_saved_alpha', '_saved_beta', '_saved_mat1', '_saved_mat1_sym_sizes', '_saved_mat1_sym_strides', '_saved_mat2', '_saved_mat2_sym_sizes', '_saved_mat2_sym_strides']),
    "t": ("TBackward0", []),
    "view": ("ViewBackward0", ['_saved_self_sym_sizes']),
    "reshape": ("ViewBackward0", ['_saved_self_sym_sizes']),
    "transpose": ("TransposeBackward0", ['_saved_dim0', '_saved_dim1']),
    "permute": ("PermuteBackward0", ['_saved_dims']),
    "unsqueeze": ("UnsqueezeBackward0", ['_saved_dim']),
    "squeeze": ("SqueezeBackward1", ['_saved_dim', '_saved_self_sym_sizes']),
    "expand": ("ExpandBackward0", ['_saved_self_sym_sizes']),
    "cat": ("CatBackward0", ['_saved_dim']),
    "stack": ("StackBackward0", ['_saved_dim']),
    "index": ("IndexBackward0", ['_saved_indices', '_saved_self_sym_sizes']),
    "select": ("SelectBackward0", ['_saved_dim', '_saved_index', '_saved_self_sym_sizes']),
    "slice": ("SliceBackward0", ['_saved_dim', '_saved_end', '_saved_self_sym_sizes', '_saved_start', '_saved_step']),
    "softmax": ("SoftmaxBackward0", ['_saved_dim', '_saved_result']),
    "log_softmax": ("LogSoftmaxBackward0", ['_saved_dim', '_saved_result']),
    "mse_loss": ("MseLossBackward0", ['_saved_reduction', '_saved_self', '_saved_target']),
    "cross_entropy": ("NllLossBackward0", ['_saved_ignore_index', '_saved_reduction', '_saved_self', '_saved_target', '_saved_total_weight', '_saved_weight']),
    "conv2d": ("ConvolutionBackward0", ['_saved_bias_sym_sizes_opt', '_saved_dilation', '_saved_groups', '_saved_input', '_saved_output_padding', '_saved_padding', '_saved_stride', '_saved_transposed', '_saved_weight']),
    "max_pool2d": ("MaxPool2DWithIndicesBackward0", ['_saved_ceil_mode', '_saved_dilation', '_saved_kernel_size', '_saved_padding', '_saved_result1', '_saved_self', '_saved_stride']),
    "gelu": ("GeluBackward0", ['_saved_approximate', '_saved_self']),
    "clamp": ("ClampBackward1", ['_saved_max', '_saved_min', '_saved_self']),
    "where": ("WhereBackward0", ['_saved_condition']),
    "matmul": ("MmBackward0", ['_saved_mat2', '_saved_mat2_sym_sizes', '_saved_mat2_sym_strides', '_saved_self', '_saved_self_sym_sizes', '_saved_self_sym_strides']),
    "bmm": ("BmmBackward0", ['_saved_mat2', '_saved_self']),
    "layer_norm": ("NativeLayerNormBackward0", ['_saved_bias', '_saved_input', '_saved_normalized_shape', '_saved_result1', '_saved_result2', '_saved_weight']),
    "dropout_eval": ("MulBackward0", ['_saved_other', '_saved_self']),
    "exp_": ("ExpBackward0", ['_saved_result']),
    "gather": ("GatherBackward0", ['_saved_dim', '_saved_index', '_saved_self', '_saved_sparse_grad']),
    "clone": ("CloneBackward0", []),
    "to_double": ("ToCopyBackward0", []),
    "norm": ("LinalgVectorNormBackward0", ['_saved_dim', '_saved_keepdim', '_saved_ord', '_saved_result', '_saved_self']),
}

# cases whose node or names differ from PyTorch's, and why
DIFFERENT = {
    "max_dim": "max.dim saves self and its values output; PyTorch saves the indices",
    "mm": "x.mm(m) records MatmulBackward0 (our fused matmul), saving self and other",
    "matmul": "x @ m records MatmulBackward0 (our fused matmul), saving self and other",
    "view": "the view records its size argument; PyTorch keeps the input's sizes",
    "reshape": "the view records its shape argument; PyTorch keeps the input's sizes",
    "expand": "expand records size and implicit; PyTorch keeps the input's sizes",
    "softmax": "_softmax's half_to_float argument is listed; PyTorch's formula ignores it",
    "log_softmax": "_log_softmax's half_to_float argument is listed",
    "mse_loss": "mse_loss is a composite here (its last node is MeanBackward0)",
    "cross_entropy": "nll_loss keeps no total_weight output; ignore_index prints as -100",
    "max_pool2d": "the indices output is recomputed, not saved",
    "gelu": "approximate is kept as its enum value (0), not the string",
    "layer_norm": "eps is listed; PyTorch's formula reads it from the saved rstd",
    "gather": "gather's formula needs only the index; PyTorch also saves self",
    "to_double": "_to_copy's non_blocking and pin_memory arguments are listed",
    "norm": "x.norm() records NormBackward0 (norm.Scalar), with argument p",
}


def saved_names(fn):
    return sorted(a for a in dir(fn) if a.startswith("_saved_"))


@pytest.mark.parametrize("case", sorted(TORCH))
def test_saved_names_are_torchs(case):
    fn = cases(ptl)[case]().grad_fn
    name, torch_names = TORCH[case]
    ours = saved_names(fn)
    for attr in ours:       # every listed name resolves (torchviz reads them all)
        getattr(fn, attr)
    if case in DIFFERENT:
        return
    assert type(fn).__name__ == fn.name() == name
    assert ours == [a for a in torch_names if "_sym_" not in a]


@torch_ref
@pytest.mark.parametrize("case", sorted(set(TORCH) - set(DIFFERENT)))
def test_saved_values_match_torch(case):
    ours, theirs = cases(ptl)[case]().grad_fn, cases(torch)[case]().grad_fn
    assert saved_names(theirs) == TORCH[case][1]
    for attr in saved_names(ours):
        a, t = getattr(ours, attr), getattr(theirs, attr)
        if torch.is_tensor(t):
            assert a is not None and tuple(a.shape) == tuple(t.shape), attr
        elif t is None or isinstance(t, (bool, int, float, str)) or (
                isinstance(t, tuple) and not any(torch.is_tensor(v) for v in t)):
            if case not in ("mul_scalar", "div_scalar", "dropout_eval"):
                assert a == t, attr
        else:
            assert len(a) == len(t), attr


def test_saved_attributes_read_the_right_slots():
    x = ptl.randn(3, 4, requires_grad=True)
    m = ptl.randn(4, 5, requires_grad=True)
    b = ptl.randn(5, requires_grad=True)
    fn = ptl.addmm(b, x, m, beta=2, alpha=3).grad_fn
    assert fn._saved_mat1 is not None and fn._saved_mat1.tolist() == x.tolist()
    assert fn._saved_mat2.tolist() == m.tolist() and (fn._saved_alpha, fn._saved_beta) == (3, 2)
    assert "_saved_self" not in dir(fn)
    with pytest.raises(AttributeError, match="'AddmmBackward0' object has no attribute "
                       "'_saved_self'"):
        fn._saved_self
    idx = ptl.tensor([0, 2])
    fn = x[idx].grad_fn
    assert isinstance(fn._saved_indices, tuple) and fn._saved_indices[0].tolist() == [0, 2]
    assert "_saved_alpha" not in dir(x.sum().grad_fn.next_functions[0][0])


def test_saved_attributes_after_backward_raise_torchs_error():
    x = ptl.ones(2, requires_grad=True)
    y = x * x
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn._saved_self
    assert y.grad_fn.next_functions[0][0].variable is x
