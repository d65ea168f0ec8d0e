"""optim.swa_utils: AveragedModel (SWA, EMA, avg_fn, multi_avg_fn, use_buffers), SWALR and
update_bn against NumPy float64 and, step by step, against torch.optim.swa_utils."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

swa = ptl.optim.swa_utils


def _net(lib, seed):
    lib.manual_seed(seed)
    return lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.BatchNorm1d(5), lib.nn.ReLU(),
                             lib.nn.Linear(5, 2)).double()


def _copy_weights(src, dst):
    with torch.no_grad():
        for a, b in zip(src.state_dict().values(), dst.state_dict().values()):
            b.copy_(torch.from_numpy(a.numpy().copy()))


def _run(lib, net, averaged, steps, data):
    opt = lib.optim.SGD(net.parameters(), lr=0.1)
    states = []
    for i in range(steps):
        x = lib.from_numpy(data[i])
        opt.zero_grad()
        net(x).pow(2).sum().backward()
        opt.step()
        averaged.update_parameters(net)
        states.append({k: v.detach().numpy().copy() for k, v in averaged.state_dict().items()})
    return states


def test_swa_is_the_mean_of_the_weights():
    net = _net(ptl, 0)
    avg = swa.AveragedModel(net)
    seen = []
    for i in range(5):
        with ptl.no_grad():
            for p in net.parameters():
                p.add_(ptl.randn(p.shape, dtype=ptl.float64))
        seen.append([p.detach().numpy().copy() for p in net.parameters()])
        avg.update_parameters(net)
    assert avg.n_averaged.item() == 5 and avg.n_averaged.dtype == ptl.int64
    for j, p in enumerate(avg.module.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), np.mean([s[j] for s in seen], axis=0),
                                   rtol=1e-12, atol=1e-12)
    # buffers follow the model (no averaging) without use_buffers
    bn = net[1]
    np.testing.assert_array_equal(avg.module[1].running_mean.numpy(), bn.running_mean.numpy())


def test_ema_and_multi_avg_fn_match_numpy():
    for kind in ("avg", "multi"):
        net = _net(ptl, 1)
        fn = (dict(avg_fn=swa.get_ema_avg_fn(0.9)) if kind == "avg"
              else dict(multi_avg_fn=swa.get_ema_multi_avg_fn(0.9)))
        avg = swa.AveragedModel(net, use_buffers=True, **fn)
        ref = None
        for _ in range(4):
            with ptl.no_grad():
                for p in net.parameters():
                    p.mul_(0.5).add_(1.0)
            cur = [t.detach().numpy().copy() for t in list(net.parameters()) +
                   list(net.buffers())]
            ref = cur if ref is None else [
                r if c.dtype.kind == "i" else 0.9 * r + 0.1 * c for r, c in zip(ref, cur)]
            avg.update_parameters(net)
        got = list(avg.module.parameters()) + list(avg.module.buffers())
        for g, r in zip(got, ref):
            if r.dtype.kind == "i":
                continue
            np.testing.assert_allclose(g.detach().numpy(), r, rtol=1e-12, atol=1e-12)


def test_swa_multi_avg_fn_matches_default():
    net = _net(ptl, 2)
    a = swa.AveragedModel(net)
    b = swa.AveragedModel(net, multi_avg_fn=swa.get_swa_multi_avg_fn())
    for _ in range(3):
        with ptl.no_grad():
            for p in net.parameters():
                p.add_(ptl.randn(p.shape, dtype=ptl.float64))
        a.update_parameters(net)
        b.update_parameters(net)
    # the lerp weight 1 / (n_averaged + 1) is a float32 tensor, in PyTorch too
    for p, q in zip(a.parameters(), b.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-6, atol=1e-7)
    # integer weights fail as in PyTorch: a float alpha, or addcdiv's integer division
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point"):
        swa.get_swa_multi_avg_fn()([ptl.tensor([10, 20])], [ptl.tensor([20, 40])], 1)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv"):
        swa.get_swa_multi_avg_fn()([ptl.tensor([10, 20])], [ptl.tensor([20, 40])],
                                   ptl.tensor(1))


def test_state_dict_round_trip():
    net = _net(ptl, 3)
    avg = swa.AveragedModel(net, multi_avg_fn=swa.get_ema_multi_avg_fn(0.5))
    for _ in range(3):
        avg.update_parameters(net)
    fresh = swa.AveragedModel(_net(ptl, 4))
    fresh.load_state_dict(avg.state_dict())
    assert fresh.n_averaged.item() == 3
    for (k, v), w in zip(avg.state_dict().items(), fresh.state_dict().values()):
        np.testing.assert_array_equal(v.numpy(), w.numpy(), err_msg=k)

    opt = ptl.optim.SGD(net.parameters(), lr=1.0)
    sched = swa.SWALR(opt, swa_lr=0.05, anneal_epochs=4, anneal_strategy="linear")
    sched.step()
    state = sched.state_dict()
    assert "anneal_func" not in state and state["_anneal_strategy"] == "linear"
    other = swa.SWALR(ptl.optim.SGD(net.parameters(), lr=1.0), swa_lr=0.05)
    other.load_state_dict(state)
    assert other.anneal_func(0.25) == 0.25


def test_errors():
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa.AveragedModel(_net(ptl, 0), avg_fn=swa.get_swa_avg_fn(),
                          multi_avg_fn=swa.get_swa_multi_avg_fn())
    for f in (swa.get_ema_avg_fn, swa.get_ema_multi_avg_fn):
        with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided\. Please "
                                             r"provide a value in \[0,1\] range\."):
            f(1.5)
    opt = ptl.optim.SGD(_net(ptl, 0).parameters(), lr=1.0)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear', "
                                         "instead got exp"):
        swa.SWALR(opt, 0.1, anneal_strategy="exp")
    for bad in (-1, 2.0):
        with pytest.raises(ValueError, match=f"anneal_epochs must be equal or greater than 0, "
                                             f"got {bad}"):
            swa.SWALR(opt, 0.1, anneal_epochs=bad)
    with pytest.raises(ValueError, match="swa_lr must have the same length as "
                                         "optimizer.param_groups. swa_lr has 2 values, "
                                         "param_groups has 1."):
        swa.SWALR(opt, [0.1, 0.2])


@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 1, 5])
def test_swalr_anneals_from_lr_to_swa_lr(strategy, epochs):
    opt = ptl.optim.SGD(_net(ptl, 0).parameters(), lr=1.0)
    sched = swa.SWALR(opt, swa_lr=0.1, anneal_epochs=epochs, anneal_strategy=strategy)
    f = (lambda t: t) if strategy == "linear" else (lambda t: (1 - math.cos(math.pi * t)) / 2)
    lrs = [opt.param_groups[0]["lr"]]
    for _ in range(8):
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    start = 0 if epochs else 1
    for step, lr in enumerate(lrs):
        alpha = f(min(1, max(step, start) / max(1, epochs)))
        assert lr == pytest.approx(0.1 * alpha + 1.0 * (1 - alpha), rel=1e-12, abs=1e-15)


def test_update_bn_uses_the_data_mean_and_unbiased_variance():
    net = _net(ptl, 5)
    net.eval()
    rng = np.random.default_rng(0)
    batches = [rng.standard_normal((n, 4)) for n in (3, 7, 5)]
    loader = [(ptl.from_numpy(b), 0) for b in batches[:2]] + [ptl.from_numpy(batches[2])]
    swa.update_bn(loader, net)
    assert not net.training and net[1].momentum == 0.1
    w, b = net[0].weight.detach().numpy(), net[0].bias.detach().numpy()
    hidden = [x @ w.T + b for x in batches]
    mean = np.mean([h.mean(0) for h in hidden], axis=0)
    var = np.mean([h.var(0, ddof=1) for h in hidden], axis=0)
    np.testing.assert_allclose(net[1].running_mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(net[1].running_var.numpy(), var, rtol=1e-12)
    assert net[1].num_batches_tracked.item() == 3
    swa.update_bn(loader, ptl.nn.Linear(4, 4))  # no batch norm: nothing to do


@torch_ref
@pytest.mark.parametrize("kind", ["swa", "ema", "ema-multi-buffers", "custom"])
def test_averaged_run_matches_torch_step_by_step(kind):
    data = np.random.default_rng(1).standard_normal((6, 8, 4))
    made = {}
    for lib in (ptl, torch):
        net = _net(lib, 0)
        if lib is torch:
            _copy_weights(made[ptl][0], net)
        mod = lib.optim.swa_utils
        kw = {"swa": {}, "ema": {"avg_fn": mod.get_ema_avg_fn(0.8)},
              "ema-multi-buffers": {"multi_avg_fn": mod.get_ema_multi_avg_fn(0.8),
                                    "use_buffers": True},
              "custom": {"avg_fn": lambda a, m, n: a + 0.3 * (m - a) + 0 * n}}[kind]
        made[lib] = (net, mod.AveragedModel(net, **kw))
    ours = _run(ptl, *made[ptl], 6, data)
    theirs = _run(torch, *made[torch], 6, data)
    for s, t in zip(ours, theirs):
        assert list(s) == list(t)
        for k in s:
            np.testing.assert_allclose(s[k], t[k], rtol=1e-10, atol=1e-12, err_msg=k)


@torch_ref
@pytest.mark.parametrize("strategy", ["cos", "linear"])
@pytest.mark.parametrize("epochs", [0, 3])
def test_swalr_after_cosine_matches_torch(strategy, epochs):
    lrs = {}
    for lib in (ptl, torch):
        params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(3))]
        opt = lib.optim.SGD([{"params": [params[0]], "lr": 0.5}, {"params": [params[1]]}],
                            lr=0.2)
        cos = lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=20)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.01, 0.03], anneal_epochs=epochs,
                                          anneal_strategy=strategy)
        seq = []
        for i in range(12):
            opt.step()
            (cos if i < 5 else sched).step()
            seq.append([g["lr"] for g in opt.param_groups])
        lrs[lib] = seq
    np.testing.assert_allclose(lrs[ptl], lrs[torch], rtol=1e-12)


@torch_ref
def test_swalr_get_lr_warns_and_state_dict_keys_match_torch():
    """get_lr() called outside step() warns to use get_last_lr(), as every scheduler; the
    state_dict keys are torch's (the step flags included)."""
    import warnings

    def run(lib):
        opt = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1)
        sched = lib.optim.swa_utils.SWALR(opt, swa_lr=0.05, anneal_epochs=3)
        opt.step()
        sched.step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lrs = sched.get_lr()
        return lrs, [str(w.message) for w in caught], list(sched.state_dict())
    assert run(ptl) == run(torch)
