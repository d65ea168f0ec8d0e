"""torch.distributed's process groups and collectives, on MPI through mpi4py.  Mirrors
torch/distributed/distributed_c10d.py.  See Note [Collective fingerprints] and Note [Stall
inspector] in _mpi_group.py.

Note [Collectives on tensor memory]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
MPI reads and writes a contiguous CPU tensor's own bytes: the buffer handed to MPI is the tensor's
address and byte count (MPI.buffer.fromaddress on Tensor.data_ptr(); the Work keeps the tensor
alive until the request completed), with the MPI datatype of its dtype.  No copy is made for
contiguous tensors of a dtype MPI knows.  A non-contiguous tensor goes through a contiguous copy
that is written back on completion (PyTorch's MPI backend does the same), and so do float16 and
bfloat16 in reductions: MPI has no arithmetic on them, so they are reduced as float32 and rounded
back once.  Without reduction they travel as raw 16-bit words.  Bool reductions are logical:
SUM and MAX are OR, PRODUCT and MIN are AND.  Lists of tensors (all_gather, gather, scatter,
all_to_all, reduce_scatter) go through one flat buffer, as in ProcessGroupMPI.cpp."""
import atexit
import enum
import os
import pickle
import sys
import traceback
from datetime import timedelta

import pytorchlite as torch  # only read in calls, after the package has loaded

from . import _nccl_group
from ._mpi_group import DistBackendError, DistError, ProcessGroupMPI, Work, _seconds

default_pg_timeout = timedelta(minutes=30)

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


def is_available():
    """True when mpi4py (and so an MPI library) can be imported; MPI is not started."""
    import importlib.util
    return importlib.util.find_spec("mpi4py") is not None


class Backend(str):
    """A backend name, lower-cased (torch.distributed.Backend: any name passes here;
    init_process_group rejects the ones it does not know)."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name):
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: "
                             f"{type(name)}")
        value = getattr(Backend, name.upper(), Backend.UNDEFINED)
        return str.__new__(cls, name.lower() if value == Backend.UNDEFINED else value)


class RedOpType(enum.IntEnum):
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4


class ReduceOp:
    """ReduceOp.SUM, AVG, PRODUCT, MIN, MAX (values of ReduceOp.RedOpType)."""

    RedOpType = RedOpType
    SUM = RedOpType.SUM
    AVG = RedOpType.AVG
    PRODUCT = RedOpType.PRODUCT
    MIN = RedOpType.MIN
    MAX = RedOpType.MAX


class GroupMember:
    WORLD = None
    NON_GROUP_MEMBER = object()


group = GroupMember
_world = None           # the default ProcessGroupMPI
_groups = []            # groups made by new_group, destroyed with the default one
_abort_installed = False
_destroyed_broken = False   # a destroyed group had failed: its requests never completed


# ---- dtypes ----

def _dtypes():
    # ORDER DTYPE (src/c10/dtype.h)
    return (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
            torch.float16, torch.bfloat16, torch.float32, torch.float64)


_DTYPE_NAMES = ("Bool", "Byte", "Char", "Short", "Int", "Long", "Half", "BFloat16", "Float",
                "Double")


def _dtype_index(tensor):
    return _dtypes().index(tensor.dtype)


def _mpi_type(dtype):
    from mpi4py import MPI
    types = (MPI.C_BOOL, MPI.UINT8_T, MPI.INT8_T, MPI.INT16_T, MPI.INT32_T, MPI.INT64_T,
             MPI.INT16_T, MPI.INT16_T, MPI.FLOAT, MPI.DOUBLE)    # ORDER DTYPE
    return types[_dtypes().index(dtype)]


def _mpi_op(op, dtype):
    from mpi4py import MPI
    if dtype == torch.bool:
        return {RedOpType.SUM: MPI.LOR, RedOpType.MAX: MPI.LOR, RedOpType.PRODUCT: MPI.LAND,
                RedOpType.MIN: MPI.LAND}[op]
    return {RedOpType.SUM: MPI.SUM, RedOpType.AVG: MPI.SUM, RedOpType.PRODUCT: MPI.PROD,
            RedOpType.MIN: MPI.MIN, RedOpType.MAX: MPI.MAX}[op]


def _buf(t, per_rank=1):
    """The MPI message [buffer, count, datatype] over contiguous tensor t's own bytes; the
    count is numel / per_rank (a gather's receive count is per rank)."""
    from mpi4py import MPI
    if t.is_conj():   # its bytes are its values' conjugates: PyTorch's collectives refuse it
        torch.view_as_real(t)
    nbytes = t.numel() * t.element_size()
    return [MPI.buffer.fromaddress(t.data_ptr(), nbytes), t.numel() // per_rank,
            _mpi_type(t.dtype)]


def _reduction_group(tensor, op, group, name="tensor"):
    """Checks a reduction's tensor and op; its process group (None: this rank is not in it)."""
    _check_tensor(tensor, name)
    _check_op(op, tensor)
    return _group(group)


def _check_op(op, tensor):
    if not isinstance(op, RedOpType):
        raise ValueError(f"Invalid reduce op: {op!r}; use a member of ReduceOp")
    if op == RedOpType.AVG and not tensor.is_floating_point():
        raise ValueError("ReduceOp.AVG is only supported for floating point tensors, got "
                         f"{tensor.dtype}")


def _staged(tensor, reducing):
    """The tensor MPI works on: tensor itself, or a contiguous (float32 for 16-bit floats in
    reductions) copy to be written back (Note [Collectives on tensor memory])."""
    if reducing and tensor.dtype in (torch.float16, torch.bfloat16):
        return tensor.to(torch.float32)
    if not tensor.is_contiguous():
        return tensor.contiguous()
    return tensor


def _copy_back(tensor, staged):
    if staged is not tensor:
        tensor.copy_(staged)


def _check_tensor(tensor, name="tensor"):
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"torch.Tensor\n             but got {type(tensor)} instead.")
    kind = tensor.device.type
    if kind == "cuda" and _world is not None and _world.nccl is not None:
        return
    if kind != "cpu":
        if _world is not None and _world.nccl is not None:
            raise ValueError(f"the nccl backend works on CUDA tensors (and on CPU tensors "
                             f"through MPI), got a tensor on {kind}")
        raise ValueError(f"the MPI backend works on CPU tensors, got a tensor on {kind}")


