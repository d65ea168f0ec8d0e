"""Training-step benchmarks: one full step (zero_grad, forward, loss, backward, optimizer.step)
of three small models, pytorchlite next to PyTorch running the SAME code (`build(lib)` with lib
= pytorchlite or torch) from the same initial values and data. No NumPy row (NumPy has no
autograd); the torch rows are skipped when torch is not installed.

- MLP 784-512-256-10, batch 128, cross-entropy, SGD momentum 0.9;
- CNN conv 1->32 3x3, relu, maxpool, conv 32->64 3x3, relu, maxpool, linear 1600->128,
  linear 128->10 on 28x28, batch 64, Adam;
- GPT: 2 layers, d=128, 4 heads, seq 64, batch 16, vocab 65, AdamW;
- ResNet-style: conv 3->16 3x3 + BatchNorm + relu, three stages of two residual blocks
  (16, 32 stride 2, 64 stride 2; each block conv-bn-relu-conv-bn plus the shortcut, a 1x1
  conv-bn where the shape changes), global average pool, linear 64->10, on 32x32 images,
  batch 32, SGD momentum 0.9 with weight decay 5e-4.
The CNN and ResNet steps run once more with both libraries on two intra-op threads.
"""
import math

import numpy as np
import pytest

from _impls import lib as library

# a torch row is skipped (not left out) when PyTorch is not installed
IMPLS = ["pytorchlite", "torch"]


def build_mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


def build_cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),      # [B, 32, 13, 13]
                         nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),     # [B, 64, 5, 5]
                         nn.Flatten(), nn.Linear(1600, 128), nn.ReLU(), nn.Linear(128, 10))


def build_gpt(lib, vocab=65, block=64, d=128, n_layer=2, n_head=4):
    nn, F = lib.nn, lib.nn.functional

    class LayerNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(lib.ones(d))
            self.bias = nn.Parameter(lib.zeros(d))

        def forward(self, x):
            return F.layer_norm(x, (d,), self.weight, self.bias)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = LayerNorm(), LayerNorm()
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.fc_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, n_head, C // n_head).transpose(1, 2) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
            return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok_emb = nn.Parameter(lib.zeros(vocab, d))
            self.pos_emb = nn.Parameter(lib.zeros(block, d))
            self.blocks = nn.ModuleList([Block() for _ in range(n_layer)])
            self.ln_f = LayerNorm()
            self.head = nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = F.embedding(idx, self.tok_emb) + self.pos_emb[:idx.shape[1]]
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln_f(x))

    return GPT()


def build_resnet(lib, widths=(16, 32, 64), blocks_per_stage=2, classes=10):
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.shortcut = nn.Sequential()
            if stride != 1 or cin != cout:
                self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                              nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return F.relu(out + self.shortcut(x))

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(widths[0]), nn.ReLU())
            layers, cin = [], widths[0]
            for i, w in enumerate(widths):
                for j in range(blocks_per_stage):
                    layers.append(BasicBlock(cin, w, 2 if i > 0 and j == 0 else 1))
                    cin = w
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            out = self.layers(self.stem(x))
            return self.fc(F.adaptive_avg_pool2d(out, 1).flatten(1))

    return ResNet()


def init_values(model, lib, seed=0):
    """Overwrite every parameter with the same seeded values in either library (uniform with
    nn.Linear's default bound 1/sqrt(fan_in); LayerNorm weights stay near 1)."""
    g = np.random.default_rng(seed)
    with lib.no_grad():
        for name, p in model.named_parameters():
            shape = tuple(p.shape)
            fan_in = int(np.prod(shape[1:])) if len(shape) > 1 else shape[0]
            a = g.uniform(-1, 1, shape) / math.sqrt(fan_in)
            if name.endswith(("ln1.weight", "ln2.weight", "ln_f.weight")) or \
                    (".bn" in name or "stem.1" in name or "shortcut.1" in name) and \
                    name.endswith("weight"):
                a = 1.0 + 0.1 * a
            p.copy_(lib.tensor(a.astype(np.float32)))


def make_step(lib, model, opt, x, y, flatten_logits=False):
    F = lib.nn.functional

    def step():
        opt.zero_grad()
        out = model(x)
        if flatten_logits:
            out = out.reshape(-1, out.shape[-1])
        loss = F.cross_entropy(out, y)
        loss.backward()
        opt.step()
        return loss
    return step


