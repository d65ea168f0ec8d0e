"""Which operators a training program and nn.functional reach have no CUDA kernel yet.

Runs each case (an nn layer's forward and backward, a functional, a factory, an optimizer
step) on CPU tensors with the CUDA kernels' host emulation on (_C._cuda_kernel_emulation:
the CPU kernels that hand their work to a CUDA kernel take that path), records the
operators that ran on the CPU key (_C._dispatch_stats) and lists those with no kernel on
the CUDA key: on a CUDA tensor each of them raises "Could not run ... with arguments from
the 'CUDA' backend".  A case that raises is listed with its error.  Needs no device.

    PYTHONPATH=. python tools/cuda_op_audit.py            # the missing operators, by case
    PYTHONPATH=. python tools/cuda_op_audit.py --ops      # one line per missing operator
    PYTHONPATH=. python tools/cuda_op_audit.py --table    # every operator of the table with
                                                          # a CPU kernel and no CUDA one

The cases are what training programs reach; --table is the whole operator table (sin, the
views of complex tensors, linalg...), which ordinary programs reach too.
"""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests", "cuda"))

import pytorchlite as ptl  # noqa: E402
import pytorchlite.nn as nn  # noqa: E402
import pytorchlite.nn.functional as F  # noqa: E402
from pytorchlite import _C  # noqa: E402
from kernel_emulation import TUNINGS, emulated  # noqa: E402


def r(*shape, grad=True):
    return ptl.randn(*shape, requires_grad=grad)


def layer(mod, *inputs):
    """forward and backward of an nn module"""
    def run():
        out = mod(*inputs)
        out = out[0] if isinstance(out, tuple) else out
        out.float().sum().backward()
    return run


def fwd_bwd(fn, *inputs):
    def run():
        out = fn(*inputs)
        out = out[0] if isinstance(out, tuple) else out
        if out.requires_grad:
            out.float().sum().backward()
    return run


def optim_step(cls, **kw):
    def run():
        lin = nn.Linear(4, 3)
        opt = cls(lin.parameters(), **kw)
        lin(r(2, 4)).sum().backward()
        opt.step()
        opt.zero_grad()
    return run


