"""Normalization, dropout, embedding, recurrent and attention modules against real torch.

Each module is built in torch and in pytorchlite with the same arguments and the same seeded
parameters, and the forward outputs and the gradients of inputs and parameters (float64, eval
mode unless a test says otherwise) must agree to 1e-10: with torch live, or with its stored
answers without it (tests/golden.py)."""
import functools
import math
import re

import numpy as np
import pytest

import pytorchlite as ptl
import golden
from helpers import torch

TOL = 1e-10


def _ptl(a, requires_grad=False):
    t = ptl.from_numpy(np.array(a))
    return t.requires_grad_() if requires_grad else t


def _torch(a, requires_grad=False):
    t = torch.from_numpy(np.array(a))
    return t.requires_grad_() if requires_grad else t


def _seed(module, lib, seed=0):
    """Parameters uniform in [-0.5, 0.5), the same in either library's module."""
    r = np.random.default_rng(seed)
    with lib.no_grad():
        for p in module.parameters():
            p.copy_(lib.tensor(r.uniform(-0.5, 0.5, tuple(p.shape)), dtype=p.dtype))


def _pair(make, seed=True):
    """(make(pytorchlite), make(torch) or None without torch), parameters seeded alike
    (unless seed is false), with the same repr and state_dict keys as torch's."""
    ours = make(ptl)
    theirs = make(torch) if torch is not None else None
    if seed:
        _seed(ours, ptl)
        if theirs is not None:
            _seed(theirs, torch)
    golden.assert_equal(repr(ours), lambda: repr(theirs), sub=None)
    golden.assert_equal(list(ours.state_dict()), lambda: list(theirs.state_dict()), sub=None)
    return ours, theirs


def _flat(out):
    if out is None:
        return []
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


def _close(ours, theirs_fn, what):
    """ours equals theirs_fn()'s torch tensor to TOL (live, or stored: tests/golden.py)."""
    assert ours is not None, what
    golden.assert_close(ours.detach(), lambda: theirs_fn().detach(), rtol=TOL, atol=TOL,
                        sub=None, what=what, check_dtype=False)


def _build(name, args, kwargs):
    return _pair(lambda lib: getattr(lib.nn, name)(*args, dtype=lib.float64, **kwargs))


def _convert(to, v):
    if isinstance(v, np.ndarray):
        return to(v)
    if isinstance(v, tuple):
        return tuple(_convert(to, x) for x in v)
    return v


def _module_results(m, lib, inputs, call_kwargs, grad_inputs, seed, train):
    """Forward m (of lib) on inputs; backward a random weighting of every output: the
    outputs, the grads of the inputs listed in grad_inputs and of every parameter (zeros
    for one that gets none)."""
    make = _ptl if lib is ptl else _torch
    m.train(train)
    m.zero_grad()
    xs = [make(a, i in grad_inputs) if isinstance(a, np.ndarray) else a
          for i, a in enumerate(inputs)]
    out = _flat(m(*xs, **{k: _convert(make, v) for k, v in call_kwargs.items()}))
    gen = np.random.default_rng(seed)
    sum((o * make(gen.standard_normal(tuple(o.shape)))).sum() for o in out).backward()
    res = {f"output {k}": o.detach() for k, o in enumerate(out)}
    res.update({f"grad of input {i}": xs[i].grad for i in grad_inputs})
    res.update({f"grad of {n}": lib.zeros_like(p) if p.grad is None else p.grad
                for n, p in m.named_parameters()})
    return res, out


def check_module(ours, theirs, inputs, call_kwargs=None, grad_inputs=None, seed=0, train=False):
    """Forward both on the same inputs; backward a random weighting of every output; compare
    outputs, the grads of the float inputs listed in grad_inputs (default: all float
    inputs) and of every parameter (torch's live, or stored without torch)."""
    call_kwargs = call_kwargs or {}
    if grad_inputs is None:
        grad_inputs = [i for i, a in enumerate(inputs)
                       if isinstance(a, np.ndarray) and a.dtype == np.float64]
    args = (inputs, call_kwargs, grad_inputs, seed, train)
    res, out = _module_results(ours, ptl, *args)
    theirs_res = functools.cache(lambda: _module_results(theirs, torch, *args)[0])
    golden.assert_equal(list(res), lambda: list(theirs_res()), sub=None)
    for name, value in res.items():
        _close(value, lambda: theirs_res()[name], name)
    return out


