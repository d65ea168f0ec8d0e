"""The nccl backend's collectives on a CUDA device (tests/cuda/nccl_world_of_one.py, in its own
process: init_process_group starts MPI).  Needs a device, mpi4py and NCCL's library
(pip install 'pytorchlite[nccl]'); tools/gpu_check.sh runs it."""
import importlib.util
import os
import subprocess
import sys

import pytest

from device_required import NO_DEVICE, pytestmark, require_device  # noqa: F401
from pytorchlite.distributed import _nccl_group

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_every_collective_in_a_world_of_one():
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed: pip install 'pytorchlite[nccl]'")
    if _nccl_group.library() is None:
        pytest.skip(f"NCCL's library does not load: {_nccl_group.library_error()}")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    proc = subprocess.run([sys.executable, os.path.join(HERE, "nccl_world_of_one.py")],
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "nccl device ok" in proc.stdout, proc.stdout + proc.stderr
