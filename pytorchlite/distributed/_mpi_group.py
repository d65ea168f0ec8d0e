"""A process group on MPI: the requests, their Work handles, the collective fingerprints and the
stall inspector.  Mirrors torch/csrc/distributed/c10d/ProcessGroupMPI.cpp (collectives on an
MPI communicator) and ProcessGroupWrapper.cpp (the fingerprint check of TORCH_DISTRIBUTED_DEBUG).

Note [Collective fingerprints]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
MPI matches collectives by their order on a communicator and trusts every rank to pass the same
counts and datatypes; a mismatch gives a truncation error, garbage or a hang.  So with every
collective on `comm` the ranks all-gather a fingerprint (sequence number, op, dtype, numel,
root, shape) on `side`, a duplicate of the group's communicator, and check it: a mismatch raises
on every rank with the ranks' fingerprints.  With PTL_DISTRIBUTED_DEBUG=DETAIL the shapes must
agree too (numel otherwise).
- A blocking collective (async_op=False) on at least _BLOCKING_MIN_BYTES runs the blocking MPI
  call once the fingerprints agree: every rank has then entered it with matching buffers, so it
  completes, and Open MPI's blocking algorithms are about twice as fast on large messages as
  its non-blocking ones (all_reduce of 1e7 float32 on 2 ranks: 0.17 s against 0.37 s).
- A smaller one, whose time is latency, and an asynchronous one (async_op=True, DDP's buckets)
  start the non-blocking MPI call at once,
  next to the fingerprints (one round trip, not two); its Work completes when both did, and the
  fingerprints are checked before anything the operation reported.  MPI bounds every receive by
  the posted buffer, so a mismatched operation cannot write past a tensor.
Operations start in issue order on every rank, as MPI requires: a blocking one returns before
the caller can issue the next.

Note [Stall inspector]
~~~~~~~~~~~~~~~~~~~~~~
Waiting is a loop over MPI_Test, so it can give up: when a request (for a blocking collective:
the fingerprint exchange, i.e. not every rank has entered it) is not complete after the
group's stall time (PTL_DISTRIBUTED_STALL_SECONDS, else init_process_group's timeout), the rank
sends a query to every other rank on `side` and, for a few seconds, collects answers.  Every rank
that is waiting inside pytorchlite.distributed answers queries from its wait loop with what it
is waiting in; a rank that does not answer is outside any distributed call (computing, stuck or
exited).  The report is printed on stderr and raised as a RuntimeError; the group is then broken
and the process aborts the MPI job at exit (as PyTorch's watchdog tears the process down after a
timeout), so a stall never becomes a hang.  A wait polls without yielding for a millisecond
(a yield on a busy machine can cost a whole time slice) unless the group has more ranks than
the machine has cores; then it yields from the start, as the other ranks need the core.  On
the DDP benchmark (2 ranks, 2 cores shared with other work, load 6-9) yielding at once gave
4-8k samples/s, after 0.1 ms 9-23k, after 1 ms 14-23k; at load 4, after 10 ms 22-32k where
1 ms gave 50-67k.

Note [DDP bucket channel]
~~~~~~~~~~~~~~~~~~~~~~~~~
DDP's gradient buckets are all-reduced on a BucketChannel: a duplicate of the group's
communicator that carries nothing else than one DDP module's bucket reductions (and its
used-parameter counts), so no user collective can interleave with them.  DDP's constructor
all-gathers every rank's bucket layout (numel and dtype of each bucket, and
find_unused_parameters) through the fingerprinted collectives and raises on every rank when
they differ; after that, every backward reduces the same buckets in the same order on every
rank, so the per-collective fingerprint exchange (an Iallgather, its encoding and its check,
per bucket) would check nothing new and is skipped.  With PTL_DISTRIBUTED_DEBUG=DETAIL the
buckets go through the fingerprinted all_reduce on the group's communicator instead, as
PyTorch's TORCH_DISTRIBUTED_DEBUG=DETAIL wraps every collective in ProcessGroupWrapper: a rank
that runs another collective where the others reduce a bucket then fails at once, naming both,
where the default mode reports a stall.  What the fingerprints do not catch either (a
rank that skips a backward) stalls, and the stall inspector reports it: the channel's waits go
through the group's wait loop.  When all the ranks run on one machine the buckets live in
MPI shared-memory windows, the ranks sum them themselves and the channel carries nothing for
them (Note [DDP shared-memory buckets] in _shared_buckets.py).  Otherwise the buckets are summed by
MPI_Iallreduce, driven by the tests of later waits while backward goes on; the last one is waited for at once, and when it is large
(at least _BLOCKING_MIN_BYTES) the ranks first meet in an Ibarrier and then run the blocking
MPI_Allreduce, as blocking collectives do (Note [Collective fingerprints]).  Below that size
the handshake did not pay on this 2-core machine under load: on the benchmark MLP (one bucket
of 17k float32, 2 ranks) Ibarrier + MPI_Allreduce gave 16-50k samples/s where MPI_Iallreduce
gave 30-71k (3 runs each, load 8-9), although in a tight loop with nothing between the
reductions the blocking call is faster (27 us against 160 us)."""
import array
import os
import sys
import time