def randn(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# ---- normalization ----

@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("LayerNorm", (4,), {}, (2, 3, 4)),
    ("LayerNorm", ((3, 4),), {"eps": 1e-3}, (2, 3, 4)),
    ("LayerNorm", ([4],), {"bias": False}, (3, 4)),
    ("LayerNorm", (4,), {"elementwise_affine": False}, (4,)),
    ("GroupNorm", (2, 4), {}, (3, 4, 5)),
    ("GroupNorm", (1, 4), {"affine": False}, (2, 4, 2, 3)),
    ("GroupNorm", (4, 4), {"bias": False, "eps": 1e-2}, (2, 4)),
    ("RMSNorm", (4,), {}, (2, 3, 4)),
    ("RMSNorm", ((3, 4),), {"eps": 1e-3}, (2, 3, 4)),
    ("RMSNorm", (4,), {"elementwise_affine": False}, (5, 4)),
    ("LocalResponseNorm", (3,), {}, (2, 5, 4)),
    ("LocalResponseNorm", (2,), {"alpha": 0.1, "beta": 0.5, "k": 2.0}, (2, 4, 3, 3)),
])
def test_normalization(name, args, kwargs, shape):
    # non-trivial affine parameters
    ours, theirs = _build(name, args, kwargs) if name != "LocalResponseNorm" else _pair(
        lambda lib: lib.nn.LocalResponseNorm(*args, **kwargs))
    check_module(ours, theirs, [randn(*shape)])


def test_normalization_noncontiguous_input():
    ours, theirs = _build("LayerNorm", (3,), {})
    x = randn(3, 4).T  # transposed view
    check_module(ours, theirs, [x])


def test_group_norm_divisibility():
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        ptl.nn.GroupNorm(3, 4)


def test_layer_norm_shape_error():
    golden.assert_raises(lambda: ptl.nn.LayerNorm(4)(ptl.zeros(2, 3)),
                         lambda: torch.nn.LayerNorm(4)(torch.zeros(2, 3)),
                         compare=lambda a, b: b in a)


# ---- dropout ----

DROPOUTS = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
            "FeatureAlphaDropout"]


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_eval_is_identity_and_repr(name):
    ours, theirs = _pair(lambda lib: getattr(lib.nn, name)(0.3))
    _pair(lambda lib: getattr(lib.nn, name)())
    shape = (2, 3, 4, 5, 2)[:{"Dropout1d": 3, "Dropout2d": 4, "Dropout3d": 5}.get(name, 3)]
    check_module(ours, theirs, [randn(*shape)])


@pytest.mark.parametrize("name", DROPOUTS)
def test_dropout_p_validation(name):
    msg = "dropout probability has to be between 0 and 1, but got 1.5"
    for lib in golden.LIBRARIES:
        with pytest.raises(ValueError, match=re.escape(msg)):
            getattr(lib.nn, name)(1.5)
    with pytest.raises(ValueError, match=re.escape("but got -0.1")):
        getattr(ptl.nn, name)(-0.1)


@pytest.mark.parametrize("name,shape,unit", [
    ("Dropout", (200, 100), None),
    ("Dropout1d", (50, 40, 7), (50, 40, 1)),
    ("Dropout2d", (50, 40, 3, 3), (50, 40, 1, 1)),
    ("Dropout3d", (40, 50, 2, 2, 2), (40, 50, 1, 1, 1)),
])
def test_dropout_train_statistics(name, shape, unit):
    p = 0.3
    m = getattr(ptl.nn, name)(p)
    x = ptl.ones(shape, dtype=ptl.float64)
    y = m(x).numpy()
    assert set(np.unique(np.round(y, 12))) <= {0.0, round(1 / (1 - p), 12)}
    zero = (y == 0)
    if unit is not None:  # whole channels are dropped together
        assert (zero == zero.reshape(unit + (-1,))[..., :1].reshape(unit)).all()
    frac = zero.mean()
    assert abs(frac - p) < 0.05, frac
    # gradient flows through the kept elements with the same scale
    xg = ptl.ones(shape, dtype=ptl.float64).requires_grad_()
    yg = m(xg)
    yg.sum().backward()
    np.testing.assert_allclose(xg.grad.numpy(), yg.detach().numpy())
    m.eval()
    assert np.array_equal(m(x).numpy(), x.numpy())


def test_alpha_dropout_train_keeps_mean_and_variance():
    m = ptl.nn.AlphaDropout(0.2)
    x = ptl.from_numpy(randn(400, 100))
    y = m(x).numpy()
    assert abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05
    _, counts = np.unique(y, return_counts=True)  # dropped elements share one value
    assert abs(counts.max() / y.size - 0.2) < 0.02


def test_feature_alpha_dropout_train_drops_channels():
    m = ptl.nn.FeatureAlphaDropout(0.5)
    y = m(ptl.ones(20, 30, 4, dtype=ptl.float64)).numpy()
    assert (y == y[..., :1]).all()
    assert len(np.unique(y)) == 2 and 0.35 < (y[..., 0] == y.min()).mean() < 0.65


def test_dropout_inplace():
    m = ptl.nn.Dropout(0.5, inplace=True)
    x = ptl.ones(100, dtype=ptl.float64)
    assert m(x) is x
    assert set(np.unique(x.numpy())) <= {0.0, 2.0}


# ---- embedding ----

def test_embedding_matches_torch():
    ours, theirs = _build("Embedding", (10, 3), {"padding_idx": 2})
    idx = np.array([[1, 2, 4], [4, 4, 9]])
    check_module(ours, theirs, [idx])
    assert not ours.weight.grad.numpy()[2].any()


