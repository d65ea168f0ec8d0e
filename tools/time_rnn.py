"""Times benchmarks/test_bench_rnn.py's workloads (nn.LSTM / GRU forward, forward and backward,
and the LSTM language model's training step), ours next to PyTorch in the same process, both
on one thread: per workload the fastest call of ROUNDS rounds of 5 calls each, rounds of the
two libraries alternating, in thread CPU time (time.thread_time leaves out the time other
processes hold the core).  Prints PyTorch's time / ours.  docs/performance.md, "LSTM: edge
tiles of the step's height".

    OMP_NUM_THREADS=1 taskset -c 1 env PYTHONPATH=. python tools/time_rnn.py [ROUNDS] [FILTER]
"""
import os
import sys
import time

import torch

import pytorchlite as ptl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
import test_bench_rnn as bench  # noqa: E402

LAYERS = [("LSTM", 1, 50), ("LSTM", 2, 50), ("LSTM", 1, 200), ("GRU", 1, 50)]


def fastest(f, calls=5):
    best = float("inf")
    for _ in range(calls):
        t = time.thread_time()
        f()
        best = min(best, time.thread_time() - t)
    return best


def workloads():
    """(name, {library: callable}) for every workload."""
    for cls, layers, seq in LAYERS:
        for kind in ("fwd", "fwd+bwd"):
            calls = {}
            for impl in ("pytorchlite", "torch"):
                lib, module, x = bench.build(impl, cls, layers, seq)
                if kind == "fwd":
                    calls[impl] = lambda lib=lib, module=module, x=x: bench.forward(lib, module, x)
                else:
                    calls[impl] = lambda module=module, x=x: bench.forward_backward(module, x)
            yield f"{cls} {layers} layer(s) seq {seq} {kind}", calls
    for layers in (1, 2):
        yield (f"train step LSTM LM {layers} layer(s)",
               {impl: bench.lm_step(impl, layers) for impl in ("pytorchlite", "torch")})


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 8
    only = sys.argv[2] if len(sys.argv) > 2 else ""
    ptl.set_num_threads(1)
    torch.set_num_threads(1)
    for name, calls in workloads():
        if only not in name:
            continue
        ours = theirs = float("inf")
        for _ in range(rounds):
            ours = min(ours, fastest(calls["pytorchlite"]))
            theirs = min(theirs, fastest(calls["torch"]))
        print(f"{name:34s} ours {ours * 1e3:8.3f} ms  torch {theirs * 1e3:8.3f} ms  "
              f"torch / ours {theirs / ours:5.2f}", flush=True)


if __name__ == "__main__":
    main()
