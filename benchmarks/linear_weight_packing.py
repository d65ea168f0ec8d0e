"""What packing a Linear's W^T costs the one-thread products x @ W^T + b of the MLP and GPT
training steps, and how often a packed copy of W^T could be used again, in one process:

1. reuse: each nn.Linear's weight as (data pointer, version counter) at every forward call
   over --steps training steps of test_bench_training.py's MLP and GPT.  A packed W^T kept
   under that key is used again only where a key repeats; the optimizer's in-place update
   bumps every weight's version once a step, and a step's backward multiplies by W (g @ W),
   not by W^T, whose slivers are packed another way (Note [GEMM packing of B]).
2. x @ W^T + b with W^T the transposed view of a row-major W (its 16-wide slivers packed by
   8 x 8 transposes) against the same product with W^T stored contiguous (a row-major B,
   packed by the first tile: Note [GEMM B packed by its first tile]): about the most that
   any cheaper packing of W^T could save.  W is rewritten before each call (as the
   optimizer leaves it), `warm`, and `cold`: an 8 MiB buffer written in between as well, so
   that W and x come from L3 as in a step.
3. with --base, another built tree's products against this tree's on the same operands
   (W^T as the view), warm and cold, the two builds alternating call by call.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/linear_weight_packing.py [--rounds 300]
        [--base /path/to/other/built/tree]

Each call is timed alone (thread CPU time), its setup outside the timing, and the fastest of
--rounds counts.  Needs no PyTorch."""
import argparse
import collections
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from interleaved_gemm_builds import import_base  # noqa: E402
import test_bench_training as training  # noqa: E402

import pytorchlite  # noqa: E402

# x [m, k] @ W^T + b, W [n, k]: the MLP's two large forward products, the GPT's
SHAPES = [(128, 784, 512), (128, 512, 256), (1024, 128, 384), (1024, 512, 128), (1024, 128, 512)]
EVICT_FLOATS = 1 << 21


def weight_reuse(which, steps):
    """(forward calls of the Linear layers, distinct (data pointer, version) keys of their
    weights) over `steps` training steps of the step `which`."""
    keys = []

    def record(module, args):
        if isinstance(module, pytorchlite.nn.Linear):
            keys.append((module.weight.data_ptr(), module.weight._version))

    step = training.setup(pytorchlite, which)
    handle = pytorchlite.nn.modules.module.register_module_forward_pre_hook(record)
    try:
        for _ in range(steps):
            step()
    finally:
        handle.remove()
    return len(keys), len(collections.Counter(keys))


def timed_call(lib, m, k, n, contiguous, cold):
    """A function that rewrites W (and, when `cold`, 8 MiB more) and returns the thread CPU
    seconds of one x @ W^T + b."""
    g = np.random.default_rng(0)
    x = lib.tensor(g.standard_normal((m, k)).astype(np.float32))
    w = lib.tensor(g.standard_normal((n, k)).astype(np.float32))
    b = lib.tensor(g.standard_normal((n,)).astype(np.float32))
    wt = w.t().contiguous() if contiguous else w.t()
    evict = lib.zeros(EVICT_FLOATS) if cold else None

    def call():
        wt.mul_(1.0)
        if evict is not None:
            evict.add_(1.0)
        t0 = time.thread_time()
        lib.addmm(b, x, wt)
        return time.thread_time() - t0
    return call


def fastest(calls, rounds):
    """{name: fastest seconds} of calls {name: fn}, alternating call by call (the order
    reversed every other round)."""
    best = dict.fromkeys(calls, float("inf"))
    names = list(calls)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            best[name] = min(best[name], calls[name]())
    return best


def compare(shape, variants, rounds):
    """One line: each variant's microseconds and the first's time / the second's."""
    m, k, n = shape
    best = fastest(variants, rounds)
    (a, ta), (b, tb) = best.items()
    return (f"{m:5d} x {k:4d} @ ({n:4d} x {k:4d})^T  {a} {ta * 1e6:8.1f} us  "
            f"{b} {tb * 1e6:8.1f} us  {a} / {b} {ta / tb:.3f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--base", default="", help="another built tree to compare with")
    args = ap.parse_args(argv)
    pytorchlite.set_num_threads(1)
    for which in ("mlp", "gpt"):
        calls, keys = weight_reuse(which, args.steps)
        print(f"reuse {which}: {calls} Linear forward calls in {args.steps} steps, "
              f"{keys} distinct (weight, version) keys")
    for cold in (False, True):
        for shape in SHAPES:
            variants = {"view": timed_call(pytorchlite, *shape, False, cold),
                        "contiguous": timed_call(pytorchlite, *shape, True, cold)}
            print(("cold " if cold else "warm ") + compare(shape, variants, args.rounds))
    if not args.base:
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = import_base(os.path.abspath(args.base), tmp)
        base.set_num_threads(1)
        for cold in (False, True):
            for shape in SHAPES:
                variants = {"base": timed_call(base, *shape, False, cold),
                            "this": timed_call(pytorchlite, *shape, False, cold)}
                print(("cold " if cold else "warm ") + compare(shape, variants, args.rounds))


if __name__ == "__main__":
    main()
