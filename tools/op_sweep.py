"""Times about a hundred everyday ops on 1M-element float32 inputs next to PyTorch, one thread,
interleaved in one process, and prints them sorted by PyTorch's time / ours (below 1: we are
slower).  A sweep to find the kernels that are far behind, not a benchmark: the figures that
count are the ones in benchmarks/, which run the references under pytest-benchmark.

    OMP_NUM_THREADS=1 taskset -c 1 python tools/op_sweep.py [name-substring ...]

Needs PyTorch (pip install torch==2.13.0, a CPU build)."""
import sys
import time

import numpy as np

import pytorchlite as P

try:
    import torch as T
except ImportError:
    sys.exit("tools/op_sweep.py compares with PyTorch: pip install torch==2.13.0")

OPS = {
    "var(0)": "a.var(0)", "std(-1)": "a.std(-1)", "logsumexp(-1)": "a.logsumexp(-1)",
    "logsumexp(0)": "a.logsumexp(0)", "prod(0)": "(1 + a / 64).prod(0)",
    "amax(0)": "a.amax(0)", "argmax(0)": "a.argmax(0)", "max(-1)": "a.max(-1)",
    "norm(dim=-1)": "a.norm(dim=-1)", "sum(-1)": "a.sum(-1)", "mean(0)": "a.mean(0)",
    "cumsum(0)": "a.cumsum(0)", "cumsum(-1)": "a.cumsum(-1)", "sort(-1)": "a.sort(-1)",
    "topk(10)": "a.topk(10, -1)", "index_select(0)": "a.index_select(0, idx)",
    "index_select(1)": "a.index_select(1, idx)", "x[idx]": "a[idx]",
    "index_put_": "a.clone().index_put_((idx,), b)", "index_add": "a.index_add(0, idx, b)",
    "gather": "a.gather(1, idx2)", "scatter_add": "a.scatter_add(1, idx2, b)",
    "where": "L.where(a > 0, a, b)", "clamp": "a.clamp(-0.5, 0.5)",
    "masked_fill": "a.masked_fill(a > 0, 0.)", "cat(0)": "L.cat([a, b], 0)",
    "cat(1)": "L.cat([a, b], 1)", "stack": "L.stack([a, b])",
    "t().contiguous()": "a.t().contiguous()", "NCHW->NHWC": "img.permute(0, 2, 3, 1).contiguous()",
    "repeat": "a.repeat(2, 1)", "roll": "a.roll(3, 1)", "flip(1)": "a.flip(1)", "tril": "a.tril()",
    "pad": "F.pad(img, (1, 1, 1, 1))", "interpolate x2": "F.interpolate(img, scale_factor=2)",
    "bilinear x2": "F.interpolate(img, scale_factor=2, mode='bilinear', align_corners=False)",
    "avg_pool2d": "F.avg_pool2d(img, 2)",
    "adaptive_avg_pool2d(1)": "F.adaptive_avg_pool2d(img, 1)",
    "adaptive_avg_pool2d(2)": "F.adaptive_avg_pool2d(img, 2)",
    "adaptive_max_pool2d(1)": "F.adaptive_max_pool2d(img, 1)", "max_pool2d(3,2,1)":
    "F.max_pool2d(img, 3, 2, 1)", "softplus": "F.softplus(a)", "mish": "F.mish(a)",
    "elu": "F.elu(a)", "log_sigmoid": "F.logsigmoid(a)", "softmax(0)": "F.softmax(a, 0)",
    "log_softmax(-1)": "F.log_softmax(a, -1)", "layer_norm": "F.layer_norm(a, (1024,))",
    "group_norm": "F.group_norm(img, 8)", "abs": "a.abs()", "sqrt": "a.abs().sqrt()",
    "rsqrt": "(a.abs() + 1).rsqrt()", "pow(2)": "a.pow(2)", "pow(3.5)": "a.abs().pow(3.5)",
    "tanh": "a.tanh()", "exp": "a.exp()", "log1p": "a.abs().log1p()", "expm1": "a.expm1()",
    "atan2": "L.atan2(a, b)", "fmod": "L.fmod(a, b)", "remainder": "L.remainder(a, b)",
    "floor_divide": "L.floor_divide(a, b)", "sign": "a.sign()", "round": "a.round()",
    "nan_to_num": "a.nan_to_num()", "erfinv": "(a.tanh() * 0.9).erfinv()",
    "argsort": "a.argsort(-1)", "unique": "L.unique(idx2)", "bincount": "L.bincount(idx)",
    "nonzero": "(a > 0).nonzero()", "masked_select": "a.masked_select(a > 0)",
    "x[x > 0]": "a[a > 0]", "mse_loss": "F.mse_loss(a, b)",
    "smooth_l1_loss": "F.smooth_l1_loss(a, b)",
    "bce_with_logits": "F.binary_cross_entropy_with_logits(a, (b > 0).float())",
    "cosine_similarity": "F.cosine_similarity(a, b)", "normalize": "F.normalize(a)",
    "randn": "L.randn(1024, 1024)", "rand": "L.rand(1024, 1024)", "dropout": "F.dropout(a, 0.5)",
    "randperm": "L.randperm(100000)", "zeros": "L.zeros(1024, 1024)",
    "half()": "a.half()", "bfloat16()": "a.bfloat16()", "float() of half": "h.float()",
    "long()": "a.long()", "double()": "a.double()", "cummax": "a.cummax(1)",
    "median(-1)": "a.median(-1)", "kthvalue": "a.kthvalue(5, -1)", "lerp": "L.lerp(a, b, 0.3)",
    "addcmul": "L.addcmul(a, a, b, value=0.5)", "maximum": "L.maximum(a, b)",
    "embedding_bag": "F.embedding_bag(idx2[:64, :16], a, mode='mean')",
    "one_hot": "F.one_hot(idx, 1024)", "int() of float": "a.int()",
    "float() of double": "d.float()", "float() of long": "idx2.float()",
    "float() of bool": "(a > 0).float()", "float() of uint8": "u8.float()",
    "adaptive_avg_pool2d(1) 128x64x8x8": "F.adaptive_avg_pool2d(head, 1)",
    "adaptive_avg_pool2d(1) 32x512x7x7": "F.adaptive_avg_pool2d(head7, 1)",
    "adaptive_avg_pool2d(1) backward": "gpool(gin)",
}


