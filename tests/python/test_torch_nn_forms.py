"""The torch-namespace forms of the nn.functional ops (pytorchlite/_nn_ops.py): each is the F
function or calls it with ATen's argument order, so the wrappers are checked against F (tested
against NumPy in tests/nn) with the same random stream; the new computations (pdist,
channel_shuffle, the RNN cells with explicit weights) against NumPy in float64 with gradcheck;
PyTorch's errors; and, with torch installed, every function called in both libraries."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn.functional as F
from pytorchlite import _nn_ops
from pytorchlite.autograd import gradcheck
from helpers import LAYOUTS, assert_close, assert_raises_like_torch, make, num_threads, \
    to_numpy, torch, torch_ref

SAME_AS_F = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
             "conv_transpose3d", "adaptive_avg_pool1d", "pixel_shuffle",
             "pixel_unshuffle", "prelu", "bilinear", "cosine_similarity", "pairwise_distance",
             "pdist", "channel_shuffle", "native_channel_shuffle", "conv_tbc"]


def _f64(*shape, seed=0, grad=False):
    t = ptl.tensor(np.random.default_rng(seed).standard_normal(shape))
    return t.requires_grad_() if grad else t


def test_exported_and_same_as_f():
    for name in _nn_ops.__all__:
        assert getattr(ptl, name) is getattr(_nn_ops, name)
    for name in SAME_AS_F:
        assert getattr(ptl, name) is getattr(F, name)
    # F.rms_norm is Python in PyTorch and torch.rms_norm C: two functions, told apart by
    # __torch_function__ (tests/fx/test_fx_functional.py)
    assert ptl.rms_norm is not F.rms_norm
    x = _f64(2, 3)
    assert ptl.equal(ptl.rms_norm(x, (3,), eps=1e-3), F.rms_norm(x, (3,), eps=1e-3))
    # the binding, as PyTorch's torch.grid_sampler_2d is a C function (torch.ops' packet
    # raises torch.ops' errors)
    assert ptl.grid_sampler_2d is ptl._ops_namespace.aten_bindings.grid_sampler_2d
    assert ptl.Tensor.prelu is not None


def _same_draw(fn_torch_form, fn_f, *inputs):
    """Both calls on clones of the inputs, from the same seed."""
    ptl.manual_seed(7)
    a = fn_torch_form(*[x.clone() for x in inputs])
    ptl.manual_seed(7)
    b = fn_f(*[x.clone() for x in inputs])
    assert_close(a, to_numpy(b), rtol=0, atol=0)
    return a


@pytest.mark.parametrize("shape", [(4, 3, 5), (2, 3), (0, 3, 2)])
def test_dropouts_match_f(shape):
    x = _f64(*shape)
    for p in (0.0, 0.3, 1.0):
        for train in (True, False):
            _same_draw(lambda t: ptl.dropout(t, p, train), lambda t: F.dropout(t, p, train), x)
            _same_draw(lambda t: ptl.dropout_(t, p, train),
                       lambda t: F.dropout(t, p, train, True), x)
            _same_draw(lambda t: ptl.alpha_dropout(t, p, train),
                       lambda t: F.alpha_dropout(t, p, train), x)
            _same_draw(lambda t: ptl.alpha_dropout_(t, p, train),
                       lambda t: F.alpha_dropout(t, p, train, True), x)
            _same_draw(lambda t: ptl.feature_alpha_dropout(t, p, train),
                       lambda t: F.feature_alpha_dropout(t, p, train), x)
            _same_draw(lambda t: ptl.feature_alpha_dropout_(t, p, train),
                       lambda t: F.feature_alpha_dropout(t, p, train, True), x)


def test_feature_dropout_zeroes_whole_channels():
    x = ptl.ones(50, 8, 3, 2, dtype=ptl.float64)
    ptl.manual_seed(0)
    y = ptl.feature_dropout(x, 0.5, True).numpy()
    per_channel = y.reshape(50, 8, -1)
    assert np.all((per_channel == 0).all(-1) | (per_channel == 2).all(-1))
    kept = (per_channel == 2).all(-1).mean()
    assert 0.4 < kept < 0.6
    assert ptl.feature_dropout(x, 0.5, False) is x
    z = x.clone()
    assert ptl.feature_dropout_(z, 0.5, True) is z
    assert set(np.unique(z.numpy())) <= {0.0, 2.0}
    w = _f64(4, 3, grad=True)   # 2-D: (N, C), each element its own channel
    assert gradcheck(lambda t: (ptl.manual_seed(1), ptl.feature_dropout(t, 0.4, True))[1], (w,))


def test_dropout_errors():
    x = _f64(2, 3)
    for name in ("dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
                 "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_"):
        assert_raises_like_torch(lambda lib: getattr(lib, name)(lib.ones(2, 3), 1.5, True),
                                 RuntimeError,
                                 "dropout probability has to be between 0 and 1, but got 1.5")
    for name in ("feature_dropout", "feature_alpha_dropout"):
        assert_raises_like_torch(lambda lib: getattr(lib, name)(lib.ones(3), 0.5, True),
                                 RuntimeError,
                                 "Feature dropout requires at least 2 dimensions in the input")
    with pytest.raises(TypeError):
        ptl.dropout(x, 0.5)   # train is required, as in ATen's schema


def test_normalization_argument_order():
    x = _f64(4, 3, 5)
    w, b = _f64(3, seed=1), _f64(3, seed=2)
    rm, rv = _f64(3, seed=3), _f64(3, seed=4).abs()
    got = ptl.batch_norm(x, w, b, rm.clone(), rv.clone(), False, 0.1, 1e-5, True)
    want = F.batch_norm(x, rm.clone(), rv.clone(), w, b, False, 0.1, 1e-5)
    assert_close(got, to_numpy(want), rtol=0, atol=0)
    rm1, rm2 = rm.clone(), rm.clone()
    ptl.batch_norm(x, w, b, rm1, rv.clone(), True, 0.2, 1e-5, False)
    F.batch_norm(x, rm2, rv.clone(), w, b, True, 0.2, 1e-5)
    assert_close(rm1, to_numpy(rm2), rtol=0, atol=0)
    got = ptl.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, True)
    assert_close(got, to_numpy(F.instance_norm(x, None, None, w, b, True, 0.1, 1e-5)),
                 rtol=0, atol=0)
    mean = x.numpy().mean(-1, keepdims=True)
    var = x.numpy().var(-1, keepdims=True)
    lw, lb = _f64(5, seed=5), _f64(5, seed=6)
    assert_close(ptl.layer_norm(x, [5], lw, lb),
                 (x.numpy() - mean) / np.sqrt(var + 1e-5) * lw.numpy() + lb.numpy())
    assert_close(ptl.layer_norm(x, (5,), None, None, 1e-3, False),
                 (x.numpy() - mean) / np.sqrt(var + 1e-3))
    g = x.numpy().reshape(4, 3, 5)
    assert_close(ptl.group_norm(x, 1), (g - g.mean((1, 2), keepdims=True)) /
                 np.sqrt(g.var((1, 2), keepdims=True) + 1e-5))
    assert gradcheck(lambda t, u: ptl.layer_norm(t, [5], u), (_f64(2, 5, grad=True),
                                                              _f64(5, seed=1, grad=True)))
    assert gradcheck(lambda t: ptl.batch_norm(t, None, None, None, None, True, 0.1, 1e-5,
                                              True), (_f64(4, 3, grad=True),))


def test_pooling_forms():
    x = _f64(2, 3, 9)
    a = x.numpy()
    assert_close(ptl.max_pool1d(x, 3), a.reshape(2, 3, 3, 3).max(-1))
    assert_close(ptl.max_pool1d(x, [2], [3], 1), to_numpy(F.max_pool1d(x, 2, 3, 1)))
    v, i = ptl.max_pool1d_with_indices(x, 3)
    assert_close(i, a.reshape(2, 3, 3, 3).argmax(-1) + np.arange(3) * 3)
    assert_close(ptl.avg_pool1d(x, 3), a.reshape(2, 3, 3, 3).mean(-1))
    assert_close(ptl.avg_pool1d(x, 2, 2, 1, True, False),
                 to_numpy(F.avg_pool1d(x, 2, 2, 1, True, False)))
    x2 = _f64(1, 2, 4, 6)
    assert_close(ptl.max_pool2d(x2, 2), x2.numpy().reshape(1, 2, 2, 2, 3, 2).max((3, 5)))
    assert_close(ptl.max_pool2d(x2, (2, 3), (), 0, 1, True),
                 to_numpy(F.max_pool2d(x2, (2, 3), None, 0, 1, True)))
    x3 = _f64(1, 1, 2, 4, 4)
    assert_close(ptl.max_pool3d(x3, 2), x3.numpy().reshape(1, 1, 1, 2, 2, 2, 2, 2)
                 .max((3, 5, 7)))
    values, indices = ptl.adaptive_max_pool1d(x, 3)
    assert_close(values, a.reshape(2, 3, 3, 3).max(-1))
    assert_close(indices, a.reshape(2, 3, 3, 3).argmax(-1) + np.arange(3) * 3)
    assert gradcheck(lambda t: ptl.avg_pool1d(t, 2), (_f64(1, 2, 6, grad=True),))


def test_activation_forms():
    x = _f64(3, 4)
    a = x.numpy()
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    assert_close(ptl.selu(x), scale * np.where(a > 0, a, alpha * np.expm1(a)))
    assert_close(ptl.celu(x, 0.5), np.where(a > 0, a, 0.5 * np.expm1(a / 0.5)))
    y = x.clone()
    assert ptl.selu_(y) is y and ptl.celu_(x.clone(), 2.0).shape == x.shape
    assert_close(y, scale * np.where(a > 0, a, alpha * np.expm1(a)))
    assert_close(ptl.rrelu(x), np.where(a >= 0, a, a * (0.125 + 1 / 3) / 2))
    g1, g2 = ptl.Generator().manual_seed(3), ptl.Generator().manual_seed(3)
    r1 = ptl.rrelu(x, 0.1, 0.3, True, g1)
    r2 = ptl.rrelu_(x.clone(), 0.1, 0.3, True, generator=g2)
    assert_close(r1, to_numpy(r2), rtol=0, atol=0)
    slope = r1.numpy()[a < 0] / a[a < 0]
    assert np.all((slope >= 0.1) & (slope <= 0.3))
    assert_close(x.prelu(ptl.tensor([0.25], dtype=ptl.float64)), np.where(a > 0, a, 0.25 * a))
    with pytest.raises(TypeError):
        ptl.selu(x, True)   # no inplace switch in the torch form


def _reduced(loss, reduction):
    return [loss, loss.mean(), loss.sum()][reduction]


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_with_integer_reductions(reduction):
    x, y, t = _f64(6), _f64(6, seed=1), ptl.tensor([1.0, -1, 1, -1, -1, 1], dtype=ptl.float64)
    a, b, s = x.numpy(), y.numpy(), t.numpy()
    assert_close(ptl.margin_ranking_loss(x, y, t, 0.5, reduction),
                 _reduced(np.maximum(0, -s * (a - b) + 0.5), reduction))
    assert_close(ptl.hinge_embedding_loss(x, t, 2.0, reduction),
                 _reduced(np.where(s == 1, a, np.maximum(0, 2.0 - a)), reduction))
    p = ptl.tensor(np.random.default_rng(3).uniform(0.1, 0.9, 6))
    assert_close(ptl.kl_div(x, p, reduction),
                 _reduced(p.numpy() * (np.log(p.numpy()) - a), reduction))
    assert_close(ptl.kl_div(x, y, reduction, log_target=True),
                 _reduced(np.exp(b) * (b - a), reduction))
    bce = np.maximum(a, 0) - a * p.numpy() + np.log1p(np.exp(-np.abs(a)))
    assert_close(ptl.binary_cross_entropy_with_logits(x, p, None, None, reduction),
                 _reduced(bce, reduction))
    assert_close(ptl.poisson_nll_loss(x, p, True, False, 1e-8, reduction),
                 _reduced(np.exp(a) - p.numpy() * a, reduction))
    x2, y2, z2 = _f64(4, 3), _f64(4, 3, seed=1), _f64(4, 3, seed=2)
    t4 = ptl.tensor([1.0, -1, -1, 1], dtype=ptl.float64)
    cos = (x2.numpy() * y2.numpy()).sum(1) / np.sqrt(
        (x2.numpy() ** 2).sum(1) * (y2.numpy() ** 2).sum(1))
    assert_close(ptl.cosine_embedding_loss(x2, y2, t4, 0.1, reduction),
                 _reduced(np.where(t4.numpy() == 1, 1 - cos, np.maximum(0, cos - 0.1)),
                          reduction))
    d_pos = np.linalg.norm(x2.numpy() - y2.numpy() + 1e-6, axis=1)
    d_neg = np.linalg.norm(x2.numpy() - z2.numpy() + 1e-6, axis=1)
    assert_close(ptl.triplet_margin_loss(x2, y2, z2, 1.0, 2.0, 1e-6, False, reduction),
                 _reduced(np.maximum(d_pos - d_neg + 1.0, 0), reduction))
    assert gradcheck(lambda u, v: ptl.margin_ranking_loss(u, v, t, 0.5, reduction),
                     (_f64(6, grad=True), _f64(6, seed=1, grad=True)))


def test_loss_defaults_and_bad_reduction():
    x, t = _f64(5), ptl.tensor([1.0, -1, 1, -1, 1], dtype=ptl.float64)
    # PyTorch's bindings read the schema's default `reduction=Mean` as 0: no reduction
    assert_close(ptl.hinge_embedding_loss(x, t),
                 to_numpy(F.hinge_embedding_loss(x, t, reduction="none")))
    assert_close(ptl.kl_div(x, x.exp()), to_numpy(F.kl_div(x, x.exp(), reduction="none")))
    y, z = _f64(5, seed=1), _f64(5, seed=2)
    for loss in (ptl.margin_ranking_loss(x, y, t), ptl.cosine_embedding_loss(x[None], y[None],
                                                                             t[:1]),
                 ptl.binary_cross_entropy_with_logits(x, y.sigmoid()),
                 ptl.triplet_margin_loss(x[None], y[None], z[None])):
        assert loss.dim() == 1
    with pytest.raises(ValueError, match="3 is not a valid value for reduction"):
        ptl.hinge_embedding_loss(x, t, 1.0, 3)
    with pytest.raises(TypeError):
        ptl.poisson_nll_loss(x, x)   # log_input, full, eps and reduction are required


def test_ctc_loss_form():
    log_probs = _f64(6, 2, 4).log_softmax(2)
    targets = ptl.tensor([[1, 2, 1], [3, 1, 0]])
    for reduction in (0, 1, 2):
        got = ptl.ctc_loss(log_probs, targets, [6, 5], [3, 2], 0, reduction, True)
        want = F.ctc_loss(log_probs, targets, [6, 5], [3, 2], 0, ["none", "mean", "sum"][
            reduction], True)
        assert_close(got, to_numpy(want), rtol=0, atol=0)


def test_grid_sampler_forms():
    x = _f64(1, 2, 4, 5)
    theta = ptl.tensor([[[0.9, 0.1, 0.05], [-0.2, 1.1, 0.0]]], dtype=ptl.float64)
    grid = ptl.affine_grid_generator(theta, [1, 2, 3, 3], False)
    assert_close(grid, to_numpy(F.affine_grid(theta, [1, 2, 3, 3], False)), rtol=0, atol=0)
    for mode, name in enumerate(("bilinear", "nearest", "bicubic")):
        for pad, pad_name in enumerate(("zeros", "border", "reflection")):
            for align in (False, True):
                got = ptl.grid_sampler(x, grid, mode, pad, align)
                want = F.grid_sample(x, grid, name, pad_name, align)
                assert_close(got, to_numpy(want), rtol=0, atol=0)
    with pytest.raises(RuntimeError, match="unknown interpolation_mode 3"):
        ptl.grid_sampler(x, grid, 3, 0, False)
    with pytest.raises(RuntimeError, match="unknown padding_mode -1"):
        ptl.grid_sampler(x, grid, 0, -1, False)


def _np_pdist(a, p):
    rows = [(i, j) for i in range(a.shape[0]) for j in range(i + 1, a.shape[0])]
    d = np.array([a[i] - a[j] for i, j in rows]).reshape(len(rows), a.shape[1])
    if p == np.inf:
        return np.abs(d).max(1) if d.shape[1] else np.zeros(len(rows))
    if p == 0:
        return (d != 0).sum(1).astype(np.float64)
    return (np.abs(d) ** p).sum(1) ** (1 / p)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", [(5, 3), (1, 4), (0, 3), (4, 0), (2, 1)])
def test_pdist_against_numpy(shape, layout):
    x, a = make(shape, ptl.float64, layout)
    for p in (2.0, 1.0, 0.5, 3, 0, np.inf):
        assert_close(ptl.pdist(x, p), _np_pdist(a, p))
    assert_close(F.pdist(x.float()), _np_pdist(a, 2).astype(np.float32), dtype=ptl.float32)


@pytest.mark.parametrize("threads", [1, 2])
def test_pdist_chunks_give_the_one_pass_bits(monkeypatch, threads):
    # nn.functional._PDIST_CHUNK elements of differences at a time on a device (the CPU
    # takes the _pdist_forward kernel, which the chunk must not change): the pair counts 10
    # (5 rows) and 15 (6 rows) at, below and above a chunk of 10 pairs (20 elements)
    rng = np.random.default_rng(4)
    with num_threads(threads):
        for rows in (4, 5, 6, 9):
            a = rng.standard_normal((rows, 2))
            x = ptl.tensor(a, requires_grad=True)
            whole = {p: ptl.pdist(x, p) for p in (2.0, 1.0, 3, np.inf)}
            monkeypatch.setattr(F, "_PDIST_CHUNK", 20)
            for p, w in whole.items():
                got = ptl.pdist(x, p)
                np.testing.assert_array_equal(got.detach().numpy(), w.detach().numpy())
                assert_close(got.detach(), _np_pdist(a, p))
            assert gradcheck(lambda t: ptl.pdist(t), (ptl.tensor(a, requires_grad=True),))
            monkeypatch.setattr(F, "_PDIST_CHUNK", 1 << 18)


def test_pdist_gradients_and_errors():
    for p in (2.0, 1.0, 3.0, np.inf):
        assert gradcheck(lambda t: ptl.pdist(t, p), (_f64(4, 3, grad=True),))
    x = ptl.ones(3, 2, dtype=ptl.float64, requires_grad=True)   # zero distances: zero grad
    ptl.pdist(x).sum().backward()
    assert_close(x.grad, np.zeros((3, 2)))
    assert_raises_like_torch(lambda lib: lib.pdist(lib.ones(2, 3, 4)), RuntimeError,
                             "pdist only supports 2D tensors, got: 3D")
    assert_raises_like_torch(lambda lib: lib.pdist(lib.ones(3, 2), -1), RuntimeError,
                             "pdist only supports non-negative p values")
    assert_raises_like_torch(lambda lib: lib.pdist(lib.ones(3, 2, dtype=lib.int64)),
                             RuntimeError, "pdist only supports floating-point dtypes")


def _np_channel_shuffle(a, g):
    n, c = a.shape[:2]
    return a.reshape((n, g, c // g) + a.shape[2:]).swapaxes(1, 2).reshape(a.shape)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape,groups", [((2, 6, 3), 3), ((1, 4, 2, 2), 2), ((0, 6, 1), 2),
                                          ((2, 5, 3), 1), ((3, 4, 0), 4)])
def test_channel_shuffle_against_numpy(shape, groups, layout):
    x, a = make(shape, ptl.int64, layout)
    assert_close(ptl.channel_shuffle(x, groups), _np_channel_shuffle(a, groups))
    assert_close(ptl.nn.ChannelShuffle(groups)(x), _np_channel_shuffle(a, groups))


def test_channel_shuffle_module_gradients_and_errors():
    m = ptl.nn.ChannelShuffle(3)
    assert repr(m) == "ChannelShuffle(groups=3)"
    assert gradcheck(lambda t: F.channel_shuffle(t, 3), (_f64(2, 6, 2, grad=True),))
    assert_raises_like_torch(lambda lib: lib.channel_shuffle(lib.ones(2, 4), 2), RuntimeError,
                             "channel_shuffle expects input with > 2 dims, but got input with "
                             "sizes [2, 4]")
    assert_raises_like_torch(lambda lib: lib.channel_shuffle(lib.ones(2, 4, 1), 0),
                             RuntimeError, "Number of groups to divide channels in must be "
                             "positive. Value of groups:0")
    assert_raises_like_torch(lambda lib: lib.channel_shuffle(lib.ones(2, 3, 4), 2),
                             RuntimeError, "Number of channels must be divisible by groups. "
                             "Got 3 channels and 2 groups.")


def _sigmoid(v):
    return 1 / (1 + np.exp(-v))


def _np_cell(mode, x, hx, w_ih, w_hh, b_ih, b_hh):
    gi = x @ w_ih.T + (0 if b_ih is None else b_ih)
    gh = hx[0] @ w_hh.T + (0 if b_hh is None else b_hh)
    if mode == "lstm":
        i, f, g, o = np.split(gi + gh, 4, 1)
        c = _sigmoid(f) * hx[1] + _sigmoid(i) * np.tanh(g)
        return _sigmoid(o) * np.tanh(c), c
    if mode == "gru":
        ir, iz, in_ = np.split(gi, 3, 1)
        hr, hz, hn = np.split(gh, 3, 1)
        r, z = _sigmoid(ir + hr), _sigmoid(iz + hz)
        n = np.tanh(in_ + r * hn)
        return (1 - z) * n + z * hx[0]
    return np.tanh(gi + gh) if mode == "rnn_tanh" else np.maximum(gi + gh, 0)


CELLS = {"lstm": 4, "gru": 3, "rnn_tanh": 1, "rnn_relu": 1}


@pytest.mark.parametrize("mode", list(CELLS))
@pytest.mark.parametrize("biases", ["both", "none", "ih_only"])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_cells_against_numpy(mode, biases, dtype):
    h, k = 4, CELLS[mode]
    x, w_ih, w_hh = _f64(3, 5), _f64(k * h, 5, seed=1), _f64(k * h, h, seed=2)
    b_ih = None if biases == "none" else _f64(k * h, seed=3)
    b_hh = _f64(k * h, seed=4) if biases == "both" else None
    states = [_f64(3, h, seed=5)] + ([_f64(3, h, seed=6)] if mode == "lstm" else [])
    fn = getattr(ptl, mode + "_cell")
    hx = states if mode == "lstm" else states[0]
    cast = [None if t is None else t.to(dtype) for t in (x, w_ih, w_hh, b_ih, b_hh)]
    got = fn(cast[0], [s.to(dtype) for s in states] if mode == "lstm" else hx.to(dtype),
             cast[1], cast[2], cast[3], cast[4])
    want = _np_cell(mode, x.numpy(), [s.numpy() for s in states], w_ih.numpy(), w_hh.numpy(),
                    None if b_ih is None else b_ih.numpy(),
                    None if b_hh is None else b_hh.numpy())
    if mode == "lstm":
        assert_close(got[0], want[0], dtype=dtype)
        assert_close(got[1], want[1], dtype=dtype)
    else:
        assert_close(got, want, dtype=dtype)


@pytest.mark.parametrize("mode", list(CELLS))
def test_cell_gradients(mode):
    h, k = 3, CELLS[mode]
    args = [_f64(2, 2, grad=True), _f64(k * h, 2, seed=1, grad=True),
            _f64(k * h, h, seed=2, grad=True), _f64(k * h, seed=3, grad=True),
            _f64(k * h, seed=4, grad=True), _f64(2, h, seed=5, grad=True),
            _f64(2, h, seed=6, grad=True)]
    fn = getattr(ptl, mode + "_cell")
    if mode == "lstm":
        assert gradcheck(lambda x, wi, wh, bi, bh, h0, c0: fn(x, (h0, c0), wi, wh, bi, bh), args)
    else:
        assert gradcheck(lambda x, wi, wh, bi, bh, h0: fn(x, h0, wi, wh, bi, bh), args[:6])


CELL_ERRORS = [   # (cell, input, hx, w_ih, w_hh shapes) -> PyTorch's message
    ("lstm_cell", (2, 3), [(2, 4)], (16, 3), (16, 4), "lstm_cell expects two hidden states"),
    ("gru_cell", (2, 5), (2, 4), (12, 3), (12, 4),
     "input has inconsistent input_size: got 5 expected 3"),
    ("gru_cell", (2, 3), (3, 4), (12, 3), (12, 4),
     "Input batch size 2 doesn't match hidden0 batch size 3"),
    ("lstm_cell", (2, 3), [(2, 4), (2, 5)], (16, 3), (16, 4),
     "hidden1 has inconsistent hidden_size: got 5, expected 4"),
    ("rnn_tanh_cell", (2, 3), (2, 4), (5, 3), (4, 4),
     "weight_ih first dim must be 1 * hidden_size = 4, but got 5"),
    ("gru_cell", (2, 3), (2, 4), (12, 3), (11, 4),
     "weight_hh first dim must be 3 * hidden_size = 12, but got 11"),
]


@pytest.mark.parametrize("cell,x,hx,w_ih,w_hh,msg", CELL_ERRORS)
def test_cell_errors(cell, x, hx, w_ih, w_hh, msg):
    def call(lib):
        h = [lib.ones(*s) for s in hx] if isinstance(hx, list) else lib.ones(*hx)
        return getattr(lib, cell)(lib.ones(*x), h, lib.ones(*w_ih), lib.ones(*w_hh))
    assert_raises_like_torch(call, RuntimeError, msg)


# ---- against PyTorch: every function on the same inputs ----

def _pair(shape, seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    a = np.abs(a) + 0.1 if positive else a
    return ptl.tensor(a), torch.tensor(a)


def _calls():
    """(name, args builder) for the deterministic functions: builder(lib, tensors) -> args."""
    return [
        ("conv1d", [(2, 3, 7), (4, 3, 2)], lambda lib, t: (t[0], t[1], None, 2, 1)),
        ("conv2d", [(1, 2, 5, 5), (3, 2, 3, 3)], lambda lib, t: (t[0], t[1], None, 1, "same")),
        ("conv_transpose1d", [(1, 2, 5), (2, 3, 3)], lambda lib, t: (t[0], t[1], None, 2)),
        ("batch_norm", [(4, 3, 2), (3,), (3,)],
         lambda lib, t: (t[0], t[1], t[2], None, None, True, 0.1, 1e-5, False)),
        ("instance_norm", [(2, 3, 4)],
         lambda lib, t: (t[0], None, None, None, None, True, 0.1, 1e-5, False)),
        ("layer_norm", [(2, 3, 4), (4,)], lambda lib, t: (t[0], [4], t[1])),
        ("group_norm", [(2, 4, 3)], lambda lib, t: (t[0], 2)),
        ("rms_norm", [(2, 5)], lambda lib, t: (t[0], [5])),
        ("max_pool1d", [(2, 3, 8)], lambda lib, t: (t[0], 3, 2, 1)),
        ("max_pool2d", [(1, 2, 6, 6)], lambda lib, t: (t[0], 2)),
        ("max_pool3d", [(1, 1, 4, 4, 4)], lambda lib, t: (t[0], 2, 1)),
        ("max_pool1d_with_indices", [(2, 3, 8)], lambda lib, t: (t[0], 2)),
        ("avg_pool1d", [(2, 3, 8)], lambda lib, t: (t[0], 3, 2, 1, True, False)),
        ("adaptive_avg_pool1d", [(2, 3, 7)], lambda lib, t: (t[0], 3)),
        ("adaptive_max_pool1d", [(2, 3, 7)], lambda lib, t: (t[0], 3)),
        ("pixel_shuffle", [(1, 8, 2, 3)], lambda lib, t: (t[0], 2)),
        ("pixel_unshuffle", [(1, 2, 4, 6)], lambda lib, t: (t[0], 2)),
        ("channel_shuffle", [(2, 6, 3)], lambda lib, t: (t[0], 3)),
        ("native_channel_shuffle", [(2, 6, 3)], lambda lib, t: (t[0], 2)),
        ("prelu", [(2, 3, 4), (3,)], lambda lib, t: (t[0], t[1])),
        ("selu", [(3, 4)], lambda lib, t: (t[0],)),
        ("celu", [(3, 4)], lambda lib, t: (t[0], 0.7)),
        ("rrelu", [(3, 4)], lambda lib, t: (t[0], 0.2, 0.4)),
        ("bilinear", [(3, 2), (3, 4), (5, 2, 4), (5,)],
         lambda lib, t: (t[0], t[1], t[2], t[3])),
        ("cosine_similarity", [(3, 4), (3, 4)], lambda lib, t: (t[0], t[1], 0)),
        ("pairwise_distance", [(3, 4), (3, 4)], lambda lib, t: (t[0], t[1], 1.5, 1e-6, True)),
        ("pdist", [(5, 3)], lambda lib, t: (t[0], 1.5)),
        ("kl_div", [(3, 4), (3, 4)], lambda lib, t: (t[0], t[1], 2)),
        ("kl_div", [(3, 4), (3, 4)], lambda lib, t: (t[0], t[1])),
        ("cosine_embedding_loss", [(3, 4), (3, 4)],
         lambda lib, t: (t[0], t[1], lib.tensor([1.0, -1.0, 1.0], dtype=lib.float64), 0.2, 1)),
        ("margin_ranking_loss", [(5,), (5,)],
         lambda lib, t: (t[0], t[1], lib.tensor([1.0, -1, -1, 1, 1], dtype=lib.float64), 0.1,
                         1)),
        ("triplet_margin_loss", [(3, 4), (3, 4), (3, 4)], lambda lib, t: (t[0], t[1], t[2])),
        ("binary_cross_entropy_with_logits", [(3, 4), (3, 4)],
         lambda lib, t: (t[0], t[1].sigmoid())),
        ("ctc_loss", [(6, 2, 4)],
         lambda lib, t: (t[0].log_softmax(2), lib.tensor([[1, 2, 1], [3, 1, 0]]), [6, 5],
                         [3, 2])),
        ("binary_cross_entropy_with_logits", [(3, 4), (3, 4), (3, 4), (4,)],
         lambda lib, t: (t[0], t[1].sigmoid(), t[2], t[3], 0)),
        ("cosine_embedding_loss", [(3, 4), (3, 4)],
         lambda lib, t: (t[0], t[1], lib.tensor([1.0, -1.0, 1.0], dtype=lib.float64), 0.2)),
        ("hinge_embedding_loss", [(5,)],
         lambda lib, t: (t[0], lib.tensor([1.0, -1, -1, 1, 1], dtype=lib.float64), 0.5, 2)),
        ("margin_ranking_loss", [(5,), (5,)],
         lambda lib, t: (t[0], t[1], lib.tensor([1.0, -1, -1, 1, 1], dtype=lib.float64))),
        ("triplet_margin_loss", [(3, 4), (3, 4), (3, 4)],
         lambda lib, t: (t[0], t[1], t[2], 0.5, 1.0, 1e-6, True, 0)),
        ("poisson_nll_loss", [(6,), (6,)],
         lambda lib, t: (t[0], t[1].abs() * 3, True, True, 1e-8, 1)),
        ("ctc_loss", [(6, 2, 4)],
         lambda lib, t: (t[0].log_softmax(2), lib.tensor([[1, 2, 1], [3, 1, 0]]), [6, 5],
                         [3, 2], 0, 2)),
        ("grid_sampler", [(1, 2, 4, 5), (1, 3, 3, 2)],
         lambda lib, t: (t[0], t[1].tanh(), 2, 2, True)),
        ("grid_sampler_2d", [(1, 2, 4, 5), (1, 3, 3, 2)],
         lambda lib, t: (t[0], t[1].tanh(), 0, 1, False)),
        ("grid_sampler_3d", [(1, 2, 3, 4, 5), (1, 2, 3, 3, 3)],
         lambda lib, t: (t[0], t[1].tanh(), 1, 0, False)),
        ("affine_grid_generator", [(2, 2, 3)], lambda lib, t: (t[0], [2, 1, 3, 4], False)),
        ("lstm_cell", [(2, 3), (2, 4), (2, 4), (16, 3), (16, 4), (16,), (16,)],
         lambda lib, t: (t[0], [t[1], t[2]], t[3], t[4], t[5], t[6])),
        ("gru_cell", [(2, 3), (2, 4), (12, 3), (12, 4), (12,), (12,)],
         lambda lib, t: tuple(t)),
        ("rnn_tanh_cell", [(2, 3), (2, 4), (4, 3), (4, 4), (4,)], lambda lib, t: tuple(t)),
        ("rnn_relu_cell", [(2, 3), (2, 4), (4, 3), (4, 4)], lambda lib, t: tuple(t)),
    ]


def _flat(result):
    return list(result) if isinstance(result, (tuple, list)) else [result]


@torch_ref
def test_matches_torch():
    for name, shapes, build in _calls():
        pairs = [_pair(s, seed=i) for i, s in enumerate(shapes)]
        got = _flat(getattr(ptl, name)(*build(ptl, [p[0] for p in pairs])))
        want = _flat(getattr(torch, name)(*build(torch, [p[1] for p in pairs])))
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            assert str(g.dtype) == str(w.dtype), name
            assert tuple(g.shape) == tuple(w.shape), name
            assert_close(g, w.detach().numpy(), rtol=1e-10, atol=1e-12)


@torch_ref
def test_random_forms_keep_torch_statistics():
    """The dropouts in both libraries on the same input: the kept fraction near 1 - p and,
    for the alpha dropouts, the same value for the dropped elements."""
    x, xt = _pair((400, 50))
    for name in ("dropout", "feature_dropout"):
        for lib, inp in ((ptl, x), (torch, xt)):
            out = getattr(lib, name)(inp, 0.3, True).numpy()
            assert 0.65 < np.isclose(out, inp.numpy() / 0.7).mean() < 0.75, name
    for name in ("alpha_dropout", "feature_alpha_dropout"):
        dropped = []
        for lib, inp in ((ptl, x), (torch, xt)):
            values, counts = np.unique(getattr(lib, name)(inp, 0.3, True).numpy(),
                                       return_counts=True)
            dropped.append(values[counts.argmax()])
            assert 0.25 < counts.max() / inp.numel() < 0.35, name
        assert np.isclose(dropped[0], dropped[1], rtol=1e-12), name
