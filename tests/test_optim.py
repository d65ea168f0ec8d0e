"""Optimizers step by step against torch.optim from identical parameters and gradients."""
import numpy as np
import pytest

import pytorchlite as ptl

torch = pytest.importorskip("torch", reason="update rules are compared with torch.optim")

CASES = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.1, weight_decay=0.01)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.5, amsgrad=True)),
]


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_steps_match_torch(name, kwargs):
    rng = np.random.default_rng(0)
    init = [rng.normal(size=(3, 4)), rng.normal(size=(4,))]
    ps = [ptl.tensor(a, dtype=ptl.float64, requires_grad=True) for a in init]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in init]
    opt = getattr(ptl.optim, name)(ps, **kwargs)
    topt = getattr(torch.optim, name)(ts, **kwargs)
    for step in range(6):
        grads = [rng.normal(size=a.shape) for a in init]
        for p, t, g in zip(ps, ts, grads):
            p.grad = ptl.tensor(g, dtype=ptl.float64)
            t.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
        topt.step()
        for p, t in zip(ps, ts):
            np.testing.assert_allclose(np.array(p.tolist()), t.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_state_dict_structure_matches_torch():
    a = np.ones((2, 2))
    p = ptl.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    opt, topt = ptl.optim.SGD([p], lr=0.1, momentum=0.9), torch.optim.SGD([t], lr=0.1, momentum=0.9)
    p.grad, t.grad = ptl.ones(2, 2, dtype=ptl.float64), torch.ones(2, 2, dtype=torch.float64)
    opt.step()
    topt.step()
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    assert list(sd["state"]) == list(tsd["state"]) == [0]
    assert list(sd["state"][0]) == list(tsd["state"][0])
    opt2 = ptl.optim.SGD([ptl.tensor(a, requires_grad=True)], lr=0.5, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1


def test_errors():
    p = ptl.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="Invalid learning rate: -1"):
        ptl.optim.SGD([p], lr=-1)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        ptl.optim.Adam([])
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        ptl.optim.SGD(p, lr=0.1)
    with pytest.raises(ValueError, match="Nesterov momentum requires a momentum and zero dampening"):
        ptl.optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="some parameters appear in more than one parameter group"):
        ptl.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1)


def test_zero_grad_and_closure():
    p = ptl.ones(2, requires_grad=True)
    opt = ptl.optim.SGD([p], lr=0.5)

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss
    loss = opt.step(closure)
    assert loss.item() == 2.0 and p.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None
