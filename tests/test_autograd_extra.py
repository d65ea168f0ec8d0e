"""Autograd extras: where a tensor was saved and modified in place (beyond PyTorch), anomaly
mode's forward tracebacks and check_nan, div with a rounding mode, tensor hooks that refer to
their own tensor, and nn.Module full backward hooks.  Results are checked against PyTorch."""
import os
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import pytorchlite as ptl

torch = pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

INPLACE_HEAD = ("one of the variables needed for gradient computation has been modified by an "
                "inplace operation: [torch.FloatTensor [3]], which is output 0 of "
                "{}, is at version 1; expected version 0 instead. Hint: enable anomaly detection "
                "to find the operation that failed to compute its gradient, with "
                "torch.autograd.set_detect_anomaly(True, check_nan=False).")


def run_script(tmp_path, body):
    """Runs body as tmp_path/train.py with this worktree's pytorchlite; returns stdout."""
    path = tmp_path / "train.py"
    path.write_text(textwrap.dedent(body))
    out = subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                         env={"PYTHONPATH": ROOT, "PATH": "/usr/bin:/bin"}, timeout=60)
    assert out.returncode == 0, out.stderr
    return str(path), out.stdout


# ---- where the saved tensor was saved and modified (Note [In-place provenance]) ----

def test_inplace_error_names_save_and_modification_sites(tmp_path):
    path, out = run_script(tmp_path, """\
        import pytorchlite as torch
        x = torch.randn(3, requires_grad=True)
        y = x.sigmoid()
        z = y * 2
        y.add_(1)
        try:
            z.sum().backward()
            y.sum().backward()
        except RuntimeError as e:
            print(e)
        """)
    # y * 2 saved y too, and its node runs first
    expected = (INPLACE_HEAD.format("Add") + f"\nThe tensor was saved by MulBackward0 at "
                f"{path}:4 and modified in place by aten::add_ at {path}:5.\n")
    assert out == expected


def test_inplace_error_through_a_view_and_a_function(tmp_path):
    # the save happens inside a user function (its line is reported); the modification goes
    # through a view sharing the version counter
    path, out = run_script(tmp_path, """\
        import pytorchlite as torch
        def f(a, b):
            return a * b
        x = torch.randn(3, requires_grad=True)
        w = torch.randn(3)
        y = f(x, w)
        w[1:].mul_(3)
        try:
            y.sum().backward()
        except RuntimeError as e:
            print(str(e).splitlines()[-1])
        """)
    assert out == (f"The tensor was saved by MulBackward0 at {path}:3 and modified in place by "
                   f"aten::mul_ at {path}:7.\n")


def test_inplace_error_without_a_recorded_modification():
    # modified under no_grad: the version moves without the autograd kernel, so only the
    # saving node is named (no stale op)
    x = ptl.randn(3, requires_grad=True)
    y = x.sigmoid()
    with ptl.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    msg = str(e.value)
    assert msg.startswith(INPLACE_HEAD.format("Sigmoid"))
    assert re.fullmatch(r"The tensor was saved by SigmoidBackward0 at .*test_autograd_extra\.py:"
                        r"\d+\.", msg.splitlines()[-1])


@pytest.mark.parametrize("case", ["output", "input", "leaf"])
def test_inplace_error_head_matches_torch(case):
    msgs = []
    for lib in (ptl, torch):
        x = lib.randn(3, requires_grad=True)
        if case == "output":    # exp saves its output: named by the saving node
            y = x.exp()
            z = y
        elif case == "input":   # sin saves its input: named by its grad_fn now
            y = x * x
            z = y.sin()
        else:                   # a leaf that does not require grad has no "which is" part
            y = lib.tensor([1.0, 2.0, 3.0])
            z = x * y
        y.mul_(2)
        with pytest.raises(RuntimeError) as e:
            z.sum().backward()
        msgs.append(str(e.value))
    assert msgs[0].startswith(msgs[1]), msgs
    assert "modified in place by aten::mul_ at" in msgs[0]