def _nccl(pg, *tensors):
    """The group's NCCL communicator when the call's tensors are CUDA tensors (Note [NCCL
    through ctypes] in _nccl_group.py), else None (MPI)."""
    cuda = [t.is_cuda for t in tensors if t is not None]
    if not any(cuda):
        return None
    if not all(cuda):
        raise ValueError("the tensors of one collective must all be CUDA tensors (nccl) or "
                         "all CPU tensors (MPI)")
    return pg.nccl


def _check_list(tensors, name):
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"Invalid function argument. Expected parameter `{name}` of type "
                        f"List[torch.Tensor]\n             but got {type(tensors)} instead.")
    for t in tensors:
        _check_tensor(t, name)


def _desc(name, tensor):
    if tensor is None:
        return f"{name}()"
    return f"{name}(shape={list(tensor.shape)}, dtype={tensor.dtype})"


# ---- groups ----

def _group(group):
    """The ProcessGroupMPI of `group` (None: the default); None if this rank is not in it."""
    if _world is None:
        raise ValueError(_NOT_INITIALIZED)
    if group is None or group is GroupMember.WORLD:
        return _world
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    return group


def _group_rank(pg, global_rank):
    if global_rank not in pg.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {pg}")
    return pg.ranks.index(global_rank)


def _root(pg, group_rank, global_rank):
    """The group rank of a root given as group_src/group_dst or as a global rank (default 0)."""
    if group_rank is not None:
        return group_rank
    return _group_rank(pg, 0 if global_rank is None else global_rank)


def _group_and_root(group, group_root, root):
    """(process group, the root's group rank, whether this rank is the root) of a rooted
    call; (None, None, False) when this rank is not in the group."""
    pg = _group(group)
    if pg is None:
        return None, None, False
    root = _root(pg, group_root, root)
    return pg, root, pg.rank == root


def _issue(pg, op, name, tensor, mpi_name, args, finish=None, async_op=False, outputs=(),
           **options):
    """Issues one collective (ProcessGroupMPI.collective; `options`: its root, numel and
    keep) and returns what the API call does: the Work of an async_op call (its result():
    `outputs`), or None once it completed."""
    work = pg.collective(op, _desc(name, tensor), tensor, mpi_name, args, finish,
                         blocking=not async_op, **options)
    if async_op:
        work.outputs = list(outputs)
        return work
    work.wait()
    return None


class GradBucket:
    """One bucket of DDP's gradients, as a communication hook sees it (c10d::GradBucket): the
    flat tensor that holds them, views of it shaped like each parameter, and the parameters.
    set_buffer replaces the flat tensor for this hook call only, as in PyTorch."""

    def __init__(self, bucket, params, last):
        self._bucket, self._last = bucket, last
        self._buffer = bucket.flat
        self._params = [params[i] for i in bucket.indices]

    def index(self):
        return self._bucket.index

    def buffer(self):
        """The flat tensor of the bucket's gradients (reduce it in place or return another)."""
        return self._buffer

    def set_buffer(self, buffer):
        if buffer.numel() != self._buffer.numel() or buffer.dtype != self._buffer.dtype:
            raise ValueError("set_buffer expects a tensor of the bucket's numel and dtype")
        self._buffer = buffer.reshape(-1)

    def gradients(self):
        """Views of buffer() shaped like each parameter's gradient."""
        return self._bucket.views_of(self._buffer)

    def parameters(self):
        return list(self._params)

    def is_last(self):
        """Whether this is the last bucket of the iteration to be reduced."""
        return self._last


def is_initialized():
    return _world is not None


def is_mpi_available():
    return is_available()


def is_nccl_available():
    """True in a CUDA build where NCCL's library loads (Note [NCCL through ctypes])."""
    return torch.cuda.is_built() and _nccl_group.library() is not None


def is_gloo_available():
    return False


