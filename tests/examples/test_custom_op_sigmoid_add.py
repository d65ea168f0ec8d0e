"""examples/custom_op_sigmoid_add/: the handbook's z = sigmoid(x) + y as a C extension (loaded
with cpp_extension.load, built with its setup.py, compiled inline), through
pytorchlite.library, and as a CUDA kernel.  The values and gradients are checked against
NumPy in float64, the gradient with gradcheck."""
import os
import re
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.utils import cpp_extension
from helpers import ROOT, assert_close, assert_no_leak, make

EXAMPLE = os.path.join(ROOT, "examples", "custom_op_sigmoid_add")


@pytest.fixture(scope="module")
def extensions_dir(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("extensions"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PTL_EXTENSIONS_DIR", path)
        yield path


@pytest.fixture(scope="module")
def sigmoid_add(extensions_dir):
    """pytorchlite.ops.myops.sigmoid_add, registered by the example's C source."""
    cpp_extension.load("sigmoid_add_ext", [os.path.join(EXAMPLE, "sigmoid_add.c")],
                       extra_cflags=["-Wall", "-Wextra", "-Werror"], is_python_module=False)
    return ptl.ops.myops.sigmoid_add


def run_python(code, cwd, env_dir):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, cwd]), PTL_EXTENSIONS_DIR=env_dir)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=300, env=env, cwd=cwd)


def reference(x, y):
    return 1.0 / (1.0 + np.exp(-x)) + y


