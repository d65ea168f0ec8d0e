"""The README's main job, `python -m pytorchlite.demo`, runs to the end (one epoch here), prints
its sections and writes its checkpoint."""
import os
import subprocess
import sys

from helpers import ROOT


def test_demo_runs_and_writes_its_checkpoint(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = tmp_path / "demo_out"
    proc = subprocess.run([sys.executable, "-m", "pytorchlite.demo", "--epochs", "1", "--out",
                           str(out)], capture_output=True, text=True, timeout=240, env=env,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for section in ("1. The life of z = x + y", "2. Training a small CNN",
                    "the loss's autograd graph: "):
        assert section in text, text
    assert (out / "digits_cnn.pt").is_file()
