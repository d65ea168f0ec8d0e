"""pytorchlite.utils.data: datasets, samplers, collation and the DataLoader (single- and
multi-process), checked against torch.utils.data where behaviour is deterministic, and every
failure mode of workers (exception, kill, exit, timeout) with no leftovers."""
import collections
import gc
import os
import random
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
import pytorchlite.multiprocessing as mp
from pytorchlite.utils.data import (BatchSampler, ChainDataset, ConcatDataset, DataLoader,
                                    Dataset, DistributedSampler, IterableDataset,
                                    RandomSampler, SequentialSampler, StackDataset, Subset,
                                    SubsetRandomSampler, TensorDataset, WeightedRandomSampler,
                                    default_collate, default_convert, get_worker_info,
                                    random_split)
import _data_helpers as H
import golden
from helpers import ROOT, TESTS, torch

tud = torch.utils.data if torch is not None else None


def to_py(x):
    """Nested structure of tensors (either library) -> plain Python, with type tags."""
    if isinstance(x, ptl.Tensor) or (torch is not None and isinstance(x, torch.Tensor)):
        return ("tensor", str(x.dtype).split(".")[1], tuple(x.shape), x.tolist())
    if isinstance(x, bytes):
        return ("bytes", x.decode("latin-1"))
    if isinstance(x, dict):
        return {k: to_py(v) for k, v in x.items()}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__,) + tuple(to_py(v) for v in x)
    if isinstance(x, (list, tuple)):
        return type(x)(to_py(v) for v in x)
    return x


def helper_pids():
    """multiprocessing's own long-lived helpers (spawn's resource tracker, the forkserver)."""
    from multiprocessing import forkserver, resource_tracker
    return {resource_tracker._resource_tracker._pid, forkserver._forkserver._forkserver_pid}


def children():
    """Our live child processes, from /proc (not only those multiprocessing knows), less
    multiprocessing's helpers."""
    me = str(os.getpid())
    helpers = helper_pids()
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if fields[1] == me and fields[0] != "Z" and int(pid) not in helpers:
                out.append(int(pid))
    return out


@pytest.fixture
def no_leftovers():
    shm = set(os.listdir("/dev/shm"))
    yield
    gc.collect()
    deadline = time.monotonic() + 5
    while children() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert children() == [] and mp.active_children() == []
    # multiprocessing's semaphores (sem.mp-*) live in /dev/shm only between sem_open and
    # the unlink that follows it, so another process on the machine (the other half of the
    # test split) can show one briefly, longer on a loaded machine (two outlived half a
    # second in one CI run): what is still there after five seconds is a leak
    new = set(os.listdir("/dev/shm")) - shm
    deadline = time.monotonic() + 5
    while new and time.monotonic() < deadline:
        time.sleep(0.05)
        new &= set(os.listdir("/dev/shm"))
    assert new == set()


class TorchRange(tud.IterableDataset if tud is not None else object):
    """H.RangeIterable for torch's DataLoader (the reference)."""

    def __init__(self, start, end):
        self.start, self.end = start, end

    def __iter__(self):
        return H.shard_range(self.start, self.end, tud.get_worker_info())

    def __len__(self):
        return self.end - self.start


# ---- datasets ----

def test_tensor_dataset():
    x, y = ptl.arange(12).reshape(6, 2), ptl.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6 and ds[2][0].tolist() == [4, 5] and ds[-1][1].item() == 5
    with pytest.raises(AssertionError, match=re.escape("Size mismatch between tensors")):
        TensorDataset(x, ptl.arange(5))


def test_stack_dataset():
    a, b = list(range(4)), list("abcd")
    assert StackDataset(a, b)[1] == (1, "b")
    assert golden.answer(lambda: tud.StackDataset(a, b)[1]) == [1, "b"]
    assert StackDataset(x=a, y=b)[2] == {"x": 2, "y": "c"}
    assert len(StackDataset(a, b)) == 4
    for args, kwargs, msg in [
            ((a,), {"y": b}, "Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given."),
            ((a, [1]), {}, "Size mismatch between datasets"),
            ((), {"x": a, "y": [1]}, "Size mismatch between datasets"),
            ((), {}, "At least one dataset should be passed")]:
        for lib in golden.LIBRARIES:
            cls = StackDataset if lib is ptl else tud.StackDataset
            with pytest.raises(ValueError, match=re.escape(msg)):
                cls(*args, **kwargs)


