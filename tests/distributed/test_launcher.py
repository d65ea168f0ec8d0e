"""python -m pytorchlite.distributed.run: torchrun's flags and environment on mpirun, and a
failing worker reported with its rank and traceback."""
import sys

import pytest

import mpi_job
from pytorchlite.distributed import run

LAUNCH = [sys.executable, "-m", "pytorchlite.distributed.run"]


def test_launcher_sets_torchruns_environment():
    mpi_job.require_mpi()
    rc, out = mpi_job.run(LAUNCH + ["--nproc-per-node", "2", "--master-port", "29512",
                                    "tests/distributed/workers/launched.py", "--flag", "x"])
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == [0, 1], out
    for r in range(2):
        assert (f"rank {r}: OK [('LOCAL_RANK', '{r}'), ('LOCAL_WORLD_SIZE', '2'), "
                f"('MASTER_ADDR', '127.0.0.1'), ('MASTER_PORT', '29512'), ('RANK', '{r}'), "
                "('WORLD_SIZE', '2')] sum=1.0 args=['--flag', 'x']") in out, out


def test_launcher_reports_the_failing_rank_and_its_traceback():
    mpi_job.require_mpi()
    rc, out = mpi_job.run(LAUNCH + ["--nproc_per_node=2", "tests/distributed/workers/launched.py",
                                    "raise"], timeout=40)
    assert rc != 0
    assert "pytorchlite.distributed.run: the job failed" in out, out
    assert "rank 1 (local_rank 1) failed:" in out, out
    assert "    ValueError: rank 1 gave up" in out, out


def test_launcher_arguments():
    args = run.get_args_parser().parse_args(
        ["--nnodes", "2", "--nproc-per-node", "3", "script.py", "--lr", "0.1"])
    assert (args.nproc_per_node, args.training_script, args.training_script_args) == \
        ("3", "script.py", ["--lr", "0.1"])
    with pytest.raises(ValueError, match="run it once with --hostfile"):
        run.mpirun_command(args, "/tmp")
