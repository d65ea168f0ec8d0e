"""Optimizers step by step against torch.optim from identical parameters and gradients (live,
or its stored answers without it: tests/golden.py), and
the fused single-tensor steps of SGD, Adam and AdamW (Note [Fused optimizer step]) against
the op-by-op path."""
import re

import numpy as np
import pytest

import pytorchlite as ptl
import golden
from helpers import assert_close, torch, torch_ref


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
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.95), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, momentum_decay=0.01, weight_decay=0.1)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01)),
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1)),     # rectified from step 6
    ("RAdam", dict(lr=0.01, betas=(0.5, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ("RMSprop", dict(lr=0.01)),
    ("RMSprop", dict(lr=0.01, alpha=0.9, centered=True, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, maximize=True)),
    ("RMSprop", dict(lr=0.01, momentum=0.5, eps=1e-3)),
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, initial_accumulator_value=0.5, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.1, eps=1e-3, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.5, weight_decay=0.1, eps=1e-4)),
    ("Adadelta", dict(lr=0.5, maximize=True)),
    ("Rprop", dict()),
    ("Rprop", dict(lr=0.1, etas=(0.3, 1.5), step_sizes=(1e-3, 0.2), maximize=True)),
    ("ASGD", dict()),
    ("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1)),
    ("ASGD", dict(lr=0.05, t0=0, maximize=True)),
    ("Adafactor", dict()),
    ("Adafactor", dict(lr=0.1, beta2_decay=-0.5, eps=(1e-30, 1e-2), d=1.5, weight_decay=0.1,
                       maximize=True)),
]


@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_steps_match_torch(name, kwargs):
    """The parameters after each of 10 steps."""
    def run(lib):
        rng = np.random.default_rng(0)
        init = [rng.normal(size=(3, 4)), rng.normal(size=(4,))]
        ps = [lib.tensor(a, dtype=lib.float64, requires_grad=True) for a in init]
        opt = getattr(lib.optim, name)(ps, **kwargs)
        steps = []
        for step in range(10):
            for p in ps:
                p.grad = lib.tensor(rng.normal(size=tuple(p.shape)), dtype=lib.float64)
            opt.step()
            steps.append(np.concatenate([np.array(p.tolist()).ravel() for p in ps]))
        return {"parameters": np.array(steps)}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


@torch_ref
@pytest.mark.parametrize("foreach", [None, False])
@pytest.mark.parametrize("name, kwargs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_complex_steps_match_torch(name, kwargs, foreach):
    """Complex parameters step as the real tensors of their parts (Note [Complex parameters]
    in optim/_functional.py): the parameters and the state after each of 6 steps, a
    contiguous and a transposed complex128 parameter (the fused step takes the first's real
    view), as PyTorch's."""
    def run(lib):
        rng = np.random.default_rng(1)
        init = [rng.normal(size=(3, 4)) + 1j * rng.normal(size=(3, 4)),
                rng.normal(size=(4, 2)) + 1j * rng.normal(size=(4, 2))]
        ps = [lib.tensor(init[0], dtype=lib.complex128, requires_grad=True),
              lib.tensor(init[1], dtype=lib.complex128).t().detach().requires_grad_(True)]
        kw = dict(kwargs, foreach=foreach) if name != "Adafactor" else kwargs
        opt = getattr(lib.optim, name)(ps, **kw)
        steps = []
        for step in range(6):
            for p in ps:
                g = rng.normal(size=tuple(p.shape)) + 1j * rng.normal(size=tuple(p.shape))
                p.grad = lib.tensor(g, dtype=lib.complex128)
            opt.step()
            steps.append(np.concatenate([np.array(p.tolist()).ravel() for p in ps]))
        state = [np.array(v.tolist()) for p in ps for k, v in sorted(opt.state[p].items())
                 if hasattr(v, "tolist") and v.dim() > 0]
        return np.array(steps), state
    if name == "Adafactor":
        with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
            run(ptl)
        with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
            run(torch)
        return
    ours, ours_state = run(ptl)
    theirs, theirs_state = run(torch)
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)
    assert len(ours_state) == len(theirs_state)
    for a, b in zip(ours_state, theirs_state):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def state_dict_layout(sd):
    """param_groups, and the state's keys and each entry's keys."""
    return {"param_groups": sd["param_groups"], "state": list(sd["state"]),
            "state 0": list(sd["state"][0])}


def test_state_dict_structure_matches_torch():
    a = np.ones((2, 2))

    def run(lib):
        p = lib.tensor(a, requires_grad=True)
        opt = lib.optim.SGD([p], lr=0.1, momentum=0.9)
        p.grad = lib.ones(2, 2, dtype=lib.float64)
        opt.step()
        return opt.state_dict()
    sd = run(ptl)
    assert list(sd["state"]) == [0]
    assert golden.plain(state_dict_layout(sd)) == golden.answer(
        lambda: state_dict_layout(run(torch)))
    opt2 = ptl.optim.SGD([ptl.tensor(a, requires_grad=True)], lr=0.5, momentum=0.9)
    opt2.load_state_dict(sd)
    assert opt2.param_groups[0]["lr"] == 0.1


def layout(v):
    """A state entry's structure: a tensor's dtype and shape, a list's length and first
    entry, another value's type (values themselves are compared by the step tests)."""
    if hasattr(v, "shape"):
        return ["tensor", str(v.dtype).split(".")[-1], list(v.shape)]
    if isinstance(v, list):
        return ["list", len(v)] + [layout(x) for x in v[:1]]
    return type(v).__name__


@pytest.mark.parametrize("name, kwargs", CASES + [("LBFGS", dict(lr=0.5, history_size=3, max_iter=5)),
                                                  ("LBFGS", dict(line_search_fn="strong_wolfe", max_iter=4))],
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)] + ["LBFGS-0",
                                                                              "LBFGS-1"])