from ..futures import Future

_QUERY_TAG = 7701
_ANSWER_TAG = 7702
_ANSWER_SECONDS = 3.0
_MAX_DIMS = 6
_BLOCKING_MIN_BYTES = 1 << 20
_SPIN_SECONDS = 1e-3
_FP_LEN = 6 + _MAX_DIMS      # seq, op, dtype, numel, root, ndim, dims

# ORDER OPS: index = the op code in a fingerprint.
OP_NAMES = ("BARRIER", "ALLREDUCE", "BROADCAST", "REDUCE", "ALLGATHER", "ALLGATHER_BASE",
            "REDUCE_SCATTER", "REDUCE_SCATTER_BASE", "ALLTOALL", "ALLTOALL_BASE", "GATHER",
            "SCATTER")
OP = {name: i for i, name in enumerate(OP_NAMES)}


def debug_level():
    """PTL_DISTRIBUTED_DEBUG (TORCH_DISTRIBUTED_DEBUG's values): OFF, INFO or DETAIL."""
    level = os.environ.get("PTL_DISTRIBUTED_DEBUG", "OFF").upper()
    if level not in ("OFF", "INFO", "DETAIL"):
        raise ValueError("PTL_DISTRIBUTED_DEBUG should be OFF, INFO or DETAIL, got "
                         f"'{level}'")
    return level


class DistError(RuntimeError):
    """torch.distributed.DistError: the base of the errors below."""

    __module__ = "pytorchlite.distributed"


class DistBackendError(DistError):
    """A collective failed (mismatch, stall or an MPI error); the group cannot be used any
    more (torch.distributed.DistBackendError)."""

    __module__ = "pytorchlite.distributed"


class _Fingerprint:
    """What a rank says about the collective it enters (Note [Collective fingerprints])."""

    def __init__(self, seq, op, dtype_code, numel, root, shape):
        self.seq, self.op, self.dtype_code = seq, op, dtype_code
        self.numel, self.root, self.shape = numel, root, shape

    def encode(self):
        dims = list(self.shape[:_MAX_DIMS]) if self.shape is not None else []
        ndim = len(self.shape) if self.shape is not None else -1
        return [self.seq, self.op, self.dtype_code, self.numel, self.root, ndim] + \
            dims + [-1] * (_MAX_DIMS - len(dims))

    @classmethod
    def decode(cls, row):
        seq, op, dt, numel, root, ndim = row[:6]
        shape = None if ndim < 0 else tuple(row[6:6 + min(ndim, _MAX_DIMS)])
        return cls(seq, op, dt, numel, root, shape)

    def describe(self, dtype_names):
        shape = "?" if self.shape is None else list(self.shape)
        dtype = dtype_names[self.dtype_code] if self.dtype_code >= 0 else "?"
        return (f"CollectiveFingerPrint(SequenceNumber={self.seq}, "
                f"OpType={OP_NAMES[self.op]}, TensorShape={shape}, TensorDtypes={dtype})")


