"""DataLoader (torch/utils/data/dataloader.py): batches from a dataset, in this process or in
worker processes.

Note [DataLoader workers]
~~~~~~~~~~~~~~~~~~~~~~~~~
With num_workers > 0 the iterator starts that many processes (fork, spawn or forkserver).
Each worker gets three channels: a task pipe, a result socket, and a stack pipe its
faulthandler writes to on SIGUSR1.  Per-worker result channels keep each worker's answers
in order and need no lock.  Batches are pickled with multiprocessing's ForkingPickler, so
their tensors -- collated into shared memory -- travel as segments, whose descriptors ride
on the message itself (SCM_RIGHTS, reductions.send_with_fds): the kernel keeps them alive
in flight, even if the worker dies right after sending (Note [Shared memory lifetime]).
- Scheduling: at most prefetch_factor tasks per worker are outstanding.  Tasks go round-robin
  to the workers still active (in_order=False: to the least busy one).  In order, results
  that arrive early wait in a buffer keyed by task index; out of order, the first one ready
  is returned.
- Waiting: the main process blocks in multiprocessing.connection.wait on the result pipes
  *and* the workers' process sentinels, so a worker's death (signal, os._exit) wakes it at
  once and becomes "DataLoader worker (pid N) is killed by signal: Killed." or
  "DataLoader worker (pid(s) N) exited unexpectedly".  With timeout > 0 the wait is bounded;
  on expiry the busy workers get SIGUSR1 and their Python stacks join the error message.
- Errors inside a worker come back as ExceptionWrapper and are re-raised with the worker's
  traceback; the iterator stays usable, as in PyTorch.
- Shutdown (end of epoch, break + del, gc, a fatal error, interpreter exit through the
  daemon flag): send None to every worker, drain their result pipes so none blocks in a
  write, join with a deadline, then terminate and kill the stragglers.  Segments need no
  cleanup: their names are unlinked at birth.
- persistent_workers keeps the iterator (and workers) across epochs; a new epoch sends
  _ResumeIteration to each worker and discards stale results until each echoes it."""
import itertools
import math
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
import sys
import time
import warnings

from ...autograd.profiler import record_function
from ...multiprocessing.reductions import recv_with_fds
from . import _random
from ._utils.collate import default_collate, default_convert
from ._utils.pin_memory import PinMemoryIter, PinnedBatches
from ._utils.worker import (ExceptionWrapper, _IterableDatasetStopIteration, _ResumeIteration,
                            _worker_loop, create_fetcher)
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

# How long shutdown waits for workers to exit by themselves before terminating them.
_SHUTDOWN_TIMEOUT = 5.0
# The same after a timeout or a dead worker, when the others may well be stuck.
_ERROR_GRACE = 0.2


def _discard(sock):
    """Reads and drops what a worker sent (closing attached descriptors), so that a worker
    blocked writing can move on to its exit; False at EOF."""
    try:
        data, anc, _, _ = sock.recvmsg(1 << 16, socket.CMSG_SPACE(4 * 256))
    except OSError:
        return False
    for level, kind, fds in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            for i in range(0, len(fds) - len(fds) % 4, 4):
                os.close(int.from_bytes(fds[i:i + 4], sys.byteorder))
    return bool(data)


