"""The runtime needs only the standard library: pytorchlite imports, and the README's demo
runs, with NumPy (and every optional extra) unimportable.  `pip install -e . && python -m
pytorchlite.demo` on a fresh machine has no NumPy; an import of it at module level in any
module that `import pytorchlite` loads breaks that command."""
import os
import subprocess
import sys

from helpers import ROOT

BLOCK = ("import sys\n"
         "for name in ('numpy', 'scipy', 'onnx', 'onnxruntime', 'tensorboard', 'tqdm', "
         "'mpi4py', 'torch'):\n"
         "    sys.modules[name] = None\n")


def run(code):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-c", BLOCK + code], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300)


def test_import_without_numpy_or_extras():
    r = run("import pytorchlite as torch\n"
            "print(torch.tensor([1., 2.]).sum().item())\n")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "3.0"


def test_demo_runs_without_numpy_or_extras():
    r = run("import runpy\nrunpy.run_module('pytorchlite.demo', run_name='__main__')\n")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "the loss's autograd graph" in r.stdout