def test_concat_dataset_matches_torch():
    parts = [list(range(3)), list(range(10, 15)), [], list(range(20, 22))]
    def run(ours):
        return [len(ours), ours.cumulative_sizes, [ours[i] for i in range(-10, 10)]]
    ours = ConcatDataset(parts)
    assert run(ours)[0] == 10
    assert golden.as_json(run(ours)) == golden.answer(lambda: run(tud.ConcatDataset(parts)))
    with pytest.raises(ValueError, match=re.escape(
            "absolute value of index should not exceed dataset length")):
        ours[-11]
    with pytest.raises(AssertionError, match=re.escape("datasets should not be an empty "
                                                       "iterable")):
        ConcatDataset([])
    with pytest.raises(AssertionError, match=re.escape("ConcatDataset does not support "
                                                       "IterableDataset")):
        ConcatDataset([H.RangeIterable(0, 2)])
    assert list((Subset(parts[0], [0]) + Subset(parts[1], [1]))[i] for i in range(2)) == [0, 11]


def test_chain_dataset():
    chain = ChainDataset([H.RangeIterable(0, 3), H.RangeIterable(5, 7)])
    assert list(chain) == [0, 1, 2, 5, 6] and len(chain) == 5
    assert list(H.RangeIterable(0, 2) + H.RangeIterable(3, 4)) == [0, 1, 3]
    with pytest.raises(AssertionError, match=re.escape("ChainDataset only supports "
                                                       "IterableDataset")):
        list(ChainDataset([[1, 2]]))


def test_base_dataset_errors():
    with pytest.raises(NotImplementedError, match=re.escape(
            "Subclasses of Dataset should implement __getitem__.")):
        Dataset()[0]


def test_subset():
    s = Subset(list("abcdef"), [5, 0, 2])
    assert len(s) == 3 and [s[i] for i in range(3)] == ["f", "a", "c"]
    assert s.__getitems__([2, 0]) == ["c", "f"]


@pytest.mark.parametrize("lengths", [[3, 7], [0.3, 0.7], [0.5, 0.25, 0.25], [10], [0.33, 0.67]])
def test_random_split_partitions(lengths):
    parts = random_split(range(10), lengths, generator=random.Random(0))
    assert [len(p) for p in parts] == golden.answer(lambda: [len(p) for p in tud.random_split(
        range(10), lengths, generator=torch.Generator().manual_seed(0))])
    assert sorted(x for p in parts for x in p) == list(range(10))
    again = random_split(range(10), lengths, generator=random.Random(0))
    assert [list(p) for p in parts] == [list(p) for p in again]   # reproducible


def test_random_split_errors_and_warning():
    with pytest.raises(ValueError, match=re.escape(
            "Sum of input lengths does not equal the length of the input dataset!")):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match=re.escape("Fraction at index 1 is not between 0 "
                                                   "and 1")):
        random_split(range(10), [0.6, -0.1, 0.5])
    with pytest.warns(UserWarning, match=re.escape(
            "Length of split at index 1 is 0. This might result in an empty dataset.")):
        random_split(range(2), [1.0, 0.0])


# ---- samplers ----

def test_sequential_and_batch_sampler_match_torch():
    for n, bs, drop in [(10, 3, False), (10, 3, True), (9, 3, True), (0, 2, False), (5, 8, False)]:
        ours = BatchSampler(SequentialSampler(range(n)), bs, drop)

        def theirs():
            ref = tud.BatchSampler(tud.SequentialSampler(range(n)), bs, drop)
            return [list(ref), len(ref)]
        assert [list(ours), len(ours)] == golden.answer(theirs)


def test_batch_sampler_errors():
    for bs in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match=re.escape(
                f"batch_size should be a positive integer value, but got batch_size={bs}")):
            BatchSampler(range(3), bs, False)
    with pytest.raises(ValueError, match=re.escape(
            "drop_last should be a boolean value, but got drop_last=1")):
        BatchSampler(range(3), 2, 1)


