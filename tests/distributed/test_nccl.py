"""The nccl backend without a GPU (Note [NCCL through ctypes]): finding NCCL's library or saying
why not, its tables of dtypes and ops, its errors turned into DistBackendError, and an nccl
world whose CPU tensors go through MPI.  The collectives on CUDA tensors run in
tests/cuda/test_cuda_nccl.py on a GPU machine."""
import ctypes
import sys

import pytest

import mpi_job
import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite.distributed import _nccl_group


def real_library(monkeypatch):
    """NCCL's library as the backend finds it, or a skip naming what is missing."""
    monkeypatch.delenv("PTL_NCCL_LIBRARY", raising=False)
    monkeypatch.setattr(_nccl_group, "_lib", None)
    monkeypatch.setattr(_nccl_group, "_lib_error", None)
    if _nccl_group.library() is None:
        pytest.skip(f"NCCL's library is not installed (pip install 'pytorchlite[nccl]'): "
                    f"{_nccl_group.library_error()}")
    return _nccl_group.library()


@pytest.mark.usefixtures("no_nccl_library")
def test_without_the_library_nccl_is_unavailable_and_init_says_why():
    assert not dist.is_nccl_available()
    assert "/nonexistent/libnccl.so.2" in _nccl_group.library_error()
    with pytest.raises(RuntimeError) as e:
        dist.init_process_group("nccl")
    assert str(e.value) == "Distributed package doesn't have NCCL built in"
    note = e.value.__notes__[0]
    if torch.cuda.is_built():
        assert "/nonexistent/libnccl.so.2" in note and "PTL_NCCL_LIBRARY" in note
    else:
        assert note == "pytorchlite: this build has no CUDA"
    assert not dist.is_initialized()


def test_the_library_loads_and_reports_its_version(monkeypatch):
    real_library(monkeypatch)
    major, minor, patch = _nccl_group.version()
    assert major == 2 and minor >= 10 and patch >= 0      # ncclAvg needs 2.10
    assert dist.is_nccl_available() == torch.cuda.is_built()


def test_nccl_errors_name_the_rank_the_message_and_the_version(monkeypatch):
    real_library(monkeypatch)
    with pytest.raises(dist.DistBackendError,
                       match=r"^NCCL error on rank 3: unhandled cuda error.*, NCCL version "
                             r"2\.\d+\.\d+\nLast error:\n"):
        _nccl_group._check(1, None, 3)
    _nccl_group._check(0, None, 3)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the "
                    "communicator would be made (tests/cuda/test_cuda_nccl.py)")
def test_a_communicator_without_a_device_raises_nccls_error(monkeypatch):
    lib = real_library(monkeypatch)
    uid = _nccl_group._UniqueId()
    assert lib.ncclGetUniqueId(ctypes.byref(uid)) == 0
    assert any(ctypes.string_at(ctypes.addressof(uid), _nccl_group._UNIQUE_ID_BYTES))
    with pytest.raises(dist.DistBackendError,
                       match=r"(?s)NCCL error on rank 5: .*Last error:\n.+"):
        _nccl_group.init_rank(uid, 1, 0, 5)


def test_dtype_and_op_tables():
    codes = {torch.int8: 0, torch.uint8: 1, torch.bool: 1, torch.int32: 2, torch.int64: 4,
             torch.float16: 6, torch.float32: 7, torch.float64: 8, torch.bfloat16: 9}
    for dtype, code in codes.items():
        assert _nccl_group._nccl_dtype(dtype) == code
    with pytest.raises(TypeError, match="not supported for NCCL process group: "
                                        "torch.int16"):
        _nccl_group._nccl_dtype(torch.int16)
    op = dist.ReduceOp
    # ncclSum 0, ncclProd 1, ncclMax 2, ncclMin 3, ncclAvg 4
    expected = {op.SUM: 0, op.PRODUCT: 1, op.MAX: 2, op.MIN: 3, op.AVG: 4}
    for o, code in expected.items():
        assert _nccl_group._nccl_op(o, torch.float32) == code
    # bools reduce logically: SUM and MAX are OR (max), PRODUCT and MIN are AND (min)
    assert [_nccl_group._nccl_op(o, torch.bool) for o in (op.SUM, op.MAX, op.PRODUCT, op.MIN)] \
        == [2, 2, 3, 3]


@pytest.mark.skipif(not torch.cuda.is_built(), reason="a CPU-only build has no nccl backend")
def test_an_nccl_world_of_one_sends_cpu_tensors_through_mpi(monkeypatch):
    real_library(monkeypatch)
    mpi_job.require_mpi()
    rc, out = mpi_job.run([sys.executable, "tests/distributed/workers/nccl_world.py"])
    assert rc == 0, out
    assert "nccl world ok" in out, out


def test_ddp_checks_the_module_devices_against_the_backend():
    from types import SimpleNamespace

    from pytorchlite.nn.parallel.distributed import _check_devices
    cpu, cuda0, cuda1 = torch.device("cpu"), torch.device("cuda", 0), torch.device("cuda", 1)
    mpi, nccl = SimpleNamespace(nccl=None), SimpleNamespace(nccl=object())
    _check_devices({cpu}, None, None, mpi)
    with pytest.raises(ValueError, match="only work with single-device/multiple-device GPU "
                                         "modules or CPU modules"):
        _check_devices({cpu}, [0], None, mpi)
    with pytest.raises(ValueError, match=r"on the CPU or on one CUDA device, got parameters "
                                         r"on \['cpu', 'cuda:0'\]"):
        _check_devices({cpu, cuda0}, None, None, nccl)
    with pytest.raises(ValueError, match="on one CUDA device"):
        _check_devices({cuda0, cuda1}, None, None, nccl)
    with pytest.raises(ValueError, match=r"module on cuda:0 needs the nccl backend"):
        _check_devices({cuda0}, None, None, mpi)
    for ids, out in ((None, None), ([0], None), ([cuda0], 0), (None, cuda0)):
        _check_devices({cuda0}, ids, out, nccl)
    for ids, out in (([1], None), (None, 1), ([0, 1], None)):
        with pytest.raises(ValueError, match="must name the module's device, cuda:0"):
            _check_devices({cuda0}, ids, out, nccl)
