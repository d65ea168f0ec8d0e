"""The layer modules (pytorchlite/nn/modules/*) against real torch.nn: each CASES row builds
the module in both libraries with the same arguments and the same seeded parameters, runs
the same float64 inputs in train and eval mode and compares outputs, input and parameter
gradients, buffers afterwards, repr and state_dict keys/dtypes/shapes.  Without torch the
comparison is with PyTorch's stored answers (tests/golden.py).  Adding a module is one row
(and `python tests/fixtures/make_golden.py tests/nn/test_layers.py`)."""
import math
import re
import warnings

import numpy as np
import pytest

import golden
import pytorchlite as ptl
from helpers import torch


# ---- inputs ------------------------------------------------------------------------------

class G:
    """A float64 input that gets a gradient."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float64)


class C:
    """A constant input (a target, indices): no gradient."""

    def __init__(self, a):
        self.a = np.asarray(a)


class T:
    """A tensor constructor argument (a loss weight), built in each library."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float64)


class L:
    """A constructor argument built by a function of the library (torch or pytorchlite)."""

    def __init__(self, fn):
        self.fn = fn


def X(*shape):
    return lambda r: G(r.standard_normal(shape))


def POS(*shape):
    return lambda r: G(r.uniform(0.2, 1.5, shape))


def PROB(*shape, grad=True):
    return lambda r: (G if grad else C)(r.uniform(0.05, 0.95, shape))


def SIGN(*shape):
    return lambda r: C(r.choice([-1.0, 1.0], shape))


def BIN(*shape):
    return lambda r: C(r.integers(0, 2, shape).astype(np.float64))


def INT(high, *shape):
    return lambda r: C(r.integers(0, high, shape).astype(np.int64))


def MULTILABEL(n, c):
    """Targets of multilabel_margin_loss: some class indices, then -1."""
    def make(r):
        t = -np.ones((n, c), dtype=np.int64)
        for i in range(n):
            k = r.integers(1, c + 1)
            t[i, :k] = r.permutation(c)[:k]
        return C(t)
    return make


def POOLED(fn, *shape):
    """(pooled values, their indices) of a max pooling of a random input: the inputs of
    MaxUnpool."""
    def make(r):
        out, idx = fn(r.standard_normal(shape))
        return [G(out), C(idx)]
    return make


def _mp1(x):
    """max_pool1d(x, 2, return_indices=True) in NumPy: indices into the last dimension."""
    n = x.shape[-1] // 2
    win = x[..., :2 * n].reshape(x.shape[:-1] + (n, 2))
    arg = win.argmax(-1)
    return win.max(-1), 2 * np.arange(n) + arg


