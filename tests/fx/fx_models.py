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

    class Layers(nn.Module):
        """The nn layers whose forward calls torch.nn.functional, traced into (DeepTracer)."""
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1)
            self.relu = nn.ReLU()
            self.pool = nn.MaxPool2d(2)
            self.avg = nn.AvgPool2d(2)
            self.ada = nn.AdaptiveAvgPool2d(1)
            self.drop = nn.Dropout(0.1)
            self.fc = nn.Linear(4, 6)
            self.gelu = nn.GELU()
            self.ln = nn.LayerNorm(6)
            self.emb = nn.Embedding(10, 6)
            self.softmax = nn.Softmax(dim=-1)
            self.logsm = nn.LogSoftmax(dim=1)
            self.loss = nn.CrossEntropyLoss()

        def forward(self, x, idx):
            h = self.pool(self.relu(self.conv(x)))
            h = self.ada(self.avg(h)).flatten(1)
            h = self.ln(self.gelu(self.fc(self.drop(h)))) + self.emb(idx)
            return self.softmax(h), self.loss(self.logsm(h), idx)

    class Activations(nn.Module):
        """More layers over torch.nn.functional: activations, 1-d convolutions and pools,
        group norm, losses."""
        def __init__(self):
            super().__init__()
            self.acts = nn.Sequential(
                nn.SiLU(), nn.LeakyReLU(0.2), nn.ELU(), nn.Softplus(), nn.Hardtanh(), nn.Tanh(),
                nn.Sigmoid(), nn.ReLU6(), nn.Hardswish(), nn.Mish(), nn.GELU(approximate="tanh"),
                nn.Softmin(1), nn.Hardsigmoid(), nn.CELU(), nn.SELU(), nn.LogSigmoid(),
                nn.Softsign(), nn.Tanhshrink(), nn.Softshrink(), nn.Hardshrink(),
                nn.Threshold(0.1, 0.0), nn.RReLU())
            self.prelu = nn.PReLU()
            self.c1 = nn.Conv1d(4, 4, 3)
            self.gn = nn.GroupNorm(2, 4)
            self.mp1 = nn.MaxPool1d(2)
            self.ap1 = nn.AvgPool1d(2)
            self.amp = nn.AdaptiveMaxPool1d(2)
            self.ct = nn.ConvTranspose1d(4, 4, 3)
            self.glu = nn.GLU()
            self.mse = nn.MSELoss()
            self.l1 = nn.L1Loss()
            self.bce = nn.BCEWithLogitsLoss()
            self.d1 = nn.Dropout1d()

        def forward(self, x):
            x = self.acts(x)
            h = self.ct(self.amp(self.ap1(self.mp1(self.gn(self.c1(self.prelu(x)))))))
            return self.glu(h), self.mse(h, h), self.l1(h, h), self.bce(h, h), self.d1(h)

    class DeepTracer(t.fx.Tracer):
        """Traces into every submodule (the nn layers too)."""
        def is_leaf_module(self, m, module_qualified_name):
            return False

    return {"MLP": MLP, "CNN": CNN, "Ops": Ops, "Scaled": Scaled, "Layers": Layers,
            "Activations": Activations, "DeepTracer": DeepTracer}
