"""The nccl backend: collectives on CUDA tensors through NVIDIA's NCCL library.  Mirrors the
parts of torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp that a user sees.

Note [NCCL through ctypes]
~~~~~~~~~~~~~~~~~~~~~~~~~~
pytorchlite does not link NCCL.  The library is found when the nccl backend is first asked for
($PTL_NCCL_LIBRARY, else the copy in the nvidia-nccl wheel, else the loader's libnccl.so.2)
and called with ctypes, so the extension builds without NCCL and is_nccl_available() answers
whether the library loads in a CUDA build.
- A group's communicator is made on its first CUDA collective, on the device of that
  collective's tensor: group rank 0 asks NCCL for a unique id, the group's MPI communicator
  broadcasts it (MPI starts the ranks, as for the mpi backend) and every rank calls
  ncclCommInitRank.  One device per rank, as ProcessGroupNCCL assumes.
- Every operation is queued on the current stream of the tensor's device, in place on the
  tensor's memory, so the stream runs it after the kernels that wrote the tensor and before
  the ones that read it, and the caller never waits on the host.  A non-contiguous tensor goes
  through a contiguous copy whose copy back is queued behind the operation on that stream.
- An async_op call returns a Work holding an event recorded after the operation:
  is_completed() queries it, wait() makes the current stream wait on it (ProcessGroupNCCL's
  Work::wait blocks the stream, not the host) and get_future() gives a future completed
  once the event has passed.
- CPU tensors in an nccl world keep going through MPI (PyTorch's "cpu:gloo,cuda:nccl").
- NCCL's error codes become DistBackendError naming the rank, NCCL's message and its last
  error."""
import ctypes
import importlib.util
import os

import pytorchlite as torch  # only read in calls, after the package has loaded

from ..futures import Future
from ._mpi_group import DistBackendError

_UNIQUE_ID_BYTES = 128

# ncclRedOp_t by RedOpType (SUM, AVG, PRODUCT, MIN, MAX): ncclSum 0, ncclProd 1, ncclMax 2,
# ncclMin 3, ncclAvg 4
_NCCL_OPS = (0, 4, 1, 3, 2)


class _UniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * _UNIQUE_ID_BYTES)]


_lib = None
_lib_error = None


def _candidates():
    given = os.environ.get("PTL_NCCL_LIBRARY")
    if given:
        return [given]
    found = []
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(root, "nccl", "lib", "libnccl.so.2")
        if os.path.exists(path):
            found.append(path)
    return found + ["libnccl.so.2"]


def _declare(lib):
    p, i, size, vp = ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)
    signatures = {
        "ncclGetVersion": [ctypes.POINTER(i)],
        "ncclGetUniqueId": [ctypes.POINTER(_UniqueId)],
        "ncclCommInitRank": [vp, i, _UniqueId, i],
        "ncclCommDestroy": [p],
        "ncclAllReduce": [p, p, size, i, i, p, p],
        "ncclBroadcast": [p, p, size, i, i, p, p],
        "ncclReduce": [p, p, size, i, i, i, p, p],
        "ncclAllGather": [p, p, size, i, p, p],
        "ncclReduceScatter": [p, p, size, i, i, p, p],
        "ncclSend": [p, size, i, i, p, p],
        "ncclRecv": [p, size, i, i, p, p],
        "ncclGroupStart": [],
        "ncclGroupEnd": [],
    }
    for name, args in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, i
    lib.ncclGetErrorString.argtypes, lib.ncclGetErrorString.restype = [i], ctypes.c_char_p
    lib.ncclGetLastError.argtypes, lib.ncclGetLastError.restype = [p], ctypes.c_char_p


def library():
    """The loaded NCCL library, or None (library_error() says why)."""
    global _lib, _lib_error
    if _lib is None and _lib_error is None:
        tried = []
        for path in _candidates():
            try:
                lib = ctypes.CDLL(path)
                _declare(lib)
            except (OSError, AttributeError) as e:
                tried.append(f"{path}: {e}")
                continue
            _lib = lib
            break
        else:
            _lib_error = "; ".join(tried)
    return _lib


def library_error():
    library()
    return _lib_error