def test_repr_and_state_dict_match_torch(name, kwargs):
    """After two steps on two param groups (LBFGS: one): repr(optimizer), every group's keys
    in order with their values, and the state's keys in order with the structure of each."""
    def run(lib):
        a = lib.linspace(-1, 1, 6).reshape(2, 3).requires_grad_()
        b = lib.linspace(0.5, 2, 3).requires_grad_()
        groups = [a, b] if name == "LBFGS" else [{"params": [a]}, {"params": [b], "lr": 0.02}]
        opt = getattr(lib.optim, name)(groups, **kwargs)

        def closure():
            opt.zero_grad()
            loss = (a * a).sum() + (b ** 3).sum()
            loss.backward()
            return loss
        for _ in range(2):
            opt.step(closure)
        sd = opt.state_dict()
        return {"repr": repr(opt),
                "param_groups": [[[k, repr(v)] for k, v in g.items()] for g in sd["param_groups"]],
                "state": [[k, [[key, layout(v)] for key, v in entry.items()]]
                          for k, entry in sd["state"].items()]}
    golden.assert_same_results(run)


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


def quadratic(lib, x):
    """A convex quadratic with coupled coordinates (written without matmul)."""
    w = lib.tensor([1.5, 1.0, 0.5], dtype=x.dtype)
    b = lib.tensor([1.0, -2.0, 0.5], dtype=x.dtype)
    return (w * x * x).sum() + 0.5 * x[0] * x[1] + 0.3 * x[1] * x[2] - (b * x).sum()


def rosenbrock(lib, x):
    return ((1 - x[:-1]) ** 2).sum() + 100 * ((x[1:] - x[:-1] ** 2) ** 2).sum()


# Rosenbrock with fixed steps of lr=1 jumps far and amplifies last-bit differences of the
# gradients, so the fixed-step cases on it take short steps and the others few iterations.
@pytest.mark.parametrize("fn, kwargs", [
    (quadratic, dict()), (quadratic, dict(line_search_fn="strong_wolfe")),
    (quadratic, dict(lr=0.5, history_size=3, max_iter=7)),
    (rosenbrock, dict(lr=0.02, max_iter=10)),
    (rosenbrock, dict(lr=0.05, history_size=3, max_iter=7)),
    (rosenbrock, dict(line_search_fn="strong_wolfe", max_iter=10)),
    (rosenbrock, dict(history_size=2, line_search_fn="strong_wolfe", max_iter=30)),
], ids=["quad-fixed", "quad-wolfe", "quad-short-history", "rosen-fixed", "rosen-short-history",
        "rosen-wolfe", "rosen-wolfe-short-history"])
