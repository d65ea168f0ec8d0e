"""Whole training steps (test_bench_training.py's setups: the MLP and GPT steps by default) on
two builds of pytorchlite in one process, and PyTorch's beside them when it is installed: this
tree's build and another built tree's, imported under the package name ptl_base as
interleaved_gemm_builds.py does.  Milliseconds of thread CPU time a step, the speed-up (base
time / this tree's, > 1: this tree is faster) and PyTorch's time / each build's.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/interleaved_step_builds.py /path/to/tree
    ... --steps mlp --rounds 20

A kernel change that moves one product by a few percent moves a step by less, which separate
processes cannot show on a shared host; here the libraries alternate block by block (a block:
the calls that take about BLOCK_SECONDS) and each one's fastest block counts, so the load
changes all of them alike.  One thread."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _interleave import best_block  # noqa: E402
from interleaved_gemm_builds import import_base, run_with_base  # noqa: E402,F401
import test_bench_training as training  # noqa: E402

import pytorchlite  # noqa: E402

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

BLOCK_SECONDS = 0.08


def measure(libs, which, rounds):
    """{name: fastest seconds a step} for the step `which` of each library in libs."""
    steps = {name: training.setup(lib, which) for name, lib in libs.items()}
    calls = {name: max(1, int(BLOCK_SECONDS / best_block(step, 2, time.thread_time)))
             for name, step in steps.items()}
    best = dict.fromkeys(steps, float("inf"))
    for _ in range(rounds):
        for name, step in steps.items():
            best[name] = min(best[name], best_block(step, calls[name], time.thread_time))
    return best


def table(args, base):
    """One line a step of args.steps: base's, this tree's (and PyTorch's) fastest step."""
    libs = {"base": base, "this": pytorchlite}
    if torch is not None:
        libs["torch"] = torch
    old = {name: lib.get_num_threads() for name, lib in libs.items()}
    for lib in libs.values():
        lib.set_num_threads(1)
    try:
        print(f"one thread, rounds {args.rounds}; ms a step base, this tree; speed-up")
        for which in args.steps.split(","):
            best = measure(libs, which, args.rounds)
            line = (f"{which:6s} {best['base'] * 1e3:8.3f} {best['this'] * 1e3:8.3f}  "
                    f"{best['base'] / best['this']:5.3f}")
            if "torch" in best:
                line += (f"   PyTorch {best['torch'] * 1e3:8.3f}: / base "
                         f"{best['torch'] / best['base']:5.3f}, / this "
                         f"{best['torch'] / best['this']:5.3f}")
            print(line, flush=True)
    finally:
        for name, lib in libs.items():
            lib.set_num_threads(old[name])


def main(argv=None):
    run_with_base(__doc__, 10, ("--steps", "mlp,gpt", "test_bench_training.setup's names"),
                  table, argv)


if __name__ == "__main__":
    main()