def version():
    """NCCL's version as (major, minor, patch)."""
    v = ctypes.c_int()
    _check(library().ncclGetVersion(ctypes.byref(v)), None, -1)
    code = v.value
    return code // 10000, code % 10000 // 100, code % 100


def _check(rc, comm, rank):
    if rc == 0:
        return
    lib = library()
    last = lib.ncclGetLastError(comm).decode(errors="replace")
    v = ctypes.c_int()
    lib.ncclGetVersion(ctypes.byref(v))
    raise DistBackendError(
        f"NCCL error on rank {rank}: {lib.ncclGetErrorString(rc).decode(errors='replace')}, "
        f"NCCL version {v.value // 10000}.{v.value % 10000 // 100}.{v.value % 100}\n"
        f"Last error:\n{last}")


def init_rank(uid, size, rank, global_rank):
    """This rank's communicator among `size` ranks sharing unique id uid, on the current
    device."""
    comm = ctypes.c_void_p()
    _check(library().ncclCommInitRank(ctypes.byref(comm), size, uid, rank), None, global_rank)
    return comm


def _nccl_dtype(dtype):
    codes = {torch.int8: 0, torch.uint8: 1, torch.bool: 1, torch.int32: 2, torch.int64: 4,
             torch.float16: 6, torch.float32: 7, torch.float64: 8, torch.bfloat16: 9}
    if dtype not in codes:
        raise TypeError(f"Input tensor data type is not supported for NCCL process group: "
                        f"{dtype}")
    return codes[dtype]


def _nccl_op(op, dtype):
    from .distributed_c10d import RedOpType
    if dtype == torch.bool:   # logical: SUM and MAX are OR, PRODUCT and MIN are AND
        op = {RedOpType.SUM: RedOpType.MAX, RedOpType.PRODUCT: RedOpType.MIN}.get(op, op)
    return _NCCL_OPS[int(op)]


def _dense(t):
    """t, or a contiguous copy of it (copied back by _copy_back on the same stream)."""
    return t if t.is_contiguous() else t.contiguous()


def _copy_back(t, staged):
    if staged is not t:
        t.copy_(staged)


class NcclWork:
    """The handle of one queued operation (ProcessGroupNCCL's WorkNCCL)."""

    def __init__(self, event, outputs):
        self._event = event
        self.outputs = list(outputs)

    def is_completed(self):
        return self._event.query()

    def is_success(self):
        return self.is_completed()

    def wait(self, timeout=None):
        """Makes the current stream wait for the operation; the host does not wait."""
        self._event.wait(torch.cuda.current_stream(self._event.device))
        return True

    def synchronize(self):
        self._event.synchronize()

    def exception(self):
        return None

    def result(self):
        return self.outputs

    def get_future(self):
        self._event.synchronize()
        fut = Future()
        fut.set_result(self.outputs)
        return fut


