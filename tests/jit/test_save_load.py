"""jit.save / jit.load: the file runs without the model's code (a fresh process), keeps
state_dict, .graph and .code, backpropagates like eager, and a damaged file raises an error
that names what is wrong."""
import io
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import jit
from helpers import ROOT


class Net(ptl.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = ptl.nn.Linear(3, 5)
        self.fc2 = ptl.nn.Linear(5, 2)
        self.register_buffer("scale", ptl.tensor([2.0, 0.5]))

    def forward(self, x):
        h = ptl.nn.functional.gelu(self.fc1(x))
        return ptl.softmax(self.fc2(h), -1, dtype=ptl.float64) * self.scale + x.sum()


@pytest.fixture
def saved(tmp_path):
    ptl.manual_seed(0)
    model = Net()
    m = jit.trace(model, ptl.randn(4, 3))
    path = tmp_path / "net.pt"
    jit.save(m, str(path))
    return model, m, path


def rewrite(path, name, edit):
    """A copy of the archive at path with record `name` replaced by edit(bytes)."""
    with zipfile.ZipFile(path) as zf:
        records = {n: zf.read(n) for n in zf.namelist()}
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for n, data in records.items():
            zf.writestr(n, edit(data) if n == "archive/" + name else data)
    out.seek(0)
    return out


def test_round_trip(saved):
    model, m, path = saved
    loaded = jit.load(str(path))
    assert str(loaded.graph) == str(m.graph)
    assert loaded.code == m.code
    assert list(loaded.state_dict()) == list(model.state_dict())
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(loaded.state_dict()[k].numpy(), v.numpy())
    for batch in (4, 1, 7, 0):   # a loaded graph runs at any batch size
        x = ptl.randn(batch, 3)
        np.testing.assert_allclose(loaded(x).detach().numpy(), model(x).detach().numpy(),
                                   rtol=1e-12)
    with open(path, "rb") as fh:   # a file object as well as a path
        assert str(jit.load(fh).graph) == str(m.graph)


def test_graph_record_is_versioned_text_with_overloads(saved):
    _, _, path = saved
    with zipfile.ZipFile(path) as zf:
        assert zf.read("archive/version") == b"1\n"
        graph = zf.read("archive/graph.txt").decode()
        assert not any(n.endswith(".pkl") for n in zf.namelist())
    assert "aten::softmax.int(" in graph and "aten::mul.Tensor(" in graph
    assert '%13 : ScalarType = prim::Constant[value="float64"]()' in graph


def test_backward_equals_eager(saved):
    model, _, path = saved
    loaded = jit.load(str(path)).double()
    model = model.double()
    x = ptl.randn(4, 3, dtype=ptl.float64, requires_grad=True)
    assert ptl.autograd.gradcheck(loaded, (x,))
    loaded(x).sum().backward()
    got = [p.grad.clone() for p in loaded.parameters()]
    gx = x.grad.clone()
    x.grad = None
    model(x).sum().backward()
    for a, p in zip(got, model.parameters()):
        np.testing.assert_allclose(a.numpy(), p.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(gx.numpy(), x.grad.numpy(), rtol=1e-10)


def test_fresh_process_without_the_class(saved, tmp_path):
    model, _, path = saved
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    code = ("import numpy as np, pytorchlite as ptl\n"
            f"m = ptl.jit.load({str(path)!r})\n"
            f"y = m(ptl.from_numpy(np.load({str(tmp_path / 'x.npy')!r})))\n"
            f"np.save({str(tmp_path / 'y.npy')!r}, y.detach().numpy())\n"
            "print(sorted(m.state_dict()))\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=str(tmp_path), check=True).stdout
    assert out.strip() == str(sorted(model.state_dict()))
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"),
                               model(ptl.from_numpy(x)).detach().numpy(), rtol=1e-6)


def test_cli(saved, tmp_path):
    model, _, path = saved
    x = np.random.default_rng(2).standard_normal((3, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ, PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, "-m", "pytorchlite.jit", str(path), "--input",
                          str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy")],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("tensor([[")
    np.testing.assert_allclose(np.load(tmp_path / "y.npy"),
                               model(ptl.from_numpy(x)).detach().numpy(), rtol=1e-6)


def test_traced_function_round_trip(tmp_path):
    f = jit.trace(lambda x, y: (x * 2 + y, x.t()), (ptl.randn(2, 3), ptl.randn(2, 3)))
    jit.save(f, str(tmp_path / "f.pt"))
    g = jit.load(str(tmp_path / "f.pt"))
    x, y = ptl.randn(5, 3), ptl.randn(5, 3)
    a, b = g(x, y)
    np.testing.assert_allclose(a.numpy(), x.numpy() * 2 + y.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(b.numpy(), x.numpy().T)
    with pytest.raises(RuntimeError, match=r"the trace assumed tensor input 0 has dim 2, but "
                                           r"got 1"):
        g(x[0], y)
    with pytest.raises(RuntimeError, match=r"the trace assumed inputs structured as "
                                           r"\(Tensor, Tensor\), but got \(Tensor\)"):
        g(x)


def test_save_rejects_other_objects(tmp_path):
    with pytest.raises(RuntimeError, match="pytorchlite.jit.save expects a traced or scripted "
                                           "module or function .from jit.trace, jit.script or "
                                           "jit.load., got Net"):
        jit.save(Net(), str(tmp_path / "n.pt"))


def _replace(old, new):
    def edit(data):
        text = data.decode()
        assert old in text
        return text.replace(old, new, 1).encode()
    return edit


@pytest.mark.parametrize("record,edit,message", [
    ("version", lambda d: b"7\n", r"unknown format version '7' \(this pytorchlite reads "
                                  r"version 1\)"),
    ("graph.txt", _replace("aten::gelu", "aten::nope"), r"unknown operator 'aten::nope'"),
    ("graph.txt", _replace("aten::softmax.int", "aten::softmax.nope"),
     r"unknown operator 'aten::softmax.nope'"),
    ("graph.txt", _replace("prim::GetAttr[name=\"scale\"]", "prim::PythonOp"),
     r"unknown operator 'prim::PythonOp'"),
    ("graph.txt", _replace("aten::gelu(%5, %6)", "aten::gelu(%6, %6)"),
     r"argument 'self' of aten::gelu expects Tensor, got a value of type str"),
    ("graph.txt", _replace("aten::mul.Tensor(%14, %scale)", "aten::mul.Tensor(%14)"),
     r"aten::mul.Tensor takes 2 arguments, the graph passes 1"),
    ("graph.txt", _replace("aten::t(%weight)", "aten::t(%99)"),
     r"value %99 is used before it is defined"),
    ("graph.txt", _replace("Float(3, 5,", "Flaot(3, 5,"), r"unknown type 'Flaot\(3, 5,"),
    ("graph.txt", _replace('[name="scale"]', '[name="shift"]'),
     r'prim::GetAttr\[name="shift"\] names no parameter, buffer or submodule'),
    ("graph.txt", _replace('[value="float64"]', '[value="os.system"]'),
     r"unknown dtype 'os.system'"),
    ("graph.txt", _replace("%3 : int = prim::Constant[value=1]()",
                           "%3 : int = prim::Constant[value=__import__('os')]()"),
     r"'__import__\('os'\)' is not a constant of type int"),
    ("graph.txt", lambda d: d + b"  %99 : int = prim::Constant[value=1]()\n",
     r"text after the return"),
    ("meta.json", lambda d: b"{", r"meta.json is not valid"),
    ("tensors.pt", lambda d: d[:40], r"tensors.pt could not be read"),
])
def test_bad_files_raise_naming_the_problem(saved, record, edit, message):
    _, _, path = saved
    f = rewrite(path, record, edit)
    with pytest.raises(RuntimeError, match=message):
        jit.load(f)


def test_truncated_and_corrupted_archives(saved, tmp_path):
    _, _, path = saved
    data = path.read_bytes()
    for bad in (data[:len(data) // 2], data[:100], b"not a zip at all", b""):
        with pytest.raises(RuntimeError, match="not a readable zip archive"):
            jit.load(io.BytesIO(bad))
    flipped = bytearray(data)
    flipped[len(data) - 10] ^= 0xFF
    with pytest.raises(RuntimeError, match="pytorchlite.jit.load: "):
        jit.load(io.BytesIO(bytes(flipped)))
    with pytest.raises(ValueError, match="does not exist"):
        jit.load(str(tmp_path / "missing.pt"))
    other = io.BytesIO()
    ptl.save({"w": ptl.ones(1)}, other)
    other.seek(0)
    with pytest.raises(RuntimeError, match="the archive has no 'meta.json' record; it was not "
                                           "written by jit.save"):
        jit.load(other)
