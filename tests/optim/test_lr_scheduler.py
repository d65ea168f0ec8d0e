"""Learning-rate schedulers against torch.optim.lr_scheduler (live, or its stored answers
without it: tests/golden.py): the same optimizer set-up (two param groups), 50 steps, every
lr (and cycled momentum) equal to 1e-12."""
import copy
import math
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import golden
from helpers import torch, torch_ref


def S(lib):
    return lib.optim.lr_scheduler


class Scaled:
    """A callable object: its __dict__ is what state_dict keeps of it (a function: None)."""

    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return self.factor ** x


def halving(lib):
    """The LRScheduler base class with a closed get_lr of one's own."""
    class Halving(S(lib).LRScheduler):
        def get_lr(self):
            return [base * 0.5 ** (self.last_epoch // 4) for base in self.base_lrs]
    return Halving


# name -> (lib, optimizer, **kw) -> scheduler; kw is last_epoch where the class takes one
CASES = {
    "LRScheduler": lambda lib, o, **kw: halving(lib)(o, **kw),
    "LambdaLR": lambda lib, o, **kw: S(lib).LambdaLR(o, lambda e: 0.95 ** e + 0.01 * (e % 3),
                                                     **kw),
    "LambdaLR-list": lambda lib, o, **kw: S(lib).LambdaLR(o, [lambda e: 1 / (e + 1),
                                                              Scaled(0.9)], **kw),
    "MultiplicativeLR": lambda lib, o, **kw: S(lib).MultiplicativeLR(o, lambda e: 0.97, **kw),
    "StepLR": lambda lib, o, **kw: S(lib).StepLR(o, step_size=7, gamma=0.5, **kw),
    "MultiStepLR": lambda lib, o, **kw: S(lib).MultiStepLR(o, milestones=[5, 12, 12, 30],
                                                           gamma=0.3, **kw),
    "ConstantLR": lambda lib, o, **kw: S(lib).ConstantLR(o, factor=0.25, total_iters=9, **kw),
    "LinearLR": lambda lib, o, **kw: S(lib).LinearLR(o, start_factor=0.1, end_factor=0.8,
                                                     total_iters=20, **kw),
    "ExponentialLR": lambda lib, o, **kw: S(lib).ExponentialLR(o, gamma=0.93, **kw),
    "PolynomialLR": lambda lib, o, **kw: S(lib).PolynomialLR(o, total_iters=30, power=2.5,
                                                             **kw),
    "CosineAnnealingLR": lambda lib, o, **kw: S(lib).CosineAnnealingLR(o, T_max=12,
                                                                       eta_min=0.001, **kw),
    "CosineAnnealingWarmRestarts": lambda lib, o, **kw: S(lib).CosineAnnealingWarmRestarts(
        o, T_0=4, T_mult=2, eta_min=0.002, **kw),
    "CyclicLR-triangular": lambda lib, o, **kw: S(lib).CyclicLR(
        o, 0.01, [0.1, 0.2], step_size_up=4, step_size_down=6, **kw),
    "CyclicLR-triangular2": lambda lib, o, **kw: S(lib).CyclicLR(
        o, 0.01, 0.1, step_size_up=5, mode="triangular2", base_momentum=0.7, **kw),
    "CyclicLR-exp_range": lambda lib, o, **kw: S(lib).CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=3, mode="exp_range", gamma=0.97,
        cycle_momentum=False, **kw),
    "CyclicLR-custom": lambda lib, o, **kw: S(lib).CyclicLR(
        o, 0.01, 0.1, step_size_up=3, scale_fn=Scaled(0.8), scale_mode="iterations", **kw),
    "OneCycleLR-cos": lambda lib, o, **kw: S(lib).OneCycleLR(o, max_lr=[0.5, 0.2],
                                                             total_steps=51, **kw),
    "OneCycleLR-linear-3phase": lambda lib, o, **kw: S(lib).OneCycleLR(
        o, max_lr=0.4, epochs=5, steps_per_epoch=11, pct_start=0.25, anneal_strategy="linear",
        three_phase=True, div_factor=10.0, final_div_factor=100.0, **kw),
    "SequentialLR": lambda lib, o, **kw: S(lib).SequentialLR(
        o, [S(lib).LinearLR(o, start_factor=0.2, total_iters=5),
            S(lib).ExponentialLR(o, gamma=0.9),
            S(lib).CosineAnnealingLR(o, T_max=10)], milestones=[6, 20], **kw),
    "ChainedScheduler": lambda lib, o: S(lib).ChainedScheduler(
        [S(lib).ConstantLR(o, factor=0.5, total_iters=4), S(lib).ExponentialLR(o, gamma=0.95),
         S(lib).StepLR(o, step_size=10, gamma=0.5)]),
    "ReduceLROnPlateau": lambda lib, o: S(lib).ReduceLROnPlateau(o, patience=2, factor=0.5,
                                                                 cooldown=1),
}
NO_LAST_EPOCH = ("ChainedScheduler", "ReduceLROnPlateau")


def optimizer(lib, adam=False):
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(3, requires_grad=True)
    groups = [{"params": [a]}, {"params": [b], "lr": 0.05}]
    if adam:
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def group_values(opt):
    """Each group's lr and momentum (SGD) or beta1 (Adam)."""
    return [[g["lr"], g["momentum"] if "momentum" in g else g["betas"][0]]
            for g in opt.param_groups]


@pytest.mark.parametrize("name", [n for n in CASES if n != "ReduceLROnPlateau"])
def test_lr_sequence_matches_torch(name):
    """50 steps: the last lrs and the groups' lr and momentum (beta1) as torch's (live, or
    stored without torch: tests/golden.py)."""
    adam = name == "OneCycleLR-cos"    # cycles Adam's beta1 instead of SGD's momentum

    def run(lib):
        opt = optimizer(lib, adam)
        sched = CASES[name](lib, opt)
        lrs, groups = [], []
        for _ in range(50):
            lrs.append(sched.get_last_lr())
            groups.append(group_values(opt))
            opt.step()
            sched.step()
        return {"last lrs": np.array(lrs), "groups": np.array(groups)}
    lrs = run(ptl)["last lrs"]
    assert len(set(map(tuple, lrs))) >= 2    # the schedule does change the lr
    golden.assert_same_results(run, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("kwargs", [
    dict(), dict(mode="max", patience=2, factor=0.5), dict(threshold_mode="abs", threshold=0.05,
                                                          patience=1, cooldown=3),
    dict(mode="max", threshold_mode="abs", patience=0, min_lr=[0.02, 0.01], eps=1e-3),
    dict(patience=1, min_lr=0.004),
])
def test_reduce_lr_on_plateau_matches_torch(kwargs):
    def run(lib):
        sched = lib.optim.lr_scheduler.ReduceLROnPlateau(optimizer(lib), **kwargs)
        lrs, bad, best = [], [], []
        for i in range(60):
            metric = 1.0 / (1 + i % 13) + 0.001 * math.sin(i)
            sched.step(metric if i % 2 or lib is torch else
                       ptl.tensor(metric, dtype=ptl.float64))
            lrs.append(sched.get_last_lr())
            bad.append(sched.num_bad_epochs)
            best.append(float(sched.best))
        return {"lrs": np.array(lrs), "num_bad_epochs": np.array(bad), "best": np.array(best)}
    assert run(ptl)["lrs"][-1].tolist() != [0.1, 0.05]
    golden.assert_same_results(run, rtol=1e-12, atol=0)


@pytest.mark.parametrize("name", ["StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
                                  "ExponentialLR", "PolynomialLR", "CosineAnnealingLR",
                                  "CosineAnnealingWarmRestarts"])
def test_step_with_epoch_uses_closed_form(name):
    def run(lib):
        sched = CASES[name](lib, optimizer(lib))
        lrs = []
        for epoch in (3, 10, 7, 25, 0, 14):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")     # torch deprecates the epoch argument
                sched.step(epoch)
            lrs.append(sched.get_last_lr())
        return {"lrs": np.array(lrs)}
    golden.assert_same_results(run, rtol=1e-12, atol=0)


def test_warm_restarts_fractional_epochs():
    def run(lib):
        sched = CASES["CosineAnnealingWarmRestarts"](lib, optimizer(lib))
        lrs, t_i, t_cur = [], [], []
        for epoch in (0.5, 1.25, 3.75, 4.0, 9.5, 30.2):
            sched.step(epoch)
            lrs.append(sched.get_last_lr())
            t_i.append(sched.T_i)
            t_cur.append(sched.T_cur)
        return {"lrs": np.array(lrs), "T_i": np.array(t_i), "T_cur": np.array(t_cur, float)}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "CyclicLR-triangular",
                                  "OneCycleLR-cos", "SequentialLR", "ChainedScheduler",
                                  "LambdaLR"])
