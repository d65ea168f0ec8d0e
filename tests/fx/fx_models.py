"""Models that tests/fx traces, written once against a torch-like namespace `t` (pytorchlite,
or PyTorch for the torch_ref comparisons), so that both trace the same code."""
import math


def models(t):
    nn = t.nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 8)
            self.act = nn.ReLU()
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.act(self.fc1(x)))

    class Block(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(c)
            self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(c)

        def forward(self, x):
            out = t.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return t.relu(out + x)

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 4, 3)
            self.layer = nn.Sequential(Block(4), Block(4))
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            x = self.pool(self.layer(t.relu(self.stem(x))))
            return self.fc(t.flatten(x, 1))

    class Ops(nn.Module):
        """Operators, methods, torch functions, attributes, indexing, a parameter, a buffer
        and a tensor attribute that is neither."""
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.param = nn.Parameter(t.ones(4))
            self.register_buffer("shift", t.arange(4.0))
            self.const = t.full((4,), 0.5)

        def forward(self, x, y=None):
            h = self.lin(x) + x
            h = h * self.param - self.shift
            z = t.relu(h).sum(dim=-1, keepdim=True)
            s = x.shape[0]
            w = self.const + h
            return (h.view(s, -1) - z, x[:, 0:2], t.cat([h, x], 1).transpose(0, 1), -x,
                    2 * w, h.size(1), x.T @ h, h ** 2 / 3, x.dtype)

    class Scaled(nn.Module):
        def forward(self, x, scale: float = 1.0):
            return x * math.sqrt(scale)

    return {"MLP": MLP, "CNN": CNN, "Ops": Ops, "Scaled": Scaled}