def _mp2(x):
    """max_pool2d(x, 2, return_indices=True) in NumPy: indices into the flattened H x W."""
    (h, w), width = (x.shape[-2] // 2, x.shape[-1] // 2), x.shape[-1]
    win = x[..., :2 * h, :2 * w].reshape(x.shape[:-2] + (h, 2, w, 2))
    win = np.moveaxis(win, -3, -2).reshape(x.shape[:-2] + (h, w, 4))
    dy, dx = np.divmod(win.argmax(-1), 2)
    rows, cols = np.arange(h)[:, None], np.arange(w)[None, :]
    return win.max(-1), (2 * rows + dy) * width + 2 * cols + dx


# ---- the table: (module, constructor args, constructor kwargs, inputs) ------------------

X3 = [X(3, 4, 5)]
CASES = [
    # activations
    ("ELU", (), {}, X3), ("ELU", (0.5, True), {}, X3), ("CELU", (0.7,), {}, X3),
    ("SELU", (), {"inplace": True}, X3), ("GELU", (), {}, X3), ("GELU", ("tanh",), {}, X3),
    ("SiLU", (), {}, X3), ("Mish", (), {"inplace": True}, X3), ("Hardshrink", (), {}, X3),
    ("Hardshrink", (0.3,), {}, X3), ("Softshrink", (0.7,), {}, X3),
    ("Hardsigmoid", (), {}, X3), ("Hardswish", (), {"inplace": True}, X3),
    ("Hardtanh", (-2.0, 1.5), {}, X3), ("Hardtanh", (), {"inplace": True}, X3),
    ("ReLU6", (), {}, X3), ("ReLU6", (True,), {}, X3), ("ReLU", (True,), {}, X3),
    ("LeakyReLU", (), {}, X3), ("LeakyReLU", (0.2, True), {}, X3), ("LogSigmoid", (), {}, X3),
    ("PReLU", (), {}, X3), ("PReLU", (4, 0.1), {}, X3), ("RReLU", (), {}, X3),
    ("RReLU", (0.1, 0.3, True), {}, X3), ("Softplus", (), {}, X3),
    ("Softplus", (2.0, 1.0), {}, X3), ("Softsign", (), {}, X3), ("Tanhshrink", (), {}, X3),
    ("Threshold", (0.1, 20.0), {}, X3), ("Threshold", (0.0, -1.0, True), {}, X3),
    ("GLU", (), {}, [X(3, 4, 6)]), ("GLU", (1,), {}, X3), ("Softmin", (1,), {}, X3),
    ("Softmax", (), {"dim": -1}, X3), ("LogSoftmax", (1,), {}, X3),
    ("Softmax2d", (), {}, [X(2, 3, 4, 5)]), ("Softmax2d", (), {}, X3),
    ("Sigmoid", (), {}, X3), ("Tanh", (), {}, X3),
    # linear
    ("Linear", (5, 3), {}, [X(2, 4, 5)]), ("Bilinear", (4, 5, 3), {}, [X(6, 4), X(6, 5)]),
    ("Bilinear", (4, 5, 3), {"bias": False}, [X(6, 4), X(6, 5)]),
    # convolution
    ("Conv1d", (4, 6, 3), {"padding": 2, "padding_mode": "reflect"}, [X(2, 4, 7)]),
    ("Conv2d", (4, 6, 3), {"padding": 1, "padding_mode": "circular"}, [X(2, 4, 5, 6)]),
    ("Conv2d", (4, 6, (2, 3)), {"padding": "same", "padding_mode": "replicate"},
     [X(2, 4, 5, 6)]),
    ("Conv2d", (4, 6, (2, 3)), {"stride": 2, "groups": 2, "dilation": (1, 2)}, [X(2, 4, 7, 8)]),
    ("Conv3d", (2, 4, 2), {"padding": 1, "padding_mode": "reflect"}, [X(1, 2, 3, 4, 4)]),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1},
     [X(2, 4, 5)]),
    ("ConvTranspose1d", (4, 6, 3), {}, [X(4, 5)]),
    ("ConvTranspose2d", (4, 6, (3, 2)), {"stride": (2, 1), "padding": 1, "groups": 2,
                                         "dilation": 2}, [X(2, 4, 5, 5)]),
    ("ConvTranspose2d", (4, 6, 3), {"bias": False, "output_padding": (1, 0), "stride": 2},
     [X(2, 4, 3, 4)]),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2}, [X(1, 2, 3, 3, 3)]),
    # pooling
    ("MaxPool1d", (3,), {"stride": 2, "return_indices": True}, [X(2, 3, 9)]),
    ("MaxPool2d", (2,), {}, [X(2, 3, 6, 5)]),
    ("MaxPool3d", (2,), {}, [X(2, 3, 4, 4, 4)]),
    ("MaxPool3d", (3,), {"stride": 2, "padding": 1, "ceil_mode": True, "return_indices": True},
     [X(1, 2, 5, 6, 5)]),
    ("AvgPool1d", (3, 2, 1), {}, [X(2, 3, 9)]),
    ("AvgPool2d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False},
     [X(2, 3, 6, 7)]),
    ("AvgPool3d", (2,), {"stride": 1}, [X(1, 2, 3, 4, 4)]),
    ("AvgPool3d", (3, 2, 1), {"count_include_pad": False, "divisor_override": 5},
     [X(1, 2, 5, 5, 4)]),
    ("AdaptiveAvgPool1d", (4,), {}, [X(2, 3, 9)]),
    ("AdaptiveAvgPool2d", ((3, 2),), {}, [X(2, 3, 7, 5)]),
    ("AdaptiveMaxPool1d", (4,), {}, [X(2, 3, 9)]),
    ("AdaptiveMaxPool1d", (4, True), {}, [X(3, 10)]),
    ("AdaptiveMaxPool2d", ((3, 2),), {}, [X(2, 3, 7, 5)]),
    ("AdaptiveMaxPool2d", (3,), {"return_indices": True}, [X(2, 3, 7, 5)]),
    ("LPPool1d", (2, 3), {"stride": 2}, [X(2, 3, 9)]),
    ("LPPool1d", (1.5, 2), {"ceil_mode": True}, [POS(2, 3, 9)]),
    ("LPPool2d", (2, 2), {}, [X(2, 3, 6, 6)]),
    ("LPPool2d", (1.5, (2, 3)), {"stride": 1}, [POS(2, 3, 5, 6)]),
    ("LPPool3d", (2, 2), {}, [X(1, 2, 4, 4, 4)]),
    ("LPPool3d", (3, (2, 1, 2)), {"stride": (1, 2, 1)}, [POS(1, 2, 3, 4, 3)]),
    ("MaxUnpool1d", (2,), {}, POOLED(_mp1, 2, 3, 9)),
    ("MaxUnpool2d", (2,), {}, POOLED(_mp2, 2, 3, 6, 4)),
    # normalisation
    ("BatchNorm1d", (4,), {}, [X(6, 4)]), ("BatchNorm1d", (4,), {}, [X(5, 4, 3)]),
    ("BatchNorm1d", (4,), {"momentum": None, "affine": False}, [X(5, 4)]),
    ("BatchNorm2d", (3,), {"track_running_stats": False}, [X(2, 3, 4, 5)]),
    ("BatchNorm2d", (3,), {"eps": 1e-3, "momentum": 0.3}, [X(2, 3, 4, 5)]),
    ("BatchNorm2d", (3,), {"bias": False}, [X(2, 3, 4, 5)]),
    ("BatchNorm3d", (2,), {}, [X(2, 2, 3, 3, 3)]),
    ("InstanceNorm1d", (4,), {}, [X(2, 4, 6)]),
    ("InstanceNorm1d", (4,), {"affine": True}, [X(4, 6)]),
    ("InstanceNorm2d", (3,), {"track_running_stats": True, "momentum": 0.2},
     [X(2, 3, 4, 5)]),
    ("InstanceNorm3d", (2,), {"affine": True}, [X(2, 2, 3, 3, 3)]),
    ("InstanceNorm2d", (3,), {"affine": True, "bias": False}, [X(3, 4, 5)]),
    # padding
    ("ZeroPad1d", (2,), {}, [X(2, 3, 5)]), ("ZeroPad2d", ((1, 2, 0, 1),), {}, [X(2, 3, 4, 5)]),
    ("ZeroPad3d", (1,), {}, [X(1, 2, 3, 3, 3)]), ("ConstantPad1d", ((1, 2), 3.5), {}, [X(3, 5)]),
    ("ConstantPad2d", (1, -1.0), {}, [X(2, 3, 4, 5)]),
    ("ConstantPad3d", ((1, 0, 0, 1, 1, 0), 2.0), {}, [X(1, 2, 3, 3, 3)]),
    ("ReflectionPad1d", (2,), {}, [X(2, 3, 5)]),
    ("ReflectionPad2d", ((1, 2, 2, 1),), {}, [X(2, 3, 4, 5)]),
    ("ReflectionPad3d", (1,), {}, [X(1, 2, 3, 3, 3)]),
    ("ReplicationPad1d", ((3, 1),), {}, [X(2, 3, 5)]),
    ("ReplicationPad2d", (2,), {}, [X(2, 3, 4, 5)]),
    ("ReplicationPad3d", ((1, 2, 0, 1, 2, 0),), {}, [X(1, 2, 3, 3, 3)]),
    ("CircularPad1d", (2,), {}, [X(2, 3, 5)]), ("CircularPad2d", ((1, 2, 2, 1),), {},
                                                [X(2, 3, 4, 5)]),
    ("CircularPad3d", (1,), {}, [X(1, 2, 3, 3, 3)]),
    # shuffles, resampling, distances, fold
    ("PixelShuffle", (2,), {}, [X(2, 8, 3, 3)]), ("PixelUnshuffle", (2,), {}, [X(2, 2, 4, 6)]),
    ("Upsample", (), {"scale_factor": 2}, [X(2, 3, 4, 5)]),
    ("Upsample", ((5, 7),), {"mode": "bilinear"}, [X(2, 3, 4, 5)]),
    ("Upsample", (7,), {"mode": "linear", "align_corners": True}, [X(2, 3, 4)]),
    ("Upsample", (), {"scale_factor": (2, 1.5), "mode": "bilinear",
                      "recompute_scale_factor": True}, [X(2, 3, 4, 4)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, [X(2, 3, 4, 5)]),
    ("UpsamplingBilinear2d", ((6, 8),), {}, [X(2, 3, 4, 5)]),
    ("CosineSimilarity", (), {}, [X(4, 5), X(4, 5)]),
    ("CosineSimilarity", (-1, 1e-6), {}, [X(3, 4, 5), X(4, 5)]),
    ("PairwiseDistance", (), {}, [X(4, 5), X(4, 5)]),
    ("PairwiseDistance", (1.0,), {"keepdim": True}, [X(4, 5), X(4, 5)]),
    ("Fold", ((4, 5), 2), {}, [X(2, 12, 12)]),
    ("Fold", ((5, 5), (2, 3)), {"padding": 1, "stride": 2, "dilation": 1}, [X(2, 12, 9)]),
    ("Unfold", ((2, 3),), {"padding": 1, "stride": 2}, [X(2, 3, 5, 6)]),
    # losses
    ("L1Loss", (), {}, [X(3, 4), X(3, 4)]), ("MSELoss", (), {"reduction": "sum"},
                                             [X(3, 4), X(3, 4)]),
    ("BCELoss", (), {}, [PROB(3, 4), PROB(3, 4, grad=False)]),
    ("BCELoss", (T([1.0, 2.0, 0.5, 1.5]),), {"reduction": "none"},
     [PROB(3, 4), PROB(3, 4, grad=False)]),
    ("BCEWithLogitsLoss", (), {"pos_weight": T([1.0, 2.0, 0.5, 3.0])},
     [X(3, 4), PROB(3, 4, grad=False)]),
    ("KLDivLoss", (), {"reduction": "batchmean"}, [X(3, 4), PROB(3, 4, grad=False)]),
    ("KLDivLoss", (), {"reduction": "sum", "log_target": True}, [X(3, 4), X(3, 4)]),
    ("SmoothL1Loss", (), {"beta": 0.5}, [X(3, 4), X(3, 4)]),
    ("HuberLoss", (), {"delta": 0.7, "reduction": "none"}, [X(3, 4), X(3, 4)]),
    ("MarginRankingLoss", (), {"margin": 0.2}, [X(5), X(5), SIGN(5)]),
    ("HingeEmbeddingLoss", (), {"margin": 0.5}, [X(3, 4), SIGN(3, 4)]),
    ("CosineEmbeddingLoss", (), {"margin": 0.1}, [X(4, 5), X(4, 5), SIGN(4)]),
    ("SoftMarginLoss", (), {}, [X(3, 4), SIGN(3, 4)]),
    ("MultiLabelMarginLoss", (), {}, [X(3, 4), MULTILABEL(3, 4)]),
    ("MultiLabelSoftMarginLoss", (T([1.0, 2.0, 0.5, 1.5]),), {}, [X(3, 4), BIN(3, 4)]),
    ("MultiMarginLoss", (), {"p": 2, "margin": 0.5, "weight": T([1.0, 2.0, 0.5, 1.5])},
     [X(3, 4), INT(4, 3)]),
    ("TripletMarginLoss", (), {"margin": 0.5, "p": 1, "swap": True},
     [X(4, 5), X(4, 5), X(4, 5)]),
    ("TripletMarginWithDistanceLoss", (), {}, [X(4, 5), X(4, 5), X(4, 5)]),
    ("TripletMarginWithDistanceLoss", (),
     {"distance_function": L(lambda lib: lib.nn.PairwiseDistance(p=1.0)), "swap": True,
      "margin": 2.0}, [X(4, 5), X(4, 5), X(4, 5)]),
    ("PoissonNLLLoss", (), {}, [X(3, 4), lambda r: C(r.uniform(0, 3, (3, 4)))]),
    ("PoissonNLLLoss", (), {"log_input": False, "full": True, "reduction": "sum"},
     [POS(3, 4), lambda r: C(r.uniform(0, 3, (3, 4)))]),
    ("GaussianNLLLoss", (), {}, [X(3, 4), X(3, 4), POS(3, 4)]),
    ("GaussianNLLLoss", (), {"full": True, "reduction": "sum"}, [X(3, 4), X(3, 4), POS(3)]),
    ("GaussianNLLLoss", (), {"reduction": "none"}, [X(2, 3, 4), X(2, 3, 4), POS(2, 1, 4)]),
    ("CrossEntropyLoss", (), {"label_smoothing": 0.1}, [X(3, 5), INT(5, 3)]),
    ("NLLLoss", (T([1.0, 2.0, 0.5, 1.5, 1.0]),), {"ignore_index": 1}, [X(3, 5), INT(5, 3)]),
    ("NLLLoss2d", (), {}, [X(2, 3, 4, 5), INT(3, 2, 4, 5)]),
    ("CTCLoss", (), {"blank": 1, "zero_infinity": True},
     [X(6, 3, 4), lambda r: C(np.array([[2, 3, 2], [0, 3, 0], [2, 2, 2]])),
      lambda r: C(np.array([6, 5, 2])), lambda r: C(np.array([3, 2, 3]))]),
]

