"""The pinned host allocator's bookkeeping (src/c10/host_allocator.c, Note [Caching host
allocator]) on the fake device: power-of-two size classes at and across every boundary,
reuse only after the events recorded on the streams that used a block complete,
empty_cache, PyTorch's host_memory_stats, and the error paths."""
import random
import re

import pytest

from pytorchlite import _C

MB = 1 << 20


@pytest.fixture
def host():
    return _C._FakeHostAllocator(256 * MB)


def block_size(n):
    """PyTorch's PowerOf2Ceil: the size class a request of n bytes is served from."""
    return 1 << max(0, (n - 1).bit_length())


def stats(alloc):
    return alloc.memory_stats()


# every power of two up to 1 MiB, each at, just below and just above the boundary
SIZES = sorted({max(1, (1 << k) + d) for k in range(21) for d in (-1, 0, 1)})


@pytest.mark.parametrize("n", SIZES)
def test_a_request_takes_its_power_of_two_class(host, n):
    p = host.malloc(n)
    assert p != 0 and host.device_used()["bytes"] == block_size(n)
    s = stats(host)
    assert s["allocated_bytes"]["current"] == block_size(n)
    assert s["active_bytes"]["current"] == block_size(n)
    assert s["allocations"]["current"] == s["active_requests"]["current"] == 1
    host.free(p)
    # every request of the same class reuses the block; the next class up does not
    for m in {n, block_size(n), block_size(n) // 2 + 1}:
        assert host.malloc(m) == p
        host.free(p)
    q = host.malloc(block_size(n) + 1)
    assert q != p and stats(host)["num_host_alloc"] == 2
    host.free(q)


def test_zero_bytes_is_no_block(host):
    assert host.malloc(0) == 0
    host.free(0)
    assert stats(host)["num_host_alloc"] == 0 and host.device_used()["bytes"] == 0


def test_free_lists_are_last_in_first_out(host):
    ps = [host.malloc(1000) for _ in range(3)]
    for p in ps:
        host.free(p)
    assert [host.malloc(1000) for _ in range(3)] == ps[::-1]


def test_a_block_used_by_a_stream_waits_for_its_event(host):
    p = host.malloc(1000)
    host.record_stream(p, 1)
    host.free(p)
    assert host.device_used()["live_events"] == 1
    s = stats(host)
    assert s["active_requests"]["current"] == 1 and s["active_bytes"]["current"] == 1024
    q = host.malloc(1000)
    assert q != p          # the copy on stream 1 may still read p
    host.free(q)
    host.complete(1)
    assert host.malloc(1000) in (p, q)   # events are processed at malloc
    assert host.device_used()["live_events"] == 0
    assert stats(host)["active_requests"]["current"] == 1


def test_every_stream_that_used_a_block_must_finish(host):
    p = host.malloc(4096)
    for stream in (1, 2, 2, 0):
        host.record_stream(p, stream)
    host.free(p)
    assert host.device_used()["live_events"] == 3      # one per distinct stream
    for stream in (0, 1):
        host.complete(stream)
        assert host.malloc(4096) != p
    host.complete(2)
    host.malloc(1)             # processes the events
    assert host.device_used()["live_events"] == 0
    assert p in {host.malloc(4096) for _ in range(3)}


def test_streams_recorded_before_a_free_do_not_outlive_it(host):
    p = host.malloc(100)
    host.record_stream(p, 3)
    host.free(p)
    host.complete(3)
    assert host.malloc(100) == p
    host.free(p)               # no stream this time: reusable at once
    assert host.malloc(100) == p


def test_a_stream_whose_event_cannot_be_recorded_gives_the_block_back(host):
    # the fake device has streams 0..63: recording on 64 fails, and the block, which the
    # stream may still read, goes back to the device (cudaFreeHost waits for it)
    p = host.malloc(1000)
    host.record_stream(p, 5)
    host.record_stream(p, 64)
    host.free(p)
    s = stats(host)
    assert host.device_used() == {"bytes": 0, "live_events": 0}
    assert s["num_host_free"] == 1 and s["allocations"]["current"] == 0
    assert s["active_requests"]["current"] == 0 and s["active_bytes"]["current"] == 0


def test_empty_cache_gives_back_only_cached_blocks(host):
    live = host.malloc(1000)
    pending = host.malloc(3000)
    cached = host.malloc(5000)
    host.record_stream(pending, 1)
    host.free(pending)
    host.free(cached)
    host.empty_cache()
    assert host.device_used()["bytes"] == 1024 + 4096
    s = stats(host)
    assert s["num_host_free"] == 1 and s["allocations"]["current"] == 2
    assert s["allocated_bytes"]["current"] == 1024 + 4096
    host.complete(1)
    host.empty_cache()         # processes the events first, as PyTorch's
    assert host.device_used()["bytes"] == 1024
    host.free(live)
    host.empty_cache()
    assert host.device_used()["bytes"] == 0 and stats(host)["allocations"]["current"] == 0


def test_contains_covers_live_and_cached_blocks(host):
    p = host.malloc(3000)      # a 4096-byte block
    assert host.contains(p) and host.contains(p + 4095)
    host.free(p)
    assert host.contains(p + 100)      # cached blocks are still pinned memory
    host.empty_cache()
    assert not host.contains(p)


def test_stats_follow_a_random_sequence(host):
    rng = random.Random(0)
    live, owned, active = {}, 0, 0
    for step in range(300):
        if live and rng.random() < 0.45:
            p = rng.choice(list(live))
            host.free(p)
            active -= live.pop(p)
        else:
            n = rng.choice([1, 100, 512, 513, 4096, 70000])
            before = stats(host)["num_host_alloc"]
            p = host.malloc(n)
            live[p] = block_size(n)
            active += block_size(n)
            if stats(host)["num_host_alloc"] > before:
                owned += block_size(n)
        s = stats(host)
        assert s["active_bytes"]["current"] == active, f"seed 0, step {step}"
        assert s["active_requests"]["current"] == len(live)
        assert s["allocated_bytes"]["current"] == owned == host.device_used()["bytes"]
    s = stats(host)
    assert s["host_alloc_time"]["count"] == s["num_host_alloc"] == s["allocations"]["allocated"]
    assert s["allocations"]["peak"] >= s["allocations"]["current"]
    t = s["host_alloc_time"]
    assert t["min"] <= t["avg"] <= t["max"]


def test_stats_have_pytorchs_keys_and_resets(host):
    assert set(stats(host)) == {"allocations", "allocated_bytes", "active_requests",
                                "active_bytes", "num_host_alloc", "num_host_free",
                                "host_alloc_time", "host_free_time"}
    assert set(stats(host)["host_free_time"]) == {"total", "max", "min", "count", "avg"}
    p, q = host.malloc(10), host.malloc(5000)
    host.free(q)
    host.empty_cache()
    s = stats(host)
    assert s["allocations"] == {"current": 1, "peak": 2, "allocated": 2, "freed": 1}
    assert s["active_bytes"] == {"current": 16, "peak": 16 + 8192, "allocated": 16 + 8192,
                                 "freed": 8192}
    host.reset_peak_memory_stats()
    assert stats(host)["allocations"]["peak"] == 1
    host.reset_accumulated_memory_stats()
    s = stats(host)
    assert s["allocations"] == {"current": 1, "peak": 1, "allocated": 0, "freed": 0}
    assert s["num_host_alloc"] == s["num_host_free"] == s["host_alloc_time"]["count"] == 0
    host.free(p)


def test_errors(host):
    p = host.malloc(100)
    host.free(p)
    with pytest.raises(RuntimeError, match="invalid host pointer"):
        host.free(p)
    with pytest.raises(RuntimeError, match="invalid host pointer"):
        host.record_stream(p, 1)
    with pytest.raises(RuntimeError, match="invalid host pointer"):
        host.free(p + 8)
    with pytest.raises(ValueError, match="non-negative"):
        host.malloc(-1)
    small = _C._FakeHostAllocator(4096)
    small.malloc(4096)
    with pytest.raises(MemoryError, match=re.escape("CUDA error: out of memory (pinning "
                                                    "8.00 KiB of host memory)")):
        small.malloc(5000)
    with pytest.raises(TypeError, match="expected a _HostAllocator or None"):
        _C._cuda_set_host_allocator_for_testing(object())