class NcclCommunicator:
    """The NCCL communicator of one process group (Note [NCCL through ctypes])."""

    def __init__(self, group):
        self._group = group         # the ProcessGroupMPI: ranks, and MPI for the unique id
        self._comm = None
        self.device = None

    @property
    def _rank(self):
        return self._group.ranks[self._group.rank]

    def _communicator(self, device):
        if self._comm is None:
            lib = library()
            uid = _UniqueId()
            if self._group.rank == 0:
                _check(lib.ncclGetUniqueId(ctypes.byref(uid)), None, self._rank)
            data = self._group.comm.bcast(ctypes.string_at(ctypes.addressof(uid),
                                                           _UNIQUE_ID_BYTES), root=0)
            ctypes.memmove(ctypes.addressof(uid), data, _UNIQUE_ID_BYTES)
            with torch.cuda.device(device.index):
                comm = init_rank(uid, self._group.size, self._group.rank, self._rank)
            self._comm, self.device = comm, device
        elif device != self.device:
            raise ValueError(f"the nccl backend uses one CUDA device per rank: this rank's "
                             f"communicator is on {self.device}, got a tensor on {device}")
        return self._comm

    def destroy(self):
        if self._comm is not None:
            library().ncclCommDestroy(self._comm)
            self._comm = None

    def _run(self, tensors, outputs, calls, async_op, finish=()):
        """Queues calls(lib, comm, stream) (NCCL calls, inside one NCCL group) on the current
        stream of the tensors' device, then the copies back in `finish`."""
        device = tensors[0].device
        for t in tensors:
            if t.device != device:
                raise ValueError(f"the tensors of one nccl collective must be on one device, "
                                 f"got {device} and {t.device}")
        comm = self._communicator(device)
        lib = library()
        stream = torch.cuda.current_stream(device)
        with torch.cuda.device(device.index):
            _check(lib.ncclGroupStart(), comm, self._rank)
            try:
                for call in calls:
                    _check(call(lib, comm, stream.cuda_stream), comm, self._rank)
            finally:
                _check(lib.ncclGroupEnd(), comm, self._rank)
            for f in finish:
                f()
            if async_op:
                return NcclWork(stream.record_event(), outputs)
        return None

    # ---- collectives (their arguments are checked by distributed_c10d) ----
    def all_reduce(self, tensor, op, async_op):
        s = _dense(tensor)
        dt, nop = _nccl_dtype(s.dtype), _nccl_op(op, s.dtype)
        return self._run([tensor], [tensor],
                         [lambda lib, c, st: lib.ncclAllReduce(s.data_ptr(), s.data_ptr(),
                                                               s.numel(), dt, nop, c, st)],
                         async_op, [lambda: _copy_back(tensor, s)])

    def broadcast(self, tensor, root, async_op):
        s = _dense(tensor)
        dt = _nccl_dtype(s.dtype)
        return self._run([tensor], [tensor],
                         [lambda lib, c, st: lib.ncclBroadcast(s.data_ptr(), s.data_ptr(),
                                                               s.numel(), dt, root, c, st)],
                         async_op, [lambda: _copy_back(tensor, s)])

    def reduce(self, tensor, root, op, async_op):
        s = _dense(tensor)
        dt, nop = _nccl_dtype(s.dtype), _nccl_op(op, s.dtype)
        mine = self._group.rank == root
        return self._run([tensor], [tensor],
                         [lambda lib, c, st: lib.ncclReduce(s.data_ptr(), s.data_ptr(),
                                                            s.numel(), dt, nop, root, c, st)],
                         async_op, [lambda: _copy_back(tensor, s)] if mine else [])

    def all_gather_into_tensor(self, output, input, async_op, finish=None, outputs=None):
        """finish: what copies the output on (all_gather's list), and its outputs."""
        s_in, s_out = _dense(input), _dense(output)
        dt = _nccl_dtype(s_in.dtype)
        return self._run([input, output], outputs if outputs is not None else [output],
                         [lambda lib, c, st: lib.ncclAllGather(s_in.data_ptr(), s_out.data_ptr(),
                                                               s_in.numel(), dt, c, st)],
                         async_op, [lambda: _copy_back(output, s_out)] + ([finish] if finish
                                                                          else []))

    def reduce_scatter_tensor(self, output, input, op, async_op):
        s_in, s_out = _dense(input), _dense(output)
        dt, nop = _nccl_dtype(s_out.dtype), _nccl_op(op, s_out.dtype)
        return self._run([input, output], [output],
                         [lambda lib, c, st: lib.ncclReduceScatter(
                             s_in.data_ptr(), s_out.data_ptr(), s_out.numel(), dt, nop, c, st)],
                         async_op, [lambda: _copy_back(output, s_out)])

    def exchange(self, tensors, outputs, sends, recvs, async_op, finish=()):
        """Grouped point-to-point transfers: sends and recvs are lists of (tensor, group
        peer) over contiguous tensors (all_to_all, gather, scatter, send, recv)."""
        calls = []
        for t, peer in sends:
            dt = _nccl_dtype(t.dtype)
            calls.append(lambda lib, c, st, t=t, peer=peer, dt=dt:
                         lib.ncclSend(t.data_ptr(), t.numel(), dt, peer, c, st))
        for t, peer in recvs:
            dt = _nccl_dtype(t.dtype)
            calls.append(lambda lib, c, st, t=t, peer=peer, dt=dt:
                         lib.ncclRecv(t.data_ptr(), t.numel(), dt, peer, c, st))
        return self._run(tensors, outputs, calls, async_op, finish)
