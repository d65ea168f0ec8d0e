"""Double backward through the NN *_backward ops (their rows in src/autograd/derivatives.def): a
float64 gradgradcheck for every NN forward op whose gradient calls one of those ops, second
derivatives compared with torch (live, or its stored answers without it: tests/golden.py), node
names, the errors PyTorch raises, a check that every row of the section is exercised, and that
the formula tables of src/autograd/derivatives_double.c cover every row that names them."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradgradcheck
import golden
from helpers import ROOT, torch

DEF = os.path.join(ROOT, "src", "autograd", "derivatives.def")


def arr(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def T(m, a):
    """A plain float64 / int64 constant of module m."""
    return m.tensor(a, dtype=m.float64 if np.asarray(a).dtype.kind == "f" else m.int64)


def tr(x):
    """A transposed view of x (last two dims), so kernels see non-contiguous inputs."""
    return x.transpose(-1, -2)


IDX = np.array([[0, 2, 4], [4, 2, 1]])
TARGET = np.array([1, 0, 2, 1])
TARGET2D = np.array([[[0, 2], [1, 1]], [[2, 0], [1, 2]]])
CW = np.array([0.5, 2.0, 1.5])
BCE_T = np.array([[0.2, 0.9, 0.0], [1.0, 0.4, 0.6]])
BCE_W = np.array([1.5, 0.5, 2.0])
UNPOOL_SRC = arr((1, 2, 4, 4), 7)

# (name, function of (module, *inputs), input shapes, input value range)
CASES = [
    # convolution (inputs that are views feed non-contiguous tensors)
    ("conv1d", lambda m, x, w, b: m.nn.functional.conv1d(x, w, b, stride=2, padding=1),
     [(1, 2, 5), (3, 2, 2), (3,)], None),
    ("conv2d_groups_dilation",
     lambda m, x, w, b: m.nn.functional.conv2d(tr(x), w, b, padding=1, dilation=2, groups=2),
     [(1, 2, 4, 3), (4, 1, 2, 2), (4,)], None),
    ("conv2d_stride_nobias", lambda m, x, w: m.nn.functional.conv2d(x, w, stride=(2, 1)),
     [(2, 1, 4, 3), (2, 1, 2, 2)], None),
    ("conv3d", lambda m, x, w, b: m.nn.functional.conv3d(x, w, b, padding=(1, 0, 0)),
     [(1, 1, 2, 3, 3), (2, 1, 2, 2, 2), (2,)], None),
    ("conv_transpose1d",
     lambda m, x, w, b: m.nn.functional.conv_transpose1d(x, w, b, stride=2, output_padding=1),
     [(1, 2, 3), (2, 3, 2), (3,)], None),
    ("conv_transpose2d",
     lambda m, x, w, b: m.nn.functional.conv_transpose2d(x, w, b, stride=2, padding=1, groups=2),
     [(1, 2, 2, 3), (2, 1, 2, 2), (2,)], None),
    # pooling
    ("max_pool1d", lambda m, x: m.nn.functional.max_pool1d(x, 2, stride=1, padding=1),
     [(1, 2, 5)], None),
    ("max_pool2d", lambda m, x: m.nn.functional.max_pool2d(tr(x), 2, stride=1, dilation=(1, 2)),
     [(1, 2, 5, 3)], None),
    ("max_pool2d_ceil_unbatched",
     lambda m, x: m.nn.functional.max_pool2d(x, 2, padding=1, ceil_mode=True), [(2, 4, 3)], None),
    ("max_pool3d", lambda m, x: m.nn.functional.max_pool3d(x, 2, stride=1),
     [(1, 1, 3, 3, 2)], None),
    ("avg_pool1d", lambda m, x: m.nn.functional.avg_pool1d(x, 3, stride=2, padding=1),
     [(1, 2, 5)], None),
    ("avg_pool2d_no_pad_count",
     lambda m, x: m.nn.functional.avg_pool2d(tr(x), 2, padding=1, count_include_pad=False),
     [(1, 2, 3, 4)], None),
    ("avg_pool2d_divisor", lambda m, x: m.nn.functional.avg_pool2d(x, 2, divisor_override=3),
     [(1, 1, 4, 4)], None),
    ("avg_pool3d_ceil", lambda m, x: m.nn.functional.avg_pool3d(x, 2, ceil_mode=True),
     [(1, 1, 3, 2, 3)], None),
    ("adaptive_avg_pool1d", lambda m, x: m.nn.functional.adaptive_avg_pool1d(x, 3),
     [(1, 2, 5)], None),
    ("adaptive_avg_pool2d", lambda m, x: m.nn.functional.adaptive_avg_pool2d(tr(x), (2, 3)),
     [(1, 2, 4, 3)], None),
    ("adaptive_max_pool2d", lambda m, x: m.nn.functional.adaptive_max_pool2d(x, (2, 2)),
     [(1, 2, 3, 5)], None),
    ("max_unpool2d", lambda m, x: m.nn.functional.max_unpool2d(
        x, m.nn.functional.max_pool2d(T(m, UNPOOL_SRC), 2, return_indices=True)[1], 2),
     [(1, 2, 2, 2)], None),
    # padding
    ("reflect1d", lambda m, x: m.nn.functional.pad(x, (2, 1), mode="reflect"), [(1, 2, 4)], None),
    ("reflect2d", lambda m, x: m.nn.functional.pad(tr(x), (1, 1, 2, 0), mode="reflect"),
     [(1, 1, 4, 3)], None),
    ("reflect3d", lambda m, x: m.nn.functional.pad(x, (1, 0, 0, 1, 1, 1), mode="reflect"),
     [(1, 1, 2, 2, 3)], None),
    ("replicate1d", lambda m, x: m.nn.functional.pad(x, (2, 1), mode="replicate"),
     [(1, 2, 3)], None),
    ("replicate2d", lambda m, x: m.nn.functional.pad(x, (1, 1, 0, 2), mode="replicate"),
     [(1, 1, 2, 3)], None),
    ("replicate3d", lambda m, x: m.nn.functional.pad(x, (1, 0, 0, 1, 1, 0), mode="replicate"),
     [(1, 1, 2, 2, 2)], None),
    ("circular1d", lambda m, x: m.nn.functional.pad(x, (2, 1), mode="circular"), [(1, 2, 3)], None),
    ("circular2d", lambda m, x: m.nn.functional.pad(tr(x), (1, 1, 1, 0), mode="circular"),
     [(1, 1, 3, 2)], None),
    # interpolation
    ("nearest1d", lambda m, x: m.nn.functional.interpolate(x, size=5), [(1, 2, 3)], None),
    ("nearest2d", lambda m, x: m.nn.functional.interpolate(tr(x), scale_factor=2),
     [(1, 1, 3, 2)], None),
    ("nearest3d", lambda m, x: m.nn.functional.interpolate(x, size=(3, 2, 3)),
     [(1, 1, 2, 2, 2)], None),
    ("linear", lambda m, x: m.nn.functional.interpolate(x, size=5, mode="linear"),
     [(1, 2, 3)], None),
    ("linear_align", lambda m, x: m.nn.functional.interpolate(
        x, scale_factor=2, mode="linear", align_corners=True), [(1, 1, 3)], None),
    ("bilinear", lambda m, x: m.nn.functional.interpolate(tr(x), size=(3, 4), mode="bilinear"),
     [(1, 1, 3, 2)], None),
    ("bilinear_align", lambda m, x: m.nn.functional.interpolate(
        x, size=(3, 3), mode="bilinear", align_corners=True), [(1, 1, 2, 2)], None),
    ("bicubic", lambda m, x: m.nn.functional.interpolate(x, size=(3, 4), mode="bicubic"),
     [(1, 1, 2, 3)], None),
    ("bicubic_align", lambda m, x: m.nn.functional.interpolate(
        x, scale_factor=2, mode="bicubic", align_corners=True), [(1, 1, 2, 2)], None),
    ("trilinear", lambda m, x: m.nn.functional.interpolate(x, size=(3, 2, 3), mode="trilinear"),
     [(1, 1, 2, 2, 2)], None),
    ("trilinear_align", lambda m, x: m.nn.functional.interpolate(
        x, scale_factor=2, mode="trilinear", align_corners=True), [(1, 1, 1, 2, 2)], None),
    # grids
    ("affine_grid",
     lambda m, th: m.nn.functional.affine_grid(th, (1, 1, 3, 4), align_corners=False),
     [(1, 2, 3)], None),
    ("affine_grid_align",
     lambda m, th: m.nn.functional.affine_grid(th, (2, 1, 2, 3), align_corners=True),
     [(2, 2, 3)], None),
    # activations (ranges keep the inputs off the kinks)
    ("relu", lambda m, x: m.nn.functional.relu(tr(x)), [(3, 2)], None),
    ("leaky_relu", lambda m, x: m.nn.functional.leaky_relu(x, 0.2), [(2, 3)], None),
    ("elu", lambda m, x: m.nn.functional.elu(tr(x), alpha=1.5), [(3, 2)], None),
    ("elu_inplace", lambda m, x: m.nn.functional.elu(x * 1, inplace=True), [(4,)], None),
    ("selu", lambda m, x: m.nn.functional.selu(x), [(2, 3)], None),
    ("celu", lambda m, x: m.nn.functional.celu(x, alpha=0.7), [(2, 3)], None),
    ("gelu", lambda m, x: m.nn.functional.gelu(tr(x)), [(3, 2)], None),
    ("gelu_tanh", lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), [(2, 3)], None),
    ("silu", lambda m, x: m.nn.functional.silu(x[::2]), [(6,)], None),
    ("mish", lambda m, x: m.nn.functional.mish(tr(x)), [(3, 2)], None),
    ("hardtanh", lambda m, x: m.nn.functional.hardtanh(x, -0.8, 1.2), [(2, 3)], None),
    ("relu6", lambda m, x: m.nn.functional.relu6(x * 4), [(2, 3)], None),
    ("softplus", lambda m, x: m.nn.functional.softplus(tr(x), beta=2.0, threshold=1.5),
     [(3, 2)], None),
    ("hardswish", lambda m, x: m.nn.functional.hardswish(x * 2), [(2, 3)], None),
    ("logsigmoid", lambda m, x: m.nn.functional.logsigmoid(tr(x)), [(3, 2)], None),
    ("softshrink", lambda m, x: m.nn.functional.softshrink(x, 0.3), [(2, 3)], None),
    ("hardshrink", lambda m, x: m.nn.functional.hardshrink(x, 0.3), [(2, 3)], None),
    ("threshold", lambda m, x: m.nn.functional.threshold(x, 0.1, 2.0), [(2, 3)], None),
    ("sigmoid_tanh_softsign", lambda m, x: m.nn.functional.softsign(x)
     + m.nn.functional.tanhshrink(x) + m.sigmoid(x), [(2, 3)], None),
    # softmax
    ("softmax", lambda m, x: m.nn.functional.softmax(x, dim=1), [(2, 3)], None),
    ("softmax_dim0_view", lambda m, x: m.nn.functional.softmax(tr(x), dim=0), [(3, 2)], None),
    ("log_softmax", lambda m, x: m.nn.functional.log_softmax(x, dim=-1), [(2, 3)], None),
    ("log_softmax_view", lambda m, x: m.nn.functional.log_softmax(tr(x), dim=0), [(3, 2)], None),
    ("softmin", lambda m, x: m.nn.functional.softmin(x, dim=1), [(2, 3)], None),
    # losses
    ("nll_loss", lambda m, x: m.nn.functional.nll_loss(x, T(m, TARGET)), [(4, 3)], None),
    ("nll_loss_weight_ignore", lambda m, x: m.nn.functional.nll_loss(
        x, T(m, TARGET), weight=T(m, CW), ignore_index=0), [(4, 3)], None),
    ("nll_loss_none", lambda m, x: m.nn.functional.nll_loss(x, T(m, TARGET), reduction="none"),
     [(4, 3)], None),
    ("nll_loss_2d_sum", lambda m, x: m.nn.functional.nll_loss(
        x, T(m, TARGET2D), weight=T(m, CW), reduction="sum"), [(2, 3, 2, 2)], None),
    ("cross_entropy", lambda m, x: m.nn.functional.cross_entropy(
        x, T(m, TARGET), weight=T(m, CW), ignore_index=2), [(4, 3)], None),
    ("bce_mean", lambda m, x: m.nn.functional.binary_cross_entropy(x, T(m, BCE_T)),
     [(2, 3)], (0.1, 0.9)),
    ("bce_weight_none", lambda m, x: m.nn.functional.binary_cross_entropy(
        tr(x), T(m, BCE_T), weight=T(m, BCE_W), reduction="none"), [(3, 2)], (0.1, 0.9)),
    ("bce_sum_broadcast_weight", lambda m, x: m.nn.functional.binary_cross_entropy(
        x, T(m, BCE_T), weight=T(m, BCE_W), reduction="sum"), [(2, 3)], (0.1, 0.9)),
    # embedding
    ("embedding", lambda m, w: m.nn.functional.embedding(T(m, IDX), w), [(5, 2)], None),
    ("embedding_padding", lambda m, w: m.nn.functional.embedding(T(m, IDX), w, padding_idx=2),
     [(5, 2)], None),
]

# PyTorch's own double backward of embedding ignores scale_grad_by_freq (its gradgradcheck
# fails), so these cases are checked by gradgradcheck only, not against torch.
OURS_ONLY = [
    ("embedding_scale_freq", lambda m, w: m.nn.functional.embedding(
        T(m, IDX), w, padding_idx=4, scale_grad_by_freq=True), [(5, 2)], None),
]


def inputs(m, shapes, rng, seed):
    low, high = rng if rng else (-2.0, 2.0)
    return [m.tensor(arr(s, seed + i, low, high), dtype=m.float64, requires_grad=True)
            for i, s in enumerate(shapes)]


@pytest.mark.parametrize("name,fn,shapes,rng", CASES + OURS_ONLY,
                         ids=[c[0] for c in CASES + OURS_ONLY])
def test_gradgradcheck(name, fn, shapes, rng):
    xs = inputs(ptl, shapes, rng, 1)
    assert gradgradcheck(lambda *a: fn(ptl, *a), xs)


def test_grid_sample_gradgradcheck():
    x = ptl.tensor(arr((1, 2, 3, 3), 1), dtype=ptl.float64, requires_grad=True)
    grid = ptl.tensor(arr((1, 2, 2, 2), 2, -0.9, 0.9), dtype=ptl.float64, requires_grad=True)
    assert gradgradcheck(lambda a, g: ptl.nn.functional.grid_sample(a, g, align_corners=False),
                         [x, grid])


def second_derivatives(m, fn, shapes, rng):
    """d/d(inputs, grad_output) of sum(v * first_grads), all in float64 NumPy; zeros for an
    input the gradient does not depend on (None in either library)."""
    xs = inputs(m, shapes, rng, 1)
    y = fn(m, *xs)
    go = m.tensor(arr(tuple(y.shape), 11), dtype=m.float64, requires_grad=True)
    gs = m.autograd.grad(y, xs, go, create_graph=True)
    s = sum((g * T(m, arr(tuple(g.shape), 20 + i))).sum() for i, g in enumerate(gs))
    out = m.autograd.grad(s, xs + [go], allow_unused=True)
    return [np.zeros(tuple(x.shape)) if o is None else o.detach().numpy()
            for o, x in zip(out, xs + [go])]


@pytest.mark.parametrize("name,fn,shapes,rng", CASES, ids=[c[0] for c in CASES])
def test_second_derivatives_match_torch(name, fn, shapes, rng):
    golden.assert_same_results(lambda m: golden.named(second_derivatives(m, fn, shapes, rng),
                                                  "d/d input"), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_bce_backward_gradcheck_every_input(reduction):
    """binary_cross_entropy_backward differentiated for grad_output, self and target (the
    loss' own target gradient is not implemented, so the op is called directly) on
    transposed inputs and a broadcast weight, against torch's op too."""
    shapes = [(2, 3) if reduction == 0 else (), (3, 2), (3, 2)]
    lows = [(-1.0, 1.0), (0.1, 0.9), (0.0, 1.0)]
    def run(m):
        xs = [m.tensor(arr(s, 30 + i, *lo), dtype=m.float64, requires_grad=True)
              for i, (s, lo) in enumerate(zip(shapes, lows))]
        w = T(m, BCE_W).expand(2, 3)

        def f(g, x, t):
            return m.ops.aten.binary_cross_entropy_backward(g, tr(x), tr(t), w, reduction)
        if m is ptl:
            assert ptl.autograd.gradcheck(f, xs)
        return golden.named(m.autograd.grad(f(*xs), xs, T(m, arr((2, 3), 40))), "grad of input")
    golden.assert_same_results(run, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("op,name", [
    ("binary_cross_entropy_backward", "binary_cross_entropy_backward"),
    ("nll_loss_nd_backward", "nll_loss_backward"),
])
def test_loss_backward_weight_requiring_grad_is_refused(op, name):
    # refused at the call, as PyTorch's check_no_requires_grad does
    msg = (f"The function '{name}' is not differentiable with respect to argument 'weight'. "
           "This input cannot have requires_grad True.")
    g = ptl.tensor(0.5, dtype=ptl.float64, requires_grad=True)
    x = ptl.tensor(arr((2, 3), 1, 0.1, 0.9), dtype=ptl.float64)
    w = ptl.tensor(BCE_W, dtype=ptl.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        if op == "nll_loss_nd_backward":
            ptl.ops.aten.nll_loss_nd_backward(g, x, T(ptl, TARGET[:2]), w, 1, -100)
        else:
            ptl.ops.aten.binary_cross_entropy_backward(g, x, T(ptl, BCE_T), w, 1)


# ---- inputs with ties and values on the kinks: the same second derivatives as torch ----

TIES = np.array([[[[1.0, 3.0, 3.0, 0.0], [3.0, 2.0, -1.0, 3.0], [0.0, 0.0, 0.0, 0.0]]]])
KINKS = np.array([[-1.0, 0.0, 1.0, -3.0, 3.0, 0.5], [-0.5, 6.0, 0.1, 2.0, -2.0, 20.0]])
TIE_CASES = [
    ("max_pool2d_ties", lambda m, x: m.nn.functional.max_pool2d(x, 2, stride=1), TIES),
    ("adaptive_max_pool2d_ties", lambda m, x: m.nn.functional.adaptive_max_pool2d(x, (2, 2)), TIES),
    ("max_pool1d_ties", lambda m, x: m.nn.functional.max_pool1d(x[0], 2, stride=1), TIES),
    ("hardtanh_kinks", lambda m, x: m.nn.functional.hardtanh(x), KINKS),
    ("relu_kinks", lambda m, x: m.nn.functional.relu(x), KINKS),
    ("leaky_relu_kinks", lambda m, x: m.nn.functional.leaky_relu(x), KINKS),
    ("elu_kinks", lambda m, x: m.nn.functional.elu(x), KINKS),
    ("hardswish_kinks", lambda m, x: m.nn.functional.hardswish(x), KINKS),
    ("softshrink_kinks", lambda m, x: m.nn.functional.softshrink(x, 0.5), KINKS),
    ("hardshrink_kinks", lambda m, x: m.nn.functional.hardshrink(x, 0.5), KINKS),
    ("threshold_kinks", lambda m, x: m.nn.functional.threshold(x, 0.1, 0.0), KINKS),
    ("softplus_threshold", lambda m, x: m.nn.functional.softplus(x, threshold=2.0), KINKS),
]


def tie_second(m, fn, a):
    x = m.tensor(a, dtype=m.float64, requires_grad=True)
    y = fn(m, x)
    go = m.tensor(arr(tuple(y.shape), 3), dtype=m.float64, requires_grad=True)
    g, = m.autograd.grad(y, x, go, create_graph=True)
    v = T(m, arr(tuple(g.shape), 4))
    out = m.autograd.grad((g * v).sum(), [x, go], allow_unused=True)
    return [g.detach().numpy()] + [np.zeros(tuple(i.shape)) if o is None else o.detach().numpy()
                                   for o, i in zip(out, [x, go])]


@pytest.mark.parametrize("name,fn,a", TIE_CASES, ids=[c[0] for c in TIE_CASES])
def test_ties_match_torch(name, fn, a):
    """The first gradient, then the second derivatives (zeros for an input the gradient does
    not depend on: None in either library)."""
    golden.assert_same_results(lambda m: golden.named(tie_second(m, fn, a), "output"), rtol=1e-7,
                               atol=1e-9)


# ---- node names and errors ----

def first_grad_fn(m, fn, shapes, rng):
    xs = inputs(m, shapes, rng, 1)
    y = fn(m, *xs)
    go = m.tensor(arr(tuple(y.shape), 5), dtype=m.float64, requires_grad=True)
    return m.autograd.grad(y, xs[0], go, create_graph=True)[0].grad_fn


NAMED = ["conv2d_groups_dilation", "conv_transpose2d", "max_pool2d", "max_pool3d",
         "avg_pool2d_divisor", "avg_pool3d_ceil", "adaptive_avg_pool2d", "adaptive_max_pool2d",
         "reflect1d", "replicate2d", "nearest1d", "bilinear", "bicubic", "trilinear", "gelu",
         "elu", "softplus", "hardswish", "logsigmoid", "threshold", "leaky_relu", "hardtanh",
         "softshrink", "hardshrink", "softmax", "log_softmax", "nll_loss", "bce_mean",
         "embedding"]


@pytest.mark.parametrize("name", NAMED)
def test_node_names_match_torch(name):
    case = next(c for c in CASES if c[0] == name)
    golden.assert_equal(first_grad_fn(ptl, *case[1:]).name(),
                        lambda: first_grad_fn(torch, *case[1:]).name())


def test_hardsigmoid_double_backward_raises_like_torch():
    msg = "derivative for aten::hardsigmoid_backward is not implemented"

    def call(m):
        x = m.tensor([0.5, -1.0], dtype=m.float64, requires_grad=True)
        g, = m.autograd.grad(m.nn.functional.hardsigmoid(x).sum(), x, create_graph=True)
        g.sum().backward()
    golden.assert_raises(lambda: call(ptl), lambda: call(torch),
                         compare=lambda a, b: msg in a and msg in b)


def test_double_backward_leaves_no_tensors_alive():
    """Every formula of the section releases its temporaries, on success and on error."""
    from pytorchlite import _C

    def run_all():
        for name, fn, shapes, rng in CASES + OURS_ONLY:
            second_derivatives(ptl, fn, shapes, rng)
        x = ptl.tensor([0.5, -1.0], dtype=ptl.float64, requires_grad=True)
        g, = ptl.autograd.grad(ptl.nn.functional.hardsigmoid(x).sum(), x, create_graph=True)
        with pytest.raises(RuntimeError):
            g.sum().backward()
        del x, g

    run_all()
    before = _C._live_counts()
    run_all()
    assert _C._live_counts() == before


# ---- the formula tables of derivatives_double.c cover every row that names them ----


