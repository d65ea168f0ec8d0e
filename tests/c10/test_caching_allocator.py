"""The caching allocator (src/c10/caching_allocator.c) on the fake device, against a Python
model of Note [Caching allocator]: the model decides which block serves each request, keeps
the segments and blocks, and derives every statistic from that state after each step, so the
allocator's incremental bookkeeping is checked against numbers computed another way."""
import random
import re
import threading

import pytest

from pytorchlite import _C
import pytorchlite as ptl

KB, MB = 1 << 10, 1 << 20
POOL_STATS = ("allocation", "segment", "active", "inactive_split", "allocated_bytes",
              "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes")
SINGLE_STATS = ("oversize_allocations", "oversize_segments")
COUNTERS = ("num_alloc_retries", "num_ooms", "num_sync_all_streams", "num_device_alloc",
            "num_device_free")
NO_LIMIT = float("inf")


class Block:
    def __init__(self, addr, size, stream, large, seg, pool=(0, 0)):
        self.addr, self.size, self.stream, self.large, self.seg = addr, size, stream, large, seg
        self.pool = pool        # (0, 0): the ordinary pools; else a private pool's id
        self.allocated, self.requested, self.pending, self.uses = False, 0, 0, set()

    @property
    def free(self):
        return not self.allocated and self.pending == 0