def setup(impl, which, device="cpu"):
    """The step of `which` in library `impl` (a name, or a module: another build's package in
    interleaved_step_builds.py), its model and data on `device`."""
    lib = library(impl) if isinstance(impl, str) else impl
    lib.manual_seed(0)
    g = np.random.default_rng(1)
    if which == "mlp":
        model = build_mlp(lib)
        x = g.standard_normal((128, 784)).astype(np.float32)
        y = g.integers(0, 10, 128)
        opt_of = lambda ps: lib.optim.SGD(ps, lr=0.01, momentum=0.9)  # noqa: E731
    elif which == "cnn":
        model = build_cnn(lib)
        x = g.standard_normal((64, 1, 28, 28)).astype(np.float32)
        y = g.integers(0, 10, 64)
        opt_of = lambda ps: lib.optim.Adam(ps, lr=1e-3)  # noqa: E731
    elif which == "resnet":
        model = build_resnet(lib)
        x = g.standard_normal((32, 3, 32, 32)).astype(np.float32)
        y = g.integers(0, 10, 32)
        opt_of = lambda ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9,  # noqa: E731
                                          weight_decay=5e-4)
    else:
        model = build_gpt(lib)
        x = g.integers(0, 65, (16, 64))
        y = g.integers(0, 65, (16 * 64,))
        opt_of = lambda ps: lib.optim.AdamW(ps, lr=1e-3)  # noqa: E731
    model.to(device)
    init_values(model, lib)
    opt = opt_of(model.parameters())
    step = make_step(lib, model, opt, lib.tensor(x, device=device), lib.tensor(y, device=device),
                     flatten_logits=which == "gpt")
    return step


GROUPS = {"mlp": "train step MLP 784-512-256-10 bs128 SGD",
          "cnn": "train step CNN 28x28 bs64 Adam",
          "gpt": "train step GPT 2x128 seq64 bs16 AdamW",
          "resnet": "train step ResNet-style 32x32 bs32 SGD"}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("which", list(GROUPS))
def test_train_step(benchmark, impl, which):
    benchmark.group = GROUPS[which]
    step = setup(impl, which)
    loss = benchmark.pedantic(step, rounds=5, iterations=1, warmup_rounds=1)
    assert math.isfinite(loss.item())


@pytest.mark.parametrize("which", list(GROUPS))
def test_same_first_losses(which):
    """The two libraries run the same computation: equal losses over the first steps."""
    library("torch")
    ours, ref = setup("pytorchlite", which), setup("torch", which)
    for _ in range(3):
        a, b = ours().item(), ref().item()
        assert abs(a - b) <= 1e-3 * max(1.0, abs(b)), (a, b)


# ---- the fused optimizer steps against the op-by-op update, their reference ----

@pytest.mark.parametrize("impl", ["pytorchlite", "composite"])
@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_optimizer_step_fused_vs_composite(benchmark, impl, name):
    """One step over the MLP's parameters (535k): a fused C step per parameter (pytorchlite)
    against the op-by-op update that foreach=False runs (composite)."""
    benchmark.group = f"{name} step, MLP parameters: fused kernel vs composite"
    lib = library("pytorchlite")
    params = list(build_mlp(lib).parameters())
    for p in params:
        p.grad = lib.ones_like(p)
    kwargs = dict(momentum=0.9) if name == "SGD" else {}
    opt = getattr(lib.optim, name)(params, lr=1e-3, foreach=False if impl == "composite"
                                   else None, **kwargs)
    opt.step()      # the state exists from here on
    benchmark(opt.step)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("which", ["cnn", "resnet"])
def test_train_step_two_threads(benchmark, impl, which):
    """The CNN and ResNet steps with both libraries on two intra-op threads: a stream of
    parallel ops tens of microseconds apart (Note [Spin before sleeping] in c10/parallel.c)."""
    benchmark.group = GROUPS[which] + " 2 threads"
    lib = library(impl)
    old = lib.get_num_threads()
    lib.set_num_threads(2)
    try:
        step = setup(impl, which)
        loss = benchmark.pedantic(step, rounds=5, iterations=1, warmup_rounds=1)
    finally:
        lib.set_num_threads(old)
    assert math.isfinite(loss.item())