class _InfiniteConstantSampler(Sampler):
    """The index sampler of an IterableDataset: None forever (workers ignore indices)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterates over batches of dataset.  Arguments as in torch.utils.data.DataLoader;
    generator is a random.Random (pytorchlite has no Generator yet)."""
    __initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None,
                 num_workers=0, collate_fn=None, pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None, generator=None, *,
                 prefetch_factor=None, persistent_workers=False, pin_memory_device="",
                 in_order=True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in "
                             "multiprocessing.let num_workers > 0 to enable multiprocessing, "
                             "otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            self._dataset_kind = "iterable"
            if shuffle not in (False, None):
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = "map"
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None:
            if self._dataset_kind == "iterable":
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if batch_sampler is not None else default_convert
        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._pin_memory_warned = False
        self._pin_iter = None
        self.__initialized = True

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, context):
        if context is not None:
            if self.num_workers == 0:
                raise ValueError("multiprocessing_context can only be used with multi-process "
                                 "loading (num_workers > 0), but got "
                                 f"num_workers={self.num_workers}")
            if isinstance(context, str):
                valid = multiprocessing.get_all_start_methods()
                if context not in valid:
                    raise ValueError("multiprocessing_context option should specify a valid "
                                     f"start method in {valid!r}, but got "
                                     f"multiprocessing_context={context!r}")
                context = multiprocessing.get_context(context)
            if not isinstance(context, multiprocessing.context.BaseContext):
                raise TypeError("multiprocessing_context option should be a valid context "
                                "object or a string specifying the start method, but got "
                                f"multiprocessing_context={context}")
        self.__multiprocessing_context = context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in ("batch_size", "batch_sampler", "sampler",
                                           "drop_last", "dataset", "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        """The batches; with pin_memory=True and an accelerator, pinned (by a pin thread with
        workers: _utils/pin_memory.py), without one unpinned after PyTorch's warning."""
        pin = False
        if self.pin_memory:
            from ... import cuda
            if self.pin_memory_device:
                warnings.warn("pin_memory_device is deprecated, the current accelerator will "
                              "be used as the device,ignore pin_memory_device="
                              f"'{self.pin_memory_device}'.", stacklevel=2)
            pin = cuda.is_available()
            if not pin and not self._pin_memory_warned:
                self._pin_memory_warned = True
                warnings.warn("'pin_memory' argument is set as true but no accelerator is "
                              "found, then device pinned memory won't be used.", stacklevel=2)
        if self._pin_iter is not None:   # the last epoch's pin thread reads no further
            self._pin_iter.stop()
            self._pin_iter = None
        if self.num_workers == 0:
            batches = _SingleProcessDataLoaderIter(self)
        elif self.persistent_workers:
            if self._iterator is None or self._iterator._shutdown:   # first, or after a failure
                self._iterator = _MultiProcessingDataLoaderIter(self)
            else:
                self._iterator._reset(self)
            batches = self._iterator
        else:
            batches = _MultiProcessingDataLoaderIter(self)
        if pin and self.num_workers == 0:
            batches = PinnedBatches(batches, "cuda")
        elif pin:
            batches = self._pin_iter = PinMemoryIter(
                batches, (self.prefetch_factor or 2) * self.num_workers, "cuda")
        return batches

    def __len__(self):
        if self._dataset_kind == "iterable":
            length = len(self.dataset)
            if self.batch_size is not None:
                if self.drop_last:
                    return length // self.batch_size
                return math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter:
    def __init__(self, loader):
        self._sampler_iter = iter(loader._index_sampler)
        self._fetcher = create_fetcher(loader._dataset_kind, loader.dataset,
                                       loader._auto_collation, loader.collate_fn,
                                       loader.drop_last)

    def __iter__(self):
        return self

    def __next__(self):
        with record_function("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"):
            return self._fetcher.fetch(next(self._sampler_iter))


class _MultiProcessingDataLoaderIter:
    """See Note [DataLoader workers]."""

    def __init__(self, loader):
        self._timeout = loader.timeout
        self._in_order = loader.in_order
        self._prefetch = max(1, loader.prefetch_factor) * loader.num_workers
        self._persistent = loader.persistent_workers
        self._shutdown = True   # until the workers exist
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        base_seed = _random.draw_seed(loader.generator)
        n = loader.num_workers
        self._workers, self._index_conns, self._result_conns, self._stack_conns = [], [], [], []
        try:
            for worker_id in range(n):
                index_r, index_w = ctx.Pipe(duplex=False)
                result_r, result_w = socket.socketpair()
                stack_r, stack_w = ctx.Pipe(duplex=False)
                w = ctx.Process(target=_worker_loop, daemon=True, args=(
                    loader._dataset_kind, loader.dataset, index_r, result_w, stack_w,
                    loader._auto_collation, loader.collate_fn, loader.drop_last, base_seed,
                    loader.worker_init_fn, worker_id, n))
                self._index_conns.append(index_w)
                self._result_conns.append(result_r)
                self._stack_conns.append(stack_r)
                try:
                    w.start()
                finally:
                    for end in (index_r, result_w, stack_w):
                        end.close()
                self._workers.append(w)
                self._shutdown = False
        except BaseException:
            self._shutdown = False
            self._shutdown_workers()
            raise
        self._shutdown = False
        self._reset(loader, first=True)

    def __iter__(self):
        return self

    # ---- scheduling ----
    def _reset(self, loader, first=False):
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._tasks = {}        # task index -> worker id, while outstanding
        self._done = {}         # task index -> (worker id, data), received early (in order)
        self._outstanding = [0] * len(self._workers)
        self._active = [True] * len(self._workers)
        self._next_worker = itertools.cycle(range(len(self._workers)))
        if not first:
            for conn in self._index_conns:
                conn.send(_ResumeIteration())
            waiting = set(range(len(self._workers)))
            while waiting:
                worker_id, (idx, _) = self._get_data()
                if isinstance(idx, _ResumeIteration):
                    waiting.discard(worker_id)
        for _ in range(self._prefetch):
            if not self._try_put_index():
                break

    def _try_put_index(self):
        if not any(self._active):
            return False
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return False
        if self._in_order:
            worker_id = next(w for w in self._next_worker if self._active[w])
        else:
            worker_id = min((w for w in range(len(self._workers)) if self._active[w]),
                            key=self._outstanding.__getitem__)
        self._index_conns[worker_id].send((self._send_idx, index))
        self._tasks[self._send_idx] = worker_id
        self._outstanding[worker_id] += 1
        self._send_idx += 1
        return True

    def __next__(self):
        with record_function("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"):
            return self._next_data()

    def _next_data(self):
        while True:
            if self._in_order:
                # Skip tasks dropped with a worker whose iterable dataset ran out.
                while (self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._done and
                       self._rcvd_idx not in self._tasks):
                    self._rcvd_idx += 1
                if self._rcvd_idx in self._done:
                    _, data = self._done.pop(self._rcvd_idx)
                    self._rcvd_idx += 1
                    return self._process(data)
                if self._rcvd_idx >= self._send_idx:
                    self._end_epoch()
            elif not self._tasks:
                self._end_epoch()
            worker_id, (idx, data) = self._get_data()
            if isinstance(idx, _ResumeIteration) or idx not in self._tasks:
                continue
            del self._tasks[idx]
            self._outstanding[worker_id] -= 1
            if isinstance(data, _IterableDatasetStopIteration):
                self._active[worker_id] = False
                for i in [i for i, w in self._tasks.items() if w == worker_id]:
                    del self._tasks[i]
                self._outstanding[worker_id] = 0
                self._try_put_index()
                continue
            if self._in_order and idx != self._rcvd_idx:
                self._done[idx] = (worker_id, data)
                continue
            if self._in_order:
                self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _end_epoch(self):
        if not self._persistent:
            self._shutdown_workers()
        raise StopIteration

    # ---- waiting ----
    def _get_data(self):
        """(worker id, (task index, data)) of the next result; raises on a dead worker or on
        timeout."""
        if self._shutdown:
            raise StopIteration
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        readers = {conn: i for i, conn in enumerate(self._result_conns)}
        sentinels = {w.sentinel: i for i, w in enumerate(self._workers)}
        while True:
            wait_for = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready = multiprocessing.connection.wait(list(readers) + list(sentinels), wait_for)
            for obj in ready:
                if obj in readers:
                    try:
                        return readers[obj], recv_with_fds(obj)
                    except (EOFError, ConnectionError):
                        pass   # the worker died; its sentinel tells how
            if ready:   # a sentinel, or a result pipe at EOF
                self._raise_dead_workers()
            if deadline is not None and time.monotonic() >= deadline:
                self._raise_timeout()

    def _raise_dead_workers(self):
        dead = [w for w in self._workers if not w.is_alive()]
        if not dead:
            return
        for w in dead:
            w.join(1.0)
        codes = [(w.pid, w.exitcode) for w in dead]
        self._shutdown_workers(grace=_ERROR_GRACE)
        for pid, code in codes:
            if code is not None and code < 0:
                raise RuntimeError(f"DataLoader worker (pid {pid}) is killed by signal: "
                                   f"{signal.strsignal(-code)}.")
        pids = ", ".join(str(pid) for pid, _ in codes)
        raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")

    def _raise_timeout(self):
        busy = sorted(set(self._tasks.values())) or list(range(len(self._workers)))
        stacks = [f"\nPython stack of DataLoader worker {worker_id} "
                  f"(pid {self._workers[worker_id].pid}):\n{self._worker_stack(worker_id)}"
                  for worker_id in busy]
        self._shutdown_workers(grace=_ERROR_GRACE)
        raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds" +
                           "".join(stacks))

    def _worker_stack(self, worker_id):
        """What faulthandler in the worker writes on SIGUSR1 (empty if it cannot answer)."""
        conn = self._stack_conns[worker_id]
        try:
            os.kill(self._workers[worker_id].pid, signal.SIGUSR1)
        except OSError:
            return "<the worker is gone>\n"
        chunks = []
        # faulthandler writes from the signal handler in a few small writes: read until the
        # pipe stays quiet briefly.
        while conn.poll(1.0 if not chunks else 0.1):
            chunks.append(os.read(conn.fileno(), 65536))
        return b"".join(chunks).decode("utf-8", "replace") or "<no answer>\n"

    # ---- shutdown ----
    def _shutdown_workers(self, grace=_SHUTDOWN_TIMEOUT):
        """See Note [DataLoader workers]; safe to call more than once.  Workers get `grace`
        seconds to exit by themselves."""
        if self._shutdown:
            return
        self._shutdown = True
        for conn in self._index_conns:
            try:
                conn.send(None)
            except OSError:
                pass
        deadline = time.monotonic() + grace
        readers = list(self._result_conns)
        alive = [w for w in self._workers if w.is_alive()]
        while alive and time.monotonic() < deadline:
            sentinels = [w.sentinel for w in alive]
            for obj in multiprocessing.connection.wait(readers + sentinels, 0.1):
                if obj in readers and not _discard(obj):
                    readers.remove(obj)
            alive = [w for w in alive if w.is_alive()]
        for w in alive:
            w.terminate()
            w.join(1.0)
            if w.is_alive():
                w.kill()
        for w in self._workers:
            w.join()
            w.close()
        for conn in self._index_conns + self._result_conns + self._stack_conns:
            conn.close()
        self._workers = []

    def __del__(self):
        if not getattr(self, "_shutdown", True):
            self._shutdown_workers()
