"""The DataLoader's pin_memory=True (torch/utils/data/_utils/pin_memory.py): with worker
processes, a thread that takes each batch from the loader's iterator, copies its tensors into
pinned host memory and hands it on (without workers the batches are pinned as they are
loaded), so that `batch.to("cuda", non_blocking=True)` in the training loop is an
asynchronous copy (Note [Asynchronous copies] in src/cuda/register_cuda.c) and pinning
overlaps the step.

PyTorch's thread reads the workers' result queue; here it reads the loader's iterator, which
only that thread then touches.  Batches keep their order, and an
exception raised while loading reaches the caller at its place in the sequence."""
import collections
import queue
import threading

_POLL_S = 0.1   # how often a blocked pin thread looks whether it should stop


def pin_memory(data, device=None):
    """data with every tensor in it pinned, through mappings, namedtuples, tuples, lists and
    objects with a pin_memory() method, as PyTorch's."""
    from .... import Tensor
    if isinstance(data, Tensor):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, collections.abc.Mapping):
        pinned = {k: pin_memory(v, device) for k, v in data.items()}
        try:
            return type(data)(pinned)
        except TypeError:   # a mapping type that cannot be built from a dict
            return pinned
    if isinstance(data, tuple) and hasattr(data, "_fields"):   # namedtuple
        return type(data)(*(pin_memory(v, device) for v in data))
    if isinstance(data, tuple):
        return tuple(pin_memory(v, device) for v in data)
    if isinstance(data, collections.abc.Sequence):
        pinned = [pin_memory(v, device) for v in data]
        try:
            return type(data)(pinned)
        except TypeError:
            return pinned
    if hasattr(data, "pin_memory"):
        return data.pin_memory()
    return data


class _Raised:
    """An exception from the loader's iterator, carried through the queue to the caller."""

    def __init__(self, exc):
        self.exc = exc


def _put(q, done, item):
    """Puts item unless done is set first; False when it was not put."""
    while not done.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _pin_memory_loop(source, device, q, done):
    """The pin thread (it holds no reference to its PinMemoryIter, so dropping that ends
    it)."""
    while not done.is_set():
        try:
            item = pin_memory(next(source), device)
        except StopIteration:
            _put(q, done, StopIteration)
            return
        except BaseException as e:   # noqa: B902 -- handed to the caller
            item = _Raised(e)
        if not _put(q, done, item):
            return


class PinMemoryIter:
    """Iterates over `source` (a worker-process DataLoader iterator) with its batches pinned
    by a daemon thread that runs up to `prefetch` batches ahead.  stop() ends the thread
    after the batch it is loading; a new epoch stops the previous epoch's thread first (the
    loader's persistent workers serve one reader at a time)."""

    def __init__(self, source, prefetch, device=None):
        self._queue = queue.Queue(maxsize=max(1, prefetch))
        self._done = threading.Event()
        self._thread = threading.Thread(target=_pin_memory_loop, name="pin_memory",
                                        args=(source, device, self._queue, self._done),
                                        daemon=True)
        self._finished = False
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._finished:
            raise StopIteration
        item = self._queue.get()
        if item is StopIteration:
            self._finished = True
            raise StopIteration
        if isinstance(item, _Raised):
            raise item.exc
        return item

    def stop(self):
        """Ends the thread (after the batch it is loading) and waits for it."""
        self._done.set()
        self._thread.join()

    def __del__(self):
        self._done.set()


class PinnedBatches:
    """A single-process DataLoader iterator's batches pinned as they are loaded, in the
    caller's thread (PyTorch has no pin thread without workers)."""

    def __init__(self, source, device=None):
        self._source = source
        self._device = device

    def __iter__(self):
        return self

    def __next__(self):
        return pin_memory(next(self._source), self._device)