def test_random_sampler():
    perm = list(RandomSampler(range(20), generator=random.Random(1)))
    assert sorted(perm) == list(range(20))
    assert perm == list(RandomSampler(range(20), generator=random.Random(1)))
    longer = list(RandomSampler(range(5), num_samples=12))
    assert len(longer) == 12 and sorted(longer[:10]) == sorted(list(range(5)) * 2)
    drawn = list(RandomSampler(range(3), replacement=True, num_samples=50))
    assert len(drawn) == 50 and set(drawn) <= {0, 1, 2}
    assert len(RandomSampler(range(7))) == 7
    with pytest.raises(TypeError, match=re.escape(
            "replacement should be a boolean value, but got replacement=1")):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match=re.escape(
            "num_samples should be a positive integer value, but got num_samples=0")):
        RandomSampler(range(3), num_samples=0)


def test_subset_random_sampler():
    s = SubsetRandomSampler([4, 8, 15, 16], generator=random.Random(3))
    assert sorted(s) == [4, 8, 15, 16] and len(s) == 4


def test_weighted_random_sampler():
    w = [0.0, 1.0, 3.0, 0.0]
    drawn = list(WeightedRandomSampler(w, 400, generator=random.Random(0)))
    assert set(drawn) == {1, 2} and 200 < drawn.count(2) < 400
    once = list(WeightedRandomSampler(ptl.tensor([1.0, 2.0, 3.0, 4.0]), 4, replacement=False))
    assert sorted(once) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match=re.escape(
            "weights should be a 1d sequence but given weights have shape (2, 2)")):
        WeightedRandomSampler([[1, 2], [3, 4]], 2)
    with pytest.raises(ValueError, match=re.escape(
            "num_samples should be a positive integer value, but got num_samples=-1")):
        WeightedRandomSampler(w, -1)
    with pytest.raises(ValueError, match=re.escape(
            "replacement should be a boolean value, but got replacement=0")):
        WeightedRandomSampler(w, 2, replacement=0)
    msg = "cannot sample n_sample > prob_dist.size(-1) samples without replacement"
    for lib in golden.LIBRARIES:
        cls = WeightedRandomSampler if lib is ptl else tud.WeightedRandomSampler
        with pytest.raises(RuntimeError, match=re.escape(msg)):
            list(cls(w, 5, replacement=False))


@pytest.mark.parametrize("n,replicas,drop", [(10, 3, False), (10, 3, True), (9, 3, False),
                                              (2, 4, False), (11, 4, True)])
def test_distributed_sampler_matches_torch(n, replicas, drop):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)

        def theirs():
            ref = tud.DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop)
            return [list(ref), len(ref)]
        assert [list(ours), len(ours)] == golden.answer(theirs)
    shards = [list(DistributedSampler(range(n), replicas, r, seed=5, drop_last=drop))
              for r in range(replicas)]
    flat = sorted(x for s in shards for x in s)
    assert len(set(map(len, shards))) == 1
    assert set(flat) <= set(range(n)) and (drop or set(flat) == set(range(n)))


def test_distributed_sampler_epochs_and_errors():
    s = DistributedSampler(range(50), 2, 0, seed=1)
    first = list(s)
    assert list(s) == first
    s.set_epoch(1)
    assert list(s) != first
    with pytest.raises(ValueError, match=re.escape(
            "Invalid rank 2, rank should be in the interval [0, 1]")):
        DistributedSampler(range(4), 2, 2)
    # without a process group: PyTorch's error for the missing group, or for missing MPI
    from pytorchlite import distributed as dist
    if dist.is_available():
        with pytest.raises(ValueError, match=re.escape(
                "Default process group has not been initialized")):
            DistributedSampler(range(4))
    else:
        with pytest.raises(RuntimeError, match=re.escape(
                "Requires distributed package to be available")):
            DistributedSampler(range(4))


# ---- collation ----

Point = collections.namedtuple("Point", "x y")


def collate_cases(lib):
    t = lib.tensor
    return [
        [t([1.0, 2.0]), t([3.0, 4.0])],
        [t(1), t(2)],
        [1, 2, 3],
        [1.5, 2.5],
        [True, False],
        ["a", "b"],
        [b"x", b"y"],
        [{"a": 1, "b": t([1])}, {"a": 2, "b": t([2])}],
        [Point(1, 2.0), Point(3, 4.0)],
        [(1, "a"), (2, "b")],
        [[1, 2], [3, 4]],
        [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
        [np.float32(1.5), np.float32(2.5)],
        [np.int64(3), np.int64(4)],
        [np.bool_(True), np.bool_(False)],
        [(t([[1, 2]], dtype=lib.uint8), {"k": [1.0, 2.0]})] * 3,
    ]


@pytest.mark.parametrize("case", range(len(collate_cases(ptl))))
def test_default_collate_matches_torch(case):
    ours = default_collate(collate_cases(ptl)[case])
    assert golden.as_json(to_py(ours)) == golden.answer(
        lambda: to_py(tud.default_collate(collate_cases(torch)[case])))


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16, ptl.int8, ptl.bool, ptl.float64])
def test_default_collate_tensor_dtypes(dtype):
    batch = [ptl.ones(2, 3, dtype=dtype), ptl.zeros(2, 3, dtype=dtype)]
    out = default_collate(batch)
    assert out.dtype == dtype and out.shape == (2, 2, 3) and not out.is_shared()
    assert out[0].tolist() == batch[0].tolist()


