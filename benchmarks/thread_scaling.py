"""Our own scaling from one thread to two, in one process: for each row of ratio_table.py, the
fastest call on one thread and on two (wall time, blocks of each alternating round after
round), their ratio, and what the pool did per call on two threads (_C._pool_counts(): jobs,
worker sleeps, chunks the caller ran because the worker had not claimed them, polls cut short
because another thread took the CPU).  Note [Spin before sleeping] in src/c10/parallel.c.

    OMP_NUM_THREADS=2 python benchmarks/thread_scaling.py --rounds 7 [--only matmul]

No PyTorch needed.  On a host shared with other processes the two-thread times are noisy
(each block keeps its fastest call); the counts say where the worker slept."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from pytorchlite import _C  # noqa: E402
from ratio_table import QUIET_S, ROWS, WARM_S  # noqa: E402

COUNTED = ("jobs", "worker_sleeps", "chunks_by_caller", "spins_lost")


def block(call, calls):
    """The fastest of `calls` calls after a pause and a warm-up (ratio_table.py's), and the
    pool's counts over the timed calls."""
    time.sleep(QUIET_S)
    warm_until = time.perf_counter() + WARM_S
    while time.perf_counter() < warm_until:
        call()
    before = _C._pool_counts()
    best = float("inf")
    for _ in range(calls):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    after = _C._pool_counts()
    return best, {k: after[k] - before[k] for k in COUNTED}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=7)
    ap.add_argument("--only", default="", help="the rows whose name contains this")
    args = ap.parse_args(argv)
    old = pytorchlite.get_num_threads()
    try:
        for name, make in [row for row in ROWS if args.only in row[0]]:
            call = make("pytorchlite")
            best = {1: float("inf"), 2: float("inf")}
            counts = dict.fromkeys(COUNTED, 0)
            for _ in range(args.rounds):
                for n in (1, 2):
                    pytorchlite.set_num_threads(n)
                    t, c = block(call, args.calls)
                    best[n] = min(best[n], t)
                    if n == 2:
                        counts = {k: counts[k] + c[k] for k in COUNTED}
            per_call = " ".join(f"{k} {counts[k] / (args.rounds * args.calls):.1f}"
                                for k in COUNTED)
            print(f"{name:32s} 1 thread {best[1] * 1e3:8.2f} ms  2 threads {best[2] * 1e3:8.2f} ms"
                  f"  x{best[1] / best[2]:.2f}   per call on 2: {per_call}", flush=True)
    finally:
        pytorchlite.set_num_threads(old)


if __name__ == "__main__":
    main()