class Work:
    """The handle of one request (c10d::Work): wait() blocks until it completed (or raises
    after the stall time), is_completed() polls.  `finish` runs once after completion (copies
    back from a staging tensor, divides for AVG)."""

    def __init__(self, group, desc, start, finish=None, fingerprint=None, keep=(),
                 blocking=None):
        MPI = group.mpi
        self._group, self.desc = group, desc
        self._finish = finish
        self._keep = keep                      # tensors MPI reads or writes until completion
        self.status = None                     # the MPI.Status of a completed recv
        self._done = False
        self._exc = None
        self._mpi_exc = None                   # an MPI error, raised after the fingerprints
        self._fp_req = self._fp_recv = None
        self.outputs = []                      # what result() and the future give
        if fingerprint is not None:
            self._fp_recv = array.array("q", [0] * (_FP_LEN * group.size))
            self._fp_req = group.side.Iallgather(array.array("q", fingerprint.encode()),
                                                 self._fp_recv)
        self._blocking = blocking              # run once the fingerprints agree
        self._req = None
        if start is not None:
            try:
                self._req = start()
            except MPI.Exception as e:
                self._mpi_exc = e

    def _test(self):
        """Polls the request and the fingerprints; a mismatch (DistError) is raised before
        anything the MPI operation reported."""
        MPI = self._group.mpi
        if self._done:
            return True
        if self._req is not None:
            self._test_request()
        if self._fp_req is not None:
            if not self._fp_req.Test():
                return False
            self._fp_req = None
            self._group.check_fingerprints(self._fp_recv)
        if self._blocking is not None:
            run, self._blocking = self._blocking, None
            try:
                run()
            except MPI.Exception as e:
                self._mpi_exc = e
        if self._mpi_exc is not None:
            raise DistBackendError(f"{self.desc} failed: {self._mpi_exc}") from self._mpi_exc
        if self._req is not None:
            return False
        self._done = True
        self._keep = ()
        if self._finish is not None:
            self._finish()
        return True

    def _test_request(self):
        """Whether the MPI request completed (False also when it failed: see _mpi_exc)."""
        MPI = self._group.mpi
        status = MPI.Status()
        try:
            if not self._req.Test(status):
                return False
        except MPI.Exception as e:
            self._mpi_exc = e
            self._req = None
            return False
        self.status = status
        self._req = None
        return True

    # ---- the c10d::Work API ----
    def is_completed(self):
        if self._exc is not None:
            raise self._exc
        try:
            return self._test()
        except DistError as e:
            self._exc = self._group.broken = e
            raise

    def is_success(self):
        return self._done and self._exc is None

    def wait(self, timeout=None):
        if self._done:
            return True
        self._group.wait_for(self, timeout)
        return True

    def exception(self):
        return self._exc

    def result(self):
        """The tensors the operation wrote (the collective's outputs)."""
        return self.outputs

    def get_future(self):
        """A torch.futures.Future completed with result() when this Work completes."""
        return _WorkFuture(self)


class _WorkFuture(Future):
    """The future of a Work: testing or waiting on it drives the Work's MPI requests."""

    def __init__(self, work):
        super().__init__()
        self._work = work

    def _settle(self, test):
        if self._done:
            return True
        try:
            if not test():
                return False
        except Exception as e:   # the Work's error becomes the future's
            if not self._done:
                self._complete(None, e)
            return True
        if not self._done:
            self._complete(self._work.outputs, None)
        return True

    def _poll(self):
        return self._settle(self._work.is_completed)

    def _drive(self):
        self._settle(self._work.wait)