def is_torchelastic_launched():
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _env_rendezvous():
    """The variables init_method='env://' needs (PyTorch's _env_rendezvous_handler)."""
    for name in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        if name not in os.environ:
            raise ValueError("Error initializing torch.distributed using env:// rendezvous: "
                             f"environment variable {name} expected, but not set")
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1,
                       store=None, group_name="", pg_options=None, device_id=None):
    """Starts the default process group.  The mpi backend takes rank and world size from MPI
    (mpirun or pytorchlite.distributed.run; a plain `python script.py` is a world of one, as
    with PyTorch's mpi backend); given ones, and those of an explicit init_method='env://',
    must agree with MPI's."""
    global _world
    if _world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    backend = Backend(backend if backend is not None else "mpi")
    if backend == Backend.NCCL and not is_nccl_available():
        error = RuntimeError("Distributed package doesn't have NCCL built in")
        error.add_note("pytorchlite: " + (
            "this build has no CUDA" if not torch.cuda.is_built() else
            f"NCCL's library did not load ({_nccl_group.library_error()}); pip install "
            "'pytorchlite[nccl]' or set PTL_NCCL_LIBRARY"))
        raise error
    if backend == Backend.GLOO:
        raise RuntimeError("Distributed package doesn't have Gloo built in")
    if backend not in (Backend.MPI, Backend.NCCL):
        raise AssertionError(f"Unknown backend type {backend}")   # PyTorch's exception
    if store is not None:
        raise ValueError(f"the {backend} backend does not use a store; rank and world size "
                         "come from MPI")
    if init_method is not None and init_method != "env://":
        raise ValueError(f"the {backend} backend supports init_method=None or 'env://', got "
                         f"{init_method!r}")
    if not is_available():
        raise RuntimeError("Distributed package doesn't have MPI built in. MPI is only "
                           "included if you build PyTorch from source on a host that has MPI "
                           "installed. (pytorchlite: pip install mpi4py)")
    if init_method == "env://":
        rank, world_size = (_env_rendezvous() if rank < 0 or world_size < 0
                            else (rank, world_size))
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    mpi_rank, mpi_size = comm.Get_rank(), comm.Get_size()
    if (world_size >= 0 and world_size != mpi_size) or (rank >= 0 and rank != mpi_rank):
        raise ValueError(f"rank {rank} and world_size {world_size} do not match MPI's rank "
                         f"{mpi_rank} and size {mpi_size}; start the workers with mpirun or "
                         "pytorchlite.distributed.run")
    timeout_s = _seconds(timeout if timeout is not None else default_pg_timeout)
    _world = ProcessGroupMPI(comm, list(range(mpi_size)), timeout_s, _DTYPE_NAMES,
                             _dtype_index)
    if backend == Backend.NCCL:
        _world.nccl = _nccl_group.NcclCommunicator(_world)
    if mpi_size > 1:
        _install_abort_on_error()


def destroy_process_group(group=None):
    """Frees `group` (None: the default group and every group made by new_group)."""
    global _world, _destroyed_broken
    pg = _group(group)
    if pg is None:
        return
    closing = [pg] + (_groups if pg is _world else [])
    _destroyed_broken |= any(g.broken is not None for g in closing)
    if pg is _world:
        for g in _groups:
            _free(g)
        _groups.clear()
        _free(_world)
        _world = None
    else:
        _free(pg)
        _groups.remove(pg)


def _free(pg):
    """Frees the communicators made for pg (the default group's comm is MPI's COMM_WORLD)."""
    if pg.nccl is not None:
        pg.nccl.destroy()
    for channel in pg.channels:
        channel.free()
    pg.side.Free()
    if pg is not _world:
        pg.comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None):
    """A group of `ranks` (global ranks; None: all).  Every rank of the default group must
    call it, in the same order; on ranks outside it, returns GroupMember.NON_GROUP_MEMBER."""
    world = _group(None)
    MPI = world.mpi
    ranks = sorted(ranks) if ranks is not None else list(range(world.size))
    for r in ranks:
        if r < 0 or r >= world.size:
            raise ValueError("Invalid rank in new_group; all ranks must be in [0, world_size)")
    member = world.rank in ranks
    comm = world.side.Split(0 if member else MPI.UNDEFINED, world.rank)
    if not member:
        return GroupMember.NON_GROUP_MEMBER
    timeout_s = _seconds(timeout) if timeout is not None else world.timeout_s
    pg = ProcessGroupMPI(comm, ranks, timeout_s, _DTYPE_NAMES, _dtype_index)
    if world.nccl is not None:
        pg.nccl = _nccl_group.NcclCommunicator(pg)
    _groups.append(pg)
    return pg


def get_rank(group=None):
    pg = _group(group)
    return -1 if pg is None else pg.rank


def get_world_size(group=None):
    pg = _group(group)
    return -1 if pg is None else pg.size


def get_backend(group=None):
    return Backend.MPI if _group(group).nccl is None else Backend.NCCL


def get_global_rank(group, group_rank):
    return _group(group).ranks[group_rank]


def get_group_rank(group, global_rank):
    return _group_rank(_group(group), global_rank)


