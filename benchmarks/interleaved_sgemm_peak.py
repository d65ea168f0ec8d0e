"""Square float32 products on one thread against the core's FMA peak: pytorchlite, NumPy
(OpenBLAS) and PyTorch in one process, calls alternating, each library's thread CPU time
(median and best of the rounds), its GFLOP/s and its share of `--peak` GFLOP/s (measure it
with tools/fma_peak.c).

    taskset -c 1 /work/venv-torch/bin/python benchmarks/interleaved_sgemm_peak.py --peak 116.5
    ... --sizes 1024,2048 --rounds 9

Without PyTorch installed its column is left out."""
import argparse
import os
import statistics
import sys
import time

# one OpenBLAS thread: thread CPU time would not see a second one's work
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402


def libraries(n):
    """{name: a call of an n x n @ n x n float32 product} for each library present."""
    g = np.random.default_rng(n)
    a = g.standard_normal((n, n)).astype(np.float32)
    b = g.standard_normal((n, n)).astype(np.float32)
    pa, pb = pytorchlite.from_numpy(a), pytorchlite.from_numpy(b)
    calls = {"ours": lambda: pytorchlite.mm(pa, pb), "numpy": lambda: a @ b}
    try:
        import torch
    except ImportError:
        return calls
    torch.set_num_threads(1)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    calls["torch"] = lambda: torch.mm(ta, tb)
    return calls


def measure(n, rounds):
    """{name: [thread seconds of each round]}: one call a library a round, alternating."""
    calls = libraries(n)
    for fn in calls.values():
        fn()
    times = {name: [] for name in calls}
    for _ in range(rounds):
        for name, fn in calls.items():
            t = time.thread_time()
            fn()
            times[name].append(time.thread_time() - t)
    return times


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1024,2048")
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--peak", type=float, default=0.0, help="the core's GFLOP/s peak")
    args = ap.parse_args(argv)
    pytorchlite.set_num_threads(1)
    print("n      library  median ms  best ms  GFLOP/s (median, best)  % of peak (best)")
    for n in (int(s) for s in args.sizes.split(",")):
        times = measure(n, args.rounds)
        flops = 2.0 * n * n * n
        for name, ts in times.items():
            med, best = statistics.median(ts), min(ts)
            share = f"{100 * flops / best / 1e9 / args.peak:5.1f}" if args.peak else "  -"
            print(f"{n:<6d} {name:7s} {med * 1e3:10.2f} {best * 1e3:8.2f}  "
                  f"{flops / med / 1e9:7.1f} {flops / best / 1e9:7.1f}  {share}", flush=True)
        ours = statistics.median(times["ours"])
        others = ", ".join(f"{name} / ours {statistics.median(ts) / ours:.3f}"
                           for name, ts in times.items() if name != "ours")
        print(f"{n:<6d} medians: {others}", flush=True)


if __name__ == "__main__":
    main()
