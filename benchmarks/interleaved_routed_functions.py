"""What routing a Python-level function through __torch_function__ costs a plain tensor
(Note [Torch function]): F.relu, F.linear, x.to(float64), x.float() and F.softmax called as
pytorchlite has them (a _C._RoutedFunction) and as the Python function it wraps (__wrapped__,
what was called before), with PyTorch's call for scale; the three alternate block by block in
one process and the fastest block of each counts (under no_grad: F.linear's weight and bias are
Parameters, whose autograd nodes would otherwise swamp the difference):

    taskset -c 1 python benchmarks/interleaved_routed_functions.py [--rounds 200]

Needs PyTorch (pip install torch==2.13.0)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks._interleave import best_block  # noqa: E402


def rows(torch, ptl):
    F, TF = ptl.nn.functional, torch.nn.functional
    x, w, b = ptl.ones(4, 8), ptl.nn.Parameter(ptl.ones(3, 8)), ptl.nn.Parameter(ptl.ones(3))
    tx, tw, tb = torch.ones(4, 8), torch.nn.Parameter(torch.ones(3, 8)), torch.nn.Parameter(
        torch.ones(3))
    f64 = ptl.float64
    relu, linear, softmax = F.relu.__wrapped__, F.linear.__wrapped__, F.softmax.__wrapped__
    to, float_ = ptl.Tensor.to.__wrapped__, ptl.Tensor.float.__wrapped__
    return [
        ("F.relu(x)", lambda: F.relu(x), lambda: relu(x), lambda: TF.relu(tx)),
        ("F.linear(x, w, b)", lambda: F.linear(x, w, b), lambda: linear(x, w, b),
         lambda: TF.linear(tx, tw, tb)),
        ("x.to(float64)", lambda: x.to(f64), lambda: to(x, f64), lambda: tx.to(torch.float64)),
        ("x.float()", lambda: x.float(), lambda: float_(x), lambda: tx.float()),
        ("F.softmax(x, 1)", lambda: F.softmax(x, 1), lambda: softmax(x, 1),
         lambda: TF.softmax(tx, 1)),
    ]

def main():
    import torch

    import pytorchlite as ptl
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=200)
    ap.add_argument("--calls", type=int, default=2000)
    args = ap.parse_args()
    torch.set_num_threads(1)
    ptl.set_num_threads(1)
    for name, routed, bare, theirs in rows(torch, ptl):
        best = [float("inf")] * 3
        with torch.no_grad(), ptl.no_grad():
            for _ in range(args.rounds):
                for i, f in enumerate((routed, bare, theirs)):
                    best[i] = min(best[i], best_block(f, args.calls))
        r, b, t = (s * 1e9 for s in best)
        print(f"{name:20s} routed {r:7.0f} ns  unrouted {b:7.0f} ns  routing {r - b:+5.0f} ns "
              f"({(r - b) / b:+.1%})  torch {t:7.0f} ns  torch/routed {t / r:4.2f}", flush=True)


if __name__ == "__main__":
    main()
