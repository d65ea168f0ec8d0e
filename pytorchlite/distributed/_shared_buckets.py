"""DDP's gradient buckets in MPI shared-memory windows, summed by the ranks themselves, when all
the ranks run on one machine.

Note [DDP shared-memory buckets]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
When every rank of a DDP module's group is on one node (MPI_Comm_split_type(SHARED) keeps them
all), the module's CPU buckets that its channel sums (Note [DDP bucket channel] in
_mpi_group.py) live in MPI-3 shared-memory windows (MPI_Win_allocate_shared on that node
communicator), one window per bucket dtype: each rank's segment holds its copy (its slot) of
every bucket of that dtype, MPI_Win_shared_query gives the addresses of the other ranks'
segments, and the bucket's flat tensor on rank r *is* rank r's slot, so the reducer's copy of
the gradients into the bucket (Note [DDP reducer]) is also their publication.  Every rank holds
a passive-target epoch on every window from its creation to its release (MPI_Win_lock_all with
MPI_MODE_NOCHECK), and orders its loads and stores by MPI's unified-model idiom: MPI_Win_sync,
a barrier, MPI_Win_sync.  A reduction of bucket b on W ranks is then
  1. Win_sync and an MPI_Ibarrier on the channel's communicator, started at the bucket's
     launch; once it completes (and a Win_sync), every rank's slot holds its gradients;
  2. rank r sums the r-th of W equal chunks of the bucket over the W slots, in rank order
     (slot 0 + slot 1 + ...), and writes that sum into the chunk of every slot;
  3. Win_sync and a second Ibarrier; once it completes (and a Win_sync) every slot holds the
     whole sum, bit-identical on every rank (each chunk was summed once).
Both barriers are waited for in the group's stall-bounded wait loop (Note [Stall inspector])
under the bucket's name.  A rank writes its slot of bucket b again only in the next backward,
after step 3 of this one, when nobody reads it any more.  A world of one rank has nothing to
sum and reduces nothing (Note [DDP reducer]): its buckets stay private.
Why: on the digits MLP (one bucket of 17k float32, 2 ranks, 2 cores, load 5-7) the step's
reduction took 24-38 us (10th percentile) by MPI_Iallreduce and 12-16 us by the steps above
(two Ibarriers of about 4.5 us each and the chunk's sum), and the whole step 161-198 against
142-147 us (benchmarks/distributed_jobs/ddp_step_pieces.py).
The buckets stay in each rank's own memory, summed by MPI, when the ranks span machines, with
PTL_DISTRIBUTED_DEBUG=DETAIL or 16-bit buckets (both take the fingerprinted all_reduce), with
gradient_as_bucket_view=True (.grad would be a view of the window, which
destroy_process_group frees), with PTL_DDP_SHARED_MEMORY=0, or when MPI_Win_allocate_shared
fails on any rank (the ranks agree by an allreduce of a flag).  The windows are freed with the
channel, in destroy_process_group (MPI_Win_free is collective: a module's garbage collection,
at a different time on every rank, cannot free them); a DDP module must not run after its
group is destroyed (its forward raises)."""
import numpy as np

from ._mpi_group import DistBackendError, _ChannelRequest

_ALIGN = 64
_stranded = []      # windows some rank failed to allocate: MPI_Win_free would wait for it


def _aligned(n):
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _allocate(MPI, node, nbytes):
    """This rank's segment of a new shared window on `node`, or None where MPI failed."""
    info = MPI.Info.Create()
    info.Set("alloc_shared_noncontig", "true")
    try:
        return MPI.Win.Allocate_shared(nbytes, 1, info=info, comm=node)
    except MPI.Exception:
        return None
    finally:
        info.Free()


