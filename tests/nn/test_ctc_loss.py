"""F.ctc_loss and nn.CTCLoss against real torch (live, or its stored answers without it:
tests/golden.py): loss values and gradients (float64 to 1e-10, float32 loosely) on padded and
concatenated targets, varying lengths, repeated labels, blank != 0, every reduction,
unbatched input, impossible alignments with and without zero_infinity; a gradcheck; the
module's repr; every error message."""

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
import golden
from helpers import torch

TF = torch.nn.functional if torch is not None else None
PF = ptl.nn.functional
REDUCTIONS = ["none", "sum", "mean"]


def _case(seed, t_max, n, n_labels, s_max, blank=0, repeats=False, short=False):
    """Random log-probabilities [T, N, C] (float64 log_softmax), padded targets [N, S] with
    labels != blank (repeated labels when asked; padding is garbage past each length),
    input lengths in [T // 2, T] (shorter than the target when short) and target lengths."""
    gen = np.random.default_rng(seed)
    logits = gen.normal(size=(t_max, n, n_labels)) * 2
    lp = logits - np.log(np.exp(logits).sum(2, keepdims=True))
    labels = [c for c in range(n_labels) if c != blank]
    targets = gen.choice(labels, size=(n, s_max))
    if repeats:
        targets[:, 1::2] = targets[:, ::2][:, :targets[:, 1::2].shape[1]]
    tl = gen.integers(0, s_max + 1, size=n)
    tl[0] = s_max
    il = gen.integers(t_max // 2, t_max + 1, size=n)
    il[0] = t_max
    if short:
        il[-1] = max(int(tl[-1]) - 1, 0)
        tl[-1] = max(int(tl[-1]), 1)
    for i in range(n):
        targets[i, tl[i]:] = gen.integers(-5, 50, size=s_max - tl[i])
    return lp, targets, il.tolist(), tl.tolist()


def _concat(targets, tl):
    return np.concatenate([targets[i, :tl[i]] for i in range(len(tl))])


def _run_both(lp, targets, il, tl, dtype="float64", through_softmax=False, **kw):
    """(torch loss, torch grad, our loss, our grad): grads of loss.sum() (or of a fixed
    weighting of 'none' losses) w.r.t. the leaf log_probs (or the logits under log_softmax).
    torch's are live, or stored without torch (tests/golden.py)."""
    def run(lib):
        return _run_one(lib, lp, targets, il, tl, dtype, through_softmax, **kw)
    theirs = [np.array(a, dtype=np.float64) for a in golden.answer(lambda: run(torch))]
    return theirs + run(ptl)


def _run_one(lib, lp, targets, il, tl, dtype, through_softmax, tensor_lengths=False, **kw):
    """[loss, grad] of one library, as float64 arrays."""
    pdt = getattr(lib, dtype)
    leaf = lib.tensor(lp).to(pdt).requires_grad_()
    x = leaf.log_softmax(-1) if through_softmax else leaf
    tg = lib.tensor(targets)
    lengths = (lib.tensor(il), lib.tensor(tl)) if tensor_lengths else (il, tl)
    loss = lib.nn.functional.ctc_loss(x, tg, *lengths, **kw)
    weights = lib.arange(1, loss.numel() + 1).to(pdt).reshape(loss.shape)
    (loss * weights).sum().backward()
    return [loss.detach().numpy().astype(np.float64), leaf.grad.numpy().astype(np.float64)]


def _assert_same(lp, targets, il, tl, tol=1e-10, **kw):
    t_loss, t_grad, p_loss, p_grad = _run_both(lp, targets, il, tl, **kw)
    np.testing.assert_allclose(p_loss, t_loss, rtol=tol, atol=tol)
    assert np.isfinite(p_grad).all() == np.isfinite(t_grad).all()
    np.testing.assert_allclose(p_grad, t_grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
@pytest.mark.parametrize("seed", [0, 1])
def test_random_cases_match_torch(reduction, layout, seed):
    lp, targets, il, tl = _case(seed, t_max=12, n=4, n_labels=5, s_max=4)
    if layout == "concatenated":
        targets = _concat(targets, tl)
    _assert_same(lp, targets, il, tl, reduction=reduction)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("blank", [0, 2, 4])
def test_repeated_labels_and_blank(reduction, blank):
    lp, targets, il, tl = _case(3 + blank, t_max=10, n=3, n_labels=5, s_max=4, blank=blank,
                                repeats=True)
    assert (targets[0, 1] == targets[0, 0]) and tl[0] == 4
    _assert_same(lp, targets, il, tl, blank=blank, reduction=reduction)
    _assert_same(lp, _concat(targets, tl), il, tl, blank=blank, reduction=reduction)


def test_repeated_labels_need_a_blank_between():
    # [1, 1] needs 3 frames (1, blank, 1); [1, 2] fits in 2
    lp, _, _, _ = _case(5, t_max=3, n=2, n_labels=3, s_max=2)
    targets = np.array([[1, 1], [1, 2]])
    t_loss, _, p_loss, _ = _run_both(lp, targets, [2, 2], [2, 2], reduction="none")
    assert np.isinf(p_loss[0]) and np.isfinite(p_loss[1])
    np.testing.assert_allclose(p_loss, t_loss, rtol=1e-10)
    _assert_same(lp, targets, [3, 2], [2, 2], reduction="none")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_through_log_softmax_and_tensor_lengths(reduction):
    lp, targets, il, tl = _case(7, t_max=9, n=3, n_labels=6, s_max=3)
    _assert_same(lp, targets, il, tl, reduction=reduction, through_softmax=True,
                 tensor_lengths=True)


def test_length_tensor_dtypes_and_shapes():
    lp, targets, il, tl = _case(8, t_max=6, n=2, n_labels=4, s_max=2)
    want = golden.answer(lambda: TF.ctc_loss(torch.tensor(lp), torch.tensor(targets), il, tl,
                                             reduction="none"))
    for dtype in (ptl.int32, ptl.uint8, ptl.int64):
        got = PF.ctc_loss(ptl.tensor(lp), ptl.tensor(targets), ptl.tensor(il, dtype=dtype),
                          ptl.tensor([tl], dtype=dtype), reduction="none")
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    got = PF.ctc_loss(ptl.tensor(lp), ptl.tensor(targets), tuple(il), tuple(tl), reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("tdtype", ["float32", "int32", "bool"])
def test_target_dtypes_are_converted(tdtype):
    lp, targets, il, tl = _case(9, t_max=6, n=2, n_labels=4, s_max=3)
    targets = targets.clip(0, 3)
    want = golden.answer(lambda: TF.ctc_loss(
        torch.tensor(lp), torch.tensor(targets).to(getattr(torch, tdtype)), il, tl,
        reduction="none"))
    got = PF.ctc_loss(ptl.tensor(lp), ptl.tensor(targets).to(getattr(ptl, tdtype)), il, tl,
                      reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("zero_infinity", [False, True])
def test_impossible_alignments(reduction, zero_infinity):
    lp, targets, il, tl = _case(11, t_max=8, n=3, n_labels=5, s_max=5, short=True)
    t_loss, t_grad, p_loss, p_grad = _run_both(lp, targets, il, tl, reduction="none",
                                               zero_infinity=zero_infinity)
    np.testing.assert_allclose(p_loss, t_loss, rtol=1e-10)
    assert np.isinf(t_loss[-1]) != zero_infinity
    # finite rows: equal gradients; an infinite row's gradient is NaN in torch (ours is
    # finite), and zero with zero_infinity
    np.testing.assert_allclose(p_grad[:, :-1], t_grad[:, :-1], rtol=1e-10, atol=1e-10)
    assert np.isfinite(p_grad).all()
    if zero_infinity:
        assert (p_grad[:, -1] == 0).all() and (t_grad[:, -1] == 0).all()
        _assert_same(lp, targets, il, tl, reduction=reduction, zero_infinity=True)
    else:
        assert np.isnan(t_grad[:il[-1], -1]).all()


def test_zero_input_length():
    lp, targets, _, _ = _case(12, t_max=4, n=3, n_labels=4, s_max=2)
    targets = targets.clip(1, 3)
    _assert_same(lp, targets, [0, 0, 4], [0, 1, 2], reduction="none", zero_infinity=True)
    t_loss, _, p_loss, _ = _run_both(lp, targets, [0, 0, 4], [0, 1, 2], reduction="none")
    np.testing.assert_array_equal(p_loss, t_loss)


def test_empty_targets_everywhere():
    lp, _, _, _ = _case(13, t_max=5, n=2, n_labels=3, s_max=1)
    _assert_same(lp, np.zeros((2, 0), dtype=np.int64), [5, 3], [0, 0], reduction="mean")
    _assert_same(lp, np.zeros(0, dtype=np.int64), [5, 3], [0, 0], reduction="none")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_unbatched(reduction):
    lp, targets, _, _ = _case(14, t_max=7, n=1, n_labels=4, s_max=3)
    lp2 = lp[:, 0]
    for tg in (targets[0], targets):
        for lengths in (([6], [3]), ((6,), (3,))):
            _assert_same(lp2, tg, *lengths, reduction=reduction)
        _assert_same(lp2, tg, [6], [3], reduction=reduction, tensor_lengths=True)
    want = golden.answer(lambda: TF.ctc_loss(torch.tensor(lp2), torch.tensor(targets[0]),
                                             torch.tensor(6), torch.tensor(3),
                                             reduction=reduction))
    got = PF.ctc_loss(ptl.tensor(lp2), ptl.tensor(targets[0]), ptl.tensor(6), ptl.tensor(3),
                      reduction=reduction)
    assert tuple(got.shape) == np.shape(want) == ()
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_ties_uniform_log_probs():
    # every class equally likely: many alignments with exactly equal probabilities
    t_max, n, n_labels = 6, 3, 4
    lp = np.full((t_max, n, n_labels), -np.log(n_labels))
    targets = np.array([[1, 1, 2], [2, 3, 0], [3, 3, 3]])
    for reduction in REDUCTIONS:
        _assert_same(lp, targets, [6, 5, 6], [3, 2, 2], reduction=reduction)
        _assert_same(lp, targets, [6, 5, 6], [3, 2, 2], reduction=reduction,
                     through_softmax=True)
    # ties between logits too
    logits = np.zeros((t_max, n, n_labels))
    logits[:, :, 1] = 1.0
    logits[:, :, 2] = 1.0
    _assert_same(logits, targets, [6, 6, 4], [3, 1, 2], through_softmax=True)


def test_float32():
    lp, targets, il, tl = _case(15, t_max=20, n=4, n_labels=6, s_max=6)
    for reduction in REDUCTIONS:
        t_loss, t_grad, p_loss, p_grad = _run_both(lp, targets, il, tl, dtype="float32",
                                                   reduction=reduction)
        np.testing.assert_allclose(p_loss, t_loss, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(p_grad, t_grad, rtol=1e-4, atol=1e-5)
    out = PF.ctc_loss(ptl.tensor(lp).float(), ptl.tensor(targets), il, tl)
    assert out.dtype == ptl.float32


def test_long_sequence_gradient_is_finite():
    # long inputs with a short target: most alpha entries are far below the paths that
    # count, and the gradient must stay finite (torch's is)
    lp, targets, il, tl = _case(16, t_max=60, n=2, n_labels=5, s_max=3)
    _assert_same(lp, targets, il, tl, tol=1e-9, reduction="sum")


def test_noncontiguous_inputs():
    lp, targets, il, tl = _case(17, t_max=8, n=3, n_labels=5, s_max=3)
    want = golden.answer(lambda: TF.ctc_loss(torch.tensor(lp), torch.tensor(targets), il, tl,
                                             reduction="none"))
    # log_probs as a transposed view, targets as a stepped slice
    lp_t = ptl.tensor(np.ascontiguousarray(lp.transpose(1, 0, 2))).transpose(0, 1)
    wide = np.zeros((3, 6), dtype=np.int64)
    wide[:, ::2] = targets
    tg = ptl.tensor(wide)[:, ::2]
    assert not lp_t.is_contiguous() and not tg.is_contiguous()
    got = PF.ctc_loss(lp_t, tg, il, tl, reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


def test_gradcheck():
    lp, targets, il, tl = _case(18, t_max=5, n=2, n_labels=3, s_max=2, repeats=True)
    x = ptl.tensor(lp).requires_grad_()
    tg = ptl.tensor(targets)
    for reduction in REDUCTIONS:
        assert gradcheck(lambda a: PF.ctc_loss(a.log_softmax(2), tg, il, tl, reduction=reduction),
                         (x,))
    # log_probs as a non-contiguous (transposed) view of the leaf
    xt = ptl.tensor(np.ascontiguousarray(lp.transpose(1, 0, 2))).requires_grad_()
    assert gradcheck(lambda a: PF.ctc_loss(a.transpose(0, 1).log_softmax(2), tg, il, tl), (xt,))


def test_minus_inf_log_probs():
    # a class with probability 0 everywhere: the loss matches torch, and the gradient is
    # torch's where torch's is finite (torch's is NaN at the -inf entries and for the row
    # whose only alignment needs that class; ours is finite)
    lp, _, _, _ = _case(21, t_max=6, n=2, n_labels=4, s_max=2)
    lp[:, :, 3] = -np.inf
    lp[:, :, :3] -= np.log(np.exp(lp[:, :, :3]).sum(2, keepdims=True))
    targets = np.array([[1, 2], [3, 1]])
    t_loss, t_grad, p_loss, p_grad = _run_both(lp, targets, [6, 6], [2, 2], reduction="none")
    np.testing.assert_allclose(p_loss, t_loss, rtol=1e-10)
    assert np.isinf(p_loss[1]) and np.isfinite(p_grad).all()
    np.testing.assert_allclose(p_grad[:, 0, :3], t_grad[:, 0, :3], rtol=1e-10, atol=1e-10)


def test_no_grad_and_detached():
    lp, targets, il, tl = _case(19, t_max=5, n=2, n_labels=3, s_max=2)
    want = golden.answer(lambda: TF.ctc_loss(torch.tensor(lp), torch.tensor(targets), il, tl))
    with ptl.no_grad():
        got = PF.ctc_loss(ptl.tensor(lp).requires_grad_(), ptl.tensor(targets), il, tl)
    assert not got.requires_grad
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("kwargs", [{}, {"blank": 2, "reduction": "sum", "zero_infinity": True},
                                    {"reduction": "none"}])
def test_module(kwargs):
    lp, targets, il, tl = _case(20, t_max=7, n=3, n_labels=4, s_max=3, blank=kwargs.get("blank", 0))

    def run(lib):
        m = lib.nn.CTCLoss(**kwargs)
        return {"repr": repr(m), "attributes": [m.blank, m.reduction, m.zero_infinity],
                "constants": list(lib.nn.CTCLoss.__constants__),
                "loss": m(lib.tensor(lp), lib.tensor(targets), il, tl)}
    golden.assert_same_results(run, rtol=1e-12, atol=0)
    assert "ctc_loss" in PF.__all__


def _error_cases():
    """(name, log_probs shape, targets (nested list), input_lengths, target_lengths, kw)."""
    tg = [[1, 2, 2], [3, 1, 0]]
    return [
        ("blank too big", (5, 2, 4), tg, [5, 4], [3, 2], {"blank": 4}),
        ("blank negative", (5, 2, 4), tg, [5, 4], [3, 2], {"blank": -1}),
        ("input_lengths size", (5, 2, 4), tg, [5, 4, 3], [3, 2], {}),
        ("target_lengths size", (5, 2, 4), tg, [5, 4], [3], {}),
        ("target length negative", (5, 2, 4), tg, [5, 4], [3, -1], {}),
        ("target length negative, concatenated", (5, 2, 4), sum(tg, []), [5, 4], [3, -1], {}),
        ("target length too big", (5, 2, 4), tg, [5, 4], [4, 2], {}),
        ("concatenated size", (5, 2, 4), sum(tg, []), [5, 4], [3, 2], {}),
        ("target rows", (5, 2, 4), tg[:1], [5, 4], [3, 2], {}),
        ("input length too big", (5, 2, 4), tg, [6, 4], [3, 2], {}),
        ("input length negative", (5, 2, 4), tg, [-1, 4], [3, 2], {}),
        ("targets 3-d", (5, 2, 4), [tg], [5, 4], [3, 2], {}),
        ("targets 0-d", (5, 2, 4), 1, [5, 4], [3, 2], {}),
        ("log_probs 1-d", (5,), tg, [5, 4], [3, 2], {}),
        ("log_probs 4-d", (1, 5, 2, 4), tg, [5, 4], [3, 2], {}),
        ("empty", (0, 2, 4), tg, [0, 0], [0, 0], {}),
        ("empty classes", (5, 2, 0), tg, [5, 4], [3, 2], {}),
        ("bad reduction", (5, 2, 4), tg, [5], [3], {"reduction": "foo"}),
        ("unbatched, 2 target rows", (5, 4), tg, [5], [3], {}),
        ("order: negative target length before input length", (5, 2, 4), tg, [9, 4], [-3, 2], {}),
        ("order: target size before input length", (5, 2, 4), tg, [9, 4], [4, 2], {}),
        ("order: blank before lengths", (5, 2, 4), tg, [5], [3], {"blank": 9}),
    ]


@pytest.mark.parametrize("case", _error_cases(), ids=lambda c: c[0])
def test_errors_match_torch(case):
    _, shape, tg, il, tl, kw = case
    lp = np.zeros(shape)
    golden.assert_raises(lambda: PF.ctc_loss(ptl.tensor(lp), ptl.tensor(tg), il, tl, **kw),
                         lambda: TF.ctc_loss(torch.tensor(lp), torch.tensor(tg), il, tl, **kw))


@pytest.mark.parametrize("name", ["int64", "int32", "float16", "bfloat16", "bool", "uint8"])
def test_rejected_log_prob_dtypes(name):
    lp = np.zeros((5, 2, 4))
    tg = [[1, 2, 2], [3, 1, 0]]
    with pytest.raises(NotImplementedError):
        PF.ctc_loss(ptl.tensor(lp).to(getattr(ptl, name)), ptl.tensor(tg), [5, 4], [3, 2])
    golden.assert_raises(
        lambda: PF.ctc_loss(ptl.tensor(lp).to(getattr(ptl, name)), ptl.tensor(tg), [5, 4],
                            [3, 2]),
        lambda: TF.ctc_loss(torch.tensor(lp).to(getattr(torch, name)), torch.tensor(tg), [5, 4],
                            [3, 2]))


@pytest.mark.parametrize("lengths", [
    ("float", "float"), ("int", "int"), ("list", "tensor"), ("tensor", "list"),
    ("tuple", "tensor"), ("floatlist", "list"), ("tensor", "none")], ids=str)
def test_length_type_errors(lengths):
    def build(lib, kind, values):
        return {"float": lambda: lib.tensor([float(v) for v in values]),
                "bool": lambda: lib.tensor([True] * len(values)),
                "int": lambda: values[0], "list": lambda: list(values),
                "tuple": lambda: tuple(values), "tensor": lambda: lib.tensor(values),
                "floatlist": lambda: [float(v) for v in values], "none": lambda: None}[kind]()
    lp = np.zeros((5, 2, 4))
    tg = [[1, 2, 2], [3, 1, 0]]
    def call(lib):
        lib.nn.functional.ctc_loss(lib.tensor(lp), lib.tensor(tg),
                                   build(lib, lengths[0], [5, 4]), build(lib, lengths[1], [3, 2]))

    def same_message(ours, theirs):
        # torch's message less its per-overload "didn't match because ..." lines (TypeError)
        return ours == "\n".join(ln for ln in theirs.split("\n") if "didn't match" not in ln)
    golden.assert_raises(lambda: call(ptl), lambda: call(torch), compare=same_message)


@pytest.mark.parametrize("name", ["input_lengths", "target_lengths"])
def test_bool_lengths_rejected(name):
    lp = np.zeros((5, 2, 4))
    tg = [[1, 2, 2], [3, 1, 0]]
    for lib in golden.LIBRARIES:
        fn = lib.nn.functional.ctc_loss
        lengths = {"input_lengths": lib.tensor([5, 4]), "target_lengths": lib.tensor([3, 2])}
        lengths[name] = lib.tensor([True, True])
        with pytest.raises(RuntimeError, match=f"^{name} must be integral$"):
            fn(lib.tensor(lp), lib.tensor(tg), **lengths)