def test_lbfgs_matches_torch(fn, kwargs):
    start = [-1.2, 1.0, 0.7] if fn is rosenbrock else [0.0, 0.0, 0.0]

    def closure(lib, x, o):
        def run():
            o.zero_grad()
            loss = fn(lib, x)
            loss.backward()
            return loss
        return run
    def run(lib):
        x = lib.tensor(start, dtype=lib.float64, requires_grad=True)
        o = lib.optim.LBFGS([x], **kwargs)
        losses, xs = [], []
        for _ in range(4):
            losses.append(o.step(closure(lib, x, o)).item())
            xs.append(x.tolist())
        return {"losses": np.array(losses), "parameters": np.array(xs),
                "counts": [o.state[x]["func_evals"], o.state[x]["n_iter"]]}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


def test_lbfgs_errors():
    p, q = ptl.ones(2, requires_grad=True), ptl.ones(2, requires_grad=True)
    with pytest.raises(ValueError, match="LBFGS doesn't support per-parameter options"):
        ptl.optim.LBFGS([{"params": [p]}, {"params": [q]}])
    opt = ptl.optim.LBFGS([p], line_search_fn="backtracking")
    p.grad = ptl.ones(2)
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        opt.step(lambda: (p * p).sum())


@pytest.mark.parametrize("name, kwargs, message", [
    ("Adamax", dict(betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    ("NAdam", dict(momentum_decay=-1), "Invalid momentum_decay value: -1"),
    ("RAdam", dict(eps=-1), "Invalid epsilon value: -1"),
    ("RMSprop", dict(alpha=-1), "Invalid alpha value: -1"),
    ("RMSprop", dict(momentum=-1), "Invalid momentum value: -1"),
    ("Adagrad", dict(lr_decay=-1), "Invalid lr_decay value: -1"),
    ("Adagrad", dict(initial_accumulator_value=-1),
     "Invalid initial_accumulator_value value: -1"),
    ("Adadelta", dict(rho=2), "Invalid rho value: 2"),
    ("Adadelta", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Rprop", dict(lr=-1), "Invalid learning rate: -1"),
    ("Rprop", dict(etas=(1.5, 1.2)), "Invalid eta values: 1.5, 1.2"),
    ("Rprop", dict(etas=(0.5, 1.0)), "Invalid eta values: 0.5, 1.0"),
    ("ASGD", dict(lr=-1), "Invalid learning rate: -1"),
    ("ASGD", dict(weight_decay=-1), "Invalid weight_decay value: -1"),
    ("Adafactor", dict(lr=-1), "Learning rate should be >= 0 but is: -1"),
    ("Adafactor", dict(beta2_decay=0.5), "beta2_decay should be <= 0 but is: 0.5"),
    ("Adafactor", dict(eps=(-1, 1e-3)), "epsilon1 should be >= 0 but is: -1"),
    ("Adafactor", dict(eps=(None, -1)), "epsilon2 should be >= 0 but is: -1"),
    ("Adafactor", dict(d=0.5), "Clipping threshold d should be >= 1 but is: 0.5"),
    ("Adafactor", dict(weight_decay=-1), "weight_decay should be >= 0 but is: -1"),
])
def test_argument_errors_match_torch(name, kwargs, message):
    for lib in golden.LIBRARIES:
        with pytest.raises(ValueError, match=re.escape(message)):
            getattr(lib.optim, name)([lib.ones(1, requires_grad=True)], **kwargs)


@pytest.mark.parametrize("name", ["Adagrad", "RMSprop", "NAdam", "Adam", "AdamW", "Adamax",
                                  "RAdam", "Adadelta", "Rprop", "ASGD", "Adafactor"])
def test_new_optimizer_state_dict_keys_match_torch(name):
    def run(lib):
        p = lib.ones(3, requires_grad=True)
        opt = getattr(lib.optim, name)([p])
        p.grad = lib.ones(3)
        opt.step()
        return state_dict_layout(opt.state_dict())
    layout = golden.as_json(run(ptl))
    theirs = golden.answer(lambda: run(torch))
    for key in ("param_groups", "state 0"):
        assert layout[key] == theirs[key]


def test_adamw_state_dict_stays_decoupled():
    """AdamW's groups say decoupled_weight_decay=True, as torch's, even after loading the
    state_dict of an Adam (torch's AdamW.__setstate__)."""
    def run(lib):
        p = lib.ones(3, requires_grad=True)
        adam = lib.optim.Adam([lib.ones(3, requires_grad=True)], weight_decay=0.5)
        opt = lib.optim.AdamW([p], weight_decay=0.5)
        opt.load_state_dict(adam.state_dict())
        res = {"decoupled": opt.param_groups[0]["decoupled_weight_decay"],
               "param_groups": golden.plain(opt.state_dict()["param_groups"])}
        p.grad = lib.ones(3)
        opt.step()
        res["parameter"] = np.array(p.tolist())
        return res
    assert run(ptl)["decoupled"] is True
    golden.assert_same_results(run, rtol=1e-6, atol=0)


# ---- fused optimizer steps (Note [Fused optimizer step]) ----

def _trajectory(lib, opt_name, kwargs, dtype, steps=20, shapes=((7, 5), (5,), (3, 1, 4))):
    g = np.random.default_rng(11)
    inits = [g.standard_normal(s) for s in shapes]
    targets = [g.standard_normal(s) for s in shapes]
    params = [lib.tensor(a, dtype=getattr(lib, dtype)).requires_grad_() for a in inits]
    opt = getattr(lib.optim, opt_name)(params, **kwargs)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        loss = sum(((p - lib.tensor(t, dtype=p.dtype)) ** 4).sum() for p, t in zip(params, targets))
        loss.backward()
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


OPT_CASES = [
    ("SGD", dict(lr=0.01)),
    ("SGD", dict(lr=0.01, momentum=0.9)),
    ("SGD", dict(lr=0.01, momentum=0.9, nesterov=True, weight_decay=0.1)),
    ("SGD", dict(lr=0.01, momentum=0.5, dampening=0.3, maximize=True)),
    ("SGD", dict(lr=0.01, weight_decay=0.2, maximize=True)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.9), maximize=True, eps=1e-6)),
    ("AdamW", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, amsgrad=True, weight_decay=0.3)),
    ("AdamW", dict(lr=0.01, maximize=True)),
]


