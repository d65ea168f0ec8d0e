"""Where a saved tensor was saved and then modified in place (Note [In-place provenance],
beyond PyTorch): the error names both sites, through views and custom Functions, and its head
and anomaly-mode hint match PyTorch's."""
import re
import subprocess
import sys
import textwrap
import warnings

import pytest

import pytorchlite as ptl
import golden
from helpers import ROOT, torch


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
    assert re.fullmatch(r"The tensor was saved by SigmoidBackward0 at .*test_saved_tensors\.py:"
                        r"\d+\.", msg.splitlines()[-1])


@pytest.mark.parametrize("case", ["output", "input", "leaf"])
def test_inplace_error_head_matches_torch(case):
    def message(lib):
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
        return str(e.value)
    ours = message(ptl)
    assert ours.startswith(golden.answer(lambda: message(torch))), ours
    assert "modified in place by aten::mul_ at" in ours


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