class ProcessGroupMPI:
    """One group: `comm` carries the data, `side` the fingerprints and the stall queries."""

    def __init__(self, comm, ranks, timeout_s, dtype_names, dtype_index):
        from mpi4py import MPI
        self.mpi = MPI                         # imported here: importing it starts MPI
        self.comm = comm
        self.side = comm.Dup()
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self.ranks = ranks                     # global rank of each group rank
        self.timeout_s = timeout_s
        self.dtype_names = dtype_names         # ORDER DTYPE: PyTorch's legacy names
        self.dtype_index = dtype_index         # tensor -> its index in dtype_names
        self.seq = 0
        self.current = None                    # what this rank waits in (for the inspector)
        self.broken = None                     # the error that broke the group
        self.channels = []                     # the BucketChannels on comm, freed with it
        self.nccl = None                       # the NcclCommunicator of an nccl group
        self.detail = debug_level() == "DETAIL"
        # how long a wait polls before it yields its core: at once when the group has more
        # ranks than the machine has cores (the others need them), else after a millisecond
        # (a yield on a busy machine can cost a whole time slice)
        self.spin_s = 0.0 if self.size > (os.cpu_count() or 1) else _SPIN_SECONDS
        stall = os.environ.get("PTL_DISTRIBUTED_STALL_SECONDS")
        self.stall_s = float(stall) if stall else timeout_s

    def _check_usable(self):
        if self.broken is not None:
            raise DistBackendError(f"the process group is not usable after an earlier error: "
                            f"{self.broken}")

    # ---- issuing ----
    def collective(self, op, desc, tensor, mpi_name, args, finish=None, numel=None, root=-1,
                   keep=(), blocking=True):
        """Issues one collective: comm.<mpi_name>(*args()) once the fingerprints agree (blocking
        and large), or comm.I<mpi_name> at once.  Its fingerprint describes `tensor` (numel=-1:
        sizes may differ across ranks).  Returns its Work."""
        self._check_usable()
        self.seq += 1
        shape = tuple(tensor.shape) if tensor is not None else None
        dtype_code = self.dtype_index(tensor) if tensor is not None else -1
        if numel is None:
            numel = tensor.numel() if tensor is not None else 0
        # one rank has no one to disagree with: no fingerprint exchange
        fp = _Fingerprint(self.seq, OP[op], dtype_code, numel, root, shape) \
            if self.size > 1 else None
        if blocking and tensor is not None and \
                abs(numel) * tensor.element_size() >= _BLOCKING_MIN_BYTES:
            run = getattr(self.comm, mpi_name)
            return Work(self, f"#{self.seq} {desc}", None, finish, fp, keep,
                        blocking=lambda: run(*args()))
        start = getattr(self.comm, "I" + mpi_name.lower())
        return Work(self, f"#{self.seq} {desc}", lambda: start(*args()), finish, fp, keep)

    def point_to_point(self, desc, start, finish=None, keep=()):
        """A send or a recv: no fingerprint (they are not collective)."""
        self._check_usable()
        return Work(self, desc, start, finish, None, keep)

    def check_fingerprints(self, rows):
        """Raises on every rank when the ranks entered different collectives."""
        fps = [_Fingerprint.decode(rows[r * _FP_LEN:(r + 1) * _FP_LEN])
               for r in range(self.size)]
        for r in range(1, self.size):
            if not self._agree(fps[0], fps[r]):
                raise DistBackendError(
                    f"Detected mismatch between collectives on ranks. Rank {self.ranks[0]} "
                    f"is running collective: {fps[0].describe(self.dtype_names)}, but Rank "
                    f"{self.ranks[r]} is running collective: "
                    f"{fps[r].describe(self.dtype_names)}.")

    def _agree(self, a, b):
        """Whether two ranks' fingerprints describe the same collective: shapes must agree
        with DETAIL, numels otherwise (unless the op lets them differ: numel -1)."""
        if (a.seq, a.op, a.dtype_code, a.root) != (b.seq, b.op, b.dtype_code, b.root):
            return False
        if a.numel < 0 or b.numel < 0:
            return True
        return a.shape == b.shape if self.detail else a.numel == b.numel

    # ---- waiting (Note [Stall inspector]) ----
    def wait_for(self, work, timeout=None):
        if work._exc is not None:
            raise work._exc
        limit = self.stall_s if timeout is None else _seconds(timeout)
        start = time.monotonic()
        next_probe = start + 0.05
        self.current = work.desc
        try:
            spin_until = start + self.spin_s
            while not work._test():
                now = time.monotonic()
                if now >= spin_until:
                    os.sched_yield()
                if now >= next_probe:
                    self.answer_queries()
                    next_probe = now + 0.05
                if now - start > limit:
                    raise self._stalled(work, now - start)
        except DistError as e:
            work._exc = e
            self.broken = e
            raise
        finally:
            self.current = None

    def answer_queries(self):
        MPI = self.mpi
        status = MPI.Status()
        while self.side.iprobe(source=MPI.ANY_SOURCE, tag=_QUERY_TAG, status=status):
            asker = status.Get_source()
            self.side.recv(source=asker, tag=_QUERY_TAG)
            self.side.isend(self.current or "nothing", dest=asker, tag=_ANSWER_TAG)

    def _stalled(self, work, waited):
        MPI = self.mpi
        others = [r for r in range(self.size) if r != self.rank]
        for r in others:
            self.side.isend(work.desc, dest=r, tag=_QUERY_TAG)
        answers = {}
        deadline = time.monotonic() + _ANSWER_SECONDS
        status = MPI.Status()
        while len(answers) < len(others) and time.monotonic() < deadline:
            self.answer_queries()
            if self.side.iprobe(source=MPI.ANY_SOURCE, tag=_ANSWER_TAG, status=status):
                src = status.Get_source()
                answers[src] = self.side.recv(source=src, tag=_ANSWER_TAG)
            else:
                time.sleep(0.01)
        lines = [f"[rank {self.ranks[self.rank]}] timed out after {waited:.1f} s waiting in "
                 f"{work.desc}."]
        behind = []
        for r in others:
            where = answers.get(r)
            if where is None:
                behind.append(r)
                lines.append(f"  rank {self.ranks[r]} has not entered it: it is not inside any "
                             "pytorchlite.distributed call (still computing, stuck or exited)")
            elif where != work.desc:
                behind.append(r)
                lines.append(f"  rank {self.ranks[r]} has not entered it: it waits in {where}")
            else:
                lines.append(f"  rank {self.ranks[r]} waits in it too")
        lines.insert(1, "  ranks that have not entered it: "
                     f"{[self.ranks[r] for r in behind] if behind else 'none'}")
        msg = "\n".join(lines)
        print(msg, file=sys.stderr, flush=True)
        return DistBackendError(msg)