def test_state_dict_resumes(name):
    adam = name == "OneCycleLR-cos"
    opt = optimizer(ptl, adam)
    sched = CASES[name](ptl, opt)
    for _ in range(9):
        opt.step()
        sched.step()
    state = sched.state_dict()
    assert "optimizer" not in state
    opt2 = optimizer(ptl, adam)
    sched2 = CASES[name](ptl, opt2)
    sched2.load_state_dict(state)
    for g, g2 in zip(opt.param_groups, opt2.param_groups):
        g2["lr"] = g["lr"]
    opt2.step()
    for _ in range(9):
        sched.step()
        sched2.step()
        assert sched2.get_last_lr() == sched.get_last_lr()
    torch_state = golden.answer(
        lambda: sorted(CASES[name](torch, optimizer(torch, adam)).state_dict()))
    assert sorted(state) == torch_state


def test_resume_needs_initial_lr():
    opt = ptl.optim.SGD([ptl.ones(1, requires_grad=True)], lr=0.1)
    golden.assert_raises(lambda: ptl.optim.lr_scheduler.StepLR(opt, 3, last_epoch=5),
                         lambda: torch.optim.lr_scheduler.StepLR(
                             torch.optim.SGD([torch.ones(1, requires_grad=True)], lr=0.1), 3,
                             last_epoch=5))