def test_inplace_error_hint_in_anomaly_mode():
    x = ptl.randn(3, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ptl.autograd.detect_anomaly():
            y = x.sigmoid()
            y.add_(1)
            with pytest.raises(RuntimeError, match=re.escape(
                    "Hint: the backtrace further above shows the operation that failed to "
                    "compute its gradient. The variable in question was changed in there or "
                    "anywhere later. Good luck!\nThe tensor was saved by SigmoidBackward0")):
                y.sum().backward()


# ---- anomaly mode ----

def anomaly_run(lib, check_nan=True):
    """x*0/x backward under detect_anomaly; returns (error text or None, x.grad, the
    'Error detected' warnings)."""
    x = lib.zeros(2, requires_grad=True)
    err = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly(check_nan=check_nan):
            z = (x * 0) / x  # the forward line the warning shows
            try:
                z.sum().backward()
            except RuntimeError as e:
                err = str(e)
    found = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    return err, x.grad, found


def test_anomaly_nan_error_and_forward_traceback():
    got, want = anomaly_run(ptl), anomaly_run(torch)
    assert got[0] == want[0] == "Function 'DivBackward0' returned nan values in its 1th output."
    assert len(got[2]) == len(want[2]) == 1
    head = "Error detected in DivBackward0. Traceback of forward call that caused the error:\n"
    assert got[2][0].startswith(head) and want[2][0].startswith(head)
    # both tracebacks end with this test's forward line
    line = "    z = (x * 0) / x  # the forward line the warning shows\n"
    assert got[2][0].endswith(line)
    assert line in want[2][0]
    assert f'File "{__file__}"' in got[2][0]


def test_anomaly_check_nan_false_records_but_does_not_raise():
    got, want = anomaly_run(ptl, check_nan=False), anomaly_run(torch, check_nan=False)
    assert got[0] is None and want[0] is None
    assert got[2] == [] and want[2] == []
    assert got[1].isnan().tolist() == want[1].isnan().tolist() == [True, True]


def test_anomaly_flags_match_torch():
    for lib, mod in ((ptl, ptl.autograd), (torch, torch)):
        assert not mod.is_anomaly_enabled()
        assert mod.is_anomaly_check_nan_enabled()
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert mod.is_anomaly_enabled()
            assert not mod.is_anomaly_check_nan_enabled()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with lib.autograd.detect_anomaly():
                    assert mod.is_anomaly_check_nan_enabled()
            assert not mod.is_anomaly_check_nan_enabled()
        assert not mod.is_anomaly_enabled()
        assert mod.is_anomaly_check_nan_enabled()


def test_anomaly_warns_for_any_backward_error():
    # a failing node (here the in-place error) warns with its forward traceback too
    x = ptl.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ptl.autograd.detect_anomaly():
            y = x.sigmoid()  # saved here
            y.add_(1)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
    msgs = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("Error detected in SigmoidBackward0. Traceback of forward call")
    assert msgs[0].endswith("    y = x.sigmoid()  # saved here\n")


def test_anomaly_off_keeps_no_traceback_and_no_warning():
    x = ptl.zeros(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ((x * 0) / x).sum().backward()
    assert caught == []
    assert x.grad.isnan().tolist() == [True, True]


# ---- div with a rounding mode (DivBackward2) ----

def f64(a, requires_grad=True):
    return ptl.tensor(np.asarray(a, dtype=np.float64), dtype=ptl.float64,
                      requires_grad=requires_grad)


def div_inputs(layout):
    rng = np.random.default_rng(3)
    a = rng.uniform(-3, 3, size=(3, 4))
    b = rng.uniform(0.5, 2, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    if layout == "contiguous":
        return f64(a), f64(b)
    if layout == "transposed":
        return f64(a.T.copy()).t(), f64(b.T.copy()).t()
    if layout == "sliced":
        return f64(np.repeat(a, 2, axis=1))[:, ::2], f64(b)
    return f64(a), f64(b[0])   # broadcast: other is (4,)


# the op and its in-place form, each with its gradient-check function
DIV_ROWS = {
    "div_Tensor_mode": lambda a, b, mode: ptl.div(a, b, rounding_mode=mode),
    "div__Tensor_mode": lambda a, b, mode: (a * 1).div_(b, rounding_mode=mode),
}


@pytest.mark.parametrize("row", sorted(DIV_ROWS))
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "broadcast"])
@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_mode_gradcheck(row, layout, mode):
    a, b = div_inputs(layout)
    fn = DIV_ROWS[row]
    assert ptl.autograd.gradcheck(lambda x, y: fn(x, y, mode), (a, b))
    assert ptl.autograd.gradgradcheck(lambda x, y: fn(x, y, mode), (a, b))


@pytest.mark.parametrize("mode", [None, "trunc", "floor"])
def test_div_mode_grads_match_torch(mode):
    # ties: equal quotients, exact integers, and a negative zero-crossing
    a = np.array([[3.0, -3.0, 6.0], [4.5, -4.5, 0.0]])
    b = np.array([1.5, 1.5, -2.0])
    grads = []
    for lib in (ptl, torch):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        out = lib.div(x, y, rounding_mode=mode)
        assert type(out.grad_fn).__name__ == "DivBackward2"
        (out * lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=lib.float64)).sum().backward()
        grads.append((x.grad.tolist(), y.grad.tolist()))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-12)