def inputs(lib):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((1024, 1024)).astype(np.float32)
    b = rng.standard_normal((1024, 1024)).astype(np.float32)
    img = rng.standard_normal((32, 64, 32, 32)).astype(np.float32)
    idx = rng.integers(0, 1024, (1024,))
    idx2 = rng.integers(0, 1024, (1024, 1024))
    u8 = rng.integers(0, 256, (32, 3, 128, 128), dtype=np.uint8)
    head = lib.tensor(rng.standard_normal((128, 64, 8, 8)).astype(np.float32))
    head7 = lib.tensor(rng.standard_normal((32, 512, 7, 7)).astype(np.float32))
    gin = head7.clone().requires_grad_()
    gout = lib.ones(32, 512, 1, 1)

    def gpool(x):   # the backward of a ResNet head's global pooling
        return lib.autograd.grad(lib.nn.functional.adaptive_avg_pool2d(x, 1), x, gout)

    return dict(a=lib.tensor(a), b=lib.tensor(b), img=lib.tensor(img), idx=lib.tensor(idx),
                idx2=lib.tensor(idx2), h=lib.tensor(a).half(), d=lib.tensor(a).double(),
                u8=lib.tensor(u8), head=head, head7=head7, gin=gin, gpool=gpool, L=lib,
                F=lib.nn.functional)


def best_of(fn, reps=5, rounds=7):
    fn()
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def main(argv):
    P.set_num_threads(1)
    T.set_num_threads(1)
    envs = {"ours": inputs(P), "torch": inputs(T)}
    rows = []
    for name, expr in OPS.items():
        if argv and not any(s in name for s in argv):
            continue
        fns = {k: eval("lambda: " + expr, env) for k, env in envs.items()}   # noqa: S307
        try:
            ours, theirs = best_of(fns["ours"]), best_of(fns["torch"])
            ours, theirs = min(ours, best_of(fns["ours"])), min(theirs, best_of(fns["torch"]))
        except Exception as e:                      # an op one library lacks
            print(f"{name}: {type(e).__name__}: {str(e)[:100]}")
            continue
        rows.append((theirs / ours, name, ours, theirs))
    for ratio, name, ours, theirs in sorted(rows):
        print(f"{ratio:7.2f}  {name:24s} ours {ours * 1e6:9.0f} us   torch {theirs * 1e6:9.0f} us")


if __name__ == "__main__":
    main(sys.argv[1:])