def errors(lib):
    sgd = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.1)
    plain = lib.optim.Adagrad([lib.ones(1, requires_grad=True)], lr=0.1)
    s = S(lib)
    return [
        (TypeError, "int is not an Optimizer", lambda: s.StepLR(3, 2)),
        (ValueError, "Constant multiplicative factor expected to be between 0 and 1.",
         lambda: s.ConstantLR(sgd, factor=2)),
        (ValueError, "Starting multiplicative factor expected to be greater than 0 and less or "
                     "equal to 1.", lambda: s.LinearLR(sgd, start_factor=0)),
        (ValueError, "Ending multiplicative factor expected to be between 0 and 1.",
         lambda: s.LinearLR(sgd, end_factor=2)),
        (ValueError, "Expected 1 lr_lambdas, but got 2",
         lambda: s.LambdaLR(sgd, [lambda e: 1, lambda e: 1])),
        (ValueError, "Expected positive integer T_0, but got 0",
         lambda: s.CosineAnnealingWarmRestarts(sgd, 0)),
        (ValueError, "Expected integer T_mult >= 1, but got 0",
         lambda: s.CosineAnnealingWarmRestarts(sgd, 2, T_mult=0)),
        (ValueError, "mode is invalid and scale_fn is None",
         lambda: s.CyclicLR(sgd, 0.1, 1.0, mode="square")),
        (ValueError, "optimizer must support momentum or beta1 with `cycle_momentum` option "
                     "enabled", lambda: s.CyclicLR(plain, 0.1, 1.0)),
        (ValueError, "max_lr must have the same length as optimizer.param_groups. max_lr has 2 "
                     "values, param_groups has 1.", lambda: s.CyclicLR(sgd, 0.1, [1.0, 2.0])),
        (ValueError, "You must define either total_steps OR (epochs AND steps_per_epoch)",
         lambda: s.OneCycleLR(sgd, 0.1)),
        (ValueError, "Expected positive integer total_steps, but got 0",
         lambda: s.OneCycleLR(sgd, 0.1, total_steps=0)),
        (ValueError, "Expected float between 0 and 1 pct_start, but got 2.0",
         lambda: s.OneCycleLR(sgd, 0.1, total_steps=5, pct_start=2.0)),
        (ValueError, "anneal_strategy must be one of 'cos' or 'linear', instead got cubic",
         lambda: s.OneCycleLR(sgd, 0.1, total_steps=5, anneal_strategy="cubic")),
        (ValueError, "Factor should be < 1.0.", lambda: s.ReduceLROnPlateau(sgd, factor=1.0)),
        (ValueError, "mode maximal is unknown!", lambda: s.ReduceLROnPlateau(sgd, "maximal")),
        (ValueError, "threshold mode relative is unknown!",
         lambda: s.ReduceLROnPlateau(sgd, threshold_mode="relative")),
        (ValueError, "expected 1 min_lrs, got 2", lambda: s.ReduceLROnPlateau(sgd, min_lr=[0, 0])),
        (ValueError, "Sequential Schedulers expects number of schedulers provided to be one more "
                     "than the number of milestone points, but got number of schedulers 1 and "
                     "the number of milestones to be equal to 1",
         lambda: s.SequentialLR(sgd, [s.StepLR(sgd, 2)], milestones=[3])),
        (ValueError, "SequentialLR expects at least one scheduler, but got no scheduler.",
         lambda: s.SequentialLR(sgd, [], milestones=[])),
        (ValueError, "ChainedScheduler expects at least one scheduler to be chained, but got no "
                     "scheduler.", lambda: s.ChainedScheduler([], sgd)),
        (ValueError, "ChainedScheduler expects all schedulers to belong to the same optimizer, "
                     "but got scheduler StepLR at index 1",
         lambda: s.ChainedScheduler([s.StepLR(sgd, 2), s.StepLR(plain, 2)])),
    ]


