"""Where the fused elementwise chain's time goes: the chain of
benchmarks/test_bench_jit.py::test_fused_elementwise_chain as one prim::FusionGroup, its two
exponentials alone (the floor of the fused group, which computes them bit for bit as eager
mode does) and the eager chain, timed interleaved in one process so that each reads its input
from memory as the chain does (pytest-benchmark's per-test loops keep it warm in the cache).

    python benchmarks/profile_fused_chain.py [--threads N] [--rounds R] [--cpu-time]

Prints the min over R rounds of each, in ms, and the ratios eager / fused and
eager / (exp + sigmoid)."""
import argparse
import time

import numpy as np

import pytorchlite as ptl


def chain(x):
    return ((x * 2 + 1).relu() - 0.5).exp().sigmoid()


class _Chain(ptl.nn.Module):
    def forward(self, x):
        return chain(x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--cpu-time", action="store_true",
                    help="time.thread_time (this thread's CPU time) instead of wall time")
    args = ap.parse_args()
    ptl.set_num_threads(args.threads)
    x = ptl.tensor(np.random.default_rng(0).standard_normal(1000000).astype(np.float32))
    fused = ptl.jit.optimize_for_inference(ptl.jit.trace(_Chain(), (x,)))
    before_exp = (x * 2 + 1).relu() - 0.5
    before_sigmoid = before_exp.exp()
    cases = {"fused": lambda: fused(x),
             "exp+sigmoid": lambda: (before_exp.exp(), before_sigmoid.sigmoid()),
             "eager": lambda: chain(x)}
    clock = time.thread_time if args.cpu_time else time.perf_counter
    best = {k: float("inf") for k in cases}
    with ptl.no_grad():
        for _ in range(args.rounds):
            for k, fn in cases.items():
                t0 = clock()
                fn()
                best[k] = min(best[k], clock() - t0)
    print(", ".join(f"{k} {v * 1e3:.3f} ms" for k, v in best.items()))
    print(f"eager / fused {best['eager'] / best['fused']:.2f}x, "
          f"eager / (exp + sigmoid) {best['eager'] / best['exp+sigmoid']:.2f}x, "
          f"fused / (exp + sigmoid) {best['fused'] / best['exp+sigmoid']:.2f}")


if __name__ == "__main__":
    main()
