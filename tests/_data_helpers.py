"""Datasets for the DataLoader and multiprocessing tests, in an importable module so that
spawn and forkserver workers (which re-import them by name) can find them."""
import os
import random
import signal
import time

import pytorchlite as torch
from pytorchlite.utils.data import Dataset, IterableDataset, get_worker_info


class SquareDataset(Dataset):
    """Sample i is (tensor([i, i*i]) as float32, i)."""

    def __init__(self, n):
        self.n = n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return torch.tensor([float(i), float(i * i)]), i

    def __len__(self):
        return self.n


class FailingDataset(SquareDataset):
    """Raises ValueError at index `bad`."""

    def __init__(self, n, bad):
        super().__init__(n)
        self.bad = bad

    def __getitem__(self, i):
        if i == self.bad:
            raise ValueError(f"bad sample {i}")
        return super().__getitem__(i)


class KeyErrorDataset(SquareDataset):
    def __getitem__(self, i):
        raise KeyError("missing")


class DyingDataset(SquareDataset):
    """At index `bad` the worker kills itself with SIGKILL (how="kill") or os._exit(3)."""

    def __init__(self, n, bad, how):
        super().__init__(n)
        self.bad, self.how = bad, how

    def __getitem__(self, i):
        if i == self.bad and get_worker_info() is not None:
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            os._exit(3)
        return super().__getitem__(i)


def stuck_in_here(seconds):
    time.sleep(seconds)


class SlowDataset(SquareDataset):
    """Sleeps `delay` seconds at index `slow` (the worker looks stuck)."""

    def __init__(self, n, slow, delay):
        super().__init__(n)
        self.slow, self.delay = slow, delay

    def __getitem__(self, i):
        if i == self.slow:
            stuck_in_here(self.delay)
        return super().__getitem__(i)


class DelayDataset(SquareDataset):
    """Sample i takes delays[i] seconds (for out-of-order delivery)."""

    def __init__(self, delays):
        super().__init__(len(delays))
        self.delays = delays

    def __getitem__(self, i):
        time.sleep(self.delays[i])
        return super().__getitem__(i)


class WorkerInfoDataset(SquareDataset):
    """Sample i is (i, worker id, num_workers, worker seed, random.random(), pid)."""

    def __getitem__(self, i):
        info = get_worker_info()
        return i, info.id, info.num_workers, info.seed, random.random(), os.getpid()


def shard_range(start, end, info):
    """An iterator over range(start, end), or over worker `info`'s share of it (the worker
    info of either library; None in the main process)."""
    if info is None:
        return iter(range(start, end))
    per = -(-(end - start) // info.num_workers)
    lo = start + info.id * per
    return iter(range(lo, min(lo + per, end)))


class RangeIterable(IterableDataset):
    """range(start, end), sharded between workers by get_worker_info()."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return shard_range(self.start, self.end, get_worker_info())

    def __len__(self):
        return self.end - self.start


def fill_and_send(q, value):
    """Process target: a shared tensor of 4 float32 set to value, sent on q."""
    q.put(torch.full((4,), float(value)))


def send_and_die(q):
    """Process target: puts a tensor on q, waits until it is written, then SIGKILLs itself."""
    q.put(torch.ones(4))
    q.close()
    q.join_thread()
    os.kill(os.getpid(), signal.SIGKILL)


def add_one_in_place(t, done):
    """Process target: t += 1 (t arrived through shared memory), then signal done."""
    t.add_(1)
    done.put(True)


def echo(q_in, q_out):
    """Process target: sends back what it receives, until None."""
    while True:
        x = q_in.get()
        if x is None:
            return
        q_out.put(x)


def cuda_after_fork(q):
    """Process target: reports how CUDA initialisation fails in this (forked) child."""
    try:
        torch.cuda.init()
        q.put(("ok", ""))
    except RuntimeError as e:
        q.put((type(e).__name__, str(e)))


def square(x):
    return x * x


class NumpyRandomDataset(SquareDataset):
    """Sample i is (worker id, a draw from NumPy's global RNG)."""

    def __getitem__(self, i):
        import numpy as np
        return get_worker_info().id, float(np.random.random())