def get_process_group_ranks(group):
    return list(_group(group).ranks)


# ---- errors take the job down (never a hang) ----

def _install_abort_on_error():
    """An uncaught exception prints its traceback with the rank and aborts the MPI job, so
    the ranks waiting for this one stop too (mpi4py's `python -m mpi4py` does the same).  The
    traceback also goes to $PTL_ERROR_FILE_DIR/rank<N>.txt when the launcher set it."""
    global _abort_installed
    if _abort_installed:
        return
    _abort_installed = True
    previous = sys.excepthook

    def abort_on_error(exc_type, exc, tb):
        from mpi4py import MPI
        rank = MPI.COMM_WORLD.Get_rank()
        text = "".join(traceback.format_exception(exc_type, exc, tb))
        sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        error_dir = os.environ.get("PTL_ERROR_FILE_DIR")
        if error_dir:
            with open(os.path.join(error_dir, f"rank{rank}.txt"), "w") as f:
                f.write(text)
        if exc_type is KeyboardInterrupt:
            previous(exc_type, exc, tb)
        MPI.COMM_WORLD.Abort(1)

    sys.excepthook = abort_on_error
    atexit.register(_abort_if_broken)


def _abort_if_broken():
    """At exit after a stall or mismatch, MPI_Finalize would wait for the requests that never
    completed: abort instead (PyTorch's watchdog kills the process after a timeout too)."""
    groups = ([_world] if _world is not None else []) + _groups
    if _destroyed_broken or any(g.broken is not None for g in groups):
        from mpi4py import MPI
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


# ---- collectives ----

def barrier(group=None, async_op=False, device_ids=None):
    pg = _group(group)
    if pg is None:
        return None
    return _issue(pg, "BARRIER", "barrier", None, "Barrier", tuple, async_op=async_op)


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """A barrier that raises after `timeout` naming the ranks that did not reach it."""
    pg = _group(group)
    if pg is None:
        return None
    work = pg.collective("BARRIER", "monitored_barrier()", None, "Barrier", tuple,
                         blocking=False)
    work.wait(timeout)
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduces `tensor` over the group's ranks, in place on every rank."""
    pg = _reduction_group(tensor, op, group)
    if pg is None:
        return None
    if _nccl(pg, tensor):
        return pg.nccl.all_reduce(tensor, op, async_op)
    MPI = pg.mpi
    s = _staged(tensor, True)

    def finish():
        if op == RedOpType.AVG:
            s.div_(pg.size)
        _copy_back(tensor, s)

    return _issue(pg, "ALLREDUCE", "all_reduce", tensor, "Allreduce",
                  lambda: (MPI.IN_PLACE, _buf(s), _mpi_op(op, s.dtype)), finish, async_op,
                  (tensor,), keep=(tensor, s))


def broadcast(tensor, src=None, group=None, async_op=False, group_src=None):
    """Copies `tensor` of global rank `src` into `tensor` on every rank."""
    _check_tensor(tensor)
    pg = _group(group)
    if pg is None:
        return None
    root = _root(pg, group_src, src)
    if _nccl(pg, tensor):
        return pg.nccl.broadcast(tensor, root, async_op)
    s = _staged(tensor, False)
    return _issue(pg, "BROADCAST", "broadcast", tensor, "Bcast", lambda: (_buf(s), root),
                  lambda: _copy_back(tensor, s), async_op, (tensor,), root=root,
                  keep=(tensor, s))


def reduce(tensor, dst=None, op=ReduceOp.SUM, group=None, async_op=False, group_dst=None):
    """Reduces `tensor` over the group into `tensor` of rank `dst`."""
    pg = _reduction_group(tensor, op, group)
    if pg is None:
        return None
    MPI = pg.mpi
    root = _root(pg, group_dst, dst)
    if _nccl(pg, tensor):
        return pg.nccl.reduce(tensor, root, op, async_op)
    s = _staged(tensor, True)
    mine = pg.rank == root

    def args():
        if mine:
            return MPI.IN_PLACE, _buf(s), _mpi_op(op, s.dtype), root
        return _buf(s), None, _mpi_op(op, s.dtype), root

    def finish():
        if mine:
            if op == RedOpType.AVG:
                s.div_(pg.size)
            _copy_back(tensor, s)

    return _issue(pg, "REDUCE", "reduce", tensor, "Reduce", args, finish, async_op, (tensor,),
                  root=root, keep=(tensor, s))


def _flat_like(tensor, n):
    return torch.empty(n * tensor.numel(), dtype=tensor.dtype, device=tensor.device)


def _scatter_flat(flat, tensors):
    """Copies consecutive pieces of `flat` into `tensors` (an all_gather's output list)."""
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(flat[offset:offset + n].view(t.shape))
        offset += n


def _cat_flat(tensors, dtype=None):
    flat = torch.cat([t.reshape(-1) for t in tensors]) if tensors else torch.empty(0)
    return flat.to(dtype) if dtype is not None else flat


def _check_list_size(tensors, pg, name):
    if len(tensors) != pg.size:
        raise ValueError(f"{name} must have one tensor per rank of the group: got "
                         f"{len(tensors)}, world size {pg.size}")


