"""What the interleaved_* scripts share: complex operands, the time of a block of calls, and
their command line (--rounds, --only, a script's own options) with both libraries on one
thread.  Each script alternates PyTorch's block and ours, round after round, and keeps the
fastest of each: a shared machine's noise only ever slows a block."""
import argparse
import time

import numpy as np


def crandn(shape, dtype, seed):
    """Standard complex normal numbers of `shape` in `dtype`."""
    g = np.random.default_rng(seed)
    return (g.standard_normal(shape) + 1j * g.standard_normal(shape)).astype(dtype)


def best_block(fn, calls, clock=time.perf_counter):
    """Seconds per call of `calls` calls of fn in a row, by `clock`."""
    t0 = clock()
    for _ in range(calls):
        fn()
    return (clock() - t0) / calls


def phase_minima(runs, rounds):
    """The profile_* scripts' loop: runs maps a library's name to run(T), one step that times
    each piece as T(name, fn) and returns the step's time.  Over `rounds` rounds, the libraries
    alternating, the fastest of each piece (a name timed twice in one step adds up) and of the
    whole step, in thread CPU seconds: ({name: {piece: s}}, {name: s})."""
    best = {name: {} for name in runs}
    total = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for name, run in runs.items():
            seen = {}

            def T(piece, fn, seen=seen):
                t = time.thread_time()
                out = fn()
                seen[piece] = seen.get(piece, 0.0) + time.thread_time() - t
                return out
            total[name] = min(total[name], run(T))
            for piece, dt in seen.items():
                best[name][piece] = min(best[name].get(piece, float("inf")), dt)
    return best, total


def one_thread_args(rounds, *options):
    """(torch, args): --rounds (default `rounds`), --only and each (flag, default) of
    `options` parsed; PyTorch and pytorchlite both set to one thread."""
    import torch

    import pytorchlite
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=rounds)
    p.add_argument("--only", default="")
    for flag, default in options:
        p.add_argument(flag, default=default)
    args = p.parse_args()
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    return torch, args


def print_alternating(rows, args, width, clock=time.perf_counter):
    """Times each (name, ours, theirs) of rows whose name starts with args.only: blocks of
    args.calls calls of each, alternating for args.rounds rounds, the fastest block of each
    counting; prints both (ns per call) and PyTorch's time / ours."""
    for name, ours, theirs in rows:
        if args.only and not name.startswith(args.only):
            continue
        best = [float("inf")] * 2
        for _ in range(args.rounds):   # the libraries alternate block by block
            for i, f in enumerate((ours, theirs)):
                best[i] = min(best[i], best_block(f, int(args.calls), clock))
        o, t = (s * 1e9 for s in best)
        print(f"{name:{width}s} ours {o:7.1f} ns  torch {t:7.1f} ns  torch/ours {t / o:5.2f}",
              flush=True)


def run_rows(torch, rows, rounds, only, clock=time.perf_counter):
    """Times each (name, fn, arrays) of rows: fn(lib, *tensors of arrays) for PyTorch and
    pytorchlite, blocks of calls alternating for `rounds` rounds, by `clock` (time.thread_time:
    one thread's CPU time, which other processes on the core do not inflate); prints the
    fastest blocks' ratio (PyTorch's time / ours) and the range of the rounds' ratios.  A
    pytorchlite refusal (an older build) is printed instead."""
    import pytorchlite
    for name, fn, arrays in rows:
        if only and not name.startswith(only):
            continue
        libs = []
        for lib in (torch, pytorchlite):
            xs = [lib.from_numpy(a.copy()) for a in arrays]
            libs.append(lambda lib=lib, xs=xs: fn(lib, *xs))
        try:
            libs[1]()
        except Exception as exc:  # noqa: BLE001 -- an older build's refusal is the answer
            print(f"{name:40s} pytorchlite: {type(exc).__name__}: {str(exc)[:60]}", flush=True)
            continue
        t0 = time.perf_counter()
        libs[0]()
        calls = max(1, min(20000, int(0.02 / max(time.perf_counter() - t0, 1e-7))))
        times = [[best_block(f, calls, clock) for f in libs] for _ in range(rounds)]
        tt, tp = (min(r[i] for r in times) for i in (0, 1))
        ratios = sorted(r[0] / r[1] for r in times)
        lo, hi = ratios[min(1, len(ratios) - 1)], ratios[max(-2, -len(ratios))]
        print(f"{name:40s} torch {tt * 1e6:10.2f} us  ours {tp * 1e6:10.2f} us  ratio "
              f"{tt / tp:5.2f} (rounds {lo:.2f}-{hi:.2f})", flush=True)


def calls_main(doc, rows, reps, width, argv=None):
    """The command line of the run_calls scripts: --reps (default `reps`), --only (the rows
    whose name contains it) and --threads; rows() builds the rows, width pads their names."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=reps)
    ap.add_argument("--only", default="", help="the rows whose name contains this")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    run_calls(rows(), args.reps, args.only, args.threads, width)


def run_calls(rows, reps, only, threads, width):
    """Times each (name, make) of rows, make(lib) returning the call to time, PyTorch's and
    pytorchlite's alternating call by call for `reps` rounds, both on `threads` threads; prints
    each one's fastest call and their ratio (PyTorch's time / ours).  One thread is timed by
    its CPU time, which other processes on the core do not inflate."""
    import torch

    import pytorchlite
    torch.set_num_threads(threads)
    pytorchlite.set_num_threads(threads)
    clock = time.thread_time if threads == 1 else time.perf_counter
    for name, make in rows:
        if only not in name:
            continue
        calls = {m: make(m) for m in (torch, pytorchlite)}
        best = {}
        for _ in range(reps):
            for m in (torch, pytorchlite):
                t0 = clock()
                calls[m]()
                dt = clock() - t0
                best[m] = min(best.get(m, dt), dt)
        print(f"{name:{width}s} torch {best[torch] * 1e6:8.0f} us  ours "
              f"{best[pytorchlite] * 1e6:8.0f} us  ratio {best[torch] / best[pytorchlite]:.2f}",
              flush=True)
