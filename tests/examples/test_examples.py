"""The scripts in examples/ run (a few steps each, as subprocesses), print in the documented
format, and their loss falls."""
import os
import re
import subprocess
import sys

import pytest

from pytorchlite.datasets import load_text
from helpers import ROOT

NUM = r"(\d+\.\d+)"


def run(script, *args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), *args],
                          capture_output=True, text=True, timeout=240, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.parametrize("script", ["train_mlp_digits.py", "train_cnn_digits.py"])
def test_digits_examples(script):
    lines = run(script, "--epochs", "3", "--steps", "12", "--seed", "1").splitlines()
    epoch_re = re.compile(rf"^epoch (\d+): train loss {NUM}  test accuracy {NUM}%$")
    epochs = [epoch_re.match(line) for line in lines[:-1]]
    assert all(epochs), lines
    assert [int(m.group(1)) for m in epochs] == [1, 2, 3]
    losses = [float(m.group(2)) for m in epochs]
    assert losses[-1] < losses[0], lines
    final = re.match(rf"^final test accuracy {NUM}% \(\d+\.\ds\)$", lines[-1])
    assert final, lines[-1]
    assert final.group(1) == epochs[-1].group(3)
    # 36 steps of 32 images are already far better than chance (10%)
    assert float(final.group(1)) > 40.0, lines


def test_char_gpt_example():
    out = run("train_char_gpt.py", "--steps", "12", "--eval-every", "6", "--eval-iters", "2",
              "--batch-size", "8", "--sample", "20", "--seed", "0")
    lines = out.splitlines()
    assert re.match(r"^189481 characters, vocabulary 68, 422400 parameters$", lines[0]), lines
    first = re.match(rf"^step 0: val loss {NUM}$", lines[1])
    assert first, lines
    steps = [re.match(rf"^step (\d+): train loss {NUM}  val loss {NUM}  \(\d+\.\ds\)$", line)
             for line in lines[2:4]]
    assert all(steps), lines
    assert [int(m.group(1)) for m in steps] == [6, 12]
    assert re.match(rf"^epoch 1: mean train loss {NUM}$", lines[4]), lines
    final = re.match(rf"^final val loss {NUM} after 12 steps \(\d+\.\ds\)$", lines[5])
    assert final, lines
    # from ln(68) = 4.22 at the start, 12 AdamW steps already lower the loss
    assert float(steps[-1].group(3)) < float(first.group(1)) - 0.3, lines
    assert lines[6] == "sample:"
    # the prompt "\n" and 20 generated characters, all from the text's vocabulary
    sample = out.split("sample:\n", 1)[1][:-1]
    assert len(sample) == 21 and sample[0] == "\n", repr(sample)
    assert set(sample) <= set(load_text()), repr(sample)


def test_ddp_digits_example_on_two_processes():
    pytest.importorskip("mpi4py", reason="pytorchlite.distributed needs mpi4py: pip install "
                        "'pytorchlite[distributed]'")
    import shutil
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found: apt-get install openmpi-bin libopenmpi-dev")
    env = dict(os.environ, PYTHONPATH=ROOT)
    if os.geteuid() == 0:
        # Open MPI refuses to start as root (CI containers) unless both are set.
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run([sys.executable, "-m", "pytorchlite.distributed.run",
                           "--nproc-per-node", "2",
                           os.path.join(ROOT, "examples", "ddp_digits.py"),
                           "--epochs", "3", "--steps", "12", "--seed", "1"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    epoch_re = re.compile(rf"^epoch (\d+): train loss {NUM}  test accuracy {NUM}%  "
                          r"\(2 processes\)$")
    epochs = [epoch_re.match(line) for line in lines[:-1]]
    assert all(epochs) and len(epochs) == 3, lines
    assert float(epochs[-1].group(2)) < float(epochs[0].group(2)), lines
    assert re.match(rf"^final test accuracy {NUM}% \(\d+\.\ds\)$", lines[-1]), lines