def _check_same_shape(tensors, like, name):
    for t in tensors:
        if t.dtype != like.dtype:
            raise TypeError(f"{name}: expected {like.dtype}, got {t.dtype}")
        if t.numel() != like.numel():
            raise ValueError(f"{name}: every tensor must have {like.numel()} elements (the "
                             f"input's), got {t.numel()}")


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """tensor_list[r] = `tensor` of rank r, on every rank."""
    _check_list(tensor_list, "tensor_list")
    _check_tensor(tensor)
    pg = _group(group)
    if pg is None:
        return None
    _check_list_size(tensor_list, pg, "tensor_list")
    _check_same_shape(tensor_list, tensor, "all_gather")
    flat = _flat_like(tensor, pg.size)
    if _nccl(pg, tensor, *tensor_list):
        return pg.nccl.all_gather_into_tensor(flat, tensor, async_op,
                                              lambda: _scatter_flat(flat, tensor_list),
                                              tensor_list)
    s = _staged(tensor, False)
    return _issue(pg, "ALLGATHER", "all_gather", tensor, "Allgather",
                  lambda: (_buf(s), _buf(flat, pg.size)), lambda: _scatter_flat(flat, tensor_list),
                  async_op, tensor_list, keep=(s, flat))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """output_tensor = the inputs of all ranks, concatenated (or stacked) in rank order."""
    _check_tensor(output_tensor, "output_tensor")
    _check_tensor(input_tensor, "input_tensor")
    pg = _group(group)
    if pg is None:
        return None
    if output_tensor.numel() != input_tensor.numel() * pg.size:
        raise ValueError("output tensor size must be equal to world_size times input tensor "
                         "size")
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError("output tensor must have the same type as input tensor")
    if _nccl(pg, output_tensor, input_tensor):
        return pg.nccl.all_gather_into_tensor(output_tensor, input_tensor, async_op)
    s_in, s_out = _staged(input_tensor, False), _staged(output_tensor, False)
    return _issue(pg, "ALLGATHER_BASE", "all_gather_into_tensor", input_tensor, "Allgather",
                  lambda: (_buf(s_in), _buf(s_out, pg.size)),
                  lambda: _copy_back(output_tensor, s_out), async_op, (output_tensor,),
                  keep=(s_in, s_out, output_tensor))


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over ranks of input_list[rank]."""
    _check_list(input_list, "input_list")
    pg = _reduction_group(output, op, group, "output")
    if pg is None:
        return None
    _check_list_size(input_list, pg, "input_list")
    _check_same_shape(input_list, output, "reduce_scatter")
    if _nccl(pg, output, *input_list):
        return pg.nccl.reduce_scatter_tensor(output, _cat_flat(input_list), op, async_op)
    s_out = _staged(output, True)
    flat = _cat_flat(input_list, s_out.dtype)
    return _reduce_scatter(pg, "REDUCE_SCATTER", "reduce_scatter", flat, output, s_out, op,
                           async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """output = the reduction over ranks of the rank-th of world_size equal pieces of input."""
    _check_tensor(input, "input")
    pg = _reduction_group(output, op, group, "output")
    if pg is None:
        return None
    if input.numel() != output.numel() * pg.size:
        raise ValueError("input tensor must be the same size as output size times world size")
    if output.dtype != input.dtype:
        raise TypeError("input tensor must be the same type as the output tensor")
    if _nccl(pg, output, input):
        return pg.nccl.reduce_scatter_tensor(output, input, op, async_op)
    s_out = _staged(output, True)
    return _reduce_scatter(pg, "REDUCE_SCATTER_BASE", "reduce_scatter_tensor",
                           _staged(input, True), output, s_out, op, async_op)


def _reduce_scatter(pg, op_name, name, flat, output, s_out, op, async_op):
    def finish():
        if op == RedOpType.AVG:
            s_out.div_(pg.size)
        _copy_back(output, s_out)

    return _issue(pg, op_name, name, output, "Reduce_scatter_block",
                  lambda: (_buf(flat, pg.size), _buf(s_out), _mpi_op(op, s_out.dtype)), finish,
                  async_op, (output,), keep=(flat, s_out, output))


def _alltoallv(pg, name, op_name, desc_tensor, send, send_counts, recv, recv_counts, finish,
               keep, async_op, outputs):
    """One Alltoallv of element counts per rank (fingerprint: sizes may differ)."""
    def displs(counts):
        out, acc = [], 0
        for c in counts:
            out.append(acc)
            acc += c
        return out

    def args():
        t_send, t_recv = _mpi_type(send.dtype), _mpi_type(recv.dtype)
        return ([_buf(send)[0], (send_counts, displs(send_counts)), t_send],
                [_buf(recv)[0], (recv_counts, displs(recv_counts)), t_recv])

    return _issue(pg, op_name, name, desc_tensor, "Alltoallv", args, finish, async_op, outputs,
                  numel=-1, keep=keep)


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """output_tensor_list[r] on this rank = input_tensor_list[this rank] on rank r."""
    _check_list(output_tensor_list, "output_tensor_list")
    _check_list(input_tensor_list, "input_tensor_list")
    pg = _group(group)
    if pg is None:
        return None
    _check_list_size(output_tensor_list, pg, "output_tensor_list")
    _check_list_size(input_tensor_list, pg, "input_tensor_list")
    if _nccl(pg, *output_tensor_list, *input_tensor_list):
        sends = [(t.contiguous(), r) for r, t in enumerate(input_tensor_list)]
        recvs = [(t.contiguous(), r) for r, t in enumerate(output_tensor_list)]
        return pg.nccl.exchange(output_tensor_list + input_tensor_list, output_tensor_list,
                                sends, recvs, async_op,
                                [lambda t=t, s=s: _copy_back(t, s)
                                 for t, (s, _) in zip(output_tensor_list, recvs)])
    send = _cat_flat(input_tensor_list)
    recv = torch.empty(sum(t.numel() for t in output_tensor_list), dtype=send.dtype)
    return _alltoallv(pg, "all_to_all", "ALLTOALL", input_tensor_list[0], send,
                      [t.numel() for t in input_tensor_list], recv,
                      [t.numel() for t in output_tensor_list],
                      lambda: _scatter_flat(recv, output_tensor_list), (send, recv), async_op,
                      output_tensor_list)


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Splits input along dim 0 (equally, or by input_split_sizes), sends piece r to rank r and
    writes the received pieces, in rank order, into output."""
    _check_tensor(output, "output")
    _check_tensor(input, "input")
    pg = _group(group)
    if pg is None:
        return None

    def counts(t, splits, name):
        row = t.numel() // t.shape[0] if t.dim() > 0 and t.shape[0] else 0
        if splits is None:
            if t.dim() == 0 or t.shape[0] % pg.size:
                raise ValueError(f"{name}'s first dimension must be divisible by the world "
                                 f"size {pg.size}")
            return [t.numel() // pg.size] * pg.size
        if len(splits) != pg.size or sum(splits) != t.shape[0]:
            raise ValueError(f"{name} split sizes must have one entry per rank and sum to its "
                             "first dimension")
        return [s * row for s in splits]

    send_counts = counts(input, input_split_sizes, "input")
    recv_counts = counts(output, output_split_sizes, "output")
    s_in, s_out = _staged(input, False), _staged(output, False)
    if _nccl(pg, output, input):
        return pg.nccl.exchange([output, input], [output], _pieces(s_in.reshape(-1), send_counts),
                                _pieces(s_out.reshape(-1), recv_counts), async_op,
                                [lambda: _copy_back(output, s_out)])
    return _alltoallv(pg, "all_to_all_single", "ALLTOALL_BASE", input, s_in, send_counts,
                      s_out, recv_counts, lambda: _copy_back(output, s_out),
                      (s_in, s_out, output), async_op, (output,))


def _pieces(flat, counts):
    """(piece, rank) for consecutive pieces of `flat` of the given element counts."""
    out, offset = [], 0
    for r, c in enumerate(counts):
        out.append((flat[offset:offset + c], r))
        offset += c
    return out


def _rooted_list_args(tensor, tensors, group, group_root, root, op, role):
    """Checks the arguments of gather/scatter: (process group or None when this rank is not in
    it, the root's group rank, whether this rank is the root).  Only the root passes a list,
    one tensor per rank shaped like `tensor`."""
    _check_tensor(tensor)
    pg, root, mine = _group_and_root(group, group_root, root)
    if pg is None:
        return None, None, False
    name = f"{op}_list"
    if mine:
        tensors = [] if tensors is None else tensors
        _check_list(tensors, name)
        _check_list_size(tensors, pg, name)
        _check_same_shape(tensors, tensor, op)
    elif tensors is not None and len(tensors) > 0:
        raise ValueError(f"Argument ``{name}`` must NOT be specified on non-{role} ranks.")
    return pg, root, mine


def gather(tensor, gather_list=None, dst=None, group=None, async_op=False, group_dst=None):
    """gather_list[r] on rank dst = `tensor` of rank r."""
    pg, root, mine = _rooted_list_args(tensor, gather_list, group, group_dst, dst, "gather",
                                       "destination")
    if pg is None:
        return None
    s = _staged(tensor, False)
    if _nccl(pg, tensor, *(gather_list or [])):
        recvs = [(t.contiguous(), r) for r, t in enumerate(gather_list)] if mine else []
        return pg.nccl.exchange([tensor] + list(gather_list or []), gather_list or (),
                                [(s, root)], recvs, async_op,
                                [lambda t=t, p=p: _copy_back(t, p)
                                 for t, (p, _) in zip(gather_list or [], recvs)])
    flat = _flat_like(tensor, pg.size) if mine else None
    return _issue(pg, "GATHER", "gather", tensor, "Gather",
                  lambda: (_buf(s), _buf(flat, pg.size) if mine else None, root),
                  (lambda: _scatter_flat(flat, gather_list)) if mine else None, async_op,
                  gather_list or (), root=root, keep=(s, flat))


def scatter(tensor, scatter_list=None, src=None, group=None, async_op=False, group_src=None):
    """`tensor` on rank r = scatter_list[r] of rank src."""
    pg, root, mine = _rooted_list_args(tensor, scatter_list, group, group_src, src, "scatter",
                                       "source")
    if pg is None:
        return None
    s = _staged(tensor, False)
    if _nccl(pg, tensor, *(scatter_list or [])):
        sends = [(t.contiguous(), r) for r, t in enumerate(scatter_list)] if mine else []
        return pg.nccl.exchange([tensor] + list(scatter_list or []), [tensor], sends,
                                [(s, root)], async_op, [lambda: _copy_back(tensor, s)])
    flat = _cat_flat(scatter_list) if mine else None
    return _issue(pg, "SCATTER", "scatter", tensor, "Scatter",
                  lambda: (_buf(flat, pg.size) if mine else None, _buf(s), root),
                  lambda: _copy_back(tensor, s), async_op, (tensor,), root=root,
                  keep=(s, flat, tensor))


# ---- point to point ----

def isend(tensor, dst=None, group=None, tag=0, group_dst=None):
    _check_tensor(tensor)
    pg = _group(group)
    if pg is None:
        return None
    peer = group_dst if group_dst is not None else _group_rank(pg, dst)
    if peer == pg.rank:
        raise ValueError("Invalid destination rank: should not be the same as the rank of the "
                         "current process.")
    s = tensor.contiguous()
    if _nccl(pg, tensor):
        return pg.nccl.exchange([tensor], [tensor], [(s, peer)], [], True)
    work = pg.point_to_point(f"send(shape={list(tensor.shape)}, dtype={tensor.dtype}) to "
                             f"rank {pg.ranks[peer]}",
                             lambda: pg.comm.Isend(_buf(s), peer, tag), keep=(s,))
    work.outputs = [tensor]
    return work


def irecv(tensor, src=None, group=None, tag=0, group_src=None):
    _check_tensor(tensor)
    pg = _group(group)
    if pg is None:
        return None
    MPI = pg.mpi
    peer = (group_src if group_src is not None else
            MPI.ANY_SOURCE if src is None else _group_rank(pg, src))
    s = _staged(tensor, False)
    if _nccl(pg, tensor):
        if peer == MPI.ANY_SOURCE:
            raise ValueError("the nccl backend receives from a given rank: pass src")
        work = pg.nccl.exchange([tensor], [tensor], [], [(s, peer)], True,
                                [lambda: _copy_back(tensor, s)])
        work.source = peer
        return work
    who = "any rank" if peer == MPI.ANY_SOURCE else f"rank {pg.ranks[peer]}"
    work = pg.point_to_point(f"recv(shape={list(tensor.shape)}, dtype={tensor.dtype}) from "
                             f"{who}", lambda: pg.comm.Irecv(_buf(s), peer, tag),
                             lambda: _copy_back(tensor, s), keep=(s, tensor))
    work.outputs = [tensor]
    return work


def send(tensor, dst=None, group=None, tag=0, group_dst=None):
    isend(tensor, dst, group, tag, group_dst).wait()


def recv(tensor, src=None, group=None, tag=0, group_src=None):
    """Receives into `tensor`; returns the sender's global rank."""
    work = irecv(tensor, src, group, tag, group_src)
    if work is None:
        return -1
    work.wait()
    pg = _group(group)
    source = work.source if pg.nccl is not None and tensor.is_cuda else work.status.Get_source()
    return pg.ranks[source]


class P2POp:
    """One isend or irecv for batch_isend_irecv."""

    def __init__(self, op, tensor, peer=None, group=None, tag=0):
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


def batch_isend_irecv(p2p_op_list):
    return [op.op(op.tensor, op.peer, op.group, op.tag) for op in p2p_op_list]


# ---- Python objects (pickled into uint8 tensors) ----

def _to_tensor(obj):
    data = pickle.dumps(obj)
    t = torch.empty(len(data), dtype=torch.uint8)
    memoryview(t)[:] = data
    return t


def _from_tensor(t, n):
    return pickle.loads(bytes(memoryview(t[:n].contiguous())))


def _padded(payload, m):
    """The uint8 tensor payload zero-padded to m bytes."""
    out = torch.zeros(m, dtype=torch.uint8)
    out[:payload.numel()] = payload
    return out


def _gathered_payload(pg, obj):
    """obj pickled and padded to the longest rank's length, and every rank's length (one
    all_gather of the lengths)."""
    payload = _to_tensor(obj)
    mine = torch.tensor([payload.numel()], dtype=torch.int64)
    sizes = torch.empty(pg.size, dtype=torch.int64)
    all_gather_into_tensor(sizes, mine, group=pg)
    sizes = sizes.tolist()
    return _padded(payload, max(sizes)), sizes


def broadcast_object_list(object_list, src=None, group=None, device=None, group_src=None):
    """Replaces object_list's items on every rank by those of rank src (picklable)."""
    pg, root, mine = _group_and_root(group, group_src, src)
    if pg is None:
        return
    payload = _to_tensor(list(object_list)) if mine else None
    size = torch.tensor([payload.numel() if mine else 0], dtype=torch.int64)
    broadcast(size, group=pg, group_src=root)
    if not mine:
        payload = torch.empty(int(size.item()), dtype=torch.uint8)
    broadcast(payload, group=pg, group_src=root)
    if not mine:
        object_list[:] = _from_tensor(payload, payload.numel())


def all_gather_object(object_list, obj, group=None):
    """object_list[r] = obj of rank r, on every rank."""
    pg = _group(group)
    if pg is None:
        return
    padded, sizes = _gathered_payload(pg, obj)
    m = padded.numel()
    out = torch.empty(m * pg.size, dtype=torch.uint8)
    all_gather_into_tensor(out, padded, group=pg)
    object_list[:] = [_from_tensor(out[r * m:(r + 1) * m], sizes[r]) for r in range(pg.size)]


def gather_object(obj, object_gather_list=None, dst=None, group=None, group_dst=None):
    """object_gather_list[r] on rank dst = obj of rank r."""
    pg, root, mine = _group_and_root(group, group_dst, dst)
    if pg is None:
        return
    if mine and object_gather_list is None:
        raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    padded, sizes = _gathered_payload(pg, obj)
    m = padded.numel()
    pieces = [torch.empty(m, dtype=torch.uint8) for _ in range(pg.size)] if mine else None
    gather(padded, pieces, group=pg, group_dst=root)
    if mine:
        object_gather_list[:] = [_from_tensor(p, n) for p, n in zip(pieces, sizes)]


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=None,
                        group=None, group_src=None):
    """scatter_object_output_list[0] on rank r = scatter_object_input_list[r] of rank src."""
    pg, root, mine = _group_and_root(group, group_src, src)
    if pg is None:
        return
    if not isinstance(scatter_object_output_list, list) or not scatter_object_output_list:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size "
                         "at least 1.")
    payloads = [_to_tensor(o) for o in scatter_object_input_list] if mine else []
    sizes = torch.tensor([p.numel() for p in payloads] if mine else [0] * pg.size,
                         dtype=torch.int64)
    broadcast(sizes, group=pg, group_src=root)
    sizes = sizes.tolist()
    m = max(sizes)
    out = torch.empty(m, dtype=torch.uint8)
    scatter(out, [_padded(p, m) for p in payloads] if mine else None, group=pg,
            group_src=root)
    scatter_object_output_list[0] = _from_tensor(out, sizes[pg.rank])


