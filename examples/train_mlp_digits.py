"""Train a small MLP (64-128-64-10) on the bundled 8x8 handwritten digits with SGD + momentum.

    python examples/train_mlp_digits.py                 # 20 epochs, ~97% test accuracy
    python examples/train_mlp_digits.py --epochs 2 --steps 10

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


def evaluate(model, loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(1) == y).sum())
            total += y.numel()
    model.train()
    return correct / total


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=20)
    p.add_argument("--steps", type=int, default=0,
                   help="at most this many steps per epoch (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    train_loader = DataLoader(Digits(train=True), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(Digits(train=False), batch_size=256)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 64),
                          nn.ReLU(), nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    t0 = time.perf_counter()
    acc = 0.0
    for epoch in range(1, args.epochs + 1):
        total, n = 0.0, 0
        for step, (x, y) in enumerate(train_loader):
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


if __name__ == "__main__":
    main()