# Modules whose training-mode output is random (compared in eval mode only).
RANDOM_IN_TRAINING = {"RReLU"}


def _case_id(case):
    name, args, kwargs, _ = case
    parts = [repr(a) if not isinstance(a, (T, L)) else type(a).__name__ for a in args]
    parts += [f"{k}={v!r}" if not isinstance(v, (T, L)) else k for k, v in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _arg(v, lib):
    if isinstance(v, T):
        return lib.tensor(v.a)
    if isinstance(v, L):
        return v.fn(lib)
    return v


def _build(lib, name, args, kwargs):
    cls = getattr(lib.nn, name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls(*[_arg(a, lib) for a in args], **{k: _arg(v, lib) for k, v in kwargs.items()})


def _inputs(spec, seed):
    r = np.random.default_rng(seed)
    made = spec(r) if callable(spec) else [f(r) for f in spec]
    return made


def _leaves(lib, made):
    return [lib.tensor(m.a, requires_grad=isinstance(m, G)) for m in made]


def _np(t):
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def _outs(out):
    return list(out) if isinstance(out, tuple) else [out]


def _seed_parameters(lib, module, seed=0):
    """The same parameter values, uniform in [-1, 1), in either library's module."""
    r = np.random.default_rng(seed)
    with lib.no_grad():
        for p in module.parameters():
            p.copy_(lib.tensor(r.uniform(-1, 1, tuple(p.shape))))


def _run(lib, module, leaves, made):
    """Forward on copies of the leaves (in-place modules may write them), then backward of
    sum(w_i * out_i) over the float outputs, with the same random w_i in both libraries."""
    out = module(*[x.clone() if isinstance(m, G) else x for x, m in zip(leaves, made)])
    outs = _outs(out)
    r = np.random.default_rng(2)
    total = None
    for o in outs:
        w = r.standard_normal(tuple(o.shape))
        if o.dtype == lib.float64 and o.requires_grad:
            term = (o * lib.tensor(w)).sum()
            total = term if total is None else total + term
    if total is not None:
        total.backward()
    return outs


def _module_results(case, lib):
    """repr and state_dict layout of the module as built, then (float64, seeded parameters)
    in train and eval mode: outputs, gradients of inputs and parameters, buffers."""
    name, args, kwargs, spec = case
    module = _build(lib, name, args, kwargs)
    res = {"repr": repr(module),
           "state": [[k, str(v.dtype), list(v.shape)] for k, v in module.state_dict().items()]}
    module.double()
    _seed_parameters(lib, module)
    for training in (True, False):
        module.train(training)
        made = _inputs(spec, 1)
        leaves = _leaves(lib, made)
        module.zero_grad()
        outs = _run(lib, module, leaves, made)
        mode = "train" if training else "eval"
        if training and name in RANDOM_IN_TRAINING:
            res[f"{mode} output shapes"] = [list(o.shape) for o in outs]
            continue
        res.update({f"{mode} output {i}": o for i, o in enumerate(outs)})
        res.update({f"{mode} grad of input {i}": x.grad for i, x in enumerate(leaves)
                    if x.grad is not None})
        res.update({f"{mode} grad of {n}": p.grad for n, p in module.named_parameters()})
        res.update({f"{mode} buffer {n} after forward": b for n, b in module.named_buffers()})
    return res


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_module_matches_torch(case):
    """Values to 1e-7: torch computes a few float64 backward constants in float32
    (hardsigmoid's 1/6, celu's 1/alpha, lp_pool's), an error of 3e-8 relative that
    pytorchlite does not share."""
    golden.assert_same_results(lambda lib: _module_results(case, lib))


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_module_float32_forward(case):
    """The default dtype: float32 parameters and inputs give float32 outputs equal to
    torch's to float32 precision (eval mode)."""
    name, args, kwargs, spec = case

    def run(lib):
        module = _build(lib, name, args, kwargs).float().eval()
        _seed_parameters(lib, module)
        made = _inputs(spec, 3)
        cast = [m.a.astype(np.float32) if isinstance(m, G) or m.a.dtype == np.float64
                else m.a for m in made]
        return {f"output {i}": o for i, o in
                enumerate(_outs(module(*[lib.tensor(a) for a in cast])))}
    golden.assert_same_results(run, rtol=2e-5, atol=2e-5)


def test_every_module_has_a_row():
    """Every module class exported by pytorchlite.nn that torch.nn also has appears in
    CASES (the containers, Identity/Flatten and the other helpers' modules aside)."""
    others = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
              "ParameterDict", "Identity", "Flatten", "Unflatten",
              "MultiheadAttention",   # its own tests: tests/nn/test_seq_layers.py
              "AdaptiveAvgPool3d", "MaxUnpool3d",   # tests/nn/test_pooling_3d.py
              "AdaptiveMaxPool3d",                  # tests/nn/test_pooling_3d.py
              "FractionalMaxPool2d", "FractionalMaxPool3d",   # tests/aten/test_pool_fractional.py
              "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d",   # tests/nn/
              "LazyConvTranspose1d", "LazyConvTranspose2d",             # test_lazy_modules.py
              "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
              "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d",
              "SyncBatchNorm",   # tests/distributed/test_sync_batch_norm.py
              "LinearCrossEntropyLoss"}   # tests/nn/test_linear_cross_entropy.py
    exported = {n for n in dir(ptl.nn) if isinstance(getattr(ptl.nn, n), type)
                and issubclass(getattr(ptl.nn, n), ptl.nn.Module)}
    owned = {n for n in exported if getattr(ptl.nn, n).__module__.rsplit(".", 1)[-1] in
             {"activation", "linear", "conv", "pooling", "batchnorm", "instancenorm",
              "padding", "pixelshuffle", "upsampling", "distance", "fold", "loss"}}
    assert owned - {c[0] for c in CASES} - others == set()
    golden.assert_equal(sorted(n for n in owned if hasattr(ptl.nn, n)),
                        lambda: sorted(n for n in owned if hasattr(torch.nn, n)))


def test_rrelu_training_slopes_in_range():
    m = ptl.nn.RReLU(0.1, 0.3)
    x = ptl.tensor(-np.linspace(0.5, 3.0, 1000))
    slopes = (m(x) / x).numpy()
    assert slopes.min() >= 0.1 and slopes.max() <= 0.3
    assert slopes.std() > 0.01
    m.eval()
    np.testing.assert_allclose((m(x) / x).numpy(), 0.2)


@pytest.mark.parametrize("name", [
    "ReLU", "ELU", "Hardtanh", "Softmax", "PReLU", "Conv2d", "ConvTranspose1d", "MaxPool3d",
    "AvgPool1d", "AvgPool3d", "LPPool2d", "AdaptiveMaxPool2d", "BatchNorm1d", "InstanceNorm2d",
    "ZeroPad2d", "ConstantPad3d", "Upsample", "Fold", "Unfold", "PairwiseDistance", "Bilinear",
    "TripletMarginLoss", "MultiMarginLoss", "HuberLoss", "CrossEntropyLoss", "GaussianNLLLoss"])
def test_constants_as_torch(name):
    golden.assert_equal(list(getattr(ptl.nn, name).__constants__),
                        lambda: list(getattr(torch.nn, name).__constants__))


# ---- initialisation ----------------------------------------------------------------------

@pytest.mark.parametrize("name,args", [
    ("ConvTranspose1d", (16, 8, 5)), ("ConvTranspose2d", (12, 8, 3)),
    ("ConvTranspose2d", (12, 8, 3, 1, 0, 0, 4)), ("ConvTranspose3d", (6, 4, 2)),
    ("Conv2d", (8, 12, 3)), ("Bilinear", (20, 10, 30)), ("Linear", (64, 32)),
])
def test_init_uniform_within_torch_bound(name, args):
    """torch's bounds: kaiming_uniform with a=sqrt(5) over fan_in = weight.size(1) times the
    kernel size (also for the transposed convolutions, whose size(1) is out_channels /
    groups), bias uniform within 1/sqrt(fan_in); Bilinear's both 1/sqrt(in1_features)."""
    ours = getattr(ptl.nn, name)(*args)
    shape = tuple(ours.weight.shape)
    golden.assert_equal(list(shape), lambda: list(getattr(torch.nn, name)(*args).weight.shape))
    if name == "Bilinear":
        bound = bias_bound = 1 / math.sqrt(shape[1])
    else:
        fan_in = shape[1] * math.prod(shape[2:])
        gain = math.sqrt(2.0 / (1 + 5))
        bound = gain * math.sqrt(3.0 / fan_in)
        bias_bound = 1 / math.sqrt(fan_in)
    for p, b in ((_np(ours.weight), bound), (_np(ours.bias), bias_bound)):
        assert p.dtype == np.float32
        assert np.abs(p).max() <= b * (1 + 1e-6)
        if p.size >= 200:                          # uniform(-b, b): std b / sqrt(3)
            assert abs(p.std() - b / math.sqrt(3)) < 0.15 * b / math.sqrt(3)
            assert np.abs(p).max() > 0.9 * b


def test_norm_and_prelu_init():
    bn = ptl.nn.BatchNorm2d(5)
    np.testing.assert_array_equal(_np(bn.weight), np.ones(5, np.float32))
    np.testing.assert_array_equal(_np(bn.bias), np.zeros(5, np.float32))
    np.testing.assert_array_equal(bn.running_var.numpy(), np.ones(5, np.float32))
    assert bn.num_batches_tracked.dtype == ptl.int64 and bn.num_batches_tracked.item() == 0
    assert ptl.nn.InstanceNorm1d(3).weight is None
    assert ptl.nn.InstanceNorm1d(3).running_mean is None
    np.testing.assert_array_equal(_np(ptl.nn.PReLU(3, 0.1).weight),
                                  np.full(3, 0.1, np.float32))


# ---- module behaviour beyond one forward -------------------------------------------------

@pytest.mark.parametrize("momentum", [None, 0.1])
def test_batchnorm_running_stats_over_batches(momentum):
    def run(lib):
        m = lib.nn.BatchNorm1d(3, momentum=momentum).double()
        r = np.random.default_rng(5)
        for _ in range(3):
            m(lib.tensor(r.standard_normal((4, 3)) * 2 + 1))
        res = dict(m.named_buffers())
        m.eval()
        res["eval output"] = m(lib.tensor(r.standard_normal((2, 3))))
        return res
    golden.assert_same_results(run)
    m = ptl.nn.BatchNorm1d(3, momentum=momentum)
    for _ in range(3):
        m(ptl.ones(4, 3))
    assert m.num_batches_tracked.item() == 3


def test_batchnorm_loads_checkpoint_without_num_batches_tracked():
    m = ptl.nn.BatchNorm1d(2)
    sd = {k: v for k, v in m.state_dict().items() if k != "num_batches_tracked"}
    m.load_state_dict(sd)
    assert m.num_batches_tracked.item() == 0


def test_conv_transpose_output_size():
    def run(lib):
        m = lib.nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1).double()
        _seed_parameters(lib, m)
        x = lib.tensor(np.random.default_rng(3).standard_normal((1, 2, 4, 5)))
        return {f"output_size={size}": m(x, output_size=size)
                for size in ([8, 10], (1, 3, 7, 9), [7, 9])}
    golden.assert_same_results(run)