def test_handbook_gradients(sigmoid_add):
    x = ptl.tensor([1.0, 2.0], requires_grad=True)
    y = ptl.tensor([3.0, 4.0], requires_grad=True)
    z = sigmoid_add(x, y)
    assert z.grad_fn.name() == "SigmoidAddBackward0"
    z.sum().backward()
    assert_close(x.grad, np.array([0.19661193, 0.10499359]), atol=1e-6, rtol=0)
    assert [round(v, 4) for v in x.grad.tolist()] == [0.1966, 0.105]
    assert y.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("shape", [(), (0,), (7,), (3, 4), (2, 0, 3), (2, 3, 5)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_forward_matches_numpy(sigmoid_add, shape, layout, dtype):
    x, a = make(shape, dtype, layout, seed=1)
    y, b = make(shape, dtype, "contiguous", seed=2)
    z = sigmoid_add(x, y)
    assert z.shape == ptl.Size(shape) and z.dtype == dtype
    assert_close(z, reference(a.astype(np.float64), b.astype(np.float64)), dtype=dtype)


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_gradcheck(sigmoid_add, layout):
    x, _ = make((3, 4), ptl.float64, layout, seed=3)
    y, _ = make((3, 4), ptl.float64, "contiguous", seed=4)
    x = x.detach().requires_grad_(True)
    y = y.requires_grad_(True)
    assert ptl.autograd.gradcheck(sigmoid_add, (x, y))
    assert ptl.autograd.gradcheck(sigmoid_add, (ptl.tensor(0.5, dtype=ptl.float64,
                                                           requires_grad=True),
                                                ptl.tensor(1.5, dtype=ptl.float64)))


def test_errors(sigmoid_add):
    with pytest.raises(TypeError, match="^sigmoid_add: expected float32 or float64 tensors$"):
        sigmoid_add(ptl.ones(2, dtype=ptl.int64), ptl.ones(2, dtype=ptl.int64))
    with pytest.raises(RuntimeError,
                       match="^sigmoid_add: x and y must have the same shape and dtype$"):
        sigmoid_add(ptl.ones(2), ptl.ones(3))
    with pytest.raises(RuntimeError, match="^myops::sigmoid_add\\(\\) is missing value for "
                                           "argument 'y'"):
        sigmoid_add(ptl.ones(2))


def test_shows_in_the_trace_and_the_dump(sigmoid_add, capfd):
    x = ptl.tensor([1.0, 2.0], requires_grad=True)
    with ptl.dispatch_trace():
        sigmoid_add(x, ptl.tensor([3.0, 4.0]))
    err = capfd.readouterr().err
    assert "[dispatch] myops::sigmoid_add  keys={Autograd, CPU}  -> Autograd kernel" in err
    assert "  [dispatch] myops::sigmoid_add  keys={CPU}  -> CPU kernel" in err
    dump = ptl._C._dispatch_dump("myops::sigmoid_add")
    assert dump.splitlines()[1] == "schema: myops::sigmoid_add(Tensor x, Tensor y) -> Tensor"
    assert re.search(r"^Autograd: kernel registered at .*sigmoid_add\.c:\d+  \[calls: \d+\]$",
                     dump, re.M), dump
    assert re.search(r"^CPU: kernel registered at .*sigmoid_add\.c:\d+  \[calls: \d+\]$",
                     dump, re.M), dump


def test_no_leaks(sigmoid_add):
    x = ptl.ones(4, requires_grad=True)
    y = ptl.ones(4)

    def step():
        sigmoid_add(x, y).sum().backward()
        sigmoid_add(y, y)
    assert_no_leak(step)


def test_setup_py_builds_an_importable_module(extensions_dir, tmp_path):
    pytest.importorskip("setuptools", reason="setup.py builds need setuptools")
    work = tmp_path / "example"
    shutil.copytree(EXAMPLE, work)
    env = dict(os.environ, PYTHONPATH=ROOT, PTL_CUDA="0")
    build = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=work,
                           capture_output=True, text=True, timeout=300, env=env)
    assert build.returncode == 0, build.stdout + build.stderr
    done = run_python("""
        import pytorchlite as torch
        import sigmoid_add_ext
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = torch.tensor([3.0, 4.0], requires_grad=True)
        torch.ops.myops.sigmoid_add(x, y).sum().backward()
        print([round(v, 4) for v in x.grad.tolist()], y.grad.tolist(),
              sigmoid_add_ext.__ptl_api_version__)
        """, str(work), extensions_dir)
    assert done.returncode == 0, done.stderr
    major, minor = cpp_extension._api_version()
    assert done.stdout.strip() == f"[0.1966, 0.105] [1.0, 1.0] {major}.{minor}"


def test_load_inline_variant(extensions_dir):
    done = run_python("""
        import pytorchlite as torch
        import sigmoid_add_inline
        print(sigmoid_add_inline.module.sigmoid_add(torch.tensor([1.0, 2.0]),
                                                    torch.tensor([3.0, 4.0])).tolist())
        """, EXAMPLE, extensions_dir)
    assert done.returncode == 0, done.stderr
    assert np.allclose(eval(done.stdout), reference(np.array([1.0, 2.0]), np.array([3.0, 4.0])))


@pytest.mark.skipif(not hasattr(ptl, "library"),
                    reason="pytorchlite.library lands with the library branch")
def test_library_variant(extensions_dir):
    done = run_python("""
        import sigmoid_add_library
        import pytorchlite as torch
        x = torch.tensor([1.0, 2.0], requires_grad=True)
        y = torch.tensor([3.0, 4.0], requires_grad=True)
        torch.ops.myops_py.sigmoid_add(x, y).sum().backward()
        print([round(v, 4) for v in x.grad.tolist()], y.grad.tolist())
        """, EXAMPLE, extensions_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.1966, 0.105] [1.0, 1.0]"


@pytest.mark.skipif(cpp_extension.CUDA_HOME is None or shutil.which("nvcc") is None,
                    reason="the CUDA variant needs nvcc")
def test_cuda_variant(extensions_dir):
    # compiles wherever nvcc is; runs the kernel only where a GPU is
    done = run_python("""
        import pytorchlite as torch
        from pytorchlite.utils.cpp_extension import load
        load("sigmoid_add_ext", ["sigmoid_add.c"], is_python_module=False)
        load("sigmoid_add_cuda_ext", ["sigmoid_add_cuda.cu"], is_python_module=False)
        print("CUDA: kernel registered at" in torch._C._dispatch_dump("myops::sigmoid_add"))
        if torch.cuda.is_available():
            x = torch.tensor([1.0, 2.0], device="cuda", requires_grad=True)
            y = torch.tensor([3.0, 4.0], device="cuda", requires_grad=True)
            z = torch.ops.myops.sigmoid_add(x, y)
            z.sum().backward()
            print(z.cpu().numpy().round(4).tolist())
        """, EXAMPLE, extensions_dir)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.split()
    assert lines[0] == "True"