def test_default_collate_errors():
    for lib in golden.LIBRARIES:
        collate = default_collate if lib is ptl else tud.default_collate
        with pytest.raises(RuntimeError, match=re.escape(
                "each element in list of batch should be of equal size")):
            collate([[1, 2], [3]])
        with pytest.raises(TypeError, match=re.escape(
                "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found <class 'object'>")):
            collate([object(), object()])
        with pytest.raises(TypeError, match=re.escape(
                "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                "lists; found <U1")):
            collate([np.array(["a"]), np.array(["b"])])


def test_default_convert_matches_torch():
    cases = [np.arange(3), np.float64(2.0), {"a": np.ones(2)}, Point(np.ones(1), 2),
             (np.zeros(2), "s"), [np.ones(1)], "text", np.array(["a"]), 5]
    for c in cases:
        assert golden.as_json(to_py(default_convert(c))) == golden.answer(
            lambda: to_py(tud.default_convert(c))), c


# ---- DataLoader, one process ----

def test_loader_matches_torch_single_process():
    x = np.arange(40, dtype=np.float32).reshape(20, 2)
    ours = TensorDataset(ptl.tensor(x), ptl.arange(20))

    def batches(loader):
        return [len(loader), [to_py(v) for v in loader]]
    for kw in [{}, {"batch_size": 6}, {"batch_size": 6, "drop_last": True},
               {"batch_size": None}, {"batch_sampler": [[3, 1], [0]]},
               {"batch_size": 4, "collate_fn": lambda b: len(b)}]:
        assert golden.as_json(batches(DataLoader(ours, **kw))) == golden.answer(
            lambda: batches(tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.arange(20)),
                                           **kw))), kw


def test_loader_shuffle_with_generator_is_a_permutation():
    ds = list(range(30))
    a = [x for b in DataLoader(ds, batch_size=4, shuffle=True,
                               generator=random.Random(7)) for x in b.tolist()]
    b = [x for b in DataLoader(ds, batch_size=4, shuffle=True,
                               generator=random.Random(7)) for x in b.tolist()]
    assert a == b and sorted(a) == ds and a != ds


def test_loader_iterable_len_and_batches():
    ds = H.RangeIterable(0, 10)
    def batches(loader):
        return [len(loader), [to_py(b) for b in loader]]
    for kw in [{"batch_size": 3}, {"batch_size": 3, "drop_last": True}, {"batch_size": None}]:
        assert golden.as_json(batches(DataLoader(ds, **kw))) == golden.answer(
            lambda: batches(tud.DataLoader(TorchRange(0, 10), **kw)))


LOADER_ERRORS = [
    ({"num_workers": -1}, ValueError, "num_workers option should be non-negative; use "
                                      "num_workers=0 to disable multiprocessing."),
    ({"timeout": -1}, ValueError, "timeout option should be non-negative"),
    ({"prefetch_factor": 2}, ValueError, "prefetch_factor option could only be specified in "
                                         "multiprocessing.let num_workers > 0 to enable "
                                         "multiprocessing, otherwise set prefetch_factor to "
                                         "None."),
    ({"num_workers": 1, "prefetch_factor": -1}, ValueError,
     "prefetch_factor option should be non-negative"),
    ({"persistent_workers": True}, ValueError, "persistent_workers option needs num_workers > 0"),
    ({"sampler": [0], "shuffle": True}, ValueError,
     "sampler option is mutually exclusive with shuffle"),
    ({"batch_sampler": [[0]], "batch_size": 2}, ValueError,
     "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
     "drop_last"),
    ({"batch_size": None, "drop_last": True}, ValueError,
     "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"),
    ({"multiprocessing_context": "fork"}, ValueError,
     "multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
     "but got num_workers=0"),
    ({"num_workers": 1, "multiprocessing_context": "bogus"}, ValueError,
     "multiprocessing_context option should specify a valid start method in"),
    ({"num_workers": 1, "multiprocessing_context": 3}, TypeError,
     "multiprocessing_context option should be a valid context object or a string "
     "specifying the start method, but got multiprocessing_context=3"),
]