def test_embedding_negative_padding_idx_zeroes_row_at_init():
    e = ptl.nn.Embedding(10, 3, padding_idx=-1)
    assert e.padding_idx == 9
    assert not e.weight.detach().numpy()[9].any()
    assert e.weight.detach().numpy()[:9].std() > 0.3
    golden.assert_equal(repr(e), lambda: repr(torch.nn.Embedding(10, 3, padding_idx=-1)))


@pytest.mark.parametrize("kwargs", [{"max_norm": 1.0}, {"max_norm": 1.5, "norm_type": 1.0},
                                    {"scale_grad_by_freq": True}])
def test_embedding_options(kwargs):
    ours, theirs = _build("Embedding", (6, 4), kwargs)
    idx = np.array([0, 3, 3, 5, 0, 3])
    check_module(ours, theirs, [idx])
    _close(ours.weight, lambda: theirs.weight, "weight after renorm")


def test_embedding_padding_idx_range_and_weight_shape():
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        ptl.nn.Embedding(5, 2, padding_idx=5)
    with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
        ptl.nn.Embedding(5, 2, padding_idx=-6)
    with pytest.raises(AssertionError,
                       match="Shape of weight does not match num_embeddings and embedding_dim"):
        ptl.nn.Embedding(5, 2, _weight=ptl.zeros(5, 3))
    with pytest.raises(NotImplementedError):
        ptl.nn.Embedding(5, 2, sparse=True)


def test_embedding_from_pretrained():
    w = randn(4, 3)
    e = ptl.nn.Embedding.from_pretrained(_ptl(w))
    assert not e.weight.requires_grad
    assert np.array_equal(e(_ptl(np.array([3, 0]))).numpy(), w[[3, 0]])
    e = ptl.nn.Embedding.from_pretrained(_ptl(w), freeze=False, padding_idx=1)
    assert e.weight.requires_grad and e.padding_idx == 1
    golden.assert_equal(repr(e), lambda: repr(torch.nn.Embedding.from_pretrained(
        _torch(w), freeze=False, padding_idx=1)))
    with pytest.raises(AssertionError,
                       match="Embeddings parameter is expected to be 2-dimensional"):
        ptl.nn.Embedding.from_pretrained(_ptl(randn(3)))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("extra", [{}, {"padding_idx": 1}, {"include_last_offset": True}])
def test_embedding_bag(mode, extra):
    ours, theirs = _build("EmbeddingBag", (8, 3), {"mode": mode, **extra})
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9 - 2])
    offsets = np.array([0, 2, 5, 8] if extra.get("include_last_offset") else [0, 2, 5])
    check_module(ours, theirs, [idx, offsets])
    check_module(ours, theirs, [idx.reshape(2, 4)])


def test_embedding_bag_per_sample_weights():
    ours, theirs = _build("EmbeddingBag", (8, 3), {"mode": "sum"})
    idx, offsets, psw = np.array([1, 2, 4, 5, 4]), np.array([0, 3]), randn(5, seed=4)
    check_module(ours, theirs, [idx, offsets], {"per_sample_weights": psw})
    bag = ptl.nn.EmbeddingBag.from_pretrained(_ptl(randn(8, 3)), mode="max")
    assert not bag.weight.requires_grad
    golden.assert_equal(repr(bag), lambda: repr(torch.nn.EmbeddingBag.from_pretrained(
        _torch(randn(8, 3)), mode="max")))


# ---- recurrent layers ----

RNN_CASES = [
    ("RNN", {}),
    ("RNN", {"nonlinearity": "relu", "bias": False}),
    ("RNN", {"num_layers": 2, "bidirectional": True, "batch_first": True}),
    ("LSTM", {}),
    ("LSTM", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"batch_first": True, "proj_size": 3}),
    ("LSTM", {"num_layers": 2, "proj_size": 2, "bidirectional": True}),
    ("GRU", {}),
    ("GRU", {"num_layers": 2, "bidirectional": True, "batch_first": True, "bias": False}),
]


@pytest.mark.parametrize("name,kwargs", RNN_CASES)
def test_rnn_matches_torch(name, kwargs):
    ours, theirs = _build(name, (4, 5), kwargs)
    x = randn(3, 2, 4)
    check_module(ours, theirs, [x])
    # a given initial state, and a non-contiguous input
    xt = randn(4, 2, 3, seed=5).transpose(2, 1, 0)
    batch = xt.shape[0 if kwargs.get("batch_first") else 1]
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = randn(layers, batch, kwargs.get("proj_size", 5), seed=1)
    if name != "LSTM":
        check_module(ours, theirs, [xt, h], seed=1)
        return
    c = randn(layers, batch, 5, seed=2)

    def run(lib):
        m, make = (ours, _ptl) if lib is ptl else (theirs, _torch)
        h0, c0 = make(h, True), make(c, True)
        out = _flat(m(make(xt), (h0, c0)))
        sum(o.sum() * (k + 1) for k, o in enumerate(out)).backward()
        res = {f"lstm output {k} with a given state": o.detach() for k, o in enumerate(out)}
        res.update({"grad h0": h0.grad, "grad c0": c0.grad})
        return res
    golden.assert_same_results(run, rtol=TOL, atol=TOL, prefix="given state: ")