@pytest.mark.parametrize("opt_name,kwargs", OPT_CASES)
def test_fused_step_trajectory_matches_torch(opt_name, kwargs):
    def run(lib):
        steps = _trajectory(lib, opt_name, kwargs, "float64")
        return {f"parameter {k}": np.array([step[k] for step in steps]) for k in range(3)}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("opt_name,kwargs", OPT_CASES)
def test_fused_step_matches_op_by_op_path(opt_name, kwargs):
    """foreach=False takes the op-by-op path: float32 results agree with the fused kernel."""
    fused = _trajectory(ptl, opt_name, kwargs, "float32", steps=5)
    plain = _trajectory(ptl, opt_name, dict(kwargs, foreach=False), "float32", steps=5)
    for a, b in zip(fused, plain):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


def test_fused_step_used_and_falls_back():
    # a non-contiguous parameter takes the op-by-op path, a contiguous one the fused kernel;
    # both must give the same values
    base = ptl.tensor(np.arange(12.0).reshape(3, 4))
    p1 = base.clone().t().requires_grad_()          # non-contiguous leaf
    p2 = base.clone().t().contiguous().requires_grad_()
    for p in (p1, p2):
        opt = ptl.optim.SGD([p], lr=0.1, momentum=0.9)
        for _ in range(3):
            opt.zero_grad()
            (p * p).sum().backward()
            opt.step()
    np.testing.assert_allclose(p1.detach().numpy(), p2.detach().numpy(), rtol=1e-12)
    assert p1.is_contiguous() is False