def test_triplet_with_distance_default_is_pairwise_distance_module():
    m = ptl.nn.TripletMarginWithDistanceLoss()
    assert isinstance(m.distance_function, ptl.nn.PairwiseDistance)
    golden.assert_equal(repr(m), lambda: repr(torch.nn.TripletMarginWithDistanceLoss()))


@pytest.mark.parametrize("sa,red,expected",
                         [(False, None, "sum"), (None, False, "none"), (True, True, "mean")])
def test_legacy_reduction_arguments(sa, red, expected):
    with pytest.warns(UserWarning, match=re.escape(
            f"size_average and reduce args will be deprecated, please use "
            f"reduction='{expected}' instead.")):
        m = ptl.nn.SmoothL1Loss(size_average=sa, reduce=red)
    assert m.reduction == expected

    def torch_reduction():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.nn.SmoothL1Loss(size_average=sa, reduce=red).reduction
    golden.assert_equal(m.reduction, torch_reduction)


def test_hardtanh_deprecated_names():
    with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated"):
        m = ptl.nn.Hardtanh(min_value=-2.0)
    assert repr(m) == "Hardtanh(min_val=-2.0, max_val=1.0)"


def test_instance_norm_mismatch_warns_without_affine():
    with pytest.warns(UserWarning, match=re.escape(
            "input's size at dim=1 does not match num_features. You can silence this warning "
            "by not passing in num_features, which is not used because affine=False")):
        ptl.nn.InstanceNorm1d(3)(ptl.tensor(np.ones((2, 4, 5))))