@pytest.mark.parametrize("name,kwargs", [("RNN", {}), ("LSTM", {"batch_first": True}),
                                         ("GRU", {"bidirectional": True})])
def test_rnn_unbatched(name, kwargs):
    ours, theirs = _build(name, (4, 5), kwargs)
    check_module(ours, theirs, [randn(3, 4)])
    h = randn(2 if kwargs.get("bidirectional") else 1, 5, seed=1)
    if name != "LSTM":
        check_module(ours, theirs, [randn(3, 4), h], seed=2)
    else:
        check_module(ours, theirs, [randn(3, 4)], {"hx": (h, randn(*h.shape, seed=3))}, seed=2)


def test_rnn_dropout_between_layers_train_only():
    ours, theirs = _build("GRU", (4, 5), {"num_layers": 2, "dropout": 0.5})
    check_module(ours, theirs, [randn(3, 2, 4)])  # eval: dropout off
    ours.train()
    x = _ptl(randn(3, 2, 4))
    a, b = ours(x)[0].detach().numpy(), ours(x)[0].detach().numpy()
    assert not np.allclose(a, b)  # two different masks


def test_rnn_init_and_names():
    m, _ = _pair(lambda lib: lib.nn.LSTM(3, 16, num_layers=2, bidirectional=True), seed=False)
    golden.assert_equal([list(p.shape) for p in m.parameters()], lambda: [
        list(p.shape) for p in torch.nn.LSTM(3, 16, num_layers=2, bidirectional=True)
        .parameters()])
    allw = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert np.abs(allw).max() <= 0.25 and np.abs(allw).max() > 0.24
    assert len(m.all_weights) == 4 and m.all_weights[1][0] is m.weight_ih_l0_reverse


@pytest.mark.parametrize("name,args,kwargs", [
    ("RNNCell", (4, 5), {}), ("RNNCell", (4, 5), {"bias": False, "nonlinearity": "relu"}),
    ("LSTMCell", (4, 5), {}), ("GRUCell", (4, 5), {}), ("GRUCell", (4, 5), {"bias": False}),
])
def test_cells(name, args, kwargs):
    ours, theirs = _build(name, args, kwargs)
    check_module(ours, theirs, [randn(3, 4)])
    check_module(ours, theirs, [randn(4)], seed=1)
    h = randn(3, 5, seed=2)
    if name == "LSTMCell":
        check_module(ours, theirs, [randn(3, 4)], seed=3, grad_inputs=[0],
                     call_kwargs={"hx": (h, randn(3, 5, seed=4))})
    else:
        check_module(ours, theirs, [randn(3, 4), h], seed=3)


def _same_error(exc_type, fn_torch, fn_ours):
    """fn_ours() raises exc_type, as fn_torch() does, with torch's message (live, or stored
    without torch: tests/golden.py)."""
    with pytest.raises(exc_type):
        fn_ours()
    golden.assert_raises(fn_ours, fn_torch, sub=None)


@pytest.mark.parametrize("case", range(9))
def test_rnn_errors(case):
    def pair(name, kwargs, call):
        def run(lib, make):
            return call(getattr(lib.nn, name)(4, 5, dtype=lib.float64, **kwargs), lib, make)
        return (lambda: run(torch, _torch)), (lambda: run(ptl, _ptl))
    cases = [
        (RuntimeError, "RNN", {}, lambda m, lib, T: m(T(randn(3, 2, 3)))),
        (RuntimeError, "LSTM", {}, lambda m, lib, T: m(T(randn(3, 2, 4)),
                                                       (T(randn(1, 3, 5)), T(randn(1, 2, 5))))),
        (RuntimeError, "LSTM", {}, lambda m, lib, T: m(T(randn(3, 2, 4)),
                                                       (T(randn(1, 2, 5)), T(randn(1, 2, 6))))),
        (RuntimeError, "GRU", {}, lambda m, lib, T: m(T(randn(3, 2, 4)), T(randn(2, 2, 5)))),
        (ValueError, "RNN", {}, lambda m, lib, T: m(T(randn(4)))),
        (ValueError, "LSTM", {}, lambda m, lib, T: m(T(randn(2, 2, 2, 4)))),
        (RuntimeError, "GRU", {}, lambda m, lib, T: m(T(randn(3, 2, 4)), T(randn(2, 5)))),
        (RuntimeError, "RNNCell", {}, lambda m, lib, T: m(T(randn(2, 3)))),
        (RuntimeError, "GRUCell", {}, lambda m, lib, T: m(T(randn(2, 4)), T(randn(3, 5)))),
    ]
    exc, name, kwargs, call = cases[case]
    ft, fo = pair(name, kwargs, call)
    _same_error(exc, ft, fo)


