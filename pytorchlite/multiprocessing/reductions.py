"""Pickling tensors through shared memory (torch/multiprocessing/reductions.py).

A tensor travels as (segment handle, dtype, sizes, strides, storage offset, requires_grad);
the segment handle names a duplicate of the storage's descriptor held by the sender's
_FdServer, which keeps the segment alive until the receiver has taken it (Note [Shared
memory lifetime]); a sender that exits normally first waits for its receivers.
All tensors of one message that share a storage share one handle (pickle's memo sees the
same _Segment object), so they arrive as views of one mapping, as in the sender."""
import array
import io
import itertools
import os
import pickle
import socket
import struct
import threading
import time
import weakref
from multiprocessing import reduction, util

from .. import _C
from .._tensor import Tensor

# storage address -> the _Segment being pickled for it; entries live while a pickler's memo
# holds the segment, i.e. during one message.
_segments = weakref.WeakValueDictionary()


class _FdServer:
    """Hands out duplicates of this process's segment descriptors to other processes.

    A thread accepts on an abstract Unix socket (no file: the name vanishes with the
    process), checks that the peer runs as our user (SO_PEERCRED), reads a key and answers
    with the descriptor registered under it (SCM_RIGHTS), once.  multiprocessing's own
    resource_sharer does the same, but its socket file is unlinked early at exit (exit
    priority 0), which strands a message put on a Queue just before the sender exits; here
    the exit hook waits (at most _EXIT_WAIT seconds) until every registered descriptor has
    been taken, after the queues' feeder threads have flushed (their priority is -5)."""

    def __init__(self):
        self.pid = None
        self.lock = threading.Lock()

    def _start(self):
        self.pid = os.getpid()
        self.cache = {}
        self.keys = itertools.count(1)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.address = f"\0ptl-fd-{os.getpid()}-{os.urandom(8).hex()}"
        self.listener.bind(self.address)
        self.listener.listen(128)
        threading.Thread(target=self._serve, args=(self.listener, self.cache),
                         name="pytorchlite-fd-server", daemon=True).start()

    def install_exit_hook(self):
        """Registers the exit wait.  It must be in place before the process starts exiting:
        a finalizer registered during exit (by a feeder thread pickling) would not run."""
        util.Finalize(None, self._wait_until_taken, exitpriority=-10)

    def register(self, fd):
        """Keeps a duplicate of fd until a receiver takes it; returns (address, key)."""
        with self.lock:
            if self.pid != os.getpid():   # first use, or a forked child
                self._start()
            key = next(self.keys)
            self.cache[key] = os.dup(fd)
            return self.address, key

    @staticmethod
    def _serve(listener, cache):
        creds = struct.Struct("3i")
        while True:
            conn, _ = listener.accept()
            with conn:
                try:
                    peer = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, creds.size)
                    if creds.unpack(peer)[1] != os.getuid():
                        continue
                    key = struct.unpack("!Q", _recv_exact(conn, 8))[0]
                    fd = cache.get(key)
                    if fd is not None:
                        # Forget it only once sent: the exit hook waits for an empty cache.
                        try:
                            socket.send_fds(conn, [b"F"], [fd])
                        finally:
                            del cache[key]
                            os.close(fd)
                except (OSError, EOFError):
                    pass   # the receiver went away; it will report the failure itself

    def _wait_until_taken(self):
        if self.pid != os.getpid():
            return   # nothing was shared from this process
        deadline = time.monotonic() + _EXIT_WAIT
        while self.cache and time.monotonic() < deadline:
            time.sleep(0.005)


_EXIT_WAIT = 10.0
_fd_server = _FdServer()


def _fetch_fd(address, key):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(address)
        s.sendall(struct.pack("!Q", key))
        _, fds, _, _ = socket.recv_fds(s, 1, 1)
    if not fds:
        raise RuntimeError("a shared-memory segment was already taken, or its sender failed")
    return fds[0]


class _Segment:
    """A tensor's shared storage on its way to another process."""
    __slots__ = ("tensor", "fd", "nbytes", "__weakref__")

    def __init__(self, tensor):
        self.tensor = tensor   # keeps the storage (and its descriptor) alive meanwhile
        self.fd, self.nbytes = _C._shared_fd(tensor)

    def __reduce__(self):
        return (_rebuild_segment, (*_fd_server.register(self.fd), self.nbytes))


