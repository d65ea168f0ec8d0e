"""What the digits examples share: the command line, the bundled 8x8 digits, the training loop
and the test accuracy.  Each example states only its model and optimizer.

Ordinary PyTorch code: only the import line and the bundled data set are pytorchlite's.
"""
import argparse
import os
import sys
import time

try:
    import pytorchlite as torch
except ImportError:  # a source checkout that is not installed: use the one this file is in
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import pytorchlite as torch
from pytorchlite import nn
from pytorchlite.datasets import Digits
from pytorchlite.utils.data import DataLoader

__all__ = ["torch", "nn", "evaluate", "progress", "train_digits"]


def progress(iterable, total, desc):
    """A tqdm progress bar over iterable when tqdm is installed (on a terminal only, on
    stderr, so printed results stay the same), else iterable itself."""
    try:
        from tqdm import tqdm
    except ImportError:
        return iterable
    return tqdm(iterable, total=total, desc=desc, leave=False, disable=None)


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(1) == y).sum())
            total += y.numel()
    model.train()
    return correct / total


def parse_args(doc, argv, epochs, lr):
    p = argparse.ArgumentParser(description=doc,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=epochs)
    p.add_argument("--steps", type=int, default=0,
                   help="at most this many steps per epoch (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=lr)
    p.add_argument("--batch-size", type=int, default=32)
    return p.parse_args(argv)


def train_digits(doc, argv, make_model, make_optimizer, epochs, lr):
    """Parses the command line (`doc` is the example's help; `epochs`, `lr` its defaults),
    trains make_model() with make_optimizer(parameters, lr) and cross-entropy, prints one
    line per epoch and the final test accuracy, and returns it."""
    args = parse_args(doc, argv, epochs, lr)
    torch.manual_seed(args.seed)
    train_loader = DataLoader(Digits(train=True), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(Digits(train=False), batch_size=256)
    model = make_model()
    opt = make_optimizer(model.parameters(), args.lr)
    loss_fn = nn.CrossEntropyLoss()

    t0 = time.perf_counter()
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        total, n = 0.0, 0
        steps = min(len(train_loader), args.steps or len(train_loader))
        for step, (x, y) in enumerate(progress(train_loader, steps, f"epoch {epoch}")):
            if args.steps and step >= args.steps:
                break
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            total += loss.item() * y.numel()
            n += y.numel()
        acc = evaluate(model, test_loader)
        print(f"epoch {epoch}: train loss {total / n:.4f}  test accuracy {acc * 100:.2f}%")
    print(f"final test accuracy {acc * 100:.2f}% ({time.perf_counter() - t0:.1f}s)")
    return acc
