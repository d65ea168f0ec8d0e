"""Shared-memory tensors and pytorchlite.multiprocessing: share_memory_, the ForkingPickler
reducer under fork/spawn/forkserver, segment lifetime (no /dev/shm leftovers, even when a
process is killed), the CUDA fork guard and pin_memory."""
import gc
import os
import pickle
import re
import signal
import warnings
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.multiprocessing as mp
from pytorchlite import _C
from helpers import ALL_DTYPES, LAYOUTS, SHAPES, assert_close, make, torch, torch_ref
import _data_helpers as H


START_METHODS = [m for m in ("fork", "spawn", "forkserver") if m in mp.get_all_start_methods()]


def shm_entries():
    return set(os.listdir("/dev/shm"))


@pytest.fixture
def no_leftovers():
    """The test must leave /dev/shm and the process table as it found them."""
    before = shm_entries()
    yield
    gc.collect()
    assert mp.active_children() == []
    assert shm_entries() <= before


# ---- share_memory_ ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_share_memory_in_place_keeps_object_and_values(dtype, shape):
    before = shm_entries()
    for layout in LAYOUTS:
        t, expected = make(shape, dtype, layout)
        stride, offset = t.stride(), t.storage_offset()
        assert not t.is_shared()
        assert t.share_memory_() is t
        assert t.is_shared() and t.stride() == stride and t.storage_offset() == offset
        assert_close(t, expected, dtype=dtype)
        assert t.share_memory_() is t and t.is_shared()   # idempotent
    assert shm_entries() <= before


def test_share_memory_views_follow_and_writes_are_seen(no_leftovers):
    base = ptl.arange(12, dtype=ptl.float32)
    view = base.reshape(3, 4)[1]
    base.share_memory_()
    assert view.is_shared()
    view.fill_(-1)
    assert base.tolist()[4:8] == [-1.0] * 4


def test_memoryview_exported_before_share_stays_valid(no_leftovers):
    t = ptl.arange(1000, dtype=ptl.float64)
    arr = t.numpy()
    t.share_memory_()
    t.add_(1)
    # the old buffer is kept alive (Note [Shared memory lifetime]), so reading it is safe
    np.testing.assert_array_equal(arr, np.arange(1000.0))
    np.testing.assert_array_equal(t.numpy(), np.arange(1000.0) + 1)


def test_shared_before_fork_is_the_same_memory(no_leftovers):
    t = ptl.zeros(4).share_memory_()
    ctx = mp.get_context("fork")
    done = ctx.SimpleQueue()
    p = ctx.Process(target=H.add_one_in_place, args=(t, done))
    p.start()
    assert done.get() is True
    p.join()
    assert t.tolist() == [1.0] * 4


def test_segments_leave_no_names_behind(no_leftovers):
    ts = [ptl.ones(1000).share_memory_() for _ in range(5)]
    assert all(not name.startswith("ptl_") for name in shm_entries())
    del ts


# ---- the ForkingPickler reducer ----

def test_tensor_travels_as_a_handle_not_bytes(no_leftovers):
    t = ptl.ones(1 << 18)                       # 1 MiB
    data = ForkingPickler.dumps(t)
    assert len(data) < 1000
    assert t.is_shared()                        # moved to shared memory by pickling
    back = pickle.loads(data)                   # the same process can receive it too
    back[0] = 5
    assert t[0].item() == 5


def test_views_in_one_message_share_one_mapping(no_leftovers):
    a, b = mp.Pipe()
    t = ptl.arange(6, dtype=ptl.int64)
    a.send((t, t[2:], t.reshape(2, 3).t()))
    x, y, z = b.recv()
    assert x.tolist() == list(range(6)) and y.tolist() == [2, 3, 4, 5]
    assert z.stride() == (1, 3) and z.tolist() == [[0, 3], [1, 4], [2, 5]]
    y[0] = 100
    assert x[2].item() == 100 and t[2].item() == 100
    a.close()
    b.close()