def test_upsample_stores_scale_factor_as_float():
    assert ptl.nn.Upsample(scale_factor=2).scale_factor == 2.0
    assert ptl.nn.Upsample(scale_factor=(2, 3)).scale_factor == (2.0, 3.0)
    assert ptl.nn.Upsample(size=4).scale_factor is None


@pytest.mark.filterwarnings("ignore:size_average and reduce args")
def test_functional_losses_match_torch():
    r = np.random.default_rng(9)
    a, b, v = r.standard_normal((3, 4)), r.uniform(0.5, 2, (3, 4)), r.uniform(0.1, 1, (3, 4))
    calls = [
        lambda F, a, b, v: F.poisson_nll_loss(a, b, reduction="none"),
        lambda F, a, b, v: F.poisson_nll_loss(b, b * 2, log_input=False, full=True,
                                              size_average=False),
        lambda F, a, b, v: F.gaussian_nll_loss(a, b, 0.5),
        lambda F, a, b, v: F.gaussian_nll_loss(a, b, v, full=True),
        lambda F, a, b, v: F.triplet_margin_with_distance_loss(a, b, v, margin=0.5,
                                                               reduction="none"),
    ]
    golden.assert_same_results(lambda lib: {
        f"call {i}": call(lib.nn.functional, lib.tensor(a), lib.tensor(b), lib.tensor(v))
        for i, call in enumerate(calls)})


