"""python -m pytorchlite.demo: what happens inside pytorchlite when you write `x + y`,
then a line fitted with autograd.

Flags: --steps N (gradient steps for the line fit), --seed S."""
import argparse
import os
import sys

import pytorchlite as torch


def section(title):
    print()
    print(title)
    print("-" * len(title))


def show_dispatch():
    section("1. The life of z = x + y")
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([10.0, 20.0, 30.0])
    print("x =", x)
    print("y =", y)
    print("The schema that drives the binding, and the kernel per dispatch key:")
    print(torch._C._dispatch_dump("aten::add.Tensor"))
    print("The dispatcher's route for z = x + y (keys of the arguments -> chosen kernel):")
    sys.stdout.flush()
    with torch.dispatch_trace():
        z = x + y
    sys.stderr.flush()
    print("z =", z)
    print("A Python number is wrapped as a 0-dim tensor and only lifts the result's category:")
    print("  torch.tensor([1, 2]) + 1.5 ->", torch.tensor([1, 2]) + 1.5)
    print("  torch.tensor([1, 2], dtype=torch.int8) + 1000 ->",
          torch.tensor([1, 2], dtype=torch.int8) + 1000)
    print("Views share storage: a transposed input gives a transposed output layout:")
    m = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    print("  m.t().stride() =", m.t().stride(), "  (m.t() + 1).stride() =", (m.t() + 1).stride())


def fit_line(steps, seed):
    section("2. Fitting y = 3x - 2 with autograd")
    import random
    rnd = random.Random(seed)
    xs = [i / 50.0 for i in range(100)]
    x = torch.tensor(xs)
    y = torch.tensor([3.0 * v - 2.0 + rnd.gauss(0.0, 0.1) for v in xs])
    w = torch.zeros((), requires_grad=True)
    b = torch.zeros((), requires_grad=True)
    lr = 0.2
    torch.dispatch_stats(reset=True)
    for step in range(steps + 1):
        loss = ((x * w + b - y) ** 2).mean()
        if step == 0:
            print("  the graph of the loss, walked from loss.grad_fn:")
            show_graph(loss.grad_fn)
        if step % max(1, steps // 5) == 0:
            print(f"  step {step:4d}  loss {loss.item():.5f}  w {w.item():+.4f}  b {b.item():+.4f}")
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            b -= lr * b.grad
        w.grad = None
        b.grad = None
    print(f"  fitted: y = {w.item():.3f} x {b.item():+.3f}   (true: y = 3x - 2)")
    section("3. What the dispatcher did during the fit (calls per operator and key)")
    for name, per_key in sorted(torch.dispatch_stats().items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {name:<28} " + ", ".join(f"{k}: {n}" for k, n in per_key.items()))
    return w.item(), b.item()


def show_graph(fn, depth=0, seen=None):
    """Prints the autograd graph below `fn` (what loss.backward() will walk)."""
    seen = set() if seen is None else seen
    name = type(fn).__name__
    extra = ""
    if name == "AccumulateGrad":
        extra = f"  (leaf of shape {tuple(fn.variable.shape)})"
    print("    " + "  " * depth + name + extra)
    if id(fn) in seen:
        return
    seen.add(id(fn))
    for child, _ in fn.next_functions:
        if child is not None:
            show_graph(child, depth + 1, seen)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pytorchlite.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    print(torch.__config__.show())
    show_dispatch()
    fit_line(args.steps, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