class SharedBuckets:
    """The slots of one DDP module's buckets (Note [DDP shared-memory buckets]): arrays[b][r]
    is rank r's copy of bucket b (a NumPy array over rank r's segment of a window)."""

    def __init__(self, channel, node, windows, arrays, bucket_window):
        self.channel = channel
        self.node = node                     # the node communicator the windows are on
        self.windows = windows
        self.arrays = arrays
        self.freed = False
        self._win = [windows[w] for w in bucket_window]
        size, rank = channel.group.size, channel.group.rank
        self._chunks = []
        for slots in arrays:
            n = slots[0].size
            lo, hi = rank * n // size, (rank + 1) * n // size
            self._chunks.append([s[lo:hi] for s in slots])

    @classmethod
    def create(cls, channel, dtypes, numels):
        """The shared slots of buckets with these NumPy dtypes and element counts, or None
        where they cannot be shared (then on every rank).  Collective over the channel."""
        import os
        group = channel.group
        MPI = group.mpi
        if not numels or group.size == 1:    # the same on every rank (the layout is checked)
            return None
        node = channel.comm.Split_type(MPI.COMM_TYPE_SHARED, key=group.rank)
        # every rank is on this node, and every rank wants it (the switch set on some only
        # would leave the others waiting in a collective)
        want = os.environ.get("PTL_DDP_SHARED_MEMORY", "1") != "0"
        if not node.allreduce(want and node.Get_size() == group.size, op=MPI.LAND):
            node.Free()
            return None
        kinds = sorted({np.dtype(d).str for d in dtypes})
        offsets, bucket_window, sizes = [], [], [0] * len(kinds)
        for dtype, n in zip(dtypes, numels):
            w = kinds.index(np.dtype(dtype).str)
            bucket_window.append(w)
            offsets.append(sizes[w])
            sizes[w] += _aligned(n * np.dtype(dtype).itemsize)
        windows = []
        for nbytes in sizes:
            win = _allocate(MPI, node, max(nbytes, _ALIGN))
            if not node.allreduce(win is not None, op=MPI.LAND):
                if win is not None:
                    _stranded.append(win)
                for w in windows:
                    w.Unlock_all()
                    w.Free()
                node.Free()
                return None
            win.Lock_all(MPI.MODE_NOCHECK)
            windows.append(win)
        segments = [[np.frombuffer(win.Shared_query(r)[0], dtype=np.uint8)
                     for r in range(group.size)] for win in windows]
        arrays = [[np.frombuffer(segments[w][r], dtype=dtype, count=n, offset=off)
                   for r in range(group.size)]
                  for dtype, n, off, w in zip(dtypes, numels, offsets, bucket_window)]
        shared = cls(channel, node, windows, arrays, bucket_window)
        channel.shared.append(shared)
        return shared

    def all_reduce(self, b, desc):
        """Starts the in-place sum of bucket b over the ranks; returns its request."""
        self.channel.group._check_usable()
        return _SharedReduction(self, b, desc)

    def sum_chunk(self, b):
        """Step 2: this rank's chunk of bucket b, summed over the slots into every slot: in
        place in slot 0 (only this rank touches this chunk of any slot until the second
        barrier), then copied into the others."""
        slots = self._chunks[b]
        acc = slots[0]
        for s in slots[1:]:
            np.add(acc, s, out=acc)
        for s in slots[1:]:
            np.copyto(s, acc)

    def free(self):
        """Ends the epochs and frees the windows and the node communicator (collective)."""
        if self.freed:
            return
        self.freed = True
        self.arrays = self._chunks = None
        for win in self.windows:
            win.Unlock_all()
            win.Free()
        self.node.Free()


class _SharedReduction(_ChannelRequest):
    """One bucket's reduction (Note [DDP shared-memory buckets]): the inherited wait() drives
    its two barriers through the group's wait loop, with the sum between them."""

    __slots__ = ("_shared", "_b", "_win", "_summed")

    def __init__(self, shared, b, desc):
        super().__init__(shared.channel.group, desc, None, None)
        self._shared, self._b = shared, b
        self._summed = False
        self._win = shared._win[b]
        self._win.Sync()
        self._req = shared.channel.comm.Ibarrier()

    def _test(self):
        MPI = self._group.mpi
        try:
            while self._req is not None:
                if not self._req.Test():
                    return False
                self._req = None
                self._win.Sync()
                if not self._summed:
                    self._shared.sum_chunk(self._b)
                    self._summed = True
                    self._win.Sync()
                    self._req = self._shared.channel.comm.Ibarrier()
        except MPI.Exception as e:
            raise DistBackendError(f"{self.desc} failed: {e}") from e
        return True