def test_rnn_constructor_errors():
    msg = "input.size(-1) must be equal to input_size. Expected 4, got 3"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.nn.RNN(4, 5)(ptl.zeros(2, 1, 3))
    for kwargs, exc in [({"dropout": 1.5}, ValueError), ({"proj_size": 5}, ValueError),
                        ({"num_layers": 0}, ValueError), ({"bias": 1}, TypeError)]:
        golden.assert_raises(lambda: ptl.nn.LSTM(4, 5, **kwargs),
                             lambda: torch.nn.LSTM(4, 5, **kwargs), sub=None,
                             compare=lambda a, b: b in a)
        with pytest.raises(exc):
            ptl.nn.LSTM(4, 5, **kwargs)
    with pytest.raises(ValueError, match=re.escape("Unknown nonlinearity 'gelu'. Select from "
                                                   "'tanh' or 'relu'.")):
        ptl.nn.RNN(4, 5, nonlinearity="gelu")
    with pytest.raises(ValueError, match="proj_size argument is only supported for LSTM"):
        ptl.nn.GRU(4, 5, proj_size=2)
    with pytest.raises(ValueError, match=re.escape("RNN input dtype (torch.float32) does not "
                                                   "match weight dtype (torch.float64)")):
        ptl.nn.RNN(4, 5, dtype=ptl.float64)(ptl.zeros(2, 1, 4))


# ---- attention ----

def _mha_inputs(batch_first, self_attn, kdim=8, vdim=8, L=3, S=4, N=2):
    q = randn(N, L, 8) if batch_first else randn(L, N, 8)
    if self_attn:
        return [q, q, q]
    k = randn(N, S, kdim, seed=1) if batch_first else randn(S, N, kdim, seed=1)
    v = randn(N, S, vdim, seed=2) if batch_first else randn(S, N, vdim, seed=2)
    return [q, k, v]


KPM = np.array([[False, True, False, True], [False, False, False, True]])
FLOAT_MASK = randn(3, 4, seed=7)
BOOL_MASK = np.array([[False, True, False, False], [True, False, False, True],
                      [False, False, True, False]])


@pytest.mark.parametrize("kwargs,call", [
    ({}, {}),
    ({}, {"need_weights": False}),
    ({}, {"average_attn_weights": False}),
    ({"batch_first": True}, {}),
    ({"bias": False}, {"key_padding_mask": KPM}),
    ({}, {"key_padding_mask": KPM, "need_weights": False}),
    ({}, {"attn_mask": FLOAT_MASK}),
    ({}, {"attn_mask": BOOL_MASK, "need_weights": False}),
    ({}, {"attn_mask": BOOL_MASK, "key_padding_mask": KPM}),
    ({"kdim": 3, "vdim": 5}, {}),
    ({"kdim": 3, "vdim": 5, "batch_first": True}, {"key_padding_mask": KPM}),
    ({"add_bias_kv": True}, {"key_padding_mask": KPM, "attn_mask": FLOAT_MASK}),
    ({"add_zero_attn": True}, {"attn_mask": BOOL_MASK}),
    ({"add_bias_kv": True, "add_zero_attn": True}, {"need_weights": False}),
])
def test_multihead_attention(kwargs, call):
    ours, theirs = _build("MultiheadAttention", (8, 2), kwargs)   # non-zero biases
    inputs = _mha_inputs(kwargs.get("batch_first", False), False, kwargs.get("kdim", 8),
                         kwargs.get("vdim", 8))
    out = check_module(ours, theirs, inputs, call)
    assert len(out) == (1 if call.get("need_weights", True) is False else 2)


def test_multihead_attention_self_attention_and_3d_mask():
    ours, theirs = _build("MultiheadAttention", (8, 2), {"batch_first": True})
    q = randn(2, 3, 8)
    mask3 = randn(4, 3, 3, seed=3)
    check_module(ours, theirs, [q, q, q], {"attn_mask": mask3})
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    check_module(ours, theirs, [q, q, q], {"attn_mask": causal, "is_causal": True,
                                           "need_weights": False})


def test_multihead_attention_unbatched():
    ours, theirs = _build("MultiheadAttention", (8, 2), {})
    q, k = randn(3, 8), randn(4, 8, seed=1)
    check_module(ours, theirs, [q, k, k], {"key_padding_mask": KPM[0]})
    check_module(ours, theirs, [q, k, k], {"attn_mask": randn(2, 3, 4, seed=2),
                                           "average_attn_weights": False})