def cases():
    img, seq, idx = r(2, 3, 8, 8), r(2, 5, 4), ptl.tensor([[1, 2, 0], [3, 1, 1]])
    tgt = ptl.tensor([1, 0])
    c = {
        "Linear": layer(nn.Linear(4, 3), r(2, 4)),
        "Bilinear": layer(nn.Bilinear(4, 3, 2), r(2, 4), r(2, 3)),
        "Conv1d": layer(nn.Conv1d(3, 4, 3), r(2, 3, 8)),
        "Conv2d": layer(nn.Conv2d(3, 4, 3, padding=1), img),
        "Conv3d": layer(nn.Conv3d(2, 2, 3), r(1, 2, 4, 4, 4)),
        "ConvTranspose2d": layer(nn.ConvTranspose2d(3, 2, 3, stride=2), img),
        "BatchNorm1d": layer(nn.BatchNorm1d(5), r(4, 5)),
        "BatchNorm2d": layer(nn.BatchNorm2d(3), img),
        "LayerNorm": layer(nn.LayerNorm(4), seq),
        "GroupNorm": layer(nn.GroupNorm(1, 3), img),
        "InstanceNorm2d": layer(nn.InstanceNorm2d(3), img),
        "LocalResponseNorm": layer(nn.LocalResponseNorm(2), img),
        "Embedding": layer(nn.Embedding(5, 3), idx),
        "EmbeddingBag": layer(nn.EmbeddingBag(5, 3, mode="mean"), idx),
        "RNN": layer(nn.RNN(4, 3, batch_first=True), seq),
        "LSTM": layer(nn.LSTM(4, 3, batch_first=True), seq),
        "GRU": layer(nn.GRU(4, 3, batch_first=True), seq),
        "MultiheadAttention": layer(nn.MultiheadAttention(4, 2, batch_first=True), seq, seq, seq),
        "TransformerEncoderLayer": layer(
            nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0, batch_first=True), seq),
        "Dropout": layer(nn.Dropout(0.5), seq),
        "Dropout2d": layer(nn.Dropout2d(0.5), img),
        "MaxPool2d": layer(nn.MaxPool2d(2), img),
        "MaxPool1d": layer(nn.MaxPool1d(2), r(2, 3, 8)),
        "AvgPool1d": layer(nn.AvgPool1d(2), r(2, 3, 8)),
        "AvgPool2d": layer(nn.AvgPool2d(2), img),
        "AdaptiveAvgPool2d": layer(nn.AdaptiveAvgPool2d(3), img),
        "AdaptiveMaxPool2d": layer(nn.AdaptiveMaxPool2d(3), img),
        "AdaptiveMaxPool2d(1)": layer(nn.AdaptiveMaxPool2d(1), img),
        "max_unpool2d": fwd_bwd(lambda x: F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True),
                                                         2), img),
        "PixelShuffle": layer(nn.PixelShuffle(2), r(1, 4, 3, 3)),
        "Flatten+Unflatten": layer(nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 64))), img),
        "Fold/Unfold": layer(nn.Sequential(nn.Unfold(2), nn.Fold((8, 8), 2)), img),
        "interpolate nearest": fwd_bwd(lambda x: F.interpolate(x, scale_factor=2), img),
        "interpolate bilinear": fwd_bwd(
            lambda x: F.interpolate(x, scale_factor=2, mode="bilinear"), img),
        "interpolate bicubic": fwd_bwd(
            lambda x: F.interpolate(x, scale_factor=2, mode="bicubic"), img),
        "pad constant": fwd_bwd(lambda x: F.pad(x, (1, 2, 1, 0)), img),
        "pad reflect": fwd_bwd(lambda x: F.pad(x, (1, 2, 1, 0), mode="reflect"), img),
        "pad replicate": fwd_bwd(lambda x: F.pad(x, (1, 2, 1, 0), mode="replicate"), img),
        "pad circular": fwd_bwd(lambda x: F.pad(x, (1, 2, 1, 0), mode="circular"), img),
        "grid_sample": fwd_bwd(lambda x, g: F.grid_sample(x, g, align_corners=False), img,
                               r(2, 4, 4, 2) * 0.5),
        "affine_grid": fwd_bwd(lambda t: F.affine_grid(t, (2, 3, 4, 4), align_corners=False),
                               r(2, 2, 3)),
        "sdpa causal": fwd_bwd(lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True),
                               r(1, 2, 4, 8)),
        "cumsum": fwd_bwd(lambda x: x.cumsum(1), seq),
        "cumprod": fwd_bwd(lambda x: x.cumprod(1), seq),
        "tril/triu": fwd_bwd(lambda x: x.tril() + x.triu(1), r(4, 4)),
        "flip": fwd_bwd(lambda x: x.flip(1), seq),
        "roll": fwd_bwd(lambda x: x.roll(1, 1), seq),
        "where": fwd_bwd(lambda x: ptl.where(x > 0, x, x * 2), seq),
        "masked_fill": fwd_bwd(lambda x: x.masked_fill(x > 0, 0.5), seq),
        "masked_fill Tensor": fwd_bwd(lambda x: x.masked_fill(x > 0, ptl.tensor(0.5)), seq),
        "masked_select": fwd_bwd(lambda x: x.masked_select(x > 0), seq),
        "nonzero": lambda: (seq > 0).nonzero(),
        "take": fwd_bwd(lambda x: x.take(ptl.tensor([0, 5, 7])), seq),
        "clamp": fwd_bwd(lambda x: x.clamp(-0.5, 0.5), seq),
        "one_hot": lambda: F.one_hot(idx, 5),
        "bincount": lambda: ptl.bincount(ptl.tensor([1, 2, 2, 5])),
        "unique": lambda: ptl.unique(idx, return_counts=True, return_inverse=True),
        "repeat_interleave": fwd_bwd(lambda x: x.repeat_interleave(2, dim=1), seq),
        "arange/linspace/full/eye/zeros/ones (cuda)": lambda: None,
        "cross_entropy": fwd_bwd(lambda x: F.cross_entropy(x, tgt), r(2, 5)),
        "cross_entropy smoothing": fwd_bwd(
            lambda x: F.cross_entropy(x, tgt, label_smoothing=0.1), r(2, 5)),
        "nll_loss": fwd_bwd(lambda x: F.nll_loss(F.log_softmax(x, 1), tgt), r(2, 5)),
        "mse_loss": fwd_bwd(lambda x: F.mse_loss(x, ptl.zeros(2, 5)), r(2, 5)),
        "l1_loss": fwd_bwd(lambda x: F.l1_loss(x, ptl.zeros(2, 5)), r(2, 5)),
        "smooth_l1_loss": fwd_bwd(lambda x: F.smooth_l1_loss(x, ptl.zeros(2, 5)), r(2, 5)),
        "huber_loss": fwd_bwd(lambda x: F.huber_loss(x, ptl.zeros(2, 5)), r(2, 5)),
        "bce": fwd_bwd(lambda x: F.binary_cross_entropy(x.sigmoid(), ptl.rand(2, 5)), r(2, 5)),
        "bce_with_logits": fwd_bwd(
            lambda x: F.binary_cross_entropy_with_logits(x, ptl.rand(2, 5)), r(2, 5)),
        "kl_div": fwd_bwd(lambda x: F.kl_div(F.log_softmax(x, 1), ptl.rand(2, 5),
                                             reduction="batchmean"), r(2, 5)),
        "ctc_loss": fwd_bwd(
            lambda x: F.ctc_loss(x.log_softmax(2), ptl.tensor([[1, 2], [2, 2]]),
                                 ptl.tensor([6, 6]), ptl.tensor([2, 2])), r(6, 2, 4)),
        "margin_ranking": fwd_bwd(lambda x: F.margin_ranking_loss(x, x.flip(0), ptl.ones(5)),
                                  r(5)),
        "cosine_embedding": fwd_bwd(lambda x: F.cosine_embedding_loss(x, x.flip(0),
                                                                      ptl.ones(2)), r(2, 5)),
        "triplet_margin": fwd_bwd(lambda x: F.triplet_margin_loss(x, x * 2, x.flip(0)), r(2, 5)),
        "hinge_embedding": fwd_bwd(lambda x: F.hinge_embedding_loss(x, ptl.ones(2, 5)), r(2, 5)),
        "multilabel_soft_margin": fwd_bwd(
            lambda x: F.multilabel_soft_margin_loss(x, ptl.ones(2, 5)), r(2, 5)),
        "poisson_nll": fwd_bwd(lambda x: F.poisson_nll_loss(x, ptl.rand(2, 5)), r(2, 5)),
        "gaussian_nll": fwd_bwd(lambda x: F.gaussian_nll_loss(x, ptl.zeros(2, 5),
                                                              ptl.ones(2, 5)), r(2, 5)),
        "SGD momentum": optim_step(ptl.optim.SGD, lr=0.1, momentum=0.9),
        "Adam": optim_step(ptl.optim.Adam, lr=0.1),
        "AdamW": optim_step(ptl.optim.AdamW, lr=0.1),
        "clip_grad_norm_": lambda: nn.utils.clip_grad_norm_([r(3, 3)], 1.0),
    }
    for name in ("relu", "gelu", "silu", "mish", "elu", "selu", "celu", "leaky_relu",
                 "hardtanh", "hardswish", "hardsigmoid", "softplus", "softsign", "tanh",
                 "sigmoid", "logsigmoid", "tanhshrink", "softshrink", "hardshrink", "relu6",
                 "glu", "softmax", "log_softmax", "softmin", "normalize"):
        fn = getattr(F, name)
        kw = {"dim": -1} if name in ("softmax", "log_softmax", "softmin", "glu") else {}
        c["F." + name] = fwd_bwd(lambda x, fn=fn, kw=kw: fn(x, **kw), r(2, 6))
    c["PReLU"] = layer(nn.PReLU(), r(2, 6))
    return c


