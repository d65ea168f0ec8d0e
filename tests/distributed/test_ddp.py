"""DistributedDataParallel on 2 and 4 ranks equals one process on the global batch
(workers/ddp_matches_single_process.py: several buckets, gradient_as_bucket_view, a layer used
twice, retain_graph, no_sync, find_unused_parameters), and its errors name ranks and
parameters (workers/bad_input.py)."""
import sys

import pytest

import mpi_job


@pytest.mark.parametrize("nproc", [2, 4])
def test_ddp_matches_single_process(nproc):
    rc, out = mpi_job.mpirun(nproc, "ddp_matches_single_process.py", timeout=120)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out


@pytest.mark.parametrize("nproc", [2, 4])
def test_ddp_buckets_in_shared_memory_windows(nproc):
    rc, out = mpi_job.mpirun(nproc, "ddp_shared_buckets.py", timeout=180)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out


def test_ddp_buckets_in_shared_memory_windows_world_of_one():
    mpi_job.require_mpi()
    rc, out = mpi_job.run([sys.executable, "tests/distributed/workers/ddp_shared_buckets.py"])
    assert rc == 0 and mpi_job.ranks_ok(out) == [0], out


@pytest.mark.parametrize("env, mode", [({"PTL_DDP_SHARED_MEMORY": "0"}, "off"),
                                       ({"PTL_DISTRIBUTED_DEBUG": "DETAIL"}, "detail")])
def test_ddp_buckets_not_shared(env, mode):
    rc, out = mpi_job.mpirun(2, "ddp_shared_buckets.py", mode, timeout=180, **env)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == [0, 1], out


def test_ddp_without_shared_memory_matches_single_process():
    # PTL_DDP_SHARED_MEMORY=0: MPI sums the private buckets (as across machines), the last
    # one by MPI_Iallreduce or, from 1 MiB, by the Ibarrier and the blocking MPI_Allreduce
    rc, out = mpi_job.mpirun(2, "ddp_matches_single_process.py", timeout=120,
                             PTL_DDP_SHARED_MEMORY="0")
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == [0, 1], out


def test_ddp_matches_single_process_in_detail_mode():
    # DETAIL: the buckets take the fingerprinted all_reduce (Note [DDP bucket channel])
    rc, out = mpi_job.mpirun(2, "ddp_matches_single_process.py", timeout=120,
                             PTL_DISTRIBUTED_DEBUG="DETAIL")
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == [0, 1], out


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


def test_ddp_parameter_hook_that_raises_names_the_parameter_next_forward():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_hook_raises")
    assert rc != 0
    for rank in (0, 1):
        assert f"rank {rank}: backward raised hook failed on purpose on rank {rank}" in out, out
        assert f"Parameter indices which did not receive grad for rank {rank}: 0\n" in out, out


@pytest.mark.parametrize("nproc", [2, 3])
def test_ddp_communication_hooks_and_work_futures(nproc):
    rc, out = mpi_job.mpirun(nproc, "ddp_comm_hooks.py", timeout=120)
    assert rc == 0, out
    assert mpi_job.ranks_ok(out) == list(range(nproc)), out


def test_ddp_different_models_raise_on_every_rank():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_different_models")
    assert rc != 0
    assert ("DDP expects same model across all ranks, but rank 0 has gradient buckets "
            "(numel, dtype) [(16, 'torch.float32')] and find_unused_parameters=False, while "
            "rank 1 has [(20, 'torch.float32')] and find_unused_parameters=False.") in out, out


def test_ddp_bucket_that_one_rank_never_reduces_times_out_naming_it():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_one_rank_skips_backward",
                             PTL_DISTRIBUTED_STALL_SECONDS="2")
    assert rc != 0
    assert "timed out after" in out and "DistBackendError" in out, out
    assert ("rank 0] timed out after" in out and "waiting in DDP bucket 0 all_reduce(numel=16, "
            "dtype=torch.float32)" in out) or \
        "rank 0 has not entered it: it waits in DDP bucket 0 all_reduce" in out, out


def test_ddp_bucket_against_another_collective_stalls_or_mismatches_in_detail_mode():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_backward_against_all_reduce",
                             PTL_DISTRIBUTED_STALL_SECONDS="2")
    assert rc != 0
    assert "waiting in DDP bucket 0 all_reduce(numel=16, dtype=torch.float32)" in out or \
        "it waits in DDP bucket 0 all_reduce(numel=16, dtype=torch.float32)" in out, out
    rc, out = mpi_job.mpirun(2, "bad_input.py", "ddp_backward_against_all_reduce",
                             PTL_DISTRIBUTED_STALL_SECONDS="2", PTL_DISTRIBUTED_DEBUG="DETAIL")
    assert rc != 0
    assert ("Detected mismatch between collectives on ranks. Rank 0 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=5, OpType=ALLREDUCE, TensorShape=[16], "
            "TensorDtypes=Float), but Rank 1 is running collective: CollectiveFingerPrint("
            "SequenceNumber=5, OpType=ALLREDUCE, TensorShape=[5], TensorDtypes=Float).") in out, out
