"""Starts the worker scripts of tests/distributed under mpirun (or the launcher), with a
timeout on every job, and skips when MPI is missing."""
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "workers")


def require_mpi():
    """Skips the calling test without mpi4py or mpirun (the README's MPI install)."""
    pytest.importorskip("mpi4py", reason="pytorchlite.distributed needs mpi4py: pip install "
                        "'pytorchlite[distributed]' and apt-get install openmpi-bin "
                        "libopenmpi-dev")
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not found: apt-get install openmpi-bin libopenmpi-dev")


def environment(**extra):
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    if os.geteuid() == 0:
        # Open MPI refuses to start as root (CI containers) unless both are set.
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.update(extra)
    return env


def run(command, timeout=60, **extra_env):
    """Runs command; returns (returncode, stdout + stderr).  Fails the test on a timeout:
    a job that hangs is the bug these tests exist for."""
    try:
        proc = subprocess.run(command, env=environment(**extra_env), cwd=ROOT,
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(command)} did not finish in {timeout} s:\n{e.stdout}\n"
                    f"{e.stderr}")
    return proc.returncode, proc.stdout + proc.stderr


def mpirun(nproc, worker, *args, timeout=60, **extra_env):
    """`mpirun -np nproc python workers/<worker> args`, exporting extra_env to the ranks."""
    require_mpi()
    command = ["mpirun", "-np", str(nproc), "--oversubscribe"]
    for name in extra_env:
        command += ["-x", name]
    command += [sys.executable, os.path.join(WORKERS, worker)] + list(args)
    return run(command, timeout, **extra_env)


def ranks_ok(out):
    """The ranks that printed `rank N: OK` (mpirun may interleave the ranks' lines)."""
    return sorted(int(r) for r in re.findall(r"rank (\d+): OK", out))