def test_requires_grad_travels_and_non_leaf_is_refused(no_leftovers):
    leaf = ptl.ones(3, requires_grad=True)
    back = pickle.loads(ForkingPickler.dumps(leaf))
    assert back.requires_grad and back.tolist() == [1.0] * 3
    with pytest.raises(RuntimeError, match=re.escape(
            "Cowardly refusing to serialize non-leaf tensor which requires_grad")):
        ForkingPickler.dumps(leaf * 2)


def test_parameter_travels(no_leftovers):
    p = ptl.nn.Parameter(ptl.ones(2))
    back = pickle.loads(ForkingPickler.dumps(p))
    assert isinstance(back, ptl.nn.Parameter) and back.requires_grad


@pytest.mark.parametrize("method", START_METHODS)
def test_queue_both_directions(method, no_leftovers):
    ctx = mp.get_context(method)
    q = ctx.Queue()
    p = ctx.Process(target=H.fill_and_send, args=(q, 7))
    p.start()
    t = q.get(timeout=30)
    p.join()
    assert t.tolist() == [7.0] * 4 and t.is_shared()
    # and back: the child's in-place write lands in our tensor
    done = ctx.Queue()
    p = ctx.Process(target=H.add_one_in_place, args=(t, done))
    p.start()
    assert done.get(timeout=30) is True
    p.join()
    assert t.tolist() == [8.0] * 4
    q.close()
    done.close()


def test_simple_queue_echo_keeps_sharing(no_leftovers):
    ctx = mp.get_context("fork")
    q_in, q_out = ctx.SimpleQueue(), ctx.SimpleQueue()
    p = ctx.Process(target=H.echo, args=(q_in, q_out))
    p.start()
    t = ptl.zeros(3)
    q_in.put(t)
    back = q_out.get()
    back.fill_(2)
    assert t.tolist() == [2.0] * 3
    q_in.put(None)
    p.join()


def test_pool_map_with_tensors(no_leftovers):
    with mp.get_context("fork").Pool(2) as pool:
        out = pool.map(H.square, [ptl.tensor([float(i)]) for i in range(6)])
    assert [o.item() for o in out] == [float(i * i) for i in range(6)]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_sender_that_exits_at_once_still_delivers(method, no_leftovers):
    """The child puts a tensor and returns; its exit waits until we have taken the segment."""
    ctx = mp.get_context(method)
    q = ctx.Queue()
    p = ctx.Process(target=H.fill_and_send, args=(q, 3))
    p.start()
    while p.is_alive() and q.empty():
        p.join(0.01)
    assert q.get(timeout=30).tolist() == [3.0] * 4
    p.join()
    assert p.exitcode == 0
    q.close()


def test_sender_killed_before_delivery_leaves_nothing(no_leftovers):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=H.send_and_die, args=(q,))
    p.start()
    p.join()
    assert p.exitcode == -signal.SIGKILL
    try:
        q.get(timeout=30)
    except (ConnectionError, OSError):
        pass   # the descriptor died with its sender, as with torch's file_descriptor strategy
    q.close()


def test_worker_killed_while_holding_shared_tensor(no_leftovers):
    t = ptl.ones(1 << 16).share_memory_()
    ctx = mp.get_context("fork")
    done = ctx.SimpleQueue()
    p = ctx.Process(target=H.echo, args=(done, ctx.SimpleQueue()))
    p.start()
    os.kill(p.pid, signal.SIGKILL)
    p.join()
    assert p.exitcode == -signal.SIGKILL
    del t


def test_sharing_strategy():
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor"}
    mp.set_sharing_strategy("file_descriptor")
    with pytest.raises(ValueError, match=re.escape("sharing strategy 'file_system' is not "
                                                   "supported")):
        mp.set_sharing_strategy("file_system")


def test_reexports_multiprocessing():
    import multiprocessing
    for name in ("get_context", "set_start_method", "Process", "Queue", "SimpleQueue", "Pipe",
                 "Pool", "cpu_count"):
        assert getattr(mp, name) is getattr(multiprocessing, name)


# ---- error paths of the C bindings ----