@pytest.mark.parametrize("kwargs,exc,msg", LOADER_ERRORS)
def test_loader_argument_errors(kwargs, exc, msg):
    for lib in golden.LIBRARIES:
        loader = DataLoader if lib is ptl else tud.DataLoader
        with pytest.raises(exc, match=re.escape(msg)):
            loader(list(range(4)), **kwargs)


def test_loader_iterable_argument_errors_and_frozen_attributes():
    for lib in golden.LIBRARIES:
        loader = DataLoader if lib is ptl else tud.DataLoader
        for kw, msg in [({"shuffle": True}, "expected unspecified shuffle option, but got "
                                            "shuffle=True"),
                        ({"sampler": [0]}, "expected unspecified sampler option, but got "
                                           "sampler=[0]"),
                        ({"batch_sampler": [[0]]}, "expected unspecified batch_sampler option, "
                                                   "but got batch_sampler=[[0]]")]:
            with pytest.raises(ValueError, match=re.escape("DataLoader with IterableDataset: " +
                                                           msg)):
                loader(H.RangeIterable(0, 3) if loader is DataLoader else TorchRange(0, 3), **kw)
        dl = loader([1, 2])
        with pytest.raises(ValueError, match=re.escape(
                "batch_size attribute should not be set after DataLoader is initialized")):
            dl.batch_size = 3


def test_no_worker_info_in_main_process():
    assert get_worker_info() is None


# ---- DataLoader, worker processes ----

def batches(loader):
    return [(b[0].tolist(), b[1].tolist()) for b in loader]


@pytest.mark.parametrize("num_workers", [1, 3])
def test_workers_deliver_the_same_batches_in_order(num_workers, no_leftovers):
    ds = H.SquareDataset(23)
    ref = batches(DataLoader(ds, batch_size=4))
    loader = DataLoader(ds, batch_size=4, num_workers=num_workers, prefetch_factor=1)
    out = []
    for x, y in loader:
        assert x.is_shared() and y.is_shared()   # collated into shared memory by the worker
        out.append((x.tolist(), y.tolist()))
    assert out == ref


def test_workers_without_batching_and_custom_collate(no_leftovers):
    ds = H.SquareDataset(5)
    out = list(DataLoader(ds, batch_size=None, num_workers=2))
    assert [o[1] for o in out] == list(range(5)) and out[3][0].tolist() == [3.0, 9.0]
    sizes = list(DataLoader(ds, batch_size=2, num_workers=2, collate_fn=len))
    assert sizes == [2, 2, 1]


def test_out_of_order_delivery(no_leftovers):
    ds = H.DelayDataset([0.6, 0, 0, 0])
    out = [int(b[1]) for b in DataLoader(ds, batch_size=1, num_workers=2, in_order=False)]
    assert sorted(out) == [0, 1, 2, 3] and out[0] == 1 and out.index(0) > out.index(3)
    out = [int(b[1]) for b in DataLoader(ds, batch_size=1, num_workers=2)]
    assert out == [0, 1, 2, 3]


def test_worker_info_and_seeding(no_leftovers):
    ds = H.WorkerInfoDataset(8)
    rows = list(DataLoader(ds, batch_size=None, num_workers=2, generator=random.Random(5)))
    ids = {r[1] for r in rows}
    assert ids == {0, 1} and {r[2] for r in rows} == {2}
    seeds = {r[1]: r[3] for r in rows}
    assert seeds[1] == seeds[0] + 1
    assert len({r[4] for r in rows}) == 8            # different random streams per worker
    assert len({r[5] for r in rows}) == 2 and os.getpid() not in {r[5] for r in rows}
    again = list(DataLoader(ds, batch_size=None, num_workers=2, generator=random.Random(5)))
    assert [r[:5] for r in again] == [r[:5] for r in rows]   # reproducible from the generator