def test_gaussian_nll_var_gradient_through_clamp():
    """var below eps is clamped without cutting its gradient (clamp under no_grad)."""
    r = np.random.default_rng(4)
    a, b = r.standard_normal((2, 3)), r.standard_normal((2, 3))
    v = np.array([[1e-9, 0.5, 1.0], [0.2, 1e-8, 2.0]])

    def run(lib):
        var = lib.tensor(v, requires_grad=True)
        lib.nn.functional.gaussian_nll_loss(lib.tensor(a), lib.tensor(b), var).backward()
        return {"grad of var": var.grad}
    golden.assert_same_results(run)


# ---- errors: same exception type and message as torch ------------------------------------

def _x(lib, *shape):
    return lib.tensor(np.ones(shape))


ERRORS = [
    ("BatchNorm1d 4D", lambda lib: lib.nn.BatchNorm1d(3)(_x(lib, 2, 3, 4, 5))),
    ("BatchNorm1d 1D", lambda lib: lib.nn.BatchNorm1d(3)(_x(lib, 3))),
    ("BatchNorm2d 3D", lambda lib: lib.nn.BatchNorm2d(3)(_x(lib, 3, 4, 5))),
    ("BatchNorm3d 4D", lambda lib: lib.nn.BatchNorm3d(3)(_x(lib, 2, 3, 4, 5))),
    ("BatchNorm1d one value", lambda lib: lib.nn.BatchNorm1d(3)(_x(lib, 1, 3))),
    ("InstanceNorm1d 4D", lambda lib: lib.nn.InstanceNorm1d(3)(_x(lib, 2, 3, 4, 5))),
    ("InstanceNorm2d 2D", lambda lib: lib.nn.InstanceNorm2d(3)(_x(lib, 3, 4))),
    ("InstanceNorm3d 3D", lambda lib: lib.nn.InstanceNorm3d(3)(_x(lib, 3, 4, 4))),
    ("InstanceNorm affine size", lambda lib: lib.nn.InstanceNorm2d(3, affine=True)(
        _x(lib, 2, 4, 5, 5))),
    ("Softmax2d 2D", lambda lib: lib.nn.Softmax2d()(_x(lib, 2, 3))),
    ("CircularPad1d 4D", lambda lib: lib.nn.CircularPad1d(1)(_x(lib, 1, 2, 3, 4))),
    ("CircularPad2d 2D", lambda lib: lib.nn.CircularPad2d(1)(_x(lib, 3, 4))),
    ("CircularPad3d 3D", lambda lib: lib.nn.CircularPad3d(1)(_x(lib, 3, 4, 4))),
    ("ConvTranspose padding_mode", lambda lib: lib.nn.ConvTranspose2d(2, 2, 3,
                                                                      padding_mode="reflect")),
    ("Conv padding_mode", lambda lib: lib.nn.Conv2d(2, 2, 3, padding_mode="bogus")),
    ("Conv padding string", lambda lib: lib.nn.Conv1d(2, 2, 3, padding="full")),
    ("Conv strided same", lambda lib: lib.nn.Conv2d(2, 2, 3, stride=2, padding="same")),
    ("Conv groups", lambda lib: lib.nn.Conv2d(3, 2, 3, groups=2)),
    ("ConvTranspose groups", lambda lib: lib.nn.ConvTranspose1d(2, 3, 3, groups=2)),
    ("ConvTranspose zero groups", lambda lib: lib.nn.ConvTranspose1d(2, 3, 3, groups=0)),
    ("ConvTranspose output_size range", lambda lib: lib.nn.ConvTranspose2d(2, 2, 3, stride=2)(
        _x(lib, 1, 2, 4, 4), output_size=[20, 20])),
    ("ConvTranspose output_size length", lambda lib: lib.nn.ConvTranspose2d(2, 2, 3)(
        _x(lib, 1, 2, 4, 4), output_size=[6, 6, 6])),
    ("Hardtanh bounds", lambda lib: lib.nn.Hardtanh(1.0, 0.5)),
    ("MultiMarginLoss p", lambda lib: lib.nn.MultiMarginLoss(p=3)),
    ("MultiMarginLoss weight", lambda lib: lib.nn.MultiMarginLoss(weight=_x(lib, 2, 2))),
    ("TripletMarginLoss margin", lambda lib: lib.nn.TripletMarginLoss(margin=0.0)),
    ("TripletMarginWithDistanceLoss margin",
     lambda lib: lib.nn.TripletMarginWithDistanceLoss(margin=-1.0)),
    ("triplet dims", lambda lib: lib.nn.TripletMarginWithDistanceLoss()(
        _x(lib, 2, 3), _x(lib, 2, 3), _x(lib, 3))),
    ("triplet reduction", lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(
        _x(lib, 2, 3), _x(lib, 2, 3), _x(lib, 2, 3), reduction="avg")),
    ("triplet functional margin", lambda lib: lib.nn.functional.triplet_margin_with_distance_loss(
        _x(lib, 2, 3), _x(lib, 2, 3), _x(lib, 2, 3), margin=0.0)),
    ("GaussianNLL negative var", lambda lib: lib.nn.GaussianNLLLoss()(
        _x(lib, 2, 3), _x(lib, 2, 3), -_x(lib, 2, 3))),
    ("GaussianNLL negative float var", lambda lib: lib.nn.functional.gaussian_nll_loss(
        _x(lib, 2, 3), _x(lib, 2, 3), -1.0)),
    ("GaussianNLL var size", lambda lib: lib.nn.GaussianNLLLoss()(
        _x(lib, 2, 3), _x(lib, 2, 3), _x(lib, 3, 2))),
    ("GaussianNLL reduction", lambda lib: lib.nn.GaussianNLLLoss(reduction="avg")(
        _x(lib, 2, 3), _x(lib, 2, 3), _x(lib, 2, 3))),
    ("PoissonNLL reduction", lambda lib: lib.nn.PoissonNLLLoss(reduction="avg")(
        _x(lib, 2, 3), _x(lib, 2, 3))),
    ("Bilinear input2 size", lambda lib: lib.nn.Bilinear(2, 3, 4).double()(
        _x(lib, 5, 2), _x(lib, 5, 4))),
    ("Bilinear input1 size", lambda lib: lib.nn.Bilinear(2, 3, 4).double()(
        _x(lib, 5, 3), _x(lib, 5, 3))),
    ("Bilinear batch", lambda lib: lib.nn.Bilinear(2, 3, 4).double()(
        _x(lib, 5, 2), _x(lib, 4, 3))),
    ("Bilinear dims", lambda lib: lib.nn.Bilinear(2, 3, 4).double()(
        _x(lib, 5, 2), _x(lib, 1, 5, 3))),
    ("bilinear bias", lambda lib: lib.nn.functional.bilinear(
        _x(lib, 5, 2), _x(lib, 5, 3), _x(lib, 4, 2, 3), _x(lib, 3))),
]


@pytest.mark.parametrize("call", [e[1] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_error_matches_torch(call):
    golden.assert_raises(lambda: call(ptl), lambda: call(torch),
                         compare=lambda a, b: golden.sets_sorted(a) == golden.sets_sorted(b))
