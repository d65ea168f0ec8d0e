"""DDP's gradient buckets in MPI shared-memory windows, summed by the ranks themselves, when all
the ranks run on one machine.

Note [DDP shared-memory buckets]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
When every rank of a DDP module's group is on one node (MPI_Comm_split_type(SHARED) keeps them
all), the module's CPU float32/float64 (and complex) buckets that its channel would sum (Note
[DDP bucket channel] in _mpi_group.py) live in MPI-3 shared-memory windows
(MPI_Win_allocate_shared on that node communicator), one window per bucket dtype: each rank's
segment holds its copy (its slot) of every bucket of that dtype, MPI_Win_shared_query gives the
addresses of the other ranks' segments, and the bucket's flat tensor on rank r *is* rank r's
slot, so the reducer's copy of the gradients into the bucket (Note [DDP reducer]) is also their
publication.  A further window holds, per rank and bucket, two int64 counters on cache lines of
their own: `arrived` (the reductions whose gradients the rank's slot holds) and `consumed` (the
reductions whose slots the rank has finished reading).  The reduction of bucket b, the g-th on
every rank, is C (src/python/reducer.c) with no MPI call:
  1. the hook that completes the bucket waits until every other rank's `consumed` is g - 1
     (they read the slot in the previous step's final callback: true at once, unless a rank
     was descheduled there), fills the slot, and stores `arrived` = g (a release store);
  2. the final callback waits until every rank's `arrived` is g (acquire loads), then sums
     parameter by parameter the W slots, in rank order (slot 0 + slot 1 + ...), straight into
     .grad (bit-identical on every rank: the same additions in the same order), and stores
     `consumed` = g.
So a reduction costs one wait for the slowest rank and one pass over the slots, where an
MPI_Iallreduce copies into and out of MPI, and the two-barrier scheme (MPI_Ibarrier, each rank
summing a chunk into every slot, a second Ibarrier, then a copy into .grad) took two barriers
and three passes.  Ordering is by the counters' C11 acquire/release atomics on the window's
memory (plain shared memory on one node), not by MPI_Win_sync.  Step 2's wait goes through the
group's stall-bounded wait loop (Note [Stall inspector]) under the bucket's name; step 1's,
inside backward, yields its core and raises after the group's stall time.  A world of one rank
has nothing to sum and reduces nothing (Note [DDP reducer]): its buckets stay private.  With a
communication hook the slots are the buckets' flat tensors and the hook reduces them.
Why: on the digits MLP (one bucket of 17k float32, 2 ranks, 2 cores, load 10-12) the final
callback took 18-24 us (10th percentile) with the two barriers and 6-9 us this way, and the
step 217-227 against 194-214 us (benchmarks/distributed_jobs/ddp_step_pieces.py;
docs/performance.md, issue 19); by MPI_Iallreduce it took 24-38 us (load 5-7).
The buckets stay in each rank's own memory, summed by MPI, when the ranks span machines, with
PTL_DISTRIBUTED_DEBUG=DETAIL or 16-bit buckets (both take the fingerprinted all_reduce), with
gradient_as_bucket_view=True (.grad would be a view of the window, which
destroy_process_group frees), with PTL_DDP_SHARED_MEMORY=0, or when MPI_Win_allocate_shared
fails on any rank (the ranks agree by an allreduce of a flag).  The windows are freed with the
channel, in destroy_process_group (MPI_Win_free is collective: a module's garbage collection,
at a different time on every rank, cannot free them); a DDP module must not run after its
group is destroyed (its forward raises)."""
import numpy as np

from ._mpi_group import _ChannelRequest

_ALIGN = 64
FLAG_WORDS = 16     # int64 flag words per bucket and rank (ORDER FLAGS: reducer.c)
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
    is rank r's copy of bucket b (a NumPy array over rank r's segment of a window), flags[b][r]
    rank r's FLAG_WORDS int64 flag words of it."""

    def __init__(self, channel, node, windows, arrays, flags):
        self.channel = channel
        self.node = node                     # the node communicator the windows are on
        self.windows = windows
        self.arrays = arrays
        self.flags = flags
        self.freed = False

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
        sizes.append(len(numels) * FLAG_WORDS * 8)          # the flag words' window
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
        flags = [[np.frombuffer(segments[-1][r], dtype=np.int64, count=FLAG_WORDS,
                                offset=b * FLAG_WORDS * 8) for r in range(group.size)]
                 for b in range(len(numels))]
        for words in flags:        # zero before any rank reads them (MPI does not promise)
            words[group.rank][:] = 0
        node.Barrier()
        shared = cls(channel, node, windows, arrays, flags)
        channel.shared.append(shared)
        return shared

    def reduction(self, reducer, b, desc):
        """The request that waits for every rank's gradients of DDP bucket b (reducer's
        index) in its slots; the reducer then sums them (Note [DDP shared-memory
        buckets])."""
        self.channel.group._check_usable()
        return _SharedReduction(self.channel.group, desc, reducer, b)

    def free(self):
        """Ends the epochs and frees the windows and the node communicator (collective)."""
        if self.freed:
            return
        self.freed = True
        self.arrays = self.flags = None
        for win in self.windows:
            win.Unlock_all()
            win.Free()
        self.node.Free()


class _SharedReduction(_ChannelRequest):
    """Step 2's wait (Note [DDP shared-memory buckets]): the inherited wait() polls, through
    the group's wait loop, whether every rank's slot holds this reduction's gradients."""

    __slots__ = ("_reducer", "_b")

    def __init__(self, group, desc, reducer, b):
        super().__init__(group, desc, None, None)
        self._reducer, self._b = reducer, b

    def _test(self):
        return self._reducer.arrived(self._b)