@pytest.mark.parametrize("i", range(len(errors(ptl))))
def test_errors_match_torch(i):
    for lib in golden.LIBRARIES:
        exc, message, make = errors(lib)[i]
        with pytest.raises(exc, match=re.escape(message)):
            make()


def test_one_cycle_overstep():
    opt = optimizer(ptl)
    sched = ptl.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=3)
    opt.step()
    for _ in range(3):
        sched.step()
    with pytest.raises(ValueError, match=re.escape("Tried to step 4 times. The specified number "
                                                   "of total steps is 3")):
        sched.step()


# ---- parity of everything a scheduler shows: values bit for bit, warnings, state_dict ------

def exact(v):
    """v as JSON data that compares exactly: floats as their repr (bit for bit), dicts (a
    Counter too) with str keys, tuples as lists, callables as a placeholder."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, dict):
        return {str(k): exact(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [exact(x) for x in v]
    return f"<{'callable' if callable(v) else type(v).__name__}>"


def recorded(fn):
    """(fn()'s value as exact() data, or its exception's class and message; the warnings it
    raised as [class name, message])."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = exact(fn())
        except Exception as e:  # noqa: BLE001  (the exception is the answer)
            value = [type(e).__name__, str(e)]
    return value, [[w.category.__name__, str(w.message)] for w in caught]


def metric(i):
    """A loss for ReduceLROnPlateau: falls, then plateaus in cycles of 7."""
    return 1.0 / (1 + i % 7)


def step_and_record(lib, name, opt, sched, i, epoch=None):
    """One optimizer step and one scheduler step (i-th); the lr and momentum of each group,
    get_last_lr(), the step's warnings and the scheduler's state_dict."""
    opt.step()
    args = (metric(i),) if name == "ReduceLROnPlateau" else ()
    if epoch is not None:
        args += (epoch,)
    _, caught = recorded(lambda: sched.step(*args))
    state = sched.state_dict()
    return {"groups": exact(group_values(opt)), "last_lr": exact(sched.get_last_lr()),
            "warnings": caught, "state keys": list(state), "state": exact(state)}