class BucketChannel:
    """The all-reduces of one DDP module's gradient buckets (Note [DDP bucket channel]), on a
    private duplicate of its group's communicator."""

    def __init__(self, group):
        self.group = group
        self.comm = group.comm.Dup()
        self.shared = []                       # its SharedBuckets, freed with it
        group.channels.append(self)

    def all_reduce(self, message, desc, blocking):
        """Starts the in-place SUM of message ([buffer, count, MPI datatype]); returns its
        request.  A blocking one on at least _BLOCKING_MIN_BYTES waits for every rank to
        enter (an Ibarrier) and then runs the blocking MPI_Allreduce (Note [DDP bucket
        channel])."""
        self.group._check_usable()
        MPI = self.group.mpi
        run = None
        if blocking and message[1] * message[2].Get_size() >= _BLOCKING_MIN_BYTES:
            req = self.comm.Ibarrier()
            run = lambda: self.comm.Allreduce(MPI.IN_PLACE, message, MPI.SUM)  # noqa: E731
        else:
            req = self.comm.Iallreduce(MPI.IN_PLACE, message, MPI.SUM)
        return _ChannelRequest(self.group, desc, req, run)

    def free(self):
        for shared in self.shared:
            shared.free()
        self.comm.Free()


class _ChannelRequest:
    """One request of a BucketChannel: wait() drives it through the group's stall-bounded
    wait loop (Note [Stall inspector]); `run`, the blocking call of a large reduction, runs
    once the request (the Ibarrier) completed."""

    __slots__ = ("_group", "desc", "_req", "_run", "_exc")

    def __init__(self, group, desc, req, run):
        self._group, self.desc, self._req, self._run = group, desc, req, run
        self._exc = None

    def _test(self):
        MPI = self._group.mpi
        try:
            if self._req is not None:
                if not self._req.Test():
                    return False
                self._req = None
            if self._run is not None:
                run, self._run = self._run, None
                run()
        except MPI.Exception as e:
            raise DistBackendError(f"{self.desc} failed: {e}") from e
        return True

    def wait(self):
        if self._exc is not None:
            raise self._exc
        try:
            done = self._test()                # a small reduction is often done by now
        except DistError as e:
            self._exc = self._group.broken = e
            raise
        if not done:
            self._group.wait_for(self)


def _seconds(timeout):
    return timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout)
