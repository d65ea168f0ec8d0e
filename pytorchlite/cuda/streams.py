"""torch.cuda.Stream and torch.cuda.Event (torch/cuda/streams.py) over the handles of
src/python/cuda_stream.c: a stream is its cudaStream_t (0: the legacy default stream) and
device index, an event its cudaEvent_t, created at the first record as PyTorch's.

In a build without CUDA, Stream() and Event() raise PyTorch's CPU-only errors; in a CUDA
build on a machine without a device, Stream() raises the no-device error as PyTorch's CUDA
build does, and an Event can be made and queried but not recorded (Note [Current stream] in
src/cuda/stream_state.c)."""
from .. import _C

__all__ = ["Stream", "ExternalStream", "Event"]

_CUDA_DEVICE_TYPE = 1   # c10::DeviceType::CUDA, Stream.device_type
# PTL_CUDA_EVENT_* in src/cuda/stream_api.h
_EVENT_TIMING, _EVENT_BLOCKING, _EVENT_INTERPROCESS = 1, 2, 4


def _cuda():
    from .. import cuda
    return cuda


class Stream:
    """A CUDA stream: work queued on it runs in order, independently of other streams.
    device (None or negative: the current one) and priority (lower is higher; clamped into
    the device's range) as PyTorch's.  Streams come from a per-device pool of 32 per
    priority, so two Stream() objects may share a cudaStream_t, as in PyTorch."""

    __slots__ = ("cuda_stream", "device_index", "device_type")

    def __new__(cls, device=None, priority=0, **kwargs):
        cuda = _cuda()
        if not cuda.is_built():
            raise RuntimeError("torch.cuda.Stream requires CUDA support")
        self = super().__new__(cls)
        if "stream_id" in kwargs and "device_index" in kwargs:
            self.cuda_stream = kwargs["stream_id"]
            self.device_index = kwargs["device_index"]
        else:
            cuda._lazy_init()
            with cuda.device(device):
                self.device_index = cuda.current_device()
                self.cuda_stream = _C._cuda_stream_from_pool(self.device_index, priority)
        self.device_type = _CUDA_DEVICE_TYPE
        return self

    @property
    def stream_id(self):
        return self.cuda_stream

    @property
    def device(self):
        return _C.device("cuda", self.device_index)

    @property
    def priority(self):
        return _C._cuda_stream_priority(self.cuda_stream)

    @staticmethod
    def priority_range():
        """(least, greatest) priority of the current device's streams."""
        _cuda()._lazy_init()
        return _C._cuda_stream_priority_range()

    def wait_event(self, event):
        """Work queued on this stream from now on waits for event."""
        event.wait(self)

    def wait_stream(self, stream):
        """Work queued on this stream from now on waits for the work queued on stream so
        far (without blocking the host)."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records event (a new one when None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def query(self):
        """True when all work queued on this stream has completed."""
        return _C._cuda_stream_query(self.cuda_stream)

    def synchronize(self):
        """Waits for all work queued on this stream (cudaStreamSynchronize)."""
        _C._cuda_stream_synchronize(self.cuda_stream)

    def __eq__(self, o):
        if isinstance(o, Stream):
            return (self.cuda_stream, self.device_index) == (o.cuda_stream, o.device_index)
        return False

    def __hash__(self):
        return hash((self.cuda_stream, self.device))

    def __repr__(self):
        return f"<torch.cuda.Stream device={self.device} cuda_stream={self.cuda_stream:#x}>"

    def __cuda_stream__(self):
        """The CUDA stream protocol: (version, handle)."""
        return (0, self.cuda_stream)


class ExternalStream(Stream):
    """A stream created elsewhere (stream_ptr, its cudaStream_t), whose life the caller
    keeps."""

    __slots__ = ()

    def __new__(cls, stream_ptr, device=None, **kwargs):
        cuda = _cuda()
        cuda._lazy_init()
        with cuda.device(device):
            return super().__new__(cls, stream_id=stream_ptr, device_index=cuda.current_device())


class Event:
    """A CUDA event: a marker in a stream, to wait for, synchronise on, or time
    (enable_timing).  The cudaEvent_t is created at the first record, on the recording
    stream's device."""

    __slots__ = ("cuda_event", "_device_index", "_flags", "__weakref__")

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False, external=False):
        if not _cuda().is_built():
            raise RuntimeError("Tried to instantiate dummy base class Event")
        self = super().__new__(cls)
        self.cuda_event = 0
        self._device_index = None
        self._flags = ((_EVENT_TIMING if enable_timing else 0) |
                       (_EVENT_BLOCKING if blocking else 0) |
                       (_EVENT_INTERPROCESS if interprocess else 0))
        return self

    @property
    def device(self):
        return None if self._device_index is None else _C.device("cuda", self._device_index)

    def record(self, stream=None):
        """Records the event on stream (the current stream when None)."""
        if stream is None:
            stream = _cuda().current_stream()
        if self.cuda_event == 0:
            self.cuda_event = _C._cuda_event_create(stream.device_index, self._flags)
            self._device_index = stream.device_index
        elif self._device_index != stream.device_index:
            raise RuntimeError(f"Event device {self.device} does not match recording stream's "
                               f"device {stream.device}.")
        _C._cuda_event_record(self.cuda_event, stream.cuda_stream)

    def wait(self, stream=None):
        """Work queued on stream (the current one when None) from now on waits for this
        event; an event never recorded is no wait."""
        if stream is None:
            stream = _cuda().current_stream()
        if self.cuda_event != 0:
            _C._cuda_stream_wait_event(stream.cuda_stream, self.cuda_event)

    def query(self):
        """True when the work the event captured has completed (or it was never
        recorded)."""
        return self.cuda_event == 0 or _C._cuda_event_query(self.cuda_event)

    def elapsed_time(self, end_event):
        """Milliseconds from this event to end_event, both recorded and completed, both
        created with enable_timing=True."""
        if not (self._flags & end_event._flags & _EVENT_TIMING):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self.cuda_event == 0 or end_event.cuda_event == 0:
            raise ValueError("Both events must be recorded before calculating elapsed time.")
        if not (self.query() and end_event.query()):
            raise RuntimeError("Both events must be completed before calculating elapsed "
                               "time.")
        return _C._cuda_event_elapsed_time(self.cuda_event, end_event.cuda_event)

    def synchronize(self):
        """Waits on the host for the work the event captured."""
        if self.cuda_event != 0:
            _C._cuda_event_synchronize(self.cuda_event)

    def __del__(self):
        if getattr(self, "cuda_event", 0):
            _C._cuda_event_destroy(self.cuda_event)

    def __repr__(self):
        if self.cuda_event:
            return f"<torch.cuda.Event {self.cuda_event:#x}>"
        return "<torch.cuda.Event uninitialized>"