def test_multihead_attention_errors():
    o = ptl.nn.MultiheadAttention(8, 2)
    with pytest.raises(AssertionError, match="^was expecting embedding dimension of 8, but got 6$"):
        o(ptl.zeros(3, 2, 6), ptl.zeros(3, 2, 6), ptl.zeros(3, 2, 6))
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        ptl.nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match=re.escape("embed_dim and num_heads must be greater than "
                                                   "0, got embed_dim=0 and num_heads=2 instead")):
        ptl.nn.MultiheadAttention(0, 2)
    t = torch.nn.MultiheadAttention(8, 2) if torch is not None else None
    z3, z2 = (3, 2, 8), (3, 8)
    calls = [
        (AssertionError, lambda lib: [lib.zeros(z3), lib.zeros(z2), lib.zeros(z2)], {}),
        (AssertionError, lambda lib: [lib.zeros(2, 3, 2, 8)] * 3, {}),
        (RuntimeError, lambda lib: [lib.zeros(z3)] * 3,
         {"attn_mask": (lambda lib: lib.zeros(2, 3))}),
        (RuntimeError, lambda lib: [lib.zeros(z3)] * 3, {"is_causal": True}),
        (AssertionError, lambda lib: [lib.zeros(z3)] * 3,
         {"key_padding_mask": (lambda lib: lib.zeros(2, 2, dtype=lib.bool))}),
        (AssertionError, lambda lib: [lib.zeros(z3)] * 3,
         {"key_padding_mask": (lambda lib: lib.zeros(2, 3, dtype=lib.int64))}),
        (AssertionError, lambda lib: [lib.zeros(z3), lib.zeros(4, 2, 8), lib.zeros(3, 2, 8)], {}),
    ]
    for exc, args, kw in calls:
        _same_error(exc,
                    lambda: t(*args(torch), **{k: (v(torch) if callable(v) else v)
                                               for k, v in kw.items()}),
                    lambda: o(*args(ptl), **{k: (v(ptl) if callable(v) else v)
                                             for k, v in kw.items()}))


def test_multi_head_attention_forward_functional():
    m, _ = _pair(lambda lib: lib.nn.MultiheadAttention(8, 2, dtype=lib.float64))
    q = randn(3, 2, 8)
    args = lambda lib, T: (T(q), T(q), T(q), 8, 2, T(m.in_proj_weight.detach().numpy()),
                           T(m.in_proj_bias.detach().numpy()), None, None, False, 0.0,
                           T(m.out_proj.weight.detach().numpy()),
                           T(m.out_proj.bias.detach().numpy()))
    golden.assert_same_results(lambda lib: golden.named(
        lib.nn.functional.multi_head_attention_forward(
            *args(lib, _ptl if lib is ptl else _torch), training=False)), rtol=TOL, atol=TOL)


def test_multihead_attention_dropout_train():
    m = ptl.nn.MultiheadAttention(8, 2, dropout=0.5, dtype=ptl.float64)
    q = _ptl(randn(3, 2, 8))
    w = m(q, q, q)[1].detach().numpy()
    assert (w == 0).any()
    m.eval()
    w = m(q, q, q)[1].detach().numpy()
    np.testing.assert_allclose(w.sum(-1), 1.0)


# ---- transformer ----

@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "activation": "gelu"},
                                    {"batch_first": True, "bias": False}])
def test_transformer_encoder_layer(kwargs):
    ours, theirs = _build("TransformerEncoderLayer", (8, 2, 16), kwargs)
    x = randn(2, 3, 8)
    check_module(ours, theirs, [x])
    kpm = np.array([[False, False, True], [False, True, False]])  # [N=2, S=3]
    if not kwargs.get("batch_first"):
        kpm = np.array([[False, True], [False, False], [True, False]])  # [N=3, S=2]
    check_module(ours, theirs, [x], {"src_key_padding_mask": kpm}, seed=1)


def test_transformer_encoder_layer_callable_activation_and_masks():
    ours, theirs = _pair(lambda lib: lib.nn.TransformerEncoderLayer(
        8, 2, 16, activation=lib.nn.ReLU(), dtype=lib.float64))
    x = randn(3, 2, 8)
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    check_module(ours, theirs, [x], {"src_mask": causal, "is_causal": True})
    check_module(ours, theirs, [x], {"src_mask": randn(3, 3, seed=4)}, seed=2)
    ours2, theirs2 = _pair(lambda lib: lib.nn.TransformerEncoderLayer(
        8, 2, 16, activation=lib.tanh, dtype=lib.float64))
    check_module(ours2, theirs2, [x], seed=3)
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        ptl.nn.TransformerEncoderLayer(8, 2, activation="tanh")


@pytest.mark.parametrize("kwargs", [{}, {"norm_first": True, "batch_first": True}])
def test_transformer_decoder_layer(kwargs):
    ours, theirs = _build("TransformerDecoderLayer", (8, 2, 16), kwargs)
    tgt, mem = randn(3, 3, 8), randn(4, 3, 8, seed=1) if not kwargs else randn(3, 4, 8, seed=1)
    check_module(ours, theirs, [tgt, mem])
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    mkpm = np.array([[False, True, False, False], [False, False, False, True],
                     [True, False, False, False]])
    check_module(ours, theirs, [tgt, mem], {"tgt_mask": causal, "tgt_is_causal": True,
                                            "memory_key_padding_mask": mkpm}, seed=2)


