"""The DataLoader worker process (torch/utils/data/_utils/worker.py and fetch.py).

A worker owns three channels to the main process (see Note [DataLoader workers] in
dataloader.py): it receives (task index, sampler indices) on the pipe `index_conn`, answers
(task index, batch or ExceptionWrapper) on the Unix socket `result_sock` (shared-memory
segments attached as descriptors: reductions.send_with_fds), and writes its Python stack to
`stack_conn` when the main process sends it SIGUSR1 (timeout diagnostics).  It exits on None,
when the main process disappears, or when killed."""
import faulthandler
import os
import random
import signal
import sys
import traceback

from ....multiprocessing.reductions import send_with_fds

# Seconds between checks that the main process is still alive while waiting for work.
MP_STATUS_CHECK_INTERVAL = 1.0


class KeyErrorMessage(str):
    """A str whose repr is itself: KeyError(msg) would otherwise print msg's repr."""
    __slots__ = ()

    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception with its traceback text, picklable, re-raised in another process."""

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exception


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed, dataset (the
    worker's own copy).  Read-only."""
    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        items = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{self.__class__.__name__}({items})"


_worker_info = None


def get_worker_info():
    """The WorkerInfo of this DataLoader worker, or None in the main process."""
    return _worker_info


class _IterableDatasetStopIteration:
    """A worker's answer once its copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Start a new epoch (persistent workers); the worker echoes it back."""


class _MapDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        if callable(getitems):
            data = getitems(index)
        else:
            data = [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableDatasetFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset_iter = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.dataset_iter))
        data = []
        for _ in index:
            try:
                data.append(next(self.dataset_iter))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _IterableDatasetFetcher if kind == "iterable" else _MapDatasetFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _seed_worker(seed):
    """Seeds Python's random, NumPy's global RNG (when NumPy is loaded) and pytorchlite's
    generator (once it exists) so that workers draw different random streams."""
    random.seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(np.random.SeedSequence(seed).generate_state(4))
    import pytorchlite
    manual_seed = getattr(pytorchlite, "manual_seed", None)
    if manual_seed is not None:
        manual_seed(seed)


def _worker_loop(kind, dataset, index_conn, result_sock, stack_conn, auto_collation,
                 collate_fn, drop_last, base_seed, init_fn, worker_id, num_workers):
    global _worker_info
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the main process's business
    faulthandler.register(signal.SIGUSR1, file=stack_conn.fileno(), all_threads=True)
    parent = os.getppid()
    seed = base_seed + worker_id
    _seed_worker(seed)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed,
                              dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where=where)
    ended = False
    while True:
        try:
            if not index_conn.poll(MP_STATUS_CHECK_INTERVAL):
                if os.getppid() != parent:
                    break
                continue
            r = index_conn.recv()
        except (EOFError, OSError):
            break
        if r is None:
            break
        if isinstance(r, _ResumeIteration):
            ended = False
            if init_error is None:
                try:
                    fetcher = create_fetcher(kind, dataset, auto_collation, collate_fn,
                                             drop_last)
                except Exception:
                    init_error = ExceptionWrapper(where=where)
            send_with_fds(result_sock, (r, None))
            continue
        if ended:
            continue
        idx, index = r
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(index)
            except StopIteration:
                if kind != "iterable":
                    data = ExceptionWrapper(where=where)
                else:
                    data = _IterableDatasetStopIteration(worker_id)
                    ended = True
            except Exception:
                data = ExceptionWrapper(where=where)
        try:
            send_with_fds(result_sock, (idx, data))
        except OSError:   # the main process has gone
            break
        except Exception:   # the batch does not pickle
            send_with_fds(result_sock, (idx, ExceptionWrapper(where=where)))
        del data, idx, index, r
    faulthandler.unregister(signal.SIGUSR1)
