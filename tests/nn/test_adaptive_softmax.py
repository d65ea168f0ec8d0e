"""nn.AdaptiveLogSoftmaxWithLoss: output, loss, log_prob and predict against a NumPy float64
evaluation of the same weights, gradcheck through the head and the tails, every error of
PyTorch's, and (with torch installed) the same numbers and parameter names as torch's module
given the same weights."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref
from pytorchlite.autograd import gradcheck

Module = ptl.nn.AdaptiveLogSoftmaxWithLoss


def _log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _full_log_prob(m, x):
    """[batch, n_classes] log-probabilities from the module's weights, in NumPy."""
    head = x @ m.head.weight.detach().numpy().T
    if m.head.bias is not None:
        head = head + m.head.bias.detach().numpy()
    head = _log_softmax(head)
    parts = [head[:, :m.shortlist_size]]
    for i, projection in enumerate(m.tail):
        hidden = x @ projection[0].weight.detach().numpy().T
        scores = _log_softmax(hidden @ projection[1].weight.detach().numpy().T)
        parts.append(scores + head[:, m.shortlist_size + i:m.shortlist_size + i + 1])
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("batch", [1, 7, 40])
@pytest.mark.parametrize("cutoffs, head_bias", [([4], False), ([3, 9, 20], True),
                                                ([1, 2], False)])
def test_matches_numpy(batch, cutoffs, head_bias):
    ptl.manual_seed(batch)
    m = Module(12, 25, cutoffs, div_value=2.0, head_bias=head_bias).double()
    rng = np.random.default_rng(batch)
    x = rng.standard_normal((batch, 12))
    target = rng.integers(0, 25, batch)
    full = _full_log_prob(m, x)
    result = m(ptl.tensor(x), ptl.tensor(target))
    expect = full[np.arange(batch), target]
    np.testing.assert_allclose(result.output.detach().numpy(), expect, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(result.loss.item(), -expect.mean(), rtol=1e-12)
    np.testing.assert_allclose(m.log_prob(ptl.tensor(x)).detach().numpy(), full, rtol=1e-12,
                               atol=1e-12)
    np.testing.assert_array_equal(m.predict(ptl.tensor(x)).numpy(), full.argmax(axis=1))


def test_predict_mixes_shortlist_and_tail_rows():
    ptl.manual_seed(0)
    m = Module(6, 10, [3], head_bias=True).double()
    x = np.random.default_rng(1).standard_normal((8, 6))
    x[:4] = np.abs(x[:4]) + 1.0
    x[4:] = 0.0
    with ptl.no_grad():   # the zero rows' best head column is the cluster, the others' class 0
        m.head.bias.copy_(ptl.tensor([0.0, 0, 0, 5.0]))
        m.head.weight[0].fill_(3.0)
    full = _full_log_prob(m, x)
    assert len(set(full.argmax(axis=1) >= 3)) == 2           # both kinds of rows present
    np.testing.assert_array_equal(m.predict(ptl.tensor(x)).numpy(), full.argmax(axis=1))


def test_unbatched_input():
    ptl.manual_seed(3)
    m = Module(16, 9, [2, 6]).double()
    x = ptl.randn(16, dtype=ptl.float64)
    one = m(x, ptl.tensor(7))
    many = m(x.unsqueeze(0), ptl.tensor([7]))
    assert one.output.shape == () and one.output.item() == many.output.item()
    assert one.loss.item() == many.loss.item()


def test_gradcheck_through_head_and_tails():
    ptl.manual_seed(4)
    m = Module(6, 14, [3, 8], div_value=2.0, head_bias=True).double()
    target = ptl.tensor([0, 4, 9, 13, 2, 8])
    x = ptl.randn(6, 6, dtype=ptl.float64, requires_grad=True)
    names = [name for name, _ in m.named_parameters()]
    owners = [m.get_submodule(name.rpartition(".")[0]) for name in names]
    leaves = [name.rpartition(".")[2] for name in names]
    for owner, leaf in zip(owners, leaves):
        del owner._parameters[leaf]      # the module reads plain tensors set below

    def loss(x, *params):
        for owner, leaf, value in zip(owners, leaves, params):
            setattr(owner, leaf, value)
        return m(x, target).loss
    start = tuple(ptl.randn(p.shape, dtype=ptl.float64, requires_grad=True)
                  for p in dict(Module(6, 14, [3, 8], div_value=2.0, head_bias=True).double()
                                .named_parameters()).values())
    assert gradcheck(lambda x: (loss(x, *start), m(x, target).output)[1], (x,))
    assert gradcheck(loss, (x,) + start)


@pytest.mark.parametrize("cutoffs", [[], [5, 3], [0, 4], [4, 10], [3, 3], [2.5]])
def test_bad_cutoffs(cutoffs):
    match = ("cutoffs should be a sequence of length larger than 0" if not cutoffs else
             "cutoffs should be a sequence of unique, positive integers sorted in an "
             "increasing order, where each value is between 1 and n_classes-1")
    with pytest.raises(ValueError, match=match):
        Module(4, 10, cutoffs)


@pytest.mark.parametrize("shape, target, message", [
    ((3, 4), [1, 2], "Input and target should have the same size in the batch dimension."),
    ((2, 2, 4), [1, 2], r"1D target tensor expects 2D input tensors, but found inputs with "
     r"size torch.Size\(\[2, 2, 4\]\)"),
    ((2, 4), 1, r"0D target tensor expects 1D input tensors, but found inputs with size "
     r"torch.Size\(\[2, 4\]\)"),
    ((2, 4), [[1, 2]], "0D or 1D target tensor expected, multi-target not supported"),
    ((2, 4), [1, 10], r"Target values should be in \[0, 9\], but values in range \[1, 10\] "
     "were found."),
    ((2, 4), [-1, 3], r"Target values should be in \[0, 9\], but values in range \[-1, 3\] "
     "were found."),
])
def test_bad_inputs(shape, target, message):
    m = Module(4, 10, [3])
    with pytest.raises(RuntimeError, match=message):
        m(ptl.zeros(shape), ptl.tensor(target))


@torch_ref
def test_same_as_torch_with_the_same_weights():
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 30, [5, 12, 20], div_value=2.0,
                                                  head_bias=True).double()
    ours = Module(16, 30, [5, 12, 20], div_value=2.0, head_bias=True).double()
    weights = theirs.state_dict()
    assert list(weights) == list(ours.state_dict())
    ours.load_state_dict({k: ptl.tensor(v.numpy()) for k, v in weights.items()})
    assert repr(ours) == repr(theirs)
    rng = np.random.default_rng(0)
    x, target = rng.standard_normal((11, 16)), rng.integers(0, 30, 11)
    a = theirs(torch.tensor(x), torch.tensor(target))
    b = ours(ptl.tensor(x), ptl.tensor(target))
    np.testing.assert_allclose(b.output.detach().numpy(), a.output.detach().numpy(),
                               rtol=1e-12, atol=1e-12)
    assert b.loss.item() == pytest.approx(a.loss.item(), rel=1e-13)
    assert ours.predict(ptl.tensor(x)).tolist() == theirs.predict(torch.tensor(x)).tolist()