def test_numpy_is_seeded_per_worker(no_leftovers):
    rows = list(DataLoader(H.NumpyRandomDataset(4), batch_size=None, num_workers=2))
    firsts = {}
    for worker, value in rows:
        firsts.setdefault(worker, value)
    assert len(firsts) == 2 and firsts[0] != firsts[1]   # forked copies would agree


def _record_init(worker_id):
    info = get_worker_info()
    assert info.id == worker_id
    with pytest.raises(RuntimeError, match=re.escape(
            "Cannot assign attributes to WorkerInfo objects")):
        info.id = 5
    random.seed(1000 + worker_id)


def test_worker_init_fn(no_leftovers):
    ds = H.WorkerInfoDataset(4)
    rows = list(DataLoader(ds, batch_size=None, num_workers=2, worker_init_fn=_record_init))
    first = {r[1]: r[4] for r in rows if r[0] in (0, 1)}
    assert first == {0: random.Random(1000).random(), 1: random.Random(1001).random()}


def test_iterable_dataset_sharding(no_leftovers):
    ds = H.RangeIterable(0, 10)
    for kw in [{"num_workers": 2}, {"num_workers": 3, "drop_last": True}]:
        ours = [b.tolist() for b in DataLoader(ds, batch_size=3, **kw)]
        assert ours == golden.answer(lambda: [b.tolist() for b in tud.DataLoader(
            TorchRange(0, 10), batch_size=3, **kw)])


def test_persistent_workers_survive_epochs(no_leftovers):
    ds = H.WorkerInfoDataset(6)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    pids = [{r[5] for r in loader} for _ in range(3)]
    assert pids[0] == pids[1] == pids[2] and len(pids[0]) == 2
    it = iter(loader)
    next(it)                                  # stop early; the next epoch is complete anyway
    assert [r[0] for r in loader] == list(range(6))
    del it, loader


def test_persistent_workers_restart_after_a_dead_worker(no_leftovers):
    loader = DataLoader(H.DyingDataset(6, 3, "exit"), batch_size=None, num_workers=2,
                        persistent_workers=True)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)
    with pytest.raises(RuntimeError, match="exited unexpectedly"):
        list(loader)   # fresh workers, which fail the same way
    del loader


def test_persistent_iterable_restarts(no_leftovers):
    loader = DataLoader(H.RangeIterable(0, 6), batch_size=2, num_workers=2,
                        persistent_workers=True)
    assert [b.tolist() for b in loader] == [b.tolist() for b in loader]
    del loader


def test_worker_exception_is_reraised_with_traceback(no_leftovers):
    loader = DataLoader(H.FailingDataset(8, 5), batch_size=2, num_workers=2)
    it = iter(loader)
    assert next(it)[1].tolist() == [0, 1] and next(it)[1].tolist() == [2, 3]
    with pytest.raises(ValueError) as info:
        next(it)
    text = str(info.value)
    assert text.startswith("Caught ValueError in DataLoader worker process 0.\nOriginal "
                           "Traceback (most recent call last):\n")
    assert "_data_helpers.py" in text and text.rstrip().endswith("ValueError: bad sample 5")
    assert next(it)[1].tolist() == [6, 7]   # the iterator carries on, as in PyTorch
    with pytest.raises(StopIteration):
        next(it)
    del it


def test_worker_key_error_message_is_readable(no_leftovers):
    with pytest.raises(KeyError) as info:
        next(iter(DataLoader(H.KeyErrorDataset(2), num_workers=1)))
    assert str(info.value).startswith("Caught KeyError in DataLoader worker process 0.")


def test_worker_init_fn_error(no_leftovers):
    def bad_init(worker_id):
        raise RuntimeError("init failed")
    with pytest.raises(RuntimeError, match=re.escape("Caught RuntimeError in DataLoader worker "
                                                     "process 0.")):
        list(DataLoader(H.SquareDataset(2), num_workers=1, worker_init_fn=bad_init))


def test_unpicklable_batch_is_reported(no_leftovers):
    with pytest.raises(Exception, match="Caught .* in DataLoader worker process 0"):
        list(DataLoader(H.SquareDataset(2), num_workers=1, collate_fn=lambda b: lambda: 0))


@pytest.mark.parametrize("how", ["kill", "exit"])
def test_dead_worker_is_reported_promptly(how, no_leftovers):
    loader = DataLoader(H.DyingDataset(12, 5, how), batch_size=2, num_workers=2)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        list(loader)
    assert time.monotonic() - start < 10
    if how == "kill":
        assert re.fullmatch(r"DataLoader worker \(pid \d+\) is killed by signal: Killed\.",
                            str(info.value))
    else:
        assert re.fullmatch(r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly",
                            str(info.value))


