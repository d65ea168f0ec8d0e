"""DistributedDataParallel on 2 and 4 ranks equals one process on the global batch
(workers/ddp_matches_single_process.py)."""
import pytest

import mpi_job


@pytest.mark.parametrize("nproc", [2, 4])
def test_ddp_matches_single_process(nproc):
    rc, out = mpi_job.mpirun(nproc, "ddp_matches_single_process.py", timeout=120)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out


def test_ddp_unused_parameter_names_it_in_detail_mode():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_unused", PTL_DISTRIBUTED_DEBUG="DETAIL")
    assert rc != 0
    assert "Expected to have finished reduction in the prior iteration" in out, out
    assert "Parameters which did not receive grad for rank 0: 1.weight, 1.bias" in out, out
    assert "Parameter indices which did not receive grad for rank 0: 2 3" in out, out


def test_ddp_unused_parameter_indices_without_debug():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_unused")
    assert rc != 0
    assert "Parameter indices which did not receive grad for rank" in out, out
    assert "Parameters which did not receive grad" not in out, out


@pytest.mark.parametrize("nproc", [2, 3])
def test_ddp_communication_hooks_and_work_futures(nproc):
    rc, out = mpi_job.mpirun(nproc, "ddp_comm_hooks.py", timeout=120)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out