def fresh(lib, name, **kw):
    opt = optimizer(lib, adam=name == "OneCycleLR-cos")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sched = CASES[name](lib, opt, **kw)
    return opt, sched, [[w.category.__name__, str(w.message)] for w in caught]


@pytest.mark.parametrize("name", list(CASES))
def test_schedule_parity(name):
    """30 steps from a fresh start: every lr and momentum bit for bit as torch's, the same
    warnings (none), state_dict with the same keys in the same order and the same values;
    then get_lr() called outside step() warns (or raises) as torch's does."""
    def run(lib):
        opt, sched, caught = fresh(lib, name)
        out = {"construct warnings": caught}
        out.update(golden.named([step_and_record(lib, name, opt, sched, i) for i in range(30)],
                         "step"))
        out["get_lr outside step"] = recorded(sched.get_lr)
        return out
    golden.assert_same_results(run)


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_round_trip_parity(name):
    """Saved after 15 steps (scheduler and optimizer) and loaded into a freshly built pair,
    the schedule goes on exactly as the uninterrupted one (and as torch's)."""
    def run(lib):
        opt, sched, _ = fresh(lib, name)
        for i in range(15):
            step_and_record(lib, name, opt, sched, i)
        saved = copy.deepcopy(sched.state_dict()), opt.state_dict()
        opt2, sched2, _ = fresh(lib, name)
        opt2.load_state_dict(saved[1])
        sched2.load_state_dict(saved[0])
        went_on, resumed = [], []
        for i in range(15, 30):
            went_on.append(step_and_record(lib, name, opt, sched, i))
            resumed.append(step_and_record(lib, name, opt2, sched2, i))
        assert resumed == went_on
        return golden.named(resumed, "step")
    golden.assert_same_results(run)


@pytest.mark.parametrize("name", [n for n in CASES if n not in NO_LAST_EPOCH])
@pytest.mark.parametrize("k", [0, 7])
def test_last_epoch_parity(name, k):
    """A scheduler built with last_epoch=k (resuming, on an optimizer a first scheduler of the
    same kind set up) starts and goes on as torch's: its constructor's step is the initial one
    whatever k is."""
    def run(lib):
        opt, _, _ = fresh(lib, name)
        out = {}
        out["construct"] = recorded(lambda: exact(CASES[name](lib, opt, last_epoch=k)
                                                  .state_dict()))
        sched = CASES[name](lib, opt, last_epoch=k)
        out.update(golden.named([step_and_record(lib, name, opt, sched, i) for i in range(12)],
                         "step"))
        return out
    golden.assert_same_results(run)


@pytest.mark.parametrize("name", [n for n in CASES if n not in ("ChainedScheduler",
                                                                 "SequentialLR")])
def test_step_epoch_parity(name):
    """step(epoch): torch's deprecation warning (CosineAnnealingWarmRestarts: none), the closed
    form where the class has one, and the same state afterwards."""
    epochs = (3, 10, 7, 0, 14, 2, 2, 25) if not name.startswith("OneCycle") else (3, 10, 0, 20)
    if name == "CosineAnnealingWarmRestarts":
        epochs += (0.5, 13.25)

    def run(lib):
        opt, sched, _ = fresh(lib, name)
        return golden.named([step_and_record(lib, name, opt, sched, i, epoch=e)
                      for i, e in enumerate(epochs)], "step")
    golden.assert_same_results(run)


def test_step_order_warnings():
    """scheduler.step() before any optimizer.step() warns, and so does a step() whose
    optimizer.step was replaced after the scheduler was built; both only at the first step."""
    def run(lib):
        out = {}
        opt = optimizer(lib)
        sched = S(lib).StepLR(opt, 3)
        out["before optimizer"] = [recorded(sched.step)[1] for _ in range(2)]
        opt = optimizer(lib)
        sched = S(lib).ExponentialLR(opt, 0.9)
        opt.step = lambda: None
        opt.step()
        out["overridden"] = [recorded(sched.step)[1] for _ in range(2)]
        opt = optimizer(lib)
        S(lib).StepLR(opt, 3)
        sched = S(lib).StepLR(opt, 3, last_epoch=0)
        out["wrapped once"] = [opt.step.__name__, recorded(opt.step)[1],
                               recorded(sched.step)[1]]
        return out
    golden.assert_same_results(run)