def test_timeout_reports_the_stuck_worker_stack(no_leftovers):
    loader = DataLoader(H.SlowDataset(8, 2, 60), batch_size=2, num_workers=2, timeout=1)
    start = time.monotonic()
    with pytest.raises(RuntimeError, match=re.escape("DataLoader timed out after 1 seconds")) \
            as info:
        list(loader)
    assert time.monotonic() - start < 15
    text = str(info.value)
    assert "Python stack of DataLoader worker 1" in text and "stuck_in_here" in text


def test_break_and_del_leave_nothing(no_leftovers):
    loader = DataLoader(H.SquareDataset(100), batch_size=2, num_workers=2)
    for i, _ in enumerate(loader):
        if i == 3:
            break
    del loader, _


def test_generator_abandoned_mid_epoch_is_collected(no_leftovers):
    it = iter(DataLoader(H.SquareDataset(100), batch_size=2, num_workers=2))
    next(it)
    cycle = [it]
    cycle.append(cycle)   # only the cyclic GC can free it now
    del it, cycle


@pytest.mark.parametrize("method", [
    pytest.param(m, marks=pytest.mark.skipif(m not in mp.get_all_start_methods(),
                                             reason=f"{m} is not available on this platform"))
    for m in ("spawn", "forkserver")])
def test_start_methods_with_module_dataset(method, no_leftovers):
    loader = DataLoader(H.SquareDataset(7), batch_size=3, num_workers=2,
                        multiprocessing_context=method)
    assert batches(loader) == batches(DataLoader(H.SquareDataset(7), batch_size=3))


def test_spawn_worker_exception(no_leftovers):
    with pytest.raises(ValueError, match=re.escape("Caught ValueError in DataLoader worker "
                                                   "process 1.")):
        list(DataLoader(H.FailingDataset(4, 1), num_workers=2, multiprocessing_context="spawn"))


SCRIPT = """
import os, sys
sys.path[:0] = [{root!r}, {tests!r}]
from pytorchlite.utils.data import DataLoader
import _data_helpers as H
if __name__ == "__main__":
    it = iter(DataLoader(H.WorkerInfoDataset(50), batch_size=None, num_workers=2))
    pids = {{next(it)[5] for _ in range(6)}}
    print(" ".join(map(str, pids)), flush=True)
    {ending}
"""


@pytest.mark.parametrize("ending", ["pass", "sys.exit(0)", "raise SystemExit(3)"])
def test_interpreter_exit_mid_epoch_leaves_nothing(ending, no_leftovers):
    code = SCRIPT.format(root=ROOT, tests=TESTS, ending=ending)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.05)
    assert not any(os.path.exists(f"/proc/{p}") for p in pids)


def test_randomness_follows_manual_seed_and_generators():
    """As in PyTorch: manual_seed reproduces shuffling and splits; a Generator can be passed."""
    ptl.manual_seed(0)
    first = (list(RandomSampler(range(50))), [list(s) for s in random_split(range(9), [3, 6])],
             [b.tolist() for b in DataLoader(ptl.arange(12), batch_size=4, shuffle=True)])
    ptl.manual_seed(0)
    again = (list(RandomSampler(range(50))), [list(s) for s in random_split(range(9), [3, 6])],
             [b.tolist() for b in DataLoader(ptl.arange(12), batch_size=4, shuffle=True)])
    assert first == again
    assert sorted(first[0]) == list(range(50)) and first[0] != list(range(50))
    g = ptl.Generator().manual_seed(7)
    a = list(SubsetRandomSampler([3, 1, 4, 1, 5, 9], generator=g))
    b = list(WeightedRandomSampler([1.0, 2.0, 3.0], 10, generator=g))
    g.manual_seed(7)
    assert list(SubsetRandomSampler([3, 1, 4, 1, 5, 9], generator=g)) == a
    assert list(WeightedRandomSampler([1.0, 2.0, 3.0], 10, generator=g)) == b
    g.manual_seed(7)
    loaded = [x.item() for x in DataLoader(ptl.arange(8), shuffle=True, generator=g)]
    g.manual_seed(7)
    assert [x.item() for x in DataLoader(ptl.arange(8), shuffle=True, generator=g)] == loaded
