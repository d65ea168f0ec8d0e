"""Streams, events and pinned memory on the device (src/cuda/stream.cu, stream_state.c; Note
[Current stream], Note [Asynchronous copies], Note [Caching host allocator]): events around
a copy and a kernel, ordering across two streams with wait_stream, record_stream keeping a
block alive, pinned non_blocking copies round-tripping values.  Each test skips, with the
reason the device is missing, on a machine without a GPU; tools/gpu_check.sh runs them
there (PTL_REQUIRE_GPU=1 turns the skips into failures).  The CPU-side behaviour is in
tests/python/test_cuda_streams.py."""
import numpy as np
import pytest

import pytorchlite as ptl
from device_required import pytestmark, require_device  # noqa: F401

N = 1 << 22   # 16 MiB of float32: kernels long enough to still be running when checked


@pytest.fixture(autouse=True)
def back_on_the_default_stream(require_device):
    yield
    ptl.cuda.synchronize()
    assert ptl.cuda.current_stream() == ptl.cuda.default_stream()


def busy(x, steps=50):
    """Queues `steps` kernels reading and writing x's size on the current stream."""
    for _ in range(steps):
        x = x * 1.0
    return x


def test_streams_from_the_pool():
    s, t = ptl.cuda.Stream(), ptl.cuda.Stream()
    d = ptl.cuda.default_stream()
    assert d.cuda_stream == 0 and ptl.cuda.current_stream() == d
    assert s != d and s.cuda_stream != 0 and s.device == ptl.device("cuda", 0)
    assert repr(s) == f"<torch.cuda.Stream device=cuda:0 cuda_stream={s.cuda_stream:#x}>"
    assert hash(s) == hash(ptl.cuda.Stream(stream_id=s.cuda_stream, device_index=0))
    least, greatest = ptl.cuda.Stream.priority_range()
    assert greatest <= least
    assert ptl.cuda.Stream(priority=-100).priority == greatest   # clamped, as PyTorch
    assert ptl.cuda.Stream(priority=100).priority == least
    assert s.query() and t.query()
    s.synchronize()
    ext = ptl.cuda.ExternalStream(s.cuda_stream)
    assert ext == s


def test_stream_context_sets_and_restores_the_current_stream():
    s = ptl.cuda.Stream()
    with ptl.cuda.stream(s):
        assert ptl.cuda.current_stream() == s
        with ptl.cuda.stream(None):
            assert ptl.cuda.current_stream() == s
    assert ptl.cuda.current_stream() == ptl.cuda.default_stream()
    ptl.cuda.set_stream(s)
    assert ptl.cuda.current_stream() == s
    ptl.cuda.set_stream(ptl.cuda.default_stream())


def test_events_time_a_copy_and_a_kernel():
    start, end = ptl.cuda.Event(enable_timing=True), ptl.cuda.Event(enable_timing=True)
    host = ptl.arange(N, dtype=ptl.float32)
    start.record()
    x = host.cuda()
    y = busy(x, 5)
    end.record()
    end.synchronize()
    assert start.query() and end.query()
    assert start.elapsed_time(end) > 0
    assert repr(end).startswith("<torch.cuda.Event 0x")
    np.testing.assert_array_equal(y.cpu().numpy(), host.numpy())
    untimed = ptl.cuda.Event()
    untimed.record()
    with pytest.raises(ValueError, match="enable_timing=True"):
        start.elapsed_time(untimed)


def test_wait_stream_orders_two_streams():
    s1, s2 = ptl.cuda.Stream(), ptl.cuda.Stream()
    x = ptl.ones(N).cuda()
    s1.wait_stream(ptl.cuda.current_stream())
    with ptl.cuda.stream(s1):
        y = busy(x) + 1.0             # long: still running when s2's work is queued
    s2.wait_stream(s1)
    with ptl.cuda.stream(s2):
        z = y * 3.0
        host = z.cpu()                # a synchronous copy on s2
    assert float(host.min()) == float(host.max()) == 6.0
    ev = s1.record_event()
    s2.wait_event(ev)
    s2.synchronize()
    assert s1.query() and s2.query()


def test_record_stream_keeps_a_block_alive_until_the_stream_is_done():
    s = ptl.cuda.Stream()
    x = ptl.ones(N).cuda()            # allocated on the default stream
    s.wait_stream(ptl.cuda.current_stream())
    with ptl.cuda.stream(s):
        y = busy(x, 200)              # s reads x long after the host drops it
    x.record_stream(s)
    ptr = x.data_ptr()
    del x
    if not s.query():                 # the block waits for s's work
        states = {b["address"]: b["state"] for seg in ptl.cuda.memory_snapshot()
                  for b in seg["blocks"]}
        assert states[ptr] == "active_pending_free"
        z = ptl.empty(N, device="cuda")
        assert z.data_ptr() != ptr
        del z
    s.synchronize()
    assert float(y.cpu().sum()) == N
    with pytest.raises(RuntimeError, match="unknown parameter type"):
        y.record_stream(None)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float16, ptl.int64, ptl.uint8])
def test_pinned_non_blocking_copies_round_trip(dtype):
    host = (ptl.arange(N // 4) % 100).to(dtype).pin_memory()
    assert host.is_pinned()
    s = ptl.cuda.Stream()
    with ptl.cuda.stream(s):
        dev = host.to("cuda", non_blocking=True)     # asynchronous on s
        back = ptl.empty(host.shape, dtype=dtype, pin_memory=True)
        back.copy_(dev, non_blocking=True)
        s.synchronize()
    assert back.is_pinned()
    np.testing.assert_array_equal(back.numpy(), host.numpy())
    # pageable memory: the copy is synchronous, as CUDA's
    pageable = host.clone()
    assert not pageable.is_pinned()
    np.testing.assert_array_equal(pageable.cuda(non_blocking=True).cpu().numpy(),
                                  host.numpy())


def test_a_pinned_block_is_not_reused_before_its_copy_is_done():
    ptl.cuda.reset_accumulated_host_memory_stats()
    s = ptl.cuda.Stream()
    x = ptl.ones(N).cuda()
    s.wait_stream(ptl.cuda.current_stream())
    with ptl.cuda.stream(s):
        busy(x, 200)
        host = ptl.full((N,), 5.0).pin_memory()
        ptr = host.data_ptr()
        dev = host.to("cuda", non_blocking=True)     # queued behind the busy kernels
    del host
    if not s.query():
        again = ptl.empty(N, pin_memory=True)        # same size class
        assert again.data_ptr() != ptr
        del again
    s.synchronize()
    assert float(dev.min()) == float(dev.max()) == 5.0
    stats = ptl.cuda.host_memory_stats()
    assert stats["num_host_alloc"] >= 1 and stats["host_alloc_time.count"] >= 1


def test_dataloader_pins_batches_for_non_blocking_copies():
    ds = ptl.utils.data.TensorDataset(ptl.arange(64.0).reshape(16, 4))
    total = 0.0
    for (batch,) in ptl.utils.data.DataLoader(ds, batch_size=4, pin_memory=True):
        assert batch.is_pinned()
        total += float(batch.to("cuda", non_blocking=True).sum().cpu())
    assert total == float(sum(range(64)))