class Model:
    """The allocator's rules in Python; addresses of new segments come from the allocator."""

    def __init__(self, capacity, max_split=NO_LIMIT, divisions=0):
        self.capacity, self.max_split, self.divisions = capacity, max_split, divisions
        self.allowed = NO_LIMIT
        self.segments = {}      # base -> sorted list of blocks
        self.live = {}          # addr -> allocated block
        self.events = []        # (block, stream, seq)
        self.recorded, self.completed = {}, {}
        self.counters = dict.fromkeys(COUNTERS, 0)
        self.stats = {}         # "name.pool" -> [current, peak, allocated, freed]
        self.routes = []        # captures underway: (stream, pool id), latest last
        self.users = {}         # private pool id -> users
        self.deferred = []      # blocks freed with stream uses during a capture
        self.sync()

    # ---- sizes ----
    def round(self, n):
        if n < 512:
            return 512
        d = self.divisions
        if d > 1 and n > 512 * d:
            if n & (n - 1) == 0:
                return n
            floor2 = 1 << (n.bit_length() - 1)
            step = floor2 // d
            return -(-n // step) * step
        return -(-n // 512) * 512

    @staticmethod
    def segment_size(size):
        if size <= MB:
            return 2 * MB
        if size < 10 * MB:
            return 20 * MB
        return -(-size // (2 * MB)) * (2 * MB)

    # ---- statistics from the state ----
    def current(self):
        cur = {}

        def add(name, large, value):
            for pool in ("all", "large_pool" if large else "small_pool"):
                cur[f"{name}.{pool}"] = cur.get(f"{name}.{pool}", 0) + value

        for name in POOL_STATS:
            for pool in ("all", "small_pool", "large_pool"):
                cur[f"{name}.{pool}"] = 0
        cur["oversize_allocations"] = cur["oversize_segments"] = 0
        for blocks in self.segments.values():
            large, total = blocks[0].large, sum(b.size for b in blocks)
            add("segment", large, 1)
            add("reserved_bytes", large, total)
            cur["oversize_segments"] += total >= self.max_split
            for b in blocks:
                active = b.allocated or b.pending > 0
                add("allocation", large, b.allocated)
                add("allocated_bytes", large, b.size * b.allocated)
                add("active", large, active)
                add("active_bytes", large, b.size * active)
                add("requested_bytes", large, b.requested * active)
                split_free = b.free and len(blocks) > 1
                add("inactive_split", large, split_free)
                add("inactive_split_bytes", large, b.size * split_free)
                cur["oversize_allocations"] += b.allocated and b.size >= self.max_split
        return cur

    def sync(self):
        """Folds the change since the last sync into current/peak/allocated/freed."""
        for key, value in self.current().items():
            s = self.stats.setdefault(key, [0, 0, 0, 0])
            delta = value - s[0]
            s[0] = value
            s[1] = max(s[1], value)
            s[2 if delta > 0 else 3] += abs(delta)

    def expected_stats(self):
        out = {}
        for key, (cur, peak, alloc, freed) in self.stats.items():
            name, _, pool = key.partition(".")
            target = out.setdefault(name, {})
            target = target.setdefault(pool, {}) if pool else target
            target.update(current=cur, peak=peak, allocated=alloc, freed=freed)
        out.update(self.counters)
        out["max_split_size"] = -1 if self.max_split == NO_LIMIT else self.max_split
        return out

    # ---- blocks ----
    def neighbours(self, b):
        blocks = self.segments[b.seg]
        i = blocks.index(b)
        return (blocks[i - 1] if i > 0 else None), (blocks[i + 1] if i + 1 < len(blocks) else None)

    def free_block(self, b):
        blocks = self.segments[b.seg]
        b.requested = 0
        prev, nxt = self.neighbours(b)
        if nxt is not None and nxt.free:
            b.size += nxt.size
            blocks.remove(nxt)
        if prev is not None and prev.free:
            prev.size += b.size
            blocks.remove(b)
        self.sync()

    def process_events(self, wait):
        kept = []
        for b, stream, seq in self.events:
            if wait:
                self.completed[stream] = max(self.completed.get(stream, 0), seq)
            if self.completed.get(stream, 0) >= seq:
                b.pending -= 1
                if b.pending == 0:
                    self.free_block(b)
            else:
                kept.append((b, stream, seq))
        self.events = kept

    def release_cached(self):
        self.process_events(True)
        self.counters["num_sync_all_streams"] += 1
        for base, blocks in list(self.segments.items()):
            pool = blocks[0].pool
            if len(blocks) == 1 and blocks[0].free and self.users.get(pool, 0) == 0:
                del self.segments[base]
                self.counters["num_device_free"] += 1
                self.sync()
        held = {blocks[0].pool for blocks in self.segments.values()}
        self.users = {p: n for p, n in self.users.items() if n > 0 or p in held}

    def reserved(self):
        return sum(b.size for blocks in self.segments.values() for b in blocks)

    def can_take(self, size):
        return self.reserved() + size <= min(self.capacity, self.allowed)

    def route(self, stream):
        pools = [pool for s, pool in self.routes if s == stream]
        return pools[-1] if pools else (0, 0)

    def best_fit(self, size, large, stream):
        pool = self.route(stream)
        fits = [b for blocks in self.segments.values() for b in blocks
                if b.free and b.large == large and b.stream == stream and b.size >= size
                and b.pool == pool]
        if not fits:
            return None
        b = min(fits, key=lambda b: (b.size, b.addr))
        if size < self.max_split <= b.size or (size >= self.max_split and
                                                b.size - size >= 20 * MB):
            return None
        return b

    def malloc(self, n, stream, got):
        """Applies malloc(n, stream); got is the allocator's address, or None for an OOM."""
        if n == 0:
            assert got == 0
            return
        if not self.routes:
            self.process_events(False)
        size = self.round(n)
        large = size > MB
        seg_size = self.segment_size(size)
        b = self.best_fit(size, large, stream)
        if b is None and not self.can_take(seg_size) and self.routes:
            self.counters["num_ooms"] += 1     # no retry during a capture
            assert got is None
            return
        if b is None and not self.can_take(seg_size):
            self.release_cached()
            self.counters["num_alloc_retries"] += 1
            if not self.can_take(seg_size):
                self.counters["num_ooms"] += 1
                assert got is None
                return
        assert got is not None
        if b is None:
            b = Block(got, seg_size, stream, large, got, self.route(stream))
            self.segments[got] = [b]
            self.counters["num_device_alloc"] += 1
            self.sync()
        assert b.addr == got, "the allocator chose another block than the best fit"
        remaining = b.size - size
        if (remaining >= 512) if not large else (size < self.max_split and remaining > MB):
            blocks = self.segments[b.seg]
            rest = Block(b.addr + size, remaining, stream, large, b.seg, b.pool)
            blocks.insert(blocks.index(b) + 1, rest)
            b.size = size
        b.allocated, b.requested = True, n
        self.live[got] = b
        self.sync()

    def free(self, addr):
        b = self.live.pop(addr)
        b.allocated = False
        if b.uses and self.routes:
            b.pending = 1           # no event during a capture: pending until it ends
            self.deferred.append(b)
            self.sync()
        else:
            self.defer_free(b)

    def defer_free(self, b):
        if b.uses:
            for s in sorted(b.uses):
                self.recorded[s] = self.recorded.get(s, 0) + 1
                self.events.append((b, s, self.recorded[s]))
            b.pending, b.uses = len(b.uses), set()
            self.sync()
        else:
            self.free_block(b)

    def begin_allocate_to_pool(self, pool, stream):
        self.users[pool] = self.users.get(pool, 0) + 1
        self.routes.append((stream, pool))

    def end_allocate_to_pool(self, pool):
        i = max(i for i, (_, p) in enumerate(self.routes) if p == pool)
        del self.routes[i]
        if not self.routes:
            for b in self.deferred:
                b.pending = 0
                self.defer_free(b)
            self.deferred = []

    def release_pool(self, pool):
        self.users[pool] -= 1

    def record_stream(self, addr, stream):
        b = self.live[addr]
        if stream != b.stream:
            b.uses.add(stream)

    def complete(self, stream):
        self.completed[stream] = self.recorded.get(stream, 0)

    def empty_cache(self):
        if not self.routes:
            self.release_cached()

    def snapshot(self):
        """Segments as comparable tuples (offsets instead of addresses), sorted."""
        out = []
        for base, blocks in self.segments.items():
            out.append((base, blocks[0].pool, tuple((b.addr - base, b.size,
                                     b.requested * (b.allocated or b.pending > 0),
                                     "active_allocated" if b.allocated else
                                     "active_pending_free" if b.pending else "inactive")
                                    for b in blocks)))
        return sorted(out)


def real_snapshot(alloc):
    return sorted((s["address"], s["segment_pool_id"],
                   tuple((b["address"] - s["address"], b["size"],
                                        b["requested_size"], b["state"]) for b in s["blocks"]))
                  for s in alloc.snapshot())


def check(alloc, model):
    assert alloc.memory_stats() == model.expected_stats()
    assert real_snapshot(alloc) == model.snapshot()
    assert alloc.device_used()["bytes"] == model.reserved()


def run_malloc(alloc, model, n, stream=0):
    try:
        got = alloc.malloc(n, stream)
    except ptl.OutOfMemoryError:
        got = None
    model.malloc(n, stream, got)
    return got


# ---- scenarios with hand-computed numbers ----

def test_small_request_rounds_to_512_and_splits_a_2_mib_segment():
    alloc = _C._FakeDeviceAllocator(64 * MB)
    p = alloc.malloc(1000)
    s = alloc.memory_stats()
    assert s["allocated_bytes"]["small_pool"]["current"] == 1024
    assert s["requested_bytes"]["all"]["current"] == 1000
    assert s["reserved_bytes"]["small_pool"]["current"] == 2 * MB
    assert s["inactive_split_bytes"]["all"]["current"] == 2 * MB - 1024
    assert s["inactive_split"]["all"]["current"] == 1
    q = alloc.malloc(1)                    # the rest of the same segment, just after p
    assert q == p + 1024
    alloc.free(p)
    alloc.free(q)                          # merges back into one block
    s = alloc.memory_stats()
    assert s["inactive_split"]["all"]["current"] == 0
    assert s["segment"]["all"]["current"] == 1 and s["num_device_alloc"] == 1
    alloc.empty_cache()
    s = alloc.memory_stats()
    assert s["reserved_bytes"]["all"] == {"current": 0, "peak": 2 * MB, "allocated": 2 * MB,
                                          "freed": 2 * MB}
    assert s["num_device_free"] == 1 and alloc.device_used()["bytes"] == 0


def test_large_pool_segment_sizes_and_the_1_mib_split_rule():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    alloc.malloc(MB + 1)                   # rounds to 1 MiB + 512: large pool, 20 MiB segment
    s = alloc.memory_stats()
    assert s["reserved_bytes"]["large_pool"]["current"] == 20 * MB
    assert s["allocated_bytes"]["large_pool"]["current"] == MB + 512
    alloc.malloc(21 * MB + 5)              # >= 10 MiB: its own segment rounded to 2 MiB
    assert alloc.memory_stats()["reserved_bytes"]["large_pool"]["current"] == 20 * MB + 22 * MB
    # 19.5 MiB of a 20 MiB block leaves 0.5 MiB: not more than 1 MiB, so no split
    alloc2 = _C._FakeDeviceAllocator(1 << 30)
    p = alloc2.malloc(5 * MB)
    alloc2.free(p)
    q = alloc2.malloc(19 * MB + 512 * KB)
    assert q == p
    s = alloc2.memory_stats()
    assert s["allocated_bytes"]["all"]["current"] == 20 * MB
    assert s["requested_bytes"]["all"]["current"] == 19 * MB + 512 * KB


def test_zero_bytes_gives_null_and_counts_nothing():
    alloc = _C._FakeDeviceAllocator(MB)
    assert alloc.malloc(0) == 0
    assert alloc.memory_stats()["allocation"]["all"]["allocated"] == 0
    alloc.free(0)


def test_live_blocks_never_overlap_and_reuse_is_best_fit():
    alloc = _C._FakeDeviceAllocator(256 * MB)
    gen = random.Random(3)
    live = {}
    for _ in range(400):
        if live and gen.random() < 0.45:
            p = gen.choice(sorted(live))
            del live[p]
            alloc.free(p)
        else:
            n = gen.choice([gen.randint(1, 4096), gen.randint(1, 3 * MB)])
            live[alloc.malloc(n)] = n
        spans = sorted((p, p + n) for p, n in live.items())
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_fragmentation_keeps_memory_until_neighbours_are_free():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    ptrs = [alloc.malloc(2 * MB) for _ in range(9)]   # 9 x 2 MiB in one 20 MiB segment
    assert alloc.memory_stats()["segment"]["all"]["current"] == 1
    for p in ptrs[::2]:
        alloc.free(p)
    s = alloc.memory_stats()
    # 4 holes, and the last block merged with the 2 MiB tail
    assert s["inactive_split"]["all"]["current"] == 5
    assert s["inactive_split_bytes"]["all"]["current"] == 4 * 2 * MB + 4 * MB
    big = alloc.malloc(5 * MB)                 # no free block has 5 MiB: a new segment
    assert alloc.memory_stats()["segment"]["all"]["current"] == 2
    assert not ptrs[0] <= big < ptrs[0] + 20 * MB
    alloc.empty_cache()                        # the fragmented segment cannot be released
    assert alloc.memory_stats()["segment"]["all"]["current"] == 2
    for p in ptrs[1::2]:
        alloc.free(p)
    alloc.free(big)
    alloc.empty_cache()
    assert alloc.memory_stats()["reserved_bytes"]["all"]["current"] == 0


def test_blocks_are_reused_only_on_their_stream():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    p = alloc.malloc(4096, 1)
    alloc.free(p)
    q = alloc.malloc(4096, 2)                   # stream 2 cannot take stream 1's block
    assert alloc.memory_stats()["segment"]["all"]["current"] == 2
    assert q != p
    assert alloc.malloc(4096, 1) == p


def test_record_stream_delays_reuse_until_the_stream_is_done():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    p = alloc.malloc(8192)
    alloc.record_stream(p, 5)
    alloc.record_stream(p, 0)                   # its own stream: nothing to wait for
    alloc.free(p)
    s = alloc.memory_stats()
    assert s["allocated_bytes"]["all"]["current"] == 0
    assert s["active_bytes"]["all"]["current"] == 8192     # pending free
    assert [b["state"] for b in alloc.snapshot()[0]["blocks"]][0] == "active_pending_free"
    q = alloc.malloc(8192)                     # stream 5 still runs: p is not reused
    assert q != p
    alloc.complete(5)
    alloc.free(q)
    r = alloc.malloc(8192)                     # events polled: p is free again
    assert r == p
    assert alloc.device_used()["live_events"] == 0


def test_a_stream_event_that_cannot_be_recorded_means_waiting_at_once():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    p = alloc.malloc(4096)
    alloc.record_stream(p, 1)
    alloc.record_stream(p, 100)                # the fake device has no stream 100
    alloc.free(p)                              # stream 1's event is waited for, p is free
    s = alloc.memory_stats()
    assert s["active"]["all"]["current"] == 0 and s["inactive_split"]["all"]["current"] == 0
    assert alloc.device_used()["live_events"] == 0
    assert alloc.malloc(4096) == p


def test_empty_cache_waits_for_pending_streams():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    p = alloc.malloc(MB)
    alloc.record_stream(p, 3)
    alloc.free(p)
    alloc.empty_cache()
    s = alloc.memory_stats()
    assert s["reserved_bytes"]["all"]["current"] == 0 and s["active"]["all"]["current"] == 0
    assert s["num_sync_all_streams"] == 1


def test_oom_frees_the_cache_and_retries():
    alloc = _C._FakeDeviceAllocator(24 * MB)
    p = alloc.malloc(5 * MB)                   # a 20 MiB segment
    alloc.free(p)
    q = alloc.malloc(2 * MB + 1)               # fits the cached block: no device malloc
    alloc.free(q)
    assert alloc.memory_stats()["num_device_alloc"] == 1
    r = alloc.malloc(21 * MB)                  # a 22 MiB segment: 20 + 22 > 24, so retry
    s = alloc.memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert s["num_device_free"] == 1 and s["reserved_bytes"]["all"]["current"] == 22 * MB
    alloc.free(r)


def test_oom_message_has_pytorchs_fields_and_the_largest_free_block():
    alloc = _C._FakeDeviceAllocator(30 * MB)
    keep = alloc.malloc(3 * MB)                # 20 MiB segment, 17 MiB free in it
    with pytest.raises(ptl.OutOfMemoryError) as info:
        alloc.malloc(25 * MB)
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert msg.startswith("CUDA out of memory. Tried to allocate 26.00 MiB. GPU 0 has a total "
                          "capacity of 30.00 MiB of which 10.00 MiB is free. Including "
                          "non-PyTorch memory, this process has 20.00 MiB memory in use. Of "
                          "the allocated memory 3.00 MiB is allocated by PyTorch, and 17.00 MiB "
                          "is reserved by PyTorch but unallocated. The largest free block is "
                          "17.00 MiB. The largest live allocations are 3.00 MiB. If reserved")
    assert "max_split_size_mb" in msg
    s = alloc.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    alloc.free(keep)


def test_oom_message_lists_the_three_largest_live_allocations():
    alloc = _C._FakeDeviceAllocator(4 * MB)
    for n in (100, 3000, 700_000, 5000):
        alloc.malloc(n)
    with pytest.raises(ptl.OutOfMemoryError, match=re.escape(
            "The largest live allocations are 684.00 KiB, 5.00 KiB, 3.00 KiB. If")):  # rounded
        alloc.malloc(3 * MB)


def test_memory_fraction_limits_reserved_memory():
    alloc = _C._FakeDeviceAllocator(100 * MB)
    assert alloc.get_memory_fraction() == 1.0
    alloc.set_memory_fraction(0.25)
    assert alloc.get_memory_fraction() == 0.25
    p = alloc.malloc(5 * MB)                   # 20 MiB of the allowed 25
    with pytest.raises(ptl.OutOfMemoryError, match=r"25\.00 MiB allowed; Of the allocated"):
        alloc.malloc(16 * MB)                  # another 20 MiB segment
    alloc.free(p)
    with pytest.raises(ValueError, match=r"Invalid fraction value: 1.5. Allowed range: 0~1"):
        alloc.set_memory_fraction(1.5)


def test_max_split_size_keeps_oversize_blocks_whole():
    alloc = _C._FakeDeviceAllocator(1 << 30, "max_split_size_mb:30")
    p = alloc.malloc(40 * MB)
    alloc.free(p)
    q = alloc.malloc(4 * MB)                   # below max_split: never from an oversize block
    assert q != p
    r = alloc.malloc(45 * MB)                  # 40 MiB block too small: new segment
    alloc.free(r)
    t = alloc.malloc(44 * MB)                  # wastes 2 MiB < 20 MiB: reuses the 46 MiB one
    assert t == r
    s = alloc.memory_stats()
    assert s["max_split_size"] == 30 * MB
    assert s["oversize_segments"]["current"] == 2 and s["oversize_allocations"]["current"] == 1


def test_garbage_collection_threshold_releases_free_segments():
    alloc = _C._FakeDeviceAllocator(100 * MB, "garbage_collection_threshold:0.5")
    alloc.set_memory_fraction(1.0)
    ptrs = [alloc.malloc(12 * MB) for _ in range(5)]   # 5 x 12 MiB segments = 60 MiB
    for p in ptrs:
        alloc.free(p)
    alloc.malloc(512)                          # above 50 MiB reserved: free segments go
    assert alloc.memory_stats()["reserved_bytes"]["all"]["current"] <= 50 * MB + 2 * MB


def test_reset_peak_and_accumulated():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    p = alloc.malloc(3 * MB)
    alloc.free(p)
    alloc.reset_peak_memory_stats()
    s = alloc.memory_stats()
    assert s["allocated_bytes"]["all"]["peak"] == 0
    assert s["reserved_bytes"]["all"]["peak"] == 20 * MB
    alloc.reset_accumulated_memory_stats()
    s = alloc.memory_stats()
    assert s["allocated_bytes"]["all"]["allocated"] == 0 and s["num_device_alloc"] == 0
    assert s["reserved_bytes"]["all"]["current"] == 20 * MB


def test_unknown_pointer_is_an_error():
    alloc = _C._FakeDeviceAllocator(MB)
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        alloc.free(12345)
    with pytest.raises(RuntimeError, match="invalid device pointer"):
        alloc.record_stream(12345, 1)


# ---- random sequences against the model ----

def allocator_and_model(conf, fraction, capacity=160 * MB):
    """A fake-device allocator and its model, with conf and a memory fraction (or None)."""
    alloc = _C._FakeDeviceAllocator(capacity, conf)
    parsed = _C._parse_alloc_conf(conf)
    model = Model(capacity, NO_LIMIT if parsed["max_split_size"] < 0 else parsed["max_split_size"],
                  parsed["roundup_power2_divisions"])
    if fraction is not None:
        alloc.set_memory_fraction(fraction)
        model.allowed = int(fraction * capacity)
    return alloc, model


def random_op(alloc, model, gen, live, op):
    """One step of a random sequence on both, chosen by op in [0, 1): malloc (kept in live),
    free, record_stream, complete or empty_cache."""
    if op < 0.45 or not live:
        n = gen.choice([gen.randint(0, 2048), gen.randint(1, 2 * MB), gen.randint(MB, 40 * MB)])
        got = run_malloc(alloc, model, n, gen.randint(0, 2))
        if got:
            live.append(got)
    elif op < 0.8:
        p = live.pop(gen.randrange(len(live)))
        alloc.free(p)
        model.free(p)
    elif op < 0.9:
        p, s = gen.choice(live), gen.randint(0, 4)
        alloc.record_stream(p, s)
        model.record_stream(p, s)
    elif op < 0.97:
        s = gen.randint(0, 4)
        alloc.complete(s)
        model.complete(s)
    else:
        alloc.empty_cache()
        model.empty_cache()


def drain(alloc, model, live):
    """Frees what is live and empties the cache: the device ends empty."""
    for p in live:
        alloc.free(p)
        model.free(p)
    alloc.empty_cache()
    model.empty_cache()
    check(alloc, model)
    assert alloc.device_used() == {"bytes": 0, "live_events": 0}


@pytest.mark.parametrize("conf,fraction,seed", [
    ("", None, 0), ("", None, 1), ("max_split_size_mb:24", None, 2),
    ("roundup_power2_divisions:4", None, 3), ("", 0.5, 4), ("max_split_size_mb:21", 0.7, 5),
])
def test_random_sequences_match_the_model(conf, fraction, seed):
    alloc, model = allocator_and_model(conf, fraction)
    gen = random.Random(seed)
    live = []
    for step in range(600):
        random_op(alloc, model, gen, live, gen.random())
        check(alloc, model)
    drain(alloc, model, live)


@pytest.mark.parametrize("conf,fraction,seed", [
    ("", None, 10), ("", None, 11), ("max_split_size_mb:24", None, 12), ("", 0.4, 13),
])
def test_random_captures_match_the_model(conf, fraction, seed):
    """The random sequences with captures mixed in (Note [Private pools]): streams begin
    and end allocating to new or shared pools, graphs release their pools; the model
    chooses the same blocks, keeps the same segments (with their pool ids) and statistics,
    and the device ends empty."""
    alloc, model = allocator_and_model(conf, fraction)
    gen = random.Random(seed)
    live, capturing, ended, next_id = [], {}, [], 1
    for step in range(700):
        op = gen.random()
        if op < 0.06 and len(capturing) < 2:
            stream = gen.choice([s for s in range(3) if s not in capturing])
            if ended and gen.random() < 0.4:
                pool = gen.choice(ended)        # pool=other_graph.pool()
            else:
                pool, next_id = (next_id, 0), next_id + 1
            alloc.begin_allocate_to_pool(pool, stream)
            model.begin_allocate_to_pool(pool, stream)
            capturing[stream] = pool
        elif op < 0.11 and capturing:
            pool = capturing.pop(gen.choice(sorted(capturing)))
            alloc.end_allocate_to_pool(pool)
            model.end_allocate_to_pool(pool)
            ended.append(pool)
        elif op < 0.14 and ended:
            pool = ended.pop(gen.randrange(len(ended)))     # graph.reset()
            alloc.release_pool(pool)
            model.release_pool(pool)
            assert alloc.pool_use_count(pool) == model.users[pool]
        elif op >= 0.14:
            random_op(alloc, model, gen, live, (op - 0.14) / 0.86)
        check(alloc, model)
    for pool in capturing.values():
        alloc.end_allocate_to_pool(pool)
        model.end_allocate_to_pool(pool)
        ended.append(pool)
    for pool in ended:
        alloc.release_pool(pool)
        model.release_pool(pool)
    drain(alloc, model, live)


def test_threads_allocating_together_keep_the_books_straight():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    errors = []

    def work(seed):
        gen = random.Random(seed)
        mine = []
        try:
            for _ in range(300):
                if mine and gen.random() < 0.5:
                    alloc.free(mine.pop())
                else:
                    mine.append(alloc.malloc(gen.choice([512, 4096, 3 * MB]), seed % 3))
            for p in mine:
                alloc.free(p)
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = alloc.memory_stats()
    for name in ("allocation", "allocated_bytes", "active", "active_bytes", "requested_bytes"):
        assert s[name]["all"]["current"] == 0
        assert s[name]["all"]["allocated"] == s[name]["all"]["freed"]
    assert s["allocation"]["all"]["allocated"] == s["allocation"]["small_pool"]["allocated"] + \
        s["allocation"]["large_pool"]["allocated"]
    assert s["inactive_split"]["all"]["current"] == 0
    alloc.empty_cache()
    assert alloc.device_used()["bytes"] == 0


# ---- PTL_CUDA_ALLOC_CONF ----

def test_alloc_conf_parses_pytorchs_keys():
    assert _C._parse_alloc_conf("") == {"max_split_size": -1, "garbage_collection_threshold": 0.0,
                                        "roundup_power2_divisions": 0}
    c = _C._parse_alloc_conf(" max_split_size_mb:64 , garbage_collection_threshold:0.6,"
                             "roundup_power2_divisions:8,expandable_segments:False,")
    assert c == {"max_split_size": 64 * MB, "garbage_collection_threshold": 0.6,
                 "roundup_power2_divisions": 8}


@pytest.mark.parametrize("conf,message", [
    ("max_split_size_md:64", "Unrecognized key 'max_split_size_md' in PTL_CUDA_ALLOC_CONF"),
    ("backend:native", "Unrecognized key 'backend' in PTL_CUDA_ALLOC_CONF"),
    ("max_split_size_mb", "Expected 'key:value' in PTL_CUDA_ALLOC_CONF, got 'max_split_size_mb'"),
    ("max_split_size_mb:abc", "Invalid value 'abc' for max_split_size_mb in PTL_CUDA_ALLOC_CONF"),
    ("max_split_size_mb:", "Invalid value '' for max_split_size_mb in PTL_CUDA_ALLOC_CONF"),
    ("max_split_size_mb:20", "CachingAllocator option max_split_size_mb too small, must be > 20"),
    ("max_split_size_mb:30.5", "max_split_size_mb too small, must be > 20 (got '30.5')"),
    ("garbage_collection_threshold:0", "garbage_collect_threshold too small, set it 0.0~1.0"),
    ("garbage_collection_threshold:1.5", "garbage_collect_threshold too big, set it 0.0~1.0"),
    ("garbage_collection_threshold:nan", "Invalid value 'nan' for garbage_collection_threshold"),
    ("roundup_power2_divisions:3", "For roundups, the divisions has to be power of 2 (got '3')"),
    ("roundup_power2_divisions:[256:1]", "Invalid value '[256:1]' for roundup_power2_divisions"),
    ("expandable_segments:True", "expandable_segments:True is not supported"),
    ("expandable_segments:yes", "Expected a single True/False argument for expandable_segments"),
])
def test_alloc_conf_errors_name_the_key_or_value(conf, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        _C._parse_alloc_conf(conf)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        _C._FakeDeviceAllocator(MB, conf)


def test_roundup_power2_divisions_rounds_to_quarter_steps():
    alloc = _C._FakeDeviceAllocator(1 << 30, "roundup_power2_divisions:4")
    alloc.malloc(1200 * KB + 1)                # between 1 MiB and 2 MiB: steps of 256 KiB
    assert alloc.memory_stats()["allocated_bytes"]["all"]["current"] == 1280 * KB
    alloc.malloc(1024)                         # 1024 <= 512 * 4: plain 512-byte rounding
    assert alloc.memory_stats()["allocated_bytes"]["all"]["current"] == 1280 * KB + 1024


# ---- private pools (Note [Private pools]): what CUDA graph capture allocates from ----

GRAPH, OTHER = (1, 0), (0, 7)   # a graph's own pool id and a graph_pool_handle()'s


def pools_of(alloc):
    """{segment address: pool id} of the snapshot."""
    return {s["address"]: s["segment_pool_id"] for s in alloc.snapshot()}


def segment_of(alloc, p):
    return next(s for s in alloc.snapshot()
                if s["address"] <= p < s["address"] + s["total_size"])


def check_books(alloc):
    """The statistics agree with the segments and blocks of the snapshot, private or not."""
    snap, s = alloc.snapshot(), alloc.memory_stats()
    blocks = [b for seg in snap for b in seg["blocks"]]
    allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    active = sum(b["size"] for b in blocks if b["state"] != "inactive")
    assert s["allocated_bytes"]["all"]["current"] == allocated
    assert s["active_bytes"]["all"]["current"] == active
    assert s["reserved_bytes"]["all"]["current"] == sum(seg["total_size"] for seg in snap)
    assert s["segment"]["all"]["current"] == len(snap)
    assert alloc.device_used()["bytes"] == sum(seg["total_size"] for seg in snap)


def test_a_capturing_stream_allocates_from_its_private_pool_only():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    before = alloc.malloc(4096, 1)                 # an ordinary segment on stream 1
    alloc.free(before)
    alloc.begin_allocate_to_pool(GRAPH, 1)
    assert alloc.pool_use_count(GRAPH) == 1
    p = alloc.malloc(4096, 1)                      # not the cached ordinary block
    assert p != before and segment_of(alloc, p)["segment_pool_id"] == GRAPH
    q = alloc.malloc(4096, 2)                      # another stream is not captured
    assert q == alloc.malloc(0, 2) or segment_of(alloc, q)["segment_pool_id"] == (0, 0)
    big = alloc.malloc(3 * MB, 1)                  # the large pool has its private half too
    assert segment_of(alloc, big)["segment_pool_id"] == GRAPH
    assert segment_of(alloc, big)["segment_type"] == "large"
    alloc.free(p)                                  # freed during capture: back to the pool,
    assert alloc.malloc(4096, 1) == p              # reused by the same capture
    alloc.end_allocate_to_pool(GRAPH)
    assert alloc.malloc(4096, 1) == before         # after the capture: the ordinary pool
    check_books(alloc)


def test_freed_private_blocks_are_never_reused_by_ordinary_allocations():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    alloc.begin_allocate_to_pool(GRAPH, 0)
    ptrs = [alloc.malloc(n) for n in (512, 5000, 2 * MB, 6 * MB)]
    alloc.end_allocate_to_pool(GRAPH)
    for p in ptrs:
        alloc.free(p)
    private = {a for a, pool in pools_of(alloc).items() if pool == GRAPH}
    assert len(private) == 2                       # one small and one large segment
    fresh = [alloc.malloc(n) for n in (512, 5000, 2 * MB, 6 * MB)]
    assert not any(segment_of(alloc, p)["address"] in private for p in fresh)
    assert alloc.memory_stats()["segment"]["all"]["current"] == 4
    check_books(alloc)


def test_private_pool_blocks_split_and_merge_like_ordinary_ones():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    alloc.begin_allocate_to_pool(GRAPH, 0)
    a, b, c = (alloc.malloc(2 * MB) for _ in range(3))   # one 20 MiB private segment
    assert b == a + 2 * MB and c == b + 2 * MB
    alloc.free(b)                                  # a hole between two live blocks
    assert alloc.memory_stats()["inactive_split"]["all"]["current"] == 2
    assert alloc.malloc(2 * MB) == b               # best fit: the hole
    alloc.free(b)
    alloc.free(a)
    alloc.free(c)                                  # all merged into one block again
    seg = alloc.snapshot()[0]
    assert [blk["size"] for blk in seg["blocks"]] == [20 * MB]
    assert seg["segment_pool_id"] == GRAPH
    alloc.end_allocate_to_pool(GRAPH)
    check_books(alloc)


def test_a_released_pool_goes_back_to_the_device_at_empty_cache():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    alloc.begin_allocate_to_pool(GRAPH, 0)
    out = alloc.malloc(MB)                         # a graph output the program keeps
    tmp = alloc.malloc(12 * MB)                    # a temporary of the graph
    alloc.end_allocate_to_pool(GRAPH)
    alloc.free(tmp)
    alloc.empty_cache()                            # the graph lives: its pool stays
    assert alloc.memory_stats()["reserved_bytes"]["all"]["current"] == 2 * MB + 12 * MB
    alloc.release_pool(GRAPH)                      # graph.reset()
    assert alloc.pool_use_count(GRAPH) == 0
    reserved = alloc.memory_stats()["reserved_bytes"]["all"]["current"]
    assert reserved == 14 * MB                     # nothing given back before empty_cache
    alloc.empty_cache()                            # the free segment goes, out's stays
    s = alloc.memory_stats()
    assert s["reserved_bytes"]["all"]["current"] == 2 * MB
    assert s["allocated_bytes"]["all"]["current"] == 1024 * 1024
    assert alloc.pool_use_count(GRAPH) == 0        # kept while it has a segment
    alloc.free(out)
    alloc.empty_cache()
    assert alloc.pool_use_count(GRAPH) == -1       # deleted
    assert alloc.memory_stats()["reserved_bytes"]["all"]["current"] == 0
    assert alloc.device_used()["bytes"] == 0
    check_books(alloc)


def test_graphs_sharing_a_pool_reuse_each_others_memory():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    alloc.begin_allocate_to_pool(OTHER, 0)         # graph 1, pool=graph_pool_handle()
    p = alloc.malloc(64 * KB)
    alloc.free(p)
    alloc.end_allocate_to_pool(OTHER)
    alloc.begin_allocate_to_pool(OTHER, 3)         # graph 2, same pool, other stream
    assert alloc.pool_use_count(OTHER) == 2
    q = alloc.malloc(64 * KB, 3)                   # blocks keep their stream: new segment
    alloc.end_allocate_to_pool(OTHER)
    alloc.begin_allocate_to_pool(OTHER, 0)         # graph 3 on graph 1's stream
    assert alloc.malloc(64 * KB) == p              # reuses graph 1's freed block
    alloc.end_allocate_to_pool(OTHER)
    assert set(pools_of(alloc).values()) == {OTHER}
    alloc.free(p)
    alloc.free(q)
    for users in (2, 1):
        alloc.release_pool(OTHER)
        alloc.empty_cache()
        assert alloc.pool_use_count(OTHER) == users
        assert alloc.memory_stats()["segment"]["all"]["current"] == 2
    alloc.release_pool(OTHER)
    alloc.empty_cache()
    assert alloc.pool_use_count(OTHER) == -1 and alloc.snapshot() == []
    check_books(alloc)


def test_two_captures_at_once_keep_their_pools_apart():
    alloc = _C._FakeDeviceAllocator(1 << 30)
    alloc.begin_allocate_to_pool(GRAPH, 1)
    alloc.begin_allocate_to_pool(OTHER, 2)
    p, q = alloc.malloc(4096, 1), alloc.malloc(4096, 2)
    assert segment_of(alloc, p)["segment_pool_id"] == GRAPH
    assert segment_of(alloc, q)["segment_pool_id"] == OTHER
    alloc.end_allocate_to_pool(GRAPH)
    assert segment_of(alloc, alloc.malloc(4096, 2))["segment_pool_id"] == OTHER
    assert segment_of(alloc, alloc.malloc(4096, 1))["segment_pool_id"] == (0, 0)
    alloc.end_allocate_to_pool(OTHER)
    check_books(alloc)


def test_a_capture_polls_no_event_and_gives_nothing_back():
    """cudaEventQuery and cudaFree are illegal during a capture: a block freed with stream
    uses stays pending until the capture ends; empty_cache and the out-of-memory path
    release nothing meanwhile."""
    alloc = _C._FakeDeviceAllocator(24 * MB)
    cached = alloc.malloc(8 * MB)
    alloc.free(cached)                             # a 20 MiB cached ordinary segment
    done = alloc.malloc(4096)
    alloc.record_stream(done, 5)
    alloc.free(done)                               # its event is recorded now
    alloc.complete(5)                              # ... and complete, not yet polled
    alloc.begin_allocate_to_pool(GRAPH, 0)
    p = alloc.malloc(4096)
    alloc.record_stream(p, 6)
    alloc.free(p)                                  # no event recorded during capture
    assert alloc.device_used()["live_events"] == 1
    assert segment_of(alloc, p)["blocks"][0]["state"] == "active_pending_free"
    assert alloc.malloc(4096) != p                 # pending: not reused
    alloc.empty_cache()                            # a no-op during the capture
    assert alloc.memory_stats()["num_sync_all_streams"] == 0
    with pytest.raises(ptl.OutOfMemoryError):      # 20 MiB cached, 2 MiB private: no room
        alloc.malloc(10 * MB)
    s = alloc.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 0
    alloc.end_allocate_to_pool(GRAPH)              # the deferred event is recorded now
    assert alloc.device_used()["live_events"] == 2
    alloc.complete(6)
    q = alloc.malloc(10 * MB)                      # the ordinary cache serves it again
    assert q == cached
    assert alloc.device_used()["live_events"] == 0
    alloc.free(q)
    check_books(alloc)


def test_pool_errors():
    alloc = _C._FakeDeviceAllocator(MB)
    with pytest.raises(RuntimeError, match="not currently recording"):
        alloc.end_allocate_to_pool(GRAPH)
    with pytest.raises(RuntimeError, match="releasePool"):
        alloc.release_pool(GRAPH)
    with pytest.raises(RuntimeError, match="not a pool id"):
        alloc.begin_allocate_to_pool((0, 0), 0)
    with pytest.raises(TypeError):
        alloc.begin_allocate_to_pool(1, 0)
    alloc.begin_allocate_to_pool(GRAPH, 0)
    alloc.end_allocate_to_pool(GRAPH)
    alloc.release_pool(GRAPH)
    with pytest.raises(RuntimeError, match="releasePool"):
        alloc.release_pool(GRAPH)                  # no user left
    assert alloc.pool_use_count(GRAPH) == 0


@pytest.mark.parametrize("seed", range(4))
def test_random_captures_keep_the_books_straight(seed):
    """Ordinary and captured allocations mixed at random: live blocks never overlap, a
    private block only ever serves its pool, and the statistics match the snapshot."""
    gen = random.Random(seed)
    alloc = _C._FakeDeviceAllocator(512 * MB)
    live = {}                                      # address -> (size, pool)
    capturing = None
    for step in range(300):
        r = gen.random()
        if r < 0.05:
            if capturing is None:
                capturing = gen.choice([GRAPH, OTHER])
                alloc.begin_allocate_to_pool(capturing, 0)
            else:
                alloc.end_allocate_to_pool(capturing)
                capturing = None
        elif live and r < 0.45:
            p = gen.choice(sorted(live))
            del live[p]
            alloc.free(p)
        elif r < 0.48 and capturing is None:
            alloc.empty_cache()
        else:
            n = gen.choice([gen.randint(1, 8192), gen.randint(1, 3 * MB)])
            p = alloc.malloc(n)
            live[p] = (n, capturing or (0, 0))
            assert segment_of(alloc, p)["segment_pool_id"] == live[p][1]
        spans = sorted((p, p + n) for p, (n, _) in live.items())
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))
    check_books(alloc)
