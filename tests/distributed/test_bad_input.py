"""Misuse gives PyTorch's errors, names the ranks, and never hangs: calls before
init_process_group, wrong backends, init without a launcher, mismatched collectives, a
collective on one rank only (the stall inspector), a worker that raises."""
import sys

import pytest

import mpi_job
import pytorchlite as torch
import pytorchlite.distributed as dist
from helpers import torch_ref

NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                   "init_process_group.")
BEFORE_INIT = [
    ("get_rank", lambda: dist.get_rank()),
    ("get_world_size", lambda: dist.get_world_size()),
    ("barrier", lambda: dist.barrier()),
    ("all_reduce", lambda: dist.all_reduce(torch.ones(2))),
    ("broadcast", lambda: dist.broadcast(torch.ones(2), src=0)),
    ("new_group", lambda: dist.new_group([0])),
    ("ddp", lambda: torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(2, 2))),
]


@pytest.mark.parametrize("name, call", BEFORE_INIT, ids=[n for n, _ in BEFORE_INIT])
def test_calls_before_init_raise_pytorchs_error(name, call):
    assert not dist.is_initialized()
    with pytest.raises(ValueError) as e:
        call()
    assert str(e.value) == NOT_INITIALIZED
    # nor did the call start MPI (a singleton MPI leaves an orted child behind)
    assert "mpi4py.MPI" not in sys.modules


@torch_ref
def test_before_init_message_is_pytorchs():
    import helpers
    with pytest.raises(ValueError) as e:
        helpers.torch.distributed.get_rank()
    assert str(e.value) == NOT_INITIALIZED


BACKEND_ERRORS = [
    ("foo", AssertionError, "Unknown backend type foo"),
    ("nccl", RuntimeError, "Distributed package doesn't have NCCL built in"),
    ("gloo", RuntimeError, "Distributed package doesn't have Gloo built in"),
]


@pytest.mark.parametrize("backend, exc, message", BACKEND_ERRORS)
@pytest.mark.usefixtures("no_nccl_library")
def test_backend_errors(backend, exc, message):
    with pytest.raises(exc) as e:
        dist.init_process_group(backend)
    assert str(e.value) == message
    assert not dist.is_initialized()


@torch_ref
@pytest.mark.filterwarnings("ignore::UserWarning")   # torch's warnings about these backends
@pytest.mark.parametrize("backend, exc, message", BACKEND_ERRORS[:2])
def test_backend_errors_are_pytorchs(backend, exc, message):
    import helpers
    with pytest.raises(exc) as e:
        helpers.torch.distributed.init_process_group(backend, init_method="tcp://127.0.0.1:1",
                                                     rank=0, world_size=1)
    assert str(e.value) == message


def test_reduce_op_and_backend_names():
    assert [op.name for op in dist.ReduceOp.RedOpType] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX"]
    assert dist.ReduceOp.SUM == dist.ReduceOp.RedOpType.SUM
    assert dist.Backend("MPI") == "mpi" and dist.Backend.NCCL == "nccl"
    assert dist.Backend("Foo") == "foo"
    assert issubclass(dist.DistBackendError, RuntimeError)


def test_init_without_launcher_is_a_world_of_one():
    mpi_job.require_mpi()
    rc, out = mpi_job.run([sys.executable, "tests/distributed/workers/init_without_launcher.py"])
    assert rc == 0 and mpi_job.ranks_ok(out) == [0], out


def test_mismatched_shapes_name_the_ranks():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "shape_mismatch")
    assert rc != 0
    assert ("DistBackendError: Detected mismatch between collectives on ranks. Rank 0 is "
            "running collective: CollectiveFingerPrint(SequenceNumber=1, OpType=ALLREDUCE, "
            "TensorShape=[4], TensorDtypes=Float), but Rank 1 is running collective: "
            "CollectiveFingerPrint(SequenceNumber=1, OpType=ALLREDUCE, TensorShape=[5], "
            "TensorDtypes=Float).") in out, out


def test_different_collectives_name_the_ranks():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "op_mismatch")
    assert rc != 0
    assert "OpType=ALLREDUCE, TensorShape=[3], TensorDtypes=Float), but Rank 1 is running " \
        "collective: CollectiveFingerPrint(SequenceNumber=1, OpType=BARRIER" in out, out


def test_detail_mode_checks_shapes_not_only_sizes():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "detail_shape")
    assert rc == 0 and "rank 1: same numel passes" in out, out
    rc, out = mpi_job.mpirun(2, "bad_input.py", "detail_shape", PTL_DISTRIBUTED_DEBUG="DETAIL")
    assert rc != 0 and "same numel passes" not in out
    assert "TensorShape=[2, 3], TensorDtypes=Float), but Rank 1 is running collective: " \
        "CollectiveFingerPrint(SequenceNumber=1, OpType=ALLREDUCE, TensorShape=[3, 2]" in out


def test_collective_on_one_rank_only_times_out_naming_the_others():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "one_rank_only",
                             PTL_DISTRIBUTED_STALL_SECONDS="2")
    assert rc != 0
    assert "timed out after" in out and "DistBackendError" in out, out
    assert ("rank 1 has not entered it: it waits in recv(shape=[1], dtype=torch.float32) from "
            "rank 0") in out or \
        "rank 0 has not entered it: it waits in #1 all_reduce(shape=[3]" in out, out


def test_rank_that_left_is_reported_as_outside_any_call():
    rc, out = mpi_job.mpirun(2, "bad_input.py", "one_rank_exits",
                             PTL_DISTRIBUTED_STALL_SECONDS="2")
    assert rc != 0
    assert "[rank 0] timed out after" in out, out
    assert "ranks that have not entered it: [1]" in out, out
    assert "rank 1 has not entered it: it is not inside any pytorchlite.distributed call" in out


def test_worker_that_raises_takes_the_job_down():
    # rank 0 waits in all_reduce with the default 30-minute timeout: only the abort ends it
    rc, out = mpi_job.mpirun(2, "bad_input.py", "worker_raises", timeout=40)
    assert rc != 0
    assert "[rank 1] ValueError: worker 1 failed on purpose" in out, out


def test_without_mpi4py_is_not_available(monkeypatch):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mpi4py" else real(name, *a))
    assert dist.is_available() is False
    with pytest.raises(RuntimeError, match="Distributed package doesn't have MPI built in"):
        dist.init_process_group("mpi")
    assert not dist.is_initialized()


def test_importing_does_not_start_mpi():
    import subprocess
    code = "import sys, pytorchlite; pytorchlite.distributed.is_available(); " \
           "print('mpi4py.MPI' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=mpi_job.environment()).stdout
    assert out.strip() == "False"