def _rebuild_segment(address, key, nbytes):
    """The receiver's mapping of a segment, as a flat uint8 tensor over the whole storage."""
    return _C._tensor_from_shared_fd(_fetch_fd(address, key), nbytes)


def _rebuild_tensor(segment, dtype_name, sizes, strides, offset, requires_grad, conj=False):
    t = _C._tensor_on_storage(segment, getattr(_C, dtype_name), sizes, strides, offset)
    if conj:   # the segment holds the memory; a conj view reads it conjugated
        t = t.conj()
    if requires_grad:
        t.requires_grad_(True)
    return t


def reduce_tensor(tensor):
    """ForkingPickler reducer for Tensor: moves the storage to shared memory (in place, as
    PyTorch does) and sends a handle to it."""
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad, since "
            "autograd does not support crossing process boundaries.  If you just want to "
            "transfer the data, call detach() on the tensor before serializing (e.g., "
            "putting it on the queue).")
    if tensor.device.type != "cpu":
        return tensor.__reduce_ex__(2)
    _C._share_memory_(tensor)
    key = tensor._storage_ptr()
    segment = _segments.get(key)
    if segment is None:
        segment = _segments[key] = _Segment(tensor)
    return (_rebuild_tensor, (segment, str(tensor.dtype).split(".")[1], tuple(tensor.shape),
                              tuple(tensor.stride()), tensor.storage_offset(),
                              tensor.requires_grad, tensor.is_conj()))


def init_reductions():
    reduction.ForkingPickler.register(Tensor, reduce_tensor)
    _fd_server.install_exit_hook()
    # multiprocessing children start with no finalizers: install it again in each
    util.register_after_fork(_fd_server, _FdServer.install_exit_hook)


# ---- descriptors attached to the message itself (DataLoader result channels) ----
# A message is a header (payload length, descriptor count) sent with SCM_RIGHTS, then the
# pickle.  In flight, the kernel holds the descriptors: the segments outlive a sender that
# dies right after sending, and no per-tensor handshake with the sender is needed.
_HEADER = struct.Struct("!QI")
_MAX_FDS = 250   # below the kernel's SCM_MAX_FD (253); more go through the _FdServer


class _FdPickler(reduction.ForkingPickler):
    def __init__(self, file, fds):
        super().__init__(file, pickle.HIGHEST_PROTOCOL)
        self.fds = fds
        self.seen = {}

    def persistent_id(self, obj):
        if type(obj) is not _Segment:
            return None
        index = self.seen.get(id(obj))
        if index is None:
            if len(self.fds) >= _MAX_FDS:
                return None
            index = self.seen[id(obj)] = len(self.fds)
            self.fds.append(obj.fd)
        return (index, obj.nbytes)


class _FdUnpickler(pickle.Unpickler):
    def __init__(self, file, fds):
        super().__init__(file)
        self.fds = fds
        self.mapped = {}

    def persistent_load(self, pid):
        index, nbytes = pid
        if index not in self.mapped:
            fd, self.fds[index] = self.fds[index], -1
            self.mapped[index] = _C._tensor_from_shared_fd(fd, nbytes)
        return self.mapped[index]


def send_with_fds(sock, obj):
    """Pickles obj onto a Unix stream socket, its tensors' segments attached as descriptors.
    Pickling errors surface before anything is written."""
    buf = io.BytesIO()
    fds = []
    _FdPickler(buf, fds).dump(obj)
    payload = buf.getbuffer()
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sock.sendmsg([_HEADER.pack(len(payload), len(fds))], anc)
    sock.sendall(payload)


def _recv_exact(sock, n):
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:])
        if k == 0:
            raise EOFError
        got += k
    return buf


def recv_with_fds(sock):
    """The inverse of send_with_fds; EOFError when the sender has gone."""
    fd_size = array.array("i").itemsize
    msg, anc, flags, _ = sock.recvmsg(_HEADER.size, socket.CMSG_SPACE(_MAX_FDS * fd_size))
    fds = []
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            chunk = array.array("i")
            chunk.frombytes(data[:len(data) - len(data) % fd_size])
            fds.extend(chunk)
    try:
        if not msg:
            raise EOFError
        if len(msg) < _HEADER.size:
            msg += _recv_exact(sock, _HEADER.size - len(msg))
        n, _ = _HEADER.unpack(msg)
        payload = _recv_exact(sock, n)
        return _FdUnpickler(io.BytesIO(payload), fds).load()
    finally:
        for fd in fds:
            if fd >= 0:
                os.close(fd)