def test_composites_refuse_plateau():
    def run(lib):
        opt = optimizer(lib)
        plateau = S(lib).ReduceLROnPlateau(opt)
        return {"sequential": recorded(lambda: S(lib).SequentialLR(
                    opt, [S(lib).StepLR(opt, 2), plateau], milestones=[3]))[0],
                "chained": recorded(lambda: S(lib).ChainedScheduler([plateau]))[0],
                "multiplicative": recorded(lambda: S(lib).MultiplicativeLR(opt, 0.5))[0]}
    golden.assert_same_results(run)


def test_plateau_min_lrs_follow_new_groups():
    """A param group added after ReduceLROnPlateau was built gets the default min_lr; with a
    list of min_lrs it is an error (torch's message)."""
    def run(lib):
        out = {}
        for min_lr in (0.01, [0.01, 0.02]):
            opt = optimizer(lib)
            sched = S(lib).ReduceLROnPlateau(opt, patience=0, min_lr=min_lr)
            opt.add_param_group({"params": [lib.ones(1, requires_grad=True)], "lr": 0.3})
            out[f"min_lr {min_lr}"] = [[recorded(lambda: sched.step(1.0)) for _ in range(2)],
                                       exact(sched.min_lrs), exact(sched.get_last_lr())]
        return out
    golden.assert_same_results(run)


@pytest.mark.parametrize("name", ["ExponentialLR", "CosineAnnealingLR", "CyclicLR-exp_range",
                                  "OneCycleLR-linear-3phase", "ReduceLROnPlateau"])
def test_tensor_lr_updated_in_place(name):
    """A tensor lr stays the same tensor, filled with each new value; base_lrs and
    get_last_lr() hold copies of it, never the group's tensor itself."""
    def run(lib):
        a = lib.ones(2, requires_grad=True)
        b = lib.ones(3, requires_grad=True)
        opt = lib.optim.SGD([{"params": [a], "lr": lib.tensor(0.1, dtype=lib.float64)},
                             {"params": [b], "lr": lib.tensor(0.05, dtype=lib.float64)}],
                            lr=0.1, momentum=0.9)
        tensors = [g["lr"] for g in opt.param_groups]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # no optimizer.step(): the order warning
            sched = CASES[name](lib, opt)
            lrs = []
            for i in range(12):
                sched.step(*((metric(i),) if name == "ReduceLROnPlateau" else ()))
                lrs.append([float(v) for v in sched.get_last_lr()])
        assert all(g["lr"] is t for g, t in zip(opt.param_groups, tensors))
        assert all(v is not t for v, t in zip(sched.get_last_lr(), tensors))
        return {"lrs": np.array(lrs), "types": [type(v).__name__ for v in sched.get_last_lr()]}
    golden.assert_same_results(run, rtol=1e-15, atol=0)


@torch_ref
@pytest.mark.parametrize("name", list(CASES))
def test_loads_torch_state_dict(name):
    """A state_dict saved by torch's scheduler after 10 steps (with its optimizer's group
    values) loads into ours, which then goes on bit for bit as torch's."""
    opt_t, sched_t, _ = fresh(torch, name)
    for i in range(10):
        step_and_record(torch, name, opt_t, sched_t, i)
    opt, sched, _ = fresh(ptl, name)
    for group, saved in zip(opt.param_groups, opt_t.state_dict()["param_groups"]):
        group.update({k: v for k, v in saved.items() if k != "params"})
    sched.load_state_dict(copy.deepcopy(sched_t.state_dict()))
    for i in range(10, 20):
        assert step_and_record(ptl, name, opt, sched, i) == \
            step_and_record(torch, name, opt_t, sched_t, i)