# ---- nn.Module full backward hooks ----

def hooked_linear(lib, replace_input=False, x_requires_grad=True):
    m = lib.nn.Linear(3, 2).double()
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]], dtype=lib.float64))
        m.bias.copy_(lib.tensor([0.1, -0.2], dtype=lib.float64))
    log = []

    def pre(mod, go):
        log.append(("pre", mod is m, [g.tolist() for g in go]))
        return (go[0] * 2,)

    def full(mod, gi, go):
        log.append(("full", mod is m, [None if g is None else g.tolist() for g in gi],
                    [g.tolist() for g in go]))
        if replace_input and gi[0] is not None:
            return (gi[0] + 1,)
        return None
    handles = [m.register_full_backward_pre_hook(pre), m.register_full_backward_hook(full)]
    x = lib.tensor([[1.0, 2.0, 3.0], [0.0, -1.0, 1.0]], dtype=lib.float64,
                   requires_grad=x_requires_grad)
    y = m(x)
    (y * lib.tensor([[1.0, -1.0]], dtype=lib.float64)).sum().backward()
    return type(y.grad_fn).__name__, log, x.grad, m.weight.grad.tolist(), handles, m, x


@pytest.mark.parametrize("replace_input", [False, True])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_module_full_backward_hooks_match_torch(replace_input, x_requires_grad):
    found = []
    for lib in (ptl, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found.append(hooked_linear(lib, replace_input, x_requires_grad))
        found[-1] += ([str(w.message) for w in caught if "Full backward hook" in str(w.message)],)
    got, want = found
    assert got[-1] == want[-1] and len(got[-1]) == (0 if x_requires_grad else 1)
    assert got[0] == want[0] == "BackwardHookFunctionBackward"
    assert got[1] == want[1]
    assert (got[2] is None) == (want[2] is None) == (not x_requires_grad)
    if x_requires_grad:
        assert got[2].tolist() == want[2].tolist()
    assert got[3] == want[3]


def test_module_full_backward_hook_handles_remove():
    for lib in (ptl, torch):
        _, log, _, _, handles, m, x = hooked_linear(lib)
        for h in handles:
            h.remove()
        log.clear()
        y = m(x)
        assert type(y.grad_fn).__name__ != "BackwardHookFunctionBackward"
        y.sum().backward()
        assert log == []


def test_module_full_backward_hook_wrong_count_raises():
    for lib in (ptl, torch):
        m = lib.nn.Linear(2, 2).double()
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        x = lib.ones(1, 2, dtype=lib.float64, requires_grad=True)
        with pytest.raises(RuntimeError, match=re.escape(
                "Backward hook returned an invalid number of grad_input, got 2, but expected 1")):
            m(x).sum().backward()
