"""torchviz's make_dot, unmodified, on a pytorchlite graph: the user calls
pytorchlite.utils.as_torch() before importing torchviz (which imports torch itself).  The DOT
of a small MLP is compared with PyTorch 2.13's (tests/fixtures/tools/torchviz_mlp.json,
recorded with torch), node ids renumbered by first appearance.  With show_attrs, PyTorch's
size/stride records (`*_sym_*` rows, Note [Saved attributes]) are left out of both sides."""
import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import TESTS, torch_ref

# torchviz imports torch when imported, so its presence is checked without importing it
if importlib.util.find_spec("torchviz") is None:
    pytest.skip("torchviz is not installed (the `tools` extra)", allow_module_level=True)
pytest.importorskip("graphviz", reason="graphviz is not installed (the `tools` extra)")

ROOT = os.path.dirname(TESTS)
GOLDEN = os.path.join(TESTS, "fixtures", "tools", "torchviz_mlp.json")

SCRIPT = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
if sys.argv[1] == "pytorchlite":
    import pytorchlite
    pytorchlite.utils.as_torch()
import torch
from torchviz import make_dot
from torch.autograd import Variable
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
x = torch.randn(3, 4).requires_grad_()
y = model(x).pow(2).mean()
params = dict(model.named_parameters())
assert all(isinstance(p, Variable) for p in params.values())
print(json.dumps({
    "show_saved": make_dot(y, params=params, show_saved=True).source,
    "show_saved_and_attrs": make_dot(y, params=params, show_attrs=True, show_saved=True).source,
    "plain": make_dot(y).source,
}))
"""


def renumber(src):
    ids = {}
    return re.sub(r"\b\d{6,}\b", lambda m: "n%d" % ids.setdefault(m.group(0), len(ids)), src)


def without_sym_rows(src):
    """Attribute tables rebuilt without `*_sym_*` rows (their column widths follow the keys)."""
    def table(m):
        lines = m.group(1).split("\n")
        if len(lines) < 3 or set(lines[1]) != {"-"}:
            return m.group(0)
        rows = [[part.strip() for part in line.split(":", 1)] for line in lines[2:]]
        rows = [f"{k}: {v}" for k, v in rows if "_sym_" not in k]
        return 'label="' + "\n".join([lines[0]] + rows) + '"' if rows else "label=" + lines[0]
    return re.sub(r'label="([^"]*)"', table, src)


def make_dot_sources(lib, python=sys.executable):
    out = subprocess.run([python, "-c", SCRIPT, lib], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=300)
    assert out.returncode == 0, out.stderr
    return {k: renumber(v) for k, v in json.loads(out.stdout).items()}


def test_make_dot_matches_torch():
    with open(GOLDEN) as f:
        want = json.load(f)
    got = make_dot_sources("pytorchlite")
    assert got["show_saved"] == want["show_saved"]
    assert without_sym_rows(got["show_saved_and_attrs"]) == without_sym_rows(
        want["show_saved_and_attrs"])
    assert "AddmmBackward0" in got["plain"] and "orange" not in got["plain"]


@torch_ref
def test_golden_is_torchs():
    venv = os.environ.get("PTL_TORCH_PYTHON", sys.executable)
    got = make_dot_sources("torch", venv)
    with open(GOLDEN) as f:
        want = json.load(f)
    assert {k: got[k] for k in want} == want


def test_as_torch_refuses_a_real_torch():
    code = ("import sys, types; sys.modules['torch'] = types.ModuleType('torch'); "
            "import pytorchlite\n"
            "try:\n    pytorchlite.utils.as_torch()\nexcept RuntimeError as e:\n    print(e)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert "a real PyTorch is already imported" in out.stdout, out.stderr


def test_as_torch_aliases_modules_without_copies():
    code = ("import pytorchlite, sys; pytorchlite.utils.as_torch()\n"
            "import torch, torch.autograd, torch.nn.functional, torch.utils.data\n"
            "assert torch is pytorchlite and torch.autograd is pytorchlite.autograd\n"
            "assert torch.nn.functional is pytorchlite.nn.functional\n"
            "assert sys.modules['torch.utils.data'] is pytorchlite.utils.data\n"
            "assert torch.__version__ >= '1.9' and torch.autograd.Variable\n"
            "print('ok')")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=ROOT), timeout=120)
    assert out.stdout.strip() == "ok", out.stderr
