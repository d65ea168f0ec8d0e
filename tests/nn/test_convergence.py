"""Convergence (issue 5, part 5): an MLP and a small CNN, trained with ordinary PyTorch code
on fixed synthetic problems, reach a stated loss.  The data come from NumPy with fixed seeds
and the initial weights from pytorchlite.manual_seed, so every run is the same run."""
import numpy as np

import pytorchlite as torch
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F


def spirals(n_per_class=100, classes=3, seed=0):
    """Interleaved 2-D spirals: not linearly separable, so the hidden layers must work."""
    rng = np.random.default_rng(seed)
    xs, ys = [], []
    for c in range(classes):
        r = np.linspace(0.05, 1.0, n_per_class)
        t = np.linspace(c * 4.0, (c + 1) * 4.0, n_per_class) + rng.normal(0, 0.15, n_per_class)
        xs.append(np.stack([r * np.sin(t), r * np.cos(t)], 1))
        ys.append(np.full(n_per_class, c))
    return (torch.tensor(np.concatenate(xs), dtype=torch.float32),
            torch.tensor(np.concatenate(ys)))


def bars(n=256, size=10, seed=0):
    """size x size noisy images holding one horizontal (class 0) or vertical (class 1) bar of
    length 5 at a random place: a CNN's translation-invariant pattern."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 0.3, (n, 1, size, size)).astype(np.float32)
    y = rng.integers(0, 2, n)
    for i in range(n):
        a, b = rng.integers(0, size - 5), rng.integers(0, size)
        if y[i] == 0:
            x[i, 0, b, a:a + 5] += 1.0
        else:
            x[i, 0, a:a + 5, b] += 1.0
    return torch.tensor(x), torch.tensor(y)


def test_mlp_reaches_stated_loss_on_spirals():
    torch.manual_seed(0)
    x, y = spirals()
    model = nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                          nn.Linear(64, 3))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    first = None
    for step in range(400):
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert first > 1.0                     # chance level is log(3) = 1.10
    assert loss.item() < 0.01, loss.item()   # measured: 0.0003
    assert (model(x).argmax(1) == y).float().mean().item() > 0.97


def test_cnn_reaches_stated_loss_on_bars():
    torch.manual_seed(0)
    x, y = bars()
    model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16 * 2 * 2, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    losses = []
    for epoch in range(30):
        for i in range(0, len(x), 64):
            opt.zero_grad()
            loss = F.cross_entropy(model(x[i:i + 64]), y[i:i + 64])
            loss.backward()
            opt.step()
        losses.append(F.cross_entropy(model(x), y).item())
    assert losses[0] > 0.3
    assert losses[-1] < 0.02, losses[-1]   # measured: 0.0027
    xt, yt = bars(seed=1)                  # fresh images: the pattern was learnt, not the set
    assert (model(xt).argmax(1) == yt).float().mean().item() > 0.95
