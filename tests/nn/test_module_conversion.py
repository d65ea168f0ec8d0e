"""nn.Module.to / float / double / half keep the Parameter objects and swap their data in
place (PyTorch's Module._apply with torch.__future__'s defaults), and `Tensor.data = t`
(set_data) that this relies on.

Regression: _apply made a new Parameter for every parameter even when nothing changed, so
tied weights came apart (a GPT's embedding and output head) and an optimizer built before
`model.to(device)` no longer updated the model."""
import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.nn as nn


class TiedLM(nn.Module):
    """The GPT pattern: the output head shares the token embedding's weight."""

    def __init__(self, vocab=7, dim=4):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        self.register_buffer("scale", ptl.ones(1))

    def forward(self, idx):
        return self.lm_head(self.wte(idx) * self.scale)


@pytest.mark.parametrize("convert", [
    lambda m: m.to("cpu"), lambda m: m.to(ptl.float64), lambda m: m.to("cpu", ptl.float32),
    lambda m: m.double(), lambda m: m.float(), lambda m: m.half(), lambda m: m.cpu(),
    lambda m: m.to(device="cpu", dtype=ptl.float64), lambda m: m.to(ptl.zeros(1, dtype=ptl.float64)),
])
def test_conversion_keeps_parameter_objects(convert):
    m = TiedLM()
    params = list(m.parameters())
    ids = [id(p) for p in params]
    assert convert(m) is m
    assert [id(p) for p in m.parameters()] == ids
    assert m.lm_head.weight is m.wte.weight
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in m.parameters())
    assert m.wte.weight.dtype == m.scale.dtype


def test_conversion_changes_dtype_in_place_and_converts_grads():
    m = nn.Linear(3, 2)
    w = m.weight
    m(ptl.ones(1, 3)).sum().backward()
    g = w.grad
    m.double()
    assert m.weight is w and w.dtype == ptl.float64
    assert w.grad is g and g.dtype == ptl.float64
    np.testing.assert_array_equal(g.numpy(), np.ones((2, 3)))
    # the converted parameter takes part in new graphs in its new dtype
    m.zero_grad()
    m(ptl.ones(1, 3, dtype=ptl.float64)).sum().backward()
    assert w.grad.dtype == ptl.float64
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((2, 3)))


def test_tied_weight_trains_once_after_to():
    """A tied weight gets one gradient (the sum of both uses) and one optimizer update."""
    gen = np.random.default_rng(0)
    m = TiedLM()
    opt = ptl.optim.SGD(m.parameters(), lr=0.5)   # built before the move, as scripts do
    m.to("cpu")
    m.double()
    e0 = m.wte.weight.detach().numpy().copy()
    idx = np.array([1, 3, 3, 5])
    c = gen.standard_normal((4, 7))
    loss = (m(ptl.tensor(idx)) * ptl.tensor(c)).sum()
    loss.backward()
    # loss = sum(c * (E[idx] @ E^T)): the head's use gives c^T E[idx], the embedding's use
    # scatters c @ E into the rows idx
    expected = c.T @ e0[idx]
    np.add.at(expected, idx, c @ e0)
    np.testing.assert_allclose(m.wte.weight.grad.numpy(), expected, rtol=1e-12, atol=1e-12)
    assert len(opt.param_groups[0]["params"]) == 1
    opt.step()
    np.testing.assert_allclose(m.wte.weight.detach().numpy(), e0 - 0.5 * expected,
                               rtol=1e-12, atol=1e-12)
    assert m.lm_head.weight is m.wte.weight


def test_overwrite_switch_makes_new_parameters():
    m = nn.Linear(2, 2)
    w = m.weight
    ptl.__future__.set_overwrite_module_params_on_conversion(True)
    try:
        m.double()
    finally:
        ptl.__future__.set_overwrite_module_params_on_conversion(False)
    assert m.weight is not w and isinstance(m.weight, nn.Parameter)
    assert m.weight.dtype == ptl.float64 and w.dtype == ptl.float32
    assert not ptl.__future__.get_overwrite_module_params_on_conversion()


def test_set_data_keeps_identity_and_autograd_state():
    p = nn.Parameter(ptl.ones(3))
    v0 = p._version
    p.data = ptl.arange(4, dtype=ptl.float64)
    assert p.dtype == ptl.float64 and tuple(p.shape) == (4,) and p.requires_grad
    assert p._version == v0
    (p * p).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), 2 * np.arange(4.0))
    # the new data is shared, not copied
    src = ptl.zeros(2, 2)
    t = ptl.ones(5)
    t.data = src
    src.add_(3)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 2), 3.0))
    # a non-contiguous source keeps its geometry
    base = ptl.arange(6.0).reshape(2, 3)
    t.data = base.t()
    assert t.stride() == (1, 3)
    np.testing.assert_array_equal(t.numpy(), np.arange(6.0).reshape(2, 3).T)


def test_set_data_errors():
    p = nn.Parameter(ptl.ones(3))
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got int"):
        p.data = 3
    with pytest.raises(RuntimeError, match="data set to a tensor that requires gradients must "
                                           "be floating point or complex dtype"):
        p.data = ptl.ones(2, dtype=ptl.int64)
    with pytest.raises(RuntimeError, match="Deleting tensor data is not allowed"):
        del p.data
    # a tensor that does not require grad takes any dtype
    t = ptl.ones(2)
    t.data = ptl.tensor([1, 2])
    assert t.dtype == ptl.int64