def test_fused_kernels_direct_and_errors():
    import re
    aten = ptl.ops.aten
    p, g, buf = ptl.ones(4), ptl.full((4,), 2.0), ptl.zeros(4)
    aten._fused_sgd_step_(p, g, buf, 0.5, 0.9, 0.0, 0.0, False, False, True)
    assert_close(p, np.full(4, 0.0), dtype=ptl.float32)
    assert_close(buf, np.full(4, 2.0), dtype=ptl.float32)
    aten._fused_sgd_step_(p, g, None, 0.5, 0.0, 0.0, 0.0, False, False, False)
    assert_close(p, np.full(4, -1.0), dtype=ptl.float32)
    m, v = ptl.zeros(4), ptl.zeros(4)
    aten._fused_adam_step_(p, g, m, v, None, 1.0, 0.1, 0.9, 0.999, 0.0, 1e-8, False, False)
    assert_close(p, np.full(4, -1.1), dtype=ptl.float32)   # first Adam step moves by lr
    cases = [
        (lambda: aten._fused_sgd_step_(ptl.ones(4, dtype=ptl.int64), ptl.ones(4, dtype=ptl.int64),
                                       None, 0.1, 0.0, 0.0, 0.0, False, False, False),
         "_fused_sgd_step_: expected a float32 or float64 tensor, got Long"),
        (lambda: aten._fused_sgd_step_(ptl.ones(4, 2).t(), ptl.ones(2, 4), None, 0.1, 0.0, 0.0,
                                       0.0, False, False, False),
         "_fused_sgd_step_: self must be contiguous"),
        (lambda: aten._fused_sgd_step_(ptl.ones(4), ptl.ones(4, dtype=ptl.float64), None, 0.1,
                                       0.0, 0.0, 0.0, False, False, False),
         "_fused_sgd_step_: grad must have the dtype of self"),
        (lambda: aten._fused_sgd_step_(ptl.ones(4), ptl.ones(5), None, 0.1, 0.0, 0.0, 0.0, False,
                                       False, False),
         "_fused_sgd_step_: grad must have the shape of self"),
        (lambda: aten._fused_sgd_step_(ptl.ones(2, 2), ptl.ones(4, 1), None, 0.1, 0.0, 0.0, 0.0,
                                       False, False, False),
         "_fused_sgd_step_: grad must have the shape of self"),
        (lambda: aten._fused_sgd_step_(ptl.ones(2, 2), ptl.ones(2, 2), ptl.ones(2, 2).t(), 0.1,
                                       0.9, 0.0, 0.0, False, False, False),
         "_fused_sgd_step_: momentum_buffer must be contiguous"),
        (lambda: aten._fused_adam_step_(ptl.ones(3), ptl.ones(3), ptl.ones(2), ptl.ones(3), None,
                                        1.0, 0.1, 0.9, 0.9, 0.0, 1e-8, False, False),
         "_fused_adam_step_: exp_avg must have the shape of self"),
        (lambda: aten._fused_adam_step_(ptl.ones(3), ptl.ones(3), ptl.ones(3), ptl.ones(3),
                                        ptl.ones(3, dtype=ptl.float64), 1.0, 0.1, 0.9, 0.9, 0.0,
                                        1e-8, False, False),
         "_fused_adam_step_: max_exp_avg_sq must have the dtype of self"),
    ]
    for fn, msg in cases:
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            fn()