FACTORIES = {
    "arange": lambda d: ptl.arange(5, device=d),
    "arange float": lambda d: ptl.arange(0, 1, 0.25, device=d),
    "linspace": lambda d: ptl.linspace(0, 1, 5, device=d),
    "full": lambda d: ptl.full((2, 3), 1.5, device=d),
    "eye": lambda d: ptl.eye(3, device=d),
    "zeros": lambda d: ptl.zeros(2, 3, device=d),
    "ones": lambda d: ptl.ones(2, 3, device=d),
    "empty": lambda d: ptl.empty(2, 3, device=d),
}


def missing_ops():
    """{op: CUDA kernel?} for every op that ran on the CPU key since the last reset"""
    out = {}
    for name, keys in _C._dispatch_stats().items():
        if keys.get("CPU", 0) > 0:
            out[name] = _C._dispatch_has_kernel_for_dispatch_key(name, "CUDA")
    return out


def table_without_cuda():
    """The operators of src/aten/ops.def with a kernel on the CPU key and none on CUDA."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with open(os.path.join(root, "src", "aten", "ops.def")) as f:
        schemas = re.findall(r'PTL_OP\(\w+,\s*"([^"]+)"', f.read())
    names = ["aten::" + schema.split("(")[0] for schema in schemas]
    return [n[len("aten::"):] for n in names
            if _C._dispatch_has_kernel_for_dispatch_key(n, "CPU") and
            not _C._dispatch_has_kernel_for_dispatch_key(n, "CUDA")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ops", action="store_true", help="one line per missing operator")
    ap.add_argument("--table", action="store_true",
                    help="every operator of the table with a CPU kernel and no CUDA kernel")
    args = ap.parse_args()
    if args.table:
        missing = table_without_cuda()
        print(" ".join(missing))
        print(f"{len(missing)} operators of the table have a CPU kernel and no CUDA kernel")
        return
    ptl.manual_seed(0)
    by_case, errors, every = {}, {}, {}
    for name, run in cases().items():
        if name.startswith("arange/"):
            continue
        _C._dispatch_reset_stats()
        try:
            with emulated(TUNINGS["small"]):
                run()
        except Exception as e:  # noqa: BLE001 - the audit lists every failure
            errors[name] = f"{type(e).__name__}: {e}"
        ops = missing_ops()
        by_case[name] = sorted(op for op, has in ops.items() if not has)
        for op in by_case[name]:
            every.setdefault(op, []).append(name)
    # the factories' ops as they would run with device="cuda" (the CPU ones here)
    for name, make in FACTORIES.items():
        _C._dispatch_reset_stats()
        make("cpu")
        by_case["factory " + name] = sorted(op for op, has in missing_ops().items() if not has)
        for op in by_case["factory " + name]:
            every.setdefault(op, []).append("factory " + name)
    if args.ops:
        for op in sorted(every):
            print(f"{op:48s} {', '.join(every[op][:4])}{' ...' if len(every[op]) > 4 else ''}")
    else:
        for name, ops in by_case.items():
            print(f"{name:40s} {'ok' if not ops else ' '.join(ops)}")
    for name, e in errors.items():
        print(f"ERROR {name}: {e}")
    print(f"{len(every)} operators without a CUDA kernel; "
          f"{sum(1 for v in by_case.values() if not v)} of {len(by_case)} cases complete")


if __name__ == "__main__":
    main()
