"""Where the MLP training step's time goes (test_bench_training.py's 784-512-256-10, batch 128,
SGD with momentum), pytorchlite next to PyTorch in the same process, one thread:

1. the real step's phases, each timed where it runs inside the step: zero_grad, forward
   (model and cross-entropy), backward, optimizer step;
2. the same step replayed op by op without autograd, each op timed in place (its operands as
   warm or cold as the step leaves them): the three Linear products, relu, cross-entropy
   forward and backward, the input- and weight-gradient products, the bias sums, relu's
   backward, the fused SGD updates;
3. the fixed cost of a step: the same step on an 8-8-8-4 MLP, batch 2 (Python, dispatch,
   the autograd engine, the optimizer's loop).

    taskset -c 1 python benchmarks/profile_mlp_step.py [--rounds 40]

Each line: our time, PyTorch's, and PyTorch's / ours (> 1: we are faster), the minimum over
the rounds of each op's thread CPU time, the two libraries alternating round by round.
docs/performance.md (MLP step) quotes it.  Needs PyTorch."""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import pytorchlite  # noqa: E402
from _interleave import phase_minima  # noqa: E402
import test_bench_training as training  # noqa: E402


def phases(lib):
    """The real step with each phase timed."""
    F = lib.nn.functional
    lib.manual_seed(0)
    g = np.random.default_rng(1)
    model = training.build_mlp(lib)
    training.init_values(model, lib)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.tensor(g.standard_normal((128, 784)).astype(np.float32))
    y = lib.tensor(g.integers(0, 10, 128))

    def run(T):
        t0 = time.thread_time()
        T("zero_grad", opt.zero_grad)
        loss = T("forward", lambda: F.cross_entropy(model(x), y))
        T("backward", loss.backward)
        T("optimizer step", opt.step)
        return time.thread_time() - t0
    return run


def replay(lib):
    """The step op by op, without autograd: what its backward computes, in its order."""
    F = lib.nn.functional
    aten = lib.ops.aten
    lib.manual_seed(0)
    g = np.random.default_rng(1)
    model = training.build_mlp(lib)
    training.init_values(model, lib)
    x = lib.tensor(g.standard_normal((128, 784)).astype(np.float32))
    y = lib.tensor(g.integers(0, 10, 128))
    params = [p.detach() for p in model.parameters()]
    w1, b1, w2, b2, w3, b3 = params
    opt = lib.optim.SGD([p.clone().requires_grad_() for p in params], lr=0.01, momentum=0.9)

    def run(T):
        t0 = time.thread_time()
        with lib.no_grad():
            h1p = T("fwd  x @ W1^T 128x784x512", lambda: lib.addmm(b1, x, w1.t()))
            h1 = T("fwd  relu 128x512", lambda: lib.relu(h1p))
            h2p = T("fwd  h1 @ W2^T 128x512x256", lambda: lib.addmm(b2, h1, w2.t()))
            h2 = T("fwd  relu 128x256", lambda: lib.relu(h2p))
            logits = T("fwd  h2 @ W3^T 128x256x10", lambda: lib.addmm(b3, h2, w3.t()))
        logits.requires_grad_(True)

        def ce():
            F.cross_entropy(logits, y).backward()
            return logits.grad
        g3 = T("cross_entropy fwd+bwd (autograd)", ce)
        with lib.no_grad():
            d2 = T("bwd  g3 @ W3 128x10x256", lambda: lib.mm(g3, w3))
            gw3 = T("bwd  g3^T @ h2 10x128x256", lambda: lib.mm(g3.t(), h2))
            gb3 = T("bwd  bias sums", lambda: g3.sum(0))
            g2 = T("bwd  relu (threshold_backward)", lambda: aten.threshold_backward(d2, h2, 0))
            d1 = T("bwd  g2 @ W2 128x256x512", lambda: lib.mm(g2, w2))
            gw2 = T("bwd  g2^T @ h1 256x128x512", lambda: lib.mm(g2.t(), h1))
            gb2 = T("bwd  bias sums", lambda: g2.sum(0))
            g1 = T("bwd  relu (threshold_backward)", lambda: aten.threshold_backward(d1, h1, 0))
            gw1 = T("bwd  g1^T @ x 512x128x784", lambda: lib.mm(g1.t(), x))
            gb1 = T("bwd  bias sums", lambda: g1.sum(0))
        for p, grad in zip(opt.param_groups[0]["params"], (gw1, gb1, gw2, gb2, gw3, gb3)):
            p.grad = grad
        T("SGD step (6 parameters)", opt.step)
        return time.thread_time() - t0
    return run


def tiny(lib):
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(),
                          nn.Linear(8, 4))
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = lib.tensor(np.ones((2, 8), np.float32))
    y = lib.tensor(np.array([0, 1]))

    def run(T):
        def step():
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            opt.step()
        T("8-8-8-4 step, batch 2", step)
        return 0.0
    return run


def table(title, make, rounds):
    runs = {impl: make(training.library(impl)) for impl in ("pytorchlite", "torch")}
    best, total = phase_minima(runs, rounds)
    print(f"\n{title}")
    ours, ref = best["pytorchlite"], best["torch"]
    for name in ours:
        print(f"  {name:34s} ours {ours[name] * 1e6:8.1f} us  torch {ref[name] * 1e6:8.1f} us"
              f"  {ref[name] / ours[name]:5.2f}")
    if total["pytorchlite"] > 0:
        a, b = total["pytorchlite"], total["torch"]
        print(f"  {'whole (min of the rounds)':34s} ours {a * 1e6:8.1f} us  torch "
              f"{b * 1e6:8.1f} us  {b / a:5.2f}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40)
    args = ap.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    pytorchlite.set_num_threads(1)
    table("The step's phases, in place", phases, args.rounds)
    table("The step op by op (no autograd), in place", replay, args.rounds)
    table("The fixed cost of a step", tiny, 5 * args.rounds)


if __name__ == "__main__":
    main()