@pytest.mark.parametrize("opt_name,kwargs", OPT_CASES)
def test_fused_step_matches_op_by_op_path_float64(opt_name, kwargs):
    """The op-by-op update is the fused kernel's reference: in float64 they agree to rounding."""
    fused = _trajectory(ptl, opt_name, kwargs, "float64", steps=5)
    plain = _trajectory(ptl, opt_name, dict(kwargs, foreach=False), "float64", steps=5)
    for a, b in zip(fused, plain):
        for x, y in zip(a, b):
            np.testing.assert_allclose(x, y, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("opt_name,kwargs,kernel", [
    ("SGD", dict(lr=0.1), "aten::_fused_sgd_step_"),
    ("SGD", dict(lr=0.1, momentum=0.9), "aten::_fused_sgd_step_"),
    ("Adam", dict(lr=0.1), "aten::_fused_adam_step_"),
    ("AdamW", dict(lr=0.1, amsgrad=True), "aten::_fused_adam_step_"),
])
def test_fused_step_runs_from_the_first_step(opt_name, kwargs, kernel):
    """Every step of a contiguous float parameter is one fused kernel call, the first one
    included; foreach=False runs the op-by-op update instead."""
    for foreach, calls in ((None, 1), (False, 0)):
        p = ptl.ones(3, requires_grad=True)
        opt = getattr(ptl.optim, opt_name)([p], foreach=foreach, **kwargs)
        p.grad = ptl.full((3,), 0.5)
        for _ in range(2):
            ptl.dispatch_stats(reset=True)
            opt.step()
            stats = ptl.dispatch_stats()
            assert stats.get(kernel, {}).get("CPU", 0) == calls
            if calls:   # besides the kernel, only the state's creation and `step += 1`
                assert set(stats) - {"aten::zeros_like", "aten::empty_like",
                                     "aten::add_.Tensor"} == {kernel}


# ---- Rprop and ASGD against their definitions in NumPy (float64) ----

def _rprop_numpy(p, grads, lr, etas, step_sizes):
    prev, size = np.zeros_like(p), np.full_like(p, lr)
    for g in grads:
        agree = np.sign(g * prev)
        size = np.clip(size * np.where(agree > 0, etas[1], np.where(agree < 0, etas[0], 1.0)),
                       *step_sizes)
        g = np.where(agree < 0, 0.0, g)
        p = p - np.sign(g) * size
        prev = g
    return p


def _asgd_numpy(p, grads, lr, lambd, alpha, t0):
    eta, mu, ax = np.float32(lr), 1.0, np.zeros_like(p)
    for t, g in enumerate(grads, start=1):
        p = p * (1 - lambd * float(eta)) - float(eta) * g
        ax = ax + (p - ax) * mu if mu != 1 else p.copy()
        eta = np.float32(lr / (1 + lambd * lr * t) ** alpha)
        mu = float(np.float32(1 / max(1, t - t0)))
    return p, ax


def _adafactor_numpy(p, grads, lr, beta2_decay, eps, d, weight_decay):
    """Adafactor on one matrix or a batch of matrices (factored), in float64."""
    eps1 = np.finfo(np.float64).eps if eps[0] is None else eps[0]
    row = np.zeros(p.shape[:-1] + (1,))
    col = np.zeros(p.shape[:-2] + (1, p.shape[-1]))
    for t, g in enumerate(grads, start=1):
        w = t ** beta2_decay
        alpha = max(eps[1], np.sqrt(np.mean(p * p))) * min(lr, 1 / np.sqrt(t))
        p = p * (1 - lr * weight_decay)
        row = row + w * ((g * g).mean(axis=-1, keepdims=True) - row)
        col = col + w * ((g * g).mean(axis=-2, keepdims=True) - col)
        v = row @ col / np.maximum(row.mean(axis=-2, keepdims=True), eps1)
        u = g / np.sqrt(np.maximum(v, eps1 * eps1))
        p = p - alpha / max(1.0, np.sqrt(np.mean(u * u)) / d) * u
    return p


def test_adafactor_factors_matrices_and_batches():
    rng = np.random.default_rng(6)
    for shape in [(5, 7), (3, 4, 6)]:
        start = rng.standard_normal(shape)
        gs = [rng.standard_normal(shape) for _ in range(8)]
        kwargs = dict(lr=0.05, beta2_decay=-0.7, eps=(None, 1e-3), d=1.2, weight_decay=0.01)
        p = ptl.tensor(start, requires_grad=True)
        opt = ptl.optim.Adafactor([p], **kwargs)
        for g in gs:
            p.grad = ptl.tensor(g)
            opt.step()
        assert opt.state[p]["row_var"].shape == shape[:-1] + (1,)
        assert opt.state[p]["col_var"].shape == shape[:-2] + (1, shape[-1])
        np.testing.assert_allclose(p.detach().numpy(), _adafactor_numpy(start, gs, **kwargs),
                                   rtol=1e-11, atol=1e-13)


def test_rprop_and_asgd_follow_their_definitions():
    rng = np.random.default_rng(5)
    start = rng.standard_normal((4, 6))
    gs = [rng.standard_normal((4, 6)) * (rng.random((4, 6)) > 0.2) for _ in range(12)]
    for opt_name, kwargs in [("Rprop", dict(lr=0.05, etas=(0.4, 1.3), step_sizes=(1e-3, 0.3))),
                             ("ASGD", dict(lr=0.05, lambd=0.02, alpha=0.6, t0=4))]:
        p = ptl.tensor(start, requires_grad=True)
        opt = getattr(ptl.optim, opt_name)([p], **kwargs)
        for g in gs:
            p.grad = ptl.tensor(g)
            opt.step()
        if opt_name == "Rprop":
            ref = _rprop_numpy(start, gs, **kwargs)
        else:
            ref, ax = _asgd_numpy(start, gs, **kwargs)
            np.testing.assert_allclose(opt.state[p]["ax"].numpy(), ax, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(p.detach().numpy(), ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", ["Rprop", "ASGD", "Adafactor"])
def test_refuse_sparse_gradients(name):
    p = ptl.zeros(3, requires_grad=True)
    opt = getattr(ptl.optim, name)([p])
    p.grad = ptl.sparse_coo_tensor(ptl.tensor([[0]]), ptl.tensor([1.0]), (3,))
    with pytest.raises(RuntimeError, match=f"{name} does not support sparse gradients"):
        opt.step()


def test_adafactor_refuses_complex_parameters():
    p = ptl.complex(ptl.ones(2), ptl.ones(2)).requires_grad_()
    opt = ptl.optim.Adafactor([p])
    p.grad = ptl.complex(ptl.ones(2), ptl.ones(2))
    with pytest.raises(RuntimeError, match="Adafactor does not support complex parameters"):
        opt.step()


@torch_ref
@pytest.mark.parametrize("kwargs", [dict(), dict(lr=0.05, t0=0, maximize=True),
                                    dict(lr=0.05, lambd=0.02, alpha=0.6, t0=4, weight_decay=0.1),
                                    dict(lr=0.1, weight_decay=0.1, maximize=True)])
def test_asgd_foreach_steps_as_torch_foreach(kwargs):
    """foreach=True orders ASGD's arithmetic as PyTorch's multi-tensor step does (asgd.py
    foreach_update): 20 float64 steps of a real and a complex parameter agree with torch's
    foreach=True to the last bits, where the op-by-op step is ~1e-8 away from them."""
    def run(lib, foreach):
        rng = np.random.default_rng(3)
        ps = [lib.tensor(rng.normal(size=(3, 4)), dtype=lib.float64, requires_grad=True),
              lib.tensor(rng.normal(size=(5,)) + 1j * rng.normal(size=(5,)),
                         dtype=lib.complex128, requires_grad=True)]
        opt = lib.optim.ASGD(ps, foreach=foreach, **kwargs)
        out = []
        for _ in range(20):
            for p in ps:
                g = rng.normal(size=tuple(p.shape)) + (1j * rng.normal(size=tuple(p.shape))
                                                       if p.is_complex() else 0)
                p.grad = lib.tensor(g, dtype=p.dtype)
            opt.step()
            out += [np.array(t.tolist()).ravel() for p in ps for t in (p, opt.state[p]["ax"])]
        return np.concatenate(out)
    theirs = run(torch, True)
    np.testing.assert_allclose(run(ptl, True), theirs, rtol=1e-13, atol=1e-15)
    assert np.abs(run(ptl, False) - theirs).max() > 1e-10