def test_from_fd_errors():
    with pytest.raises(RuntimeError, match=re.escape(
            "unable to stat shared memory fd 987654: Bad file descriptor (9)")):
        _C._tensor_from_shared_fd(987654, 4)
    r, w = os.pipe()
    os.close(w)
    with pytest.raises(RuntimeError, match=re.escape(
            "shared memory segment of 0 bytes is too small for a storage of 16 bytes")):
        _C._tensor_from_shared_fd(r, 16)   # closes r
    with pytest.raises(ValueError, match=re.escape("negative size -1")):
        _C._tensor_from_shared_fd(os.dup(0), -1)
    t = ptl.ones(2)
    with pytest.raises(RuntimeError, match=re.escape("_shared_fd(): the tensor is not in "
                                                     "shared memory")):
        _C._shared_fd(t)


def test_tensor_on_storage_is_bounds_checked():
    seg = ptl.zeros(16, dtype=ptl.uint8)
    ok = _C._tensor_on_storage(seg, ptl.float32, [2, 2], [2, 1], 0)
    assert ok.shape == (2, 2)
    for sizes, strides, offset in [([5], [1], 0), ([2], [1], 3), ([2], [-1], 1), ([1], [1], -1)]:
        with pytest.raises(RuntimeError, match=re.escape("_tensor_on_storage(): the geometry")):
            _C._tensor_on_storage(seg, ptl.float32, sizes, strides, offset)
    with pytest.raises(ValueError, match=re.escape("1 sizes but 2 strides")):
        _C._tensor_on_storage(seg, ptl.float32, [1], [1, 1], 0)
    with pytest.raises(TypeError, match=re.escape("expected a Tensor, got int")):
        _C._is_shared(3)


# ---- CUDA and fork ----

def _in_fork(fn):
    """Runs fn() in a forked child; returns what it returned (a short str)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(w, fn().encode())
        finally:
            os._exit(0)
    os.close(w)
    out = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    return out


def _error_of(call):
    try:
        call()
        return "no error"
    except (RuntimeError, AssertionError) as e:   # cuda.init() without CUDA: AssertionError
        return str(e)


BAD_FORK = ("Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method")


def test_cuda_in_forked_child_after_init_raises():
    def parent_with_cuda():
        _C._cuda_mark_initialized()   # as if CUDA had been initialised here
        assert ptl.cuda.is_initialized()
        return _in_fork(lambda: "|".join([
            str(ptl.cuda._is_in_bad_fork()),
            _error_of(ptl.cuda.init),
            _error_of(lambda: ptl.ones(2).to("cuda")),
            _error_of(lambda: ptl.ones(2).cuda())]))
    assert _in_fork(parent_with_cuda) == "|".join(["True", BAD_FORK, BAD_FORK, BAD_FORK])


def test_cuda_fork_before_init_is_fine():
    def child():
        return str(ptl.cuda._is_in_bad_fork()) + "|" + _error_of(ptl.cuda.init)
    flag, err = _in_fork(child).split("|")
    assert flag == "False" and err != BAD_FORK


# ---- pin_memory ----

@torch_ref
@pytest.mark.skipif(ptl.cuda.is_available(), reason="checks the behaviour without a GPU")
def test_pin_memory_without_accelerator():
    msg = "Cannot access accelerator device when none is available."
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        torch.zeros(2).pin_memory()
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.zeros(2).pin_memory()
    assert ptl.zeros(2).is_pinned() is torch.zeros(2).is_pinned() is False


@pytest.mark.skipif(ptl.cuda.is_available(), reason="checks the behaviour without a GPU")
def test_dataloader_pin_memory_warns_once_and_continues():
    from pytorchlite.utils.data import DataLoader
    loader = DataLoader([1, 2, 3], batch_size=2, pin_memory=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [b.tolist() for b in loader] == [[1, 2], [3]]
        assert [b.tolist() for b in loader] == [[1, 2], [3]]
    texts = [str(w.message) for w in caught]
    assert texts == ["'pin_memory' argument is set as true but no accelerator is found, then "
                     "device pinned memory won't be used."]