def test_transformer_encoder_and_decoder_stacks():
    ours, theirs = _pair(lambda lib: lib.nn.TransformerEncoder(
        lib.nn.TransformerEncoderLayer(8, 2, 16, dtype=lib.float64), 2,
        norm=lib.nn.LayerNorm(8, dtype=lib.float64), enable_nested_tensor=False))
    x = randn(3, 2, 8)
    kpm = np.array([[False, False], [True, False], [False, True]]).T.copy()
    check_module(ours, theirs, [x], {"src_key_padding_mask": kpm})
    causal = np.triu(np.full((3, 3), -np.inf), 1)
    check_module(ours, theirs, [x], {"mask": causal}, seed=1)
    do, dt = _pair(lambda lib: lib.nn.TransformerDecoder(
        lib.nn.TransformerDecoderLayer(8, 2, 16, dtype=lib.float64), 2))
    check_module(do, dt, [x, randn(4, 2, 8, seed=3)], {"tgt_mask": causal}, seed=2)


def test_transformer_full():
    kw = dict(d_model=8, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
              dim_feedforward=16)
    ours, theirs = _pair(lambda lib: lib.nn.Transformer(**kw, dtype=lib.float64))
    src, tgt = randn(4, 2, 8), randn(3, 2, 8, seed=1)
    mask = ptl.nn.Transformer.generate_square_subsequent_mask(3, dtype=ptl.float64).numpy()
    assert mask.tolist() == golden.answer(lambda: torch.nn.Transformer
                                          .generate_square_subsequent_mask(3, dtype=torch.float64))
    assert ptl.nn.Transformer.generate_square_subsequent_mask(2).dtype == ptl.float32
    check_module(ours, theirs, [src, tgt], {"tgt_mask": mask})
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        ours(_ptl(randn(4, 2, 8)), _ptl(randn(3, 3, 8)))
    with pytest.raises(RuntimeError,
                       match="the feature number of src and tgt must be equal to d_model"):
        ours(_ptl(randn(4, 2, 6)), _ptl(randn(3, 2, 6)))


def test_transformer_defaults_and_init():
    m, _ = _pair(lambda lib: lib.nn.Transformer(num_encoder_layers=1, num_decoder_layers=1),
                 seed=False)
    assert (m.d_model, m.nhead, m.batch_first) == (512, 8, False)
    w = m.encoder.layers[0].linear1.weight.detach().numpy()
    bound = math.sqrt(6 / (512 + 2048))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound


# ---- nn.utils.rnn and packed sequences ----

from pytorchlite.nn.utils import rnn as prnn  # noqa: E402

trnn = torch.nn.utils.rnn if torch is not None else None


def _packed(p, what="packed"):
    """A PackedSequence's fields, for golden.assert_same_results."""
    return {f"{what} {name}": None if v is None else v.detach() for name, v in
            zip(("data", "batch_sizes", "sorted_indices", "unsorted_indices"), p)}


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("lengths,enforce_sorted", [([3, 3, 2, 1], True), ([2, 3, 2, 3], False),
                                                    ([1, 3, 2, 2], False)])
