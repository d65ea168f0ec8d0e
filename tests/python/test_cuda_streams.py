"""torch.cuda's streams and events, pinned memory and the DataLoader's pin thread without a
device: PyTorch 2.13's CPU-only behaviour (the errors and warnings compared with torch's
where torch is installed), and, with the fake device's host allocator standing in for
cudaHostAlloc, the pinning itself (Note [Caching host allocator]).  The device side is in
tests/cuda/test_cuda_streams_device.py."""
import collections
import gc
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite.cuda import memory
from helpers import CUDA_KERNELS, NO_CUDA_ERROR, torch, torch_ref

no_device = pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA device is present")
pytestmark = no_device

NO_ACCELERATOR = "Cannot access accelerator device when none is available."
NO_PINNED = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
             "allocator is available on this system.")
NO_ACCEL_WARNING = ("'pin_memory' argument is set as true but no accelerator is found, then "
                    "device pinned memory won't be used.")

# (call, exception, message): the same in PyTorch's CPU-only build and in both of ours
PINNING_ERRORS = [
    (lambda t: t.ones(3).pin_memory(), RuntimeError, NO_ACCELERATOR),
    (lambda t: t.ones(3).untyped_storage().pin_memory(), RuntimeError, NO_ACCELERATOR),
    (lambda t: t.empty(3, pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.zeros(2, 3, pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.ones(3, pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.full((3,), 1.0, pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.arange(3, pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.randn(3, pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.empty_strided((3,), (1,), pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.empty_like(t.ones(2), pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.tensor([1.0], pin_memory=True), RuntimeError, NO_PINNED),
    (lambda t: t.ones(3).record_stream(None), RuntimeError, "unknown parameter type"),
]
# (call, result): no error, in PyTorch's CPU-only build and ours
NO_ERRORS = [
    (lambda t: t.ones(3).is_pinned(), False),
    (lambda t: t.ones(3).untyped_storage().is_pinned(), False),
    (lambda t: t.cuda.set_stream(None), None),
    (lambda t: t.cuda.stream(None).__enter__(), None),
    (lambda t: t.cuda.host_memory_stats(), collections.OrderedDict()),
    (lambda t: t.cuda.host_memory_stats_as_nested_dict(), {}),
    (lambda t: t.empty(2, pin_memory=False).shape, (2,)),
]


@pytest.mark.parametrize("case", range(len(PINNING_ERRORS)))
def test_pinning_without_a_device_raises_pytorchs_error(case):
    call, exc, message = PINNING_ERRORS[case]
    with pytest.raises(exc, match=re.escape(message)):
        call(ptl)


@torch_ref
@pytest.mark.skipif(torch is not None and torch.cuda.is_available(), reason="torch has CUDA")
@pytest.mark.parametrize("case", range(len(PINNING_ERRORS)))
def test_pinning_errors_match_torch(case):
    call, exc, message = PINNING_ERRORS[case]
    with pytest.raises(exc, match=re.escape(message)):
        call(torch)


@pytest.mark.parametrize("case", range(len(NO_ERRORS)))
def test_queries_without_a_device(case):
    call, result = NO_ERRORS[case]
    assert call(ptl) == result
    if torch is not None and not torch.cuda.is_available():
        assert call(torch) == result


def test_host_stat_resets_raise_the_no_cuda_error():
    # PyTorch's CPU-only build fails there with an AttributeError: the clear error instead
    for name in ("reset_peak_host_memory_stats", "reset_accumulated_host_memory_stats"):
        with pytest.raises(NO_CUDA_ERROR[0], match=NO_CUDA_ERROR[1]):
            getattr(ptl.cuda, name)()


def test_stream_context_with_a_stream_is_a_no_op_without_a_device():
    for t in [ptl] + ([torch] if torch is not None else []):
        ctx = t.cuda.StreamContext(None)
        assert ctx.__enter__() is None and ctx.__exit__(None, None, None) is None
        with t.cuda.stream(None):
            pass


def test_device_argument_of_pinning_is_deprecated():
    for t in [ptl] + ([torch] if torch is not None else []):
        x = t.ones(2)
        with pytest.warns(DeprecationWarning, match=re.escape(
                "The argument 'device' of Tensor.is_pinned() is deprecated")):
            assert x.is_pinned("cuda") is False
        with pytest.warns(DeprecationWarning, match="of Tensor.pin_memory"):
            with pytest.raises(RuntimeError, match="CPU device type not an accelerator."):
                x.pin_memory("cpu")


def test_non_blocking_copy_to_the_host_is_a_copy():
    x = ptl.arange(4.0)
    assert x.to("cpu", non_blocking=True) is x
    np.testing.assert_array_equal(x.to(ptl.float64, non_blocking=True).numpy(), np.arange(4.0))
    with pytest.raises(Exception) as blocking:
        x.cuda()
    for call in (lambda: x.cuda(non_blocking=True), lambda: x.to("cuda", non_blocking=True)):
        with pytest.raises(blocking.type, match=re.escape(str(blocking.value))):
            call()


# ---- streams and events: the build decides, as PyTorch's builds ----

@pytest.mark.skipif(CUDA_KERNELS, reason="a CUDA build: the no-device errors are tested below")
def test_cpu_only_build_streams_and_events_raise_pytorchs_errors():
    cases = [(lambda c: c.Stream(), RuntimeError, "torch.cuda.Stream requires CUDA support"),
             (lambda c: c.Stream(priority=-1), RuntimeError,
              "torch.cuda.Stream requires CUDA support"),
             (lambda c: c.Event(), RuntimeError, "Tried to instantiate dummy base class Event"),
             (lambda c: c.Event(enable_timing=True), RuntimeError,
              "Tried to instantiate dummy base class Event"),
             (lambda c: c.current_stream(), AssertionError, "Torch not compiled with CUDA"),
             (lambda c: c.default_stream(), AssertionError, "Torch not compiled with CUDA")]
    for call, exc, message in cases:
        for t in [ptl] + ([torch] if torch is not None else []):
            with pytest.raises(exc, match=re.escape(message)):
                call(t.cuda)


@pytest.mark.skipif(not CUDA_KERNELS, reason="the CPU-only build has no Event")
def test_cuda_build_without_a_device():
    # as PyTorch's CUDA build: a stream needs the device, an event only once recorded
    for call in (lambda c: c.Stream(), lambda c: c.current_stream(),
                 lambda c: c.default_stream(0), lambda c: c.Event().record(),
                 lambda c: c.Stream.priority_range()):
        with pytest.raises(NO_CUDA_ERROR[0], match=NO_CUDA_ERROR[1]):
            call(ptl.cuda)
    start, end = ptl.cuda.Event(enable_timing=True), ptl.cuda.Event()
    assert repr(start) == "<torch.cuda.Event uninitialized>"
    assert start.query() is True and start.synchronize() is None and start.device is None
    with pytest.raises(ValueError, match=re.escape(
            "Both events must be created with argument 'enable_timing=True'.")):
        start.elapsed_time(end)
    with pytest.raises(ValueError, match=re.escape(
            "Both events must be recorded before calculating elapsed time.")):
        start.elapsed_time(ptl.cuda.Event(enable_timing=True))


@pytest.mark.skipif(not CUDA_KERNELS, reason="needs the CUDA build's Stream class")
def test_stream_equality_hash_and_repr():
    # streams built from handles, as current_stream() builds them: no device needed
    s = ptl.cuda.Stream(stream_id=0x1234, device_index=0)
    t = ptl.cuda.Stream(stream_id=0x1234, device_index=0)
    assert s == t and hash(s) == hash(t) and s != ptl.cuda.Stream(stream_id=0, device_index=0)
    assert s != 0x1234 and s.stream_id == s.cuda_stream == 0x1234 and s.device_type == 1
    assert repr(s) == "<torch.cuda.Stream device=cuda:0 cuda_stream=0x1234>"
    assert s.__cuda_stream__() == (0, 0x1234) and s.device == ptl.device("cuda", 0)


# ---- the DataLoader without a device: PyTorch's warnings, unpinned batches ----

def _loader_runs(t, **kwargs):
    ds = t.utils.data.TensorDataset(t.arange(6.0))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        batches = [b[0].tolist() for b in t.utils.data.DataLoader(ds, batch_size=2, **kwargs)]
    return batches, [str(x.message) for x in w]


@pytest.mark.parametrize("kwargs", [dict(pin_memory=True),
                                    dict(pin_memory=True, pin_memory_device="cuda"),
                                    dict(pin_memory_device="cuda"),
                                    dict(pin_memory=True, num_workers=1)])
def test_dataloader_pin_memory_without_a_device_warns_as_pytorch(kwargs):
    batches, warned = _loader_runs(ptl, **kwargs)
    assert batches == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]
    assert (NO_ACCEL_WARNING in warned) == bool(kwargs.get("pin_memory"))
    if torch is not None and not torch.cuda.is_available():
        assert _loader_runs(torch, **kwargs) == (batches, warned)


# ---- pinning with the fake device's host allocator in cudaHostAlloc's place ----

@pytest.fixture
def pinned(monkeypatch):
    """The fake host allocator behind pin_memory, and CUDA reported available."""
    host = _C._FakeHostAllocator(64 << 20)
    _C._cuda_set_host_allocator_for_testing(host)
    monkeypatch.setattr(ptl.cuda, "is_available", lambda: True)
    monkeypatch.setattr(memory, "_host_allocator", lambda: host)
    yield host
    _C._cuda_set_host_allocator_for_testing(None)


@pytest.mark.parametrize("make", [lambda: ptl.arange(12.0).reshape(3, 4),
                                  lambda: ptl.arange(12).reshape(3, 4).t(),
                                  lambda: ptl.arange(24.0).reshape(4, 6)[::2, 1::2],
                                  lambda: ptl.ones(3, 1).expand(3, 4),
                                  lambda: ptl.tensor(2.5), lambda: ptl.ones(0, 3),
                                  lambda: ptl.arange(6, dtype=ptl.int16)])
def test_pin_memory_copies_into_pinned_memory(pinned, make):
    x = make()
    y = x.pin_memory()
    # no bytes, no pinned block: PyTorch's is_pinned asks the driver about a NULL pointer
    assert y.is_pinned() == (y.numel() > 0) and not x.is_pinned()
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    if x.is_contiguous() or x.t().is_contiguous():   # dense: its layout is kept
        assert y.stride() == x.stride()
    if y.numel() > 0:
        assert y.pin_memory() is y and y[...].is_pinned()   # a view of pinned memory
        assert pinned.contains(y.data_ptr())
    del y
    gc.collect()
    assert pinned.memory_stats()["active_requests"]["current"] == 0


def test_factories_and_storages_pin(pinned):
    for y in (ptl.zeros(2, 3, pin_memory=True), ptl.tensor([1.0, 2.0], pin_memory=True),
              ptl.full((4,), 7, pin_memory=True), ptl.empty_like(ptl.ones(5), pin_memory=True)):
        assert y.is_pinned()
    np.testing.assert_array_equal(ptl.full((4,), 7, pin_memory=True).numpy(), [7, 7, 7, 7])
    s = ptl.arange(4, dtype=ptl.uint8).untyped_storage()
    p = s.pin_memory()
    assert p.is_pinned() and not s.is_pinned() and p.tolist() == [0, 1, 2, 3]
    assert p.pin_memory() is p
    stats = ptl.cuda.host_memory_stats()
    assert stats["allocations.current"] >= 1 and "host_alloc_time.avg" in stats
    assert list(stats) == sorted(stats)


def test_pin_memory_is_recorded_by_autograd(pinned):
    # PyTorch's derivatives.yaml: _pin_memory's gradient is the incoming gradient
    x = ptl.tensor([[1.0, -2.0], [3.0, 4.0]], dtype=ptl.float64, requires_grad=True)
    y = x.t().pin_memory()
    assert y.is_pinned() and y.requires_grad and type(y.grad_fn).__name__ == "PinMemoryBackward0"
    assert y.stride() == (1, 2)          # the transpose is dense: its strides are kept
    (y * ptl.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ptl.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 3.0], [2.0, 4.0]])
    assert ptl.autograd.gradcheck(lambda t: _C._op("aten::_pin_memory")(t) * t,
                                  (ptl.randn(3, dtype=ptl.float64, requires_grad=True),))
    with ptl.no_grad():
        assert x.pin_memory().grad_fn is None
    assert not x.detach().pin_memory().requires_grad


@pytest.mark.skipif(ptl.cuda.is_available(), reason="a device's host allocator pins memory")
def test_pin_memory_op_without_a_pinned_allocator_raises():
    # no fake allocator: the op itself refuses (Tensor.pin_memory checks the device first)
    with pytest.raises(RuntimeError, match=r"^Cannot access accelerator device when none is "
                                           r"available\.$"):
        _C._op("aten::_pin_memory")(ptl.ones(2))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_pin_thread_pins_every_batch_in_order(pinned, num_workers):
    ds = ptl.utils.data.TensorDataset(ptl.arange(20.0), ptl.arange(20))
    loader = ptl.utils.data.DataLoader(ds, batch_size=3, pin_memory=True,
                                       num_workers=num_workers)
    for _ in range(2):   # a second epoch stops the first epoch's thread
        seen = []
        for x, i in loader:
            assert x.is_pinned() and i.is_pinned()
            seen += i.tolist()
        assert seen == list(range(20))
    it = iter(loader)
    next(it)             # abandoned mid-epoch: the next epoch still sees every batch
    assert sum(len(b[1]) for b in loader) == 20


class _Failing(ptl.utils.data.Dataset):
    def __len__(self):
        return 4

    def __getitem__(self, i):
        if i == 2:
            raise KeyError("bad sample 2")
        return {"x": ptl.tensor([float(i)]), "name": f"s{i}"}


def test_dataloader_pin_thread_passes_errors_and_non_tensors_through(pinned):
    it = iter(ptl.utils.data.DataLoader(_Failing(), batch_size=None, pin_memory=True))
    first = next(it)
    assert first["x"].is_pinned() and first["name"] == "s0"
    next(it)
    with pytest.raises(KeyError, match="bad sample 2"):
        next(it)
    assert next(it)["name"] == "s3"
    with pytest.raises(StopIteration):
        next(it)
