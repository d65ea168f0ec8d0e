"""Train a small CNN (conv 1->16, relu, maxpool, conv 16->32, relu, maxpool, linear 128->10)
on the bundled 8x8 handwritten digits with Adam.

    python examples/train_cnn_digits.py                 # 15 epochs, ~98% test accuracy
    python examples/train_cnn_digits.py --epochs 2 --steps 10

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


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)     # [B, 16, 8, 8]
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)    # [B, 32, 4, 4]
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 2 * 2, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


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
    p.add_argument("--epochs", type=int, default=15)
    p.add_argument("--steps", type=int, default=0,
                   help="at most this many steps per epoch (0: all)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--batch-size", type=int, default=32)
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    train_loader = DataLoader(Digits(train=True), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(Digits(train=False), batch_size=256)
    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
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