def test_pack_pad_round_trip(batch_first, lengths, enforce_sorted):
    x = randn(4, 3, 2) if batch_first else randn(3, 4, 2)

    def run(lib):
        rnn, make = (prnn, _ptl) if lib is ptl else (trnn, _torch)
        px = make(x, True)
        b = rnn.pack_padded_sequence(px, ptl.tensor(lengths) if lib is ptl else lengths,
                                     batch_first, enforce_sorted)
        res = _packed(b)
        for total in (None, 5):
            pb = rnn.pad_packed_sequence(b, batch_first, -1.0, total)
            res.update({f"padded to {total}": pb[0].detach(), f"lengths {total}": pb[1]})
        (pb[0] * make(randn(*pb[0].shape, seed=3))).sum().backward()
        res["grad through pack and pad"] = px.grad
        return res
    golden.assert_same_results(run, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    seqs = [randn(3, 2), randn(1, 2, seed=1), randn(2, 2, seed=2)]
    b = prnn.pad_sequence([_ptl(s) for s in seqs], batch_first, 7.0, side)
    _close(b, lambda: trnn.pad_sequence([_torch(s) for s in seqs], batch_first, 7.0, side),
           "pad_sequence")
    parts = prnn.unpad_sequence(prnn.pad_sequence([_ptl(s) for s in seqs], batch_first),
                                [3, 1, 2], batch_first)
    for p, s in zip(parts, seqs):
        np.testing.assert_array_equal(p.numpy(), s)


def test_pack_sequence_and_unpack():
    seqs = [randn(2, 3), randn(4, 3, seed=1), randn(1, 3, seed=2)]
    golden.assert_same_results(lambda lib: _packed(
        (prnn if lib is ptl else trnn).pack_sequence([lib.from_numpy(s) for s in seqs],
                                                     enforce_sorted=False)), rtol=TOL, atol=TOL)
    b = prnn.pack_sequence([_ptl(s) for s in seqs], enforce_sorted=False)
    for p, s in zip(prnn.unpack_sequence(b), seqs):
        np.testing.assert_array_equal(p.numpy(), s)


def test_rnn_utils_errors():
    cases = [
        (lambda lib, m: m.pad_sequence([lib.zeros(2)], padding_side="middle")),
        (lambda lib, m: m.pad_sequence([])),
        (lambda lib, m: m.pack_padded_sequence(lib.zeros(3, 2), [1, 2])),
        (lambda lib, m: m.pack_padded_sequence(lib.zeros(3, 2), [0, 2], enforce_sorted=False)),
        (lambda lib, m: m.pack_padded_sequence(lib.zeros(3, 2), [3, 2, 1])),
    ]
    for case in cases:
        _same_error(RuntimeError, lambda: case(torch, trnn), lambda: case(ptl, prnn))
    _same_error(ValueError, lambda: trnn.pad_packed_sequence(
        trnn.pack_padded_sequence(torch.zeros(3, 2), [3, 2]), total_length=2),
        lambda: prnn.pad_packed_sequence(prnn.pack_padded_sequence(ptl.zeros(3, 2), [3, 2]),
                                         total_length=2))


@pytest.mark.parametrize("name,kwargs", [
    ("RNN", {}), ("GRU", {"num_layers": 2, "bidirectional": True}),
    ("LSTM", {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("LSTM", {"batch_first": True}),
])
@pytest.mark.parametrize("lengths,enforce_sorted", [([4, 3, 1], True), ([2, 4, 3], False)])
def test_rnn_packed_input(name, kwargs, lengths, enforce_sorted):
    ours, theirs = _build(name, (2, 3), kwargs)
    bf = kwargs.get("batch_first", False)
    x = randn(3, 4, 2) if bf else randn(4, 3, 2)
    layers = kwargs.get("num_layers", 1) * (2 if kwargs.get("bidirectional") else 1)
    h = randn(layers, 3, kwargs.get("proj_size", 3), seed=1)
    hx = (h, randn(layers, 3, 3, seed=2)) if name == "LSTM" else h

    def run(lib):
        m, rnn, make = (ours, prnn, _ptl) if lib is ptl else (theirs, trnn, _torch)
        px, ph = make(x, True), _convert(lambda a: make(a, True), hx)
        b = m(rnn.pack_padded_sequence(px, lengths, bf, enforce_sorted), ph)
        assert isinstance(b[0], rnn.PackedSequence)
        res = _packed(b[0], "output")
        out = [b[0].data] + _flat(b[1])
        res.update({f"state {k}": v.detach() for k, v in enumerate(out)})
        sum((v * (k + 1)).sum() for k, v in enumerate(out)).backward()
        res["grad of input"] = px.grad
        res.update({f"grad of hx {k}": v.grad for k, v in enumerate(_flat(ph))})
        res.update({f"grad of {n}": p.grad for n, p in m.named_parameters()})
        return res
    golden.assert_same_results(run, rtol=TOL, atol=TOL)


def test_packed_sequence_methods():
    b = prnn.pack_sequence([ptl.ones(3, 2), ptl.ones(1, 2)])
    assert b.unsorted_indices is None and b.sorted_indices is None
    d = b.double()
    assert d.data.dtype == ptl.float64 and d.batch_sizes.tolist() == [2, 1, 1]
    assert b.float() is b and not b.is_cuda
    p = prnn.PackedSequence(b.data, b.batch_sizes, ptl.tensor([1, 0]))
    assert p.unsorted_indices.tolist() == [1, 0]
    assert prnn.invert_permutation(ptl.tensor([2, 0, 1])).tolist() == \
        golden.answer(lambda: trnn.invert_permutation(torch.tensor([2, 0, 1])))


def test_multihead_attention_init():
    m = ptl.nn.MultiheadAttention(16, 4, add_bias_kv=True)
    assert [n for n, _ in m.named_parameters()] == golden.answer(
        lambda: [n for n, _ in torch.nn.MultiheadAttention(16, 4, add_bias_kv=True)
                 .named_parameters()])
    w = m.in_proj_weight.detach().numpy()
    bound = math.sqrt(6 / (16 + 48))  # xavier_uniform over the packed [3E, E] weight
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert not m.in_proj_bias.detach().numpy().any()
    assert not m.out_proj.bias.detach().numpy().any()
    assert m.bias_k.detach().numpy().std() > 0
    s = ptl.nn.MultiheadAttention(8, 2, kdim=3, vdim=5, bias=False)
    assert s.in_proj_weight is None and s.in_proj_bias is None
    assert tuple(s.k_proj_weight.shape) == (8, 3) and tuple(s.v_proj_weight.shape) == (8, 5)


def test_embedding_bag_max_ties_grad_goes_to_first_row():
    w = np.array([[1.0, 2.0], [1.0, 3.0], [0.0, 2.0], [5.0, 5.0], [5.0, 5.0]])
    ours, theirs = _pair(lambda lib: lib.nn.EmbeddingBag.from_pretrained(
        lib.from_numpy(w.copy()), freeze=False, mode="max"), seed=False)
    check_module(ours, theirs, [np.array([0, 1, 2, 3, 4, 3]), np.array([0, 3])])
    check_module(ours, theirs, [np.array([[2, 0, 1], [4, 3, 3]])], seed=1)
