"""python -m pytorchlite.demo: train a small CNN on the bundled handwritten digits, then show
what happened inside pytorchlite during one training step.

  1. the life of z = x + y: the schema, the kernel per dispatch key, the dispatcher's route;
  2. training: DataLoader (worker processes), Adam, a progress bar, loss and accuracy per epoch,
     a checkpoint saved with pytorchlite.save;
  3. one training step seen from inside: calls per operator and dispatch key, and the autograd
     graph of the loss (node counts by type; --dot FILE writes it as Graphviz DOT).
"""
import argparse
import os
import sys
import time
from collections import Counter

import pytorchlite as torch
from pytorchlite import nn
from pytorchlite.datasets import Digits


def section(title):
    print()
    print(title)
    print("-" * len(title))


def show_dispatch():
    section("1. The life of z = x + y")
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([10.0, 20.0, 30.0])
    print(torch._C._dispatch_dump("aten::add.Tensor"))
    print("The dispatcher's route (the Autograd kernel redispatches below itself to the CPU kernel):")
    sys.stdout.flush()
    with torch.dispatch_trace():
        z = x + y
    sys.stderr.flush()
    print("z =", z)


class Net(nn.Module):
    """conv 1->16, relu, maxpool, conv 16->32, relu, maxpool, linear 128->64, relu, linear 64->10"""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(128, 64), nn.ReLU(),
                                        nn.Linear(64, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


class Bar:
    """tqdm when installed, else a one-line bar with rate and ETA."""

    def __init__(self, total, desc):
        self.total, self.desc, self.n, self.t0 = total, desc, 0, time.perf_counter()
        try:
            from tqdm import tqdm
            self.tq = tqdm(total=total, desc=desc, leave=False)
        except ImportError:
            self.tq = None
        self.draw = self.tq is None and sys.stdout.isatty()

    def update(self, k=1, **info):
        self.n += k
        if self.tq is not None:
            self.tq.set_postfix(**info)
            self.tq.update(k)
            return
        if not self.draw:
            return
        dt = time.perf_counter() - self.t0
        rate = self.n / dt if dt > 0 else 0.0
        eta = (self.total - self.n) / rate if rate > 0 else 0.0
        width = 24
        filled = int(width * self.n / max(1, self.total))
        extra = " ".join(f"{k}={v}" for k, v in info.items())
        sys.stdout.write(f"\r  {self.desc} [{'#' * filled}{'.' * (width - filled)}] "
                         f"{self.n}/{self.total} {rate:6.1f} it/s ETA {eta:4.1f}s {extra}   ")
        sys.stdout.flush()

    def close(self):
        if self.tq is not None:
            self.tq.close()
        elif self.draw:
            sys.stdout.write("\r" + " " * 100 + "\r")
            sys.stdout.flush()


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            pred = model(x).argmax(1)
            correct += int((pred == y).sum())
            total += y.numel()
    model.train()
    return correct / max(1, total)


def graph_summary(loss):
    # node wrappers are made on access, so keep them alive while their ids mark "seen"
    counts, seen, stack = Counter(), {}, [loss.grad_fn]
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen[id(fn)] = fn
        counts[type(fn).__name__] += 1
        stack.extend(child for child, _ in fn.next_functions)
    return counts


def train(args):
    from pytorchlite.utils.data import DataLoader
    section("2. Training a small CNN on the bundled digits (8x8, 1,797 images)")
    torch.manual_seed(args.seed)
    train_set, test_set = Digits(train=True), Digits(train=False)
    train_loader = DataLoader(train_set, batch_size=32, shuffle=True, num_workers=args.workers,
                              persistent_workers=args.workers > 0)
    test_loader = DataLoader(test_set, batch_size=256)
    model = Net()
    print(model)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        bar = Bar(len(train_loader), f"epoch {epoch}/{args.epochs}")
        total_loss, n = 0.0, 0
        for x, y in train_loader:
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total_loss += loss.item() * y.numel()
            n += y.numel()
            bar.update(loss=f"{loss.item():.3f}")
        bar.close()
        sched.step()
        acc = evaluate(model, test_loader)
        print(f"  epoch {epoch}: train loss {total_loss / n:.4f}   test accuracy {acc * 100:.2f}%   "
              f"({time.perf_counter() - t0:.1f}s)")
    print(f"  final test accuracy {acc * 100:.2f}% after {time.perf_counter() - t0:.1f}s")
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "digits_cnn.pt")
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "accuracy": acc}, path)
    print(f"  saved the checkpoint to {path}")

    section("3. One training step, seen from inside")
    x, y = next(iter(train_loader))
    torch.dispatch_stats(reset=True)
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    counts = graph_summary(loss)
    loss.backward()
    opt.step()
    stats = torch.dispatch_stats()
    print("  calls per operator and dispatch key (forward, backward and the Adam update):")
    for name, per_key in sorted(stats.items(), key=lambda kv: -sum(kv[1].values()))[:15]:
        print(f"    {name:<34} " + ", ".join(f"{k}: {v}" for k, v in per_key.items()))
    keys = Counter()
    for per_key in stats.values():
        keys.update(per_key)
    print("  calls per dispatch key: " + ", ".join(f"{k}: {v}" for k, v in keys.most_common()))
    print(f"  the loss's autograd graph: {sum(counts.values())} nodes")
    for name, c in counts.most_common():
        print(f"    {name:<28} {c}")
    if args.dot:
        from pytorchlite.autograd.graph import to_dot
        with open(args.dot, "w") as f:
            f.write(to_dot(loss, params=dict(model.named_parameters())))
        print(f"  wrote the graph as Graphviz DOT to {args.dot}")
    return acc


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pytorchlite.demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--device", default="cpu", help="cpu (cuda when built with a GPU present)")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--out", default="demo_out", help="folder for the checkpoint")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dot", default=None, help="write the loss's autograd graph as DOT here")
    args = p.parse_args(argv)
    if args.device != "cpu":
        print("note: this demo runs on the CPU; --device is accepted for future backends")
    print(torch.__config__.show())
    show_dispatch()
    train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
