"""The thread pool's polling between parallel ops (Note [Spin before sleeping] in
src/c10/parallel.c), seen through _C._pool_counts(): a burst of ops keeps the workers polling,
an op that comes alone polls briefly, an idle process lets its workers sleep, and a worker
that loses its CPU to another thread sleeps instead of polling.  The split of the work never
depends on the polling, so every result is NumPy's, exactly."""
import os
import subprocess
import sys
import time

import numpy as np

import pytorchlite as ptl
from pytorchlite import _C

N = 1 << 17          # four grains of PTL_GRAIN_SIZE: split in two on two threads


def _delta(before):
    now = _C._pool_counts()
    return {k: now[k] - before[k] for k in now}


def _with_threads(n, fn):
    old = ptl.get_num_threads()
    ptl.set_num_threads(n)
    try:
        return fn()
    finally:
        ptl.set_num_threads(old)


def test_pool_counts_one_job_per_split_op_and_none_inline():
    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    x = ptl.tensor(a)

    def run():
        c = _C._pool_counts()
        assert set(c) == {"jobs", "long_spins", "worker_sleeps", "caller_sleeps",
                          "chunks_by_caller", "spins_lost", "workers", "workers_asleep"}
        before = _C._pool_counts()
        np.testing.assert_array_equal(ptl.relu(x).numpy(), np.maximum(a, 0))
        split = _delta(before)["jobs"]
        before = _C._pool_counts()
        np.testing.assert_array_equal(ptl.relu(x[:1000]).numpy(), np.maximum(a[:1000], 0))
        return split, _delta(before)["jobs"]
    assert _with_threads(2, run) == (1, 0)
    assert _with_threads(1, run) == (0, 0)


def test_burst_polls_long_and_a_lone_op_briefly():
    a = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    x = ptl.tensor(a)

    def run():
        ptl.relu(x)
        time.sleep(0.02)               # longer than SPIN_LONG_NS: the next op comes alone
        before = _C._pool_counts()
        np.testing.assert_array_equal(ptl.relu(x).numpy(), np.maximum(a, 0))
        lone = _delta(before)
        before = _C._pool_counts()
        ys = [ptl.relu(x) for _ in range(50)]
        burst = _delta(before)
        for y in ys:
            np.testing.assert_array_equal(y.numpy(), np.maximum(a, 0))
        return lone, burst
    lone, burst = _with_threads(2, run)
    assert lone["jobs"] == 1 and lone["long_spins"] == 0
    # back to back, each op starts well within 5 ms of the last one's end (a loaded host may
    # deschedule the loop between two of them, hence not all 50)
    assert burst["jobs"] == 50 and burst["long_spins"] >= 10


def test_idle_workers_go_to_sleep():
    # The long poll ends: after a burst, within a short idle spell every worker sleeps on the
    # condition variable and the process stops using CPU time (a worker that polled forever
    # would burn the whole spell).
    x = ptl.tensor(np.ones(N, np.float32))

    def run():
        for _ in range(50):
            ptl.relu(x)
        cpu, wall = time.process_time(), time.perf_counter()
        time.sleep(0.1)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        deadline = time.perf_counter() + 5
        c = _C._pool_counts()
        while c["workers_asleep"] < c["workers"] and time.perf_counter() < deadline:
            time.sleep(0.05)           # a host too busy to have run the worker yet
            c = _C._pool_counts()
        return c, cpu, wall
    c, cpu, wall = _with_threads(2, run)
    assert c["workers"] >= 1 and c["workers_asleep"] == c["workers"]
    assert cpu < 0.3 * wall, (cpu, wall)


def test_worker_sharing_one_cpu_sleeps_instead_of_polling():
    # Pinned to one CPU, the worker's yields hand the CPU to the caller for a whole time
    # slice: the poll stops and the worker sleeps until the next job wakes it.  Results stay
    # exact and every job still completes.
    code = f"""
import os, numpy as np, pytorchlite as t
from pytorchlite import _C
os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})
t.set_num_threads(2)
a = np.random.default_rng(2).standard_normal({N} * 8).astype(np.float32)
x = t.tensor(a)
before = _C._pool_counts()
ok = all((t.relu(x).numpy() == np.maximum(a, 0)).all() for _ in range(300))
after = _C._pool_counts()
print(ok, after["jobs"] - before["jobs"], after["spins_lost"] - before["spins_lost"])
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "OMP_NUM_THREADS": "2"})
    ok, jobs, lost = r.stdout.split()
    assert (ok, jobs) == ("True", "300"), r.stderr
    assert int(lost) >= 1