_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024


def _compute_bucket_assignment_by_size(tensors, bucket_size_limits, expect_sparse_gradient=()):
    """DDP's gradient buckets, as PyTorch's reducer assigns them: the tensors are taken in list
    order, one open bucket per (dtype, device); a tensor joins its bucket, and the bucket closes
    once it holds at least its size limit in bytes (so it may pass the limit by its last
    tensor).  Each (dtype, device) walks bucket_size_limits, staying on the last: with
    [_DEFAULT_FIRST_BUCKET_BYTES, cap] its first bucket is small.  A tensor expecting a sparse
    gradient gets a bucket of its own (limit 0).  Returns (bucket_indices,
    per_bucket_size_limits), the buckets ordered by the smallest index each holds."""
    tensors = list(tensors)
    limits = [int(v) for v in bucket_size_limits]
    if not tensors:
        raise ValueError("_compute_bucket_assignment_by_size expects at least one tensor")
    if not limits or min(limits) < 0:
        raise ValueError(f"bucket_size_limits must be non-empty and non-negative, got "
                         f"{list(bucket_size_limits)}")
    sparse = list(expect_sparse_gradient)
    if sparse and len(sparse) != len(tensors):
        raise ValueError(f"expect_sparse_gradient has {len(sparse)} entries for "
                         f"{len(tensors)} tensors")
    result, open_buckets = [], {}
    for i, t in enumerate(tensors):
        if sparse and sparse[i]:
            result.append(([i], 0))
            continue
        key = (t.dtype, str(t.device))
        indices, size, step = open_buckets.get(key, ([], 0, 0))
        indices.append(i)
        size += t.numel() * t.element_size()
        limit = limits[step]
        if size >= limit:
            result.append((indices, limit))
            indices, size, step = [], 0, min(step + 1, len(limits) - 1)
        open_buckets[key] = (indices, size, step)
    result.extend((indices, limits[step]) for indices, _, step in open_buckets.values()
                  if indices)
    result.sort(key=lambda r: min(r[0]))
    return [r[0] for r in result], [r[1] for r in result]


__all__ = [
    "Backend", "DistBackendError", "DistError", "GradBucket", "GroupMember", "P2POp", "RedOpType",
    "ReduceOp",
    "Work",
    "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast", "broadcast_object_list",
    "destroy_process_group", "gather", "gather_object", "get_backend", "get_global_rank",
    "get_group_rank", "get_process_group_ranks", "get_rank", "get_world_size", "group",
    "init_process_group", "irecv", "is_available", "is_gloo_available", "is_initialized",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "isend",
    "monitored_barrier", "new_group", "recv", "reduce", "reduce_scatter",
    "reduce_scatter_tensor", "scatter", "scatter_object_list", "send",
]
