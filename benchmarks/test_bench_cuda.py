"""CUDA benchmarks (run by tools/gpu_check.sh; skipped without a GPU): the caching
allocator's malloc/free cycle on the device, next to torch.cuda's caching allocator when the
installed PyTorch has CUDA; elementwise add and the matrix products (issue 15's targets:
float32 GEMM at least 70% of cuBLAS, bfloat16 at least 50%), gather and scatter_add, sort
and topk, the convolutions, grid_sample and the recurrent layers (next to cuDNN), and the GPT
and ResNet-style training steps of test_bench_training.py on the device (issue 15's target:
the GPT step at least as fast as PyTorch eager).  Kernel
benchmarks join this file with the CUDA kernels."""
import pytest

from pytorchlite import _C
from test_bench_training import GROUPS as TRAINING_GROUPS
from test_bench_training import setup as training_step

try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

try:
    _ALLOC = _C._DeviceCachingAllocator(0)
    NO_DEVICE = None
except RuntimeError as e:
    _ALLOC, NO_DEVICE = None, str(e)

pytestmark = pytest.mark.skipif(NO_DEVICE is not None, reason=f"no CUDA device: {NO_DEVICE}")
TORCH_CUDA = torch is not None and torch.cuda.is_available()
IMPLS = ["pytorchlite"] + (["torch"] if TORCH_CUDA else [])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("nbytes", [4096, 8 << 20])
def test_caching_allocator_cycle(benchmark, impl, nbytes):
    benchmark.group = f"caching allocator malloc+free {nbytes} B"
    if impl == "pytorchlite":
        _ALLOC.free(_ALLOC.malloc(nbytes))      # the segment is cached before timing

        def cycle():
            _ALLOC.free(_ALLOC.malloc(nbytes))
    else:
        torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(nbytes))

        def cycle():
            torch.cuda.caching_allocator_delete(torch.cuda.caching_allocator_alloc(nbytes))
    benchmark(cycle)


def library(impl):
    """The module (pytorchlite or torch) and its device synchronisation."""
    if impl == "pytorchlite":
        import pytorchlite
        return pytorchlite, lambda: _C._cuda_synchronize(0)
    return torch, torch.cuda.synchronize


def run_synchronised(benchmark, fn, sync):
    """Times fn() up to the device's completion, after one warm-up call."""
    fn()
    sync()

    def call():
        fn()
        sync()
    benchmark(call)


ADD_NUMEL = 1 << 26   # float32: 256 MiB per operand, 768 MiB moved per add


@pytest.mark.parametrize("impl", IMPLS)
def test_elementwise_add_float32(benchmark, impl):
    """a + b on 2^26 float32, synchronised: the contiguous vectorised path (issue 15's target
    is 90% of HBM bandwidth: 768 MiB per call)."""
    benchmark.group = "elementwise add float32 2^26, synchronised"
    lib, sync = library(impl)
    a = lib.ones(ADD_NUMEL, device="cuda")
    b = lib.ones(ADD_NUMEL, device="cuda")
    run_synchronised(benchmark, lambda: lib.add(a, b), sync)


GEMM_SIZE = 4096   # 2 * 4096^3 = 137 GFLOP per product


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float64"])
def test_gemm_square(benchmark, impl, dtype):
    """a @ b on 4096 x 4096, synchronised (torch: cuBLAS; TF32 off, as PyTorch's default)."""
    benchmark.group = f"mm {dtype} {GEMM_SIZE}^2, synchronised"
    lib, sync = library(impl)
    dt = getattr(lib, dtype)
    a = lib.ones(GEMM_SIZE, GEMM_SIZE, device="cuda").to(dt)
    b = lib.ones(GEMM_SIZE, GEMM_SIZE, device="cuda").to(dt)
    run_synchronised(benchmark, lambda: lib.mm(a, b), sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", ["At_B", "A_Bt"])
def test_gemm_square_transposed(benchmark, impl, dtype, layout):
    """a.T @ b and a @ b.T on 4096 x 4096, synchronised: the products autograd makes for the
    gradients of mm, read without a copy (Note [CUDA GEMM plan])."""
    benchmark.group = f"mm {layout} {dtype} {GEMM_SIZE}^2, synchronised"
    lib, sync = library(impl)
    dt = getattr(lib, dtype)
    a = lib.ones(GEMM_SIZE, GEMM_SIZE, device="cuda").to(dt)
    b = lib.ones(GEMM_SIZE, GEMM_SIZE, device="cuda").to(dt)
    if layout == "At_B":
        run_synchronised(benchmark, lambda: lib.mm(a.t(), b), sync)
    else:
        run_synchronised(benchmark, lambda: lib.mm(a, b.t()), sync)


COPY_NUMEL = 1 << 24   # float32: 64 MiB per host-to-device copy


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("pinned", [True, False], ids=["pinned", "pageable"])
def test_host_to_device_copy(benchmark, impl, pinned):
    """x.to("cuda", non_blocking=True) of 64 MiB, synchronised: from pinned memory one
    cudaMemcpyAsync at the link's speed, from pageable memory CUDA's staged copy (Note
    [Asynchronous copies] in src/cuda/register_cuda.c)."""
    benchmark.group = f"host to device copy 64 MiB, {'pinned' if pinned else 'pageable'}"
    lib, sync = library(impl)
    x = lib.ones(COPY_NUMEL)
    x = x.pin_memory() if pinned else x
    run_synchronised(benchmark, lambda: x.to("cuda", non_blocking=True), sync)


@pytest.mark.parametrize("impl", IMPLS)
def test_event_record_and_query(benchmark, impl):
    """Event.record() on the current stream and query(): the per-step cost of timing."""
    benchmark.group = "cuda Event record + query"
    lib, _ = library(impl)
    ev = lib.cuda.Event()

    def step():
        ev.record()
        ev.query()
    step()
    benchmark(step)


RANDOM_NUMEL = 1 << 26   # float32: 256 MiB written per fill


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("fill", ["uniform_", "normal_", "bernoulli_"])
def test_random_fill_float32(benchmark, impl, fill):
    """A random fill of 2^26 float32 in place, synchronised (random.cu: one thread per Philox
    block; torch: curand Philox)."""
    benchmark.group = f"{fill} float32 2^26, synchronised"
    lib, sync = library(impl)
    x = lib.empty(RANDOM_NUMEL, device="cuda")
    args = (0.5,) if fill == "bernoulli_" else ()
    run_synchronised(benchmark, lambda: getattr(x, fill)(*args), sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("factory", ["rand", "randn", "randint"])
def test_random_factory(benchmark, impl, factory):
    """A new 2^24-element tensor of random values on the device (float32; randint int64),
    synchronised: the fill kernel from the device's generator."""
    benchmark.group = f"{factory} 2^24 on the device, synchronised"
    lib, sync = library(impl)
    args = (0, 1000, (1 << 24,)) if factory == "randint" else (1 << 24,)
    run_synchronised(benchmark, lambda: getattr(lib, factory)(*args, device="cuda"), sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["randperm", "multinomial", "multinomial_replacement"])
def test_randperm_and_multinomial(benchmark, impl, op):
    """randperm(2^20) and multinomial of 64 rows of 1024 categories (64 draws each) on the
    device, synchronised (pytorchlite: on the host from the device's generator, Note [CUDA
    randperm and multinomial]; torch: its device kernels)."""
    benchmark.group = f"{op} on the device, synchronised"
    lib, sync = library(impl)
    if op == "randperm":
        run_synchronised(benchmark, lambda: lib.randperm(1 << 20, device="cuda"), sync)
        return
    p = lib.rand(64, 1024, device="cuda")
    replacement = op == "multinomial_replacement"
    run_synchronised(benchmark, lambda: lib.multinomial(p, 64, replacement), sync)


@pytest.mark.parametrize("impl", IMPLS)
def test_dropout_float32(benchmark, impl):
    """F.dropout(x, 0.1) on 2^24 float32 in training, synchronised (pytorchlite: bernoulli_,
    div_ and mul on the device; torch: the fused native_dropout)."""
    benchmark.group = "dropout float32 2^24, synchronised"
    lib, sync = library(impl)
    F = __import__(f"{lib.__name__}.nn.functional", fromlist=["dropout"])
    x = lib.ones(1 << 24, device="cuda")
    run_synchronised(benchmark, lambda: F.dropout(x, 0.1), sync)


@pytest.mark.parametrize("impl", IMPLS)
def test_adam_step_float32(benchmark, impl):
    """One Adam step of a 2^24-element float32 parameter, synchronised (pytorchlite: the
    fused optim.cu kernel; torch: fused=True)."""
    benchmark.group = "Adam step float32 2^24, synchronised"
    lib, sync = library(impl)
    p = lib.nn.Parameter(lib.ones(1 << 24, device="cuda"))
    p.grad = lib.ones(1 << 24, device="cuda")
    opt = lib.optim.Adam([p], lr=1e-3, **({"fused": True} if impl == "torch" else {}))
    run_synchronised(benchmark, opt.step, sync)


INDEX_ROWS, INDEX_COLS = 1 << 14, 1024   # float32: 64 MiB gathered or scattered per call


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["gather", "scatter_add"])
def test_gather_and_scatter_add_float32(benchmark, impl, op):
    """x.gather(0, idx) and zeros.scatter_add(0, idx, src) over [2^14, 1024] float32 with
    random rows, synchronised (index.cu: gather one thread per element, scatter_add one
    writer per output element, deterministic; torch: atomics for scatter_add)."""
    benchmark.group = f"{op} float32 [2^14, 1024] dim 0, synchronised"
    lib, sync = library(impl)
    x = lib.ones(INDEX_ROWS, INDEX_COLS, device="cuda")
    idx = lib.randint(0, INDEX_ROWS, (INDEX_ROWS, INDEX_COLS), device="cuda")
    if op == "gather":
        run_synchronised(benchmark, lambda: x.gather(0, idx), sync)
    else:
        out = lib.zeros(INDEX_ROWS, INDEX_COLS, device="cuda")
        run_synchronised(benchmark, lambda: out.scatter_add(0, idx, x), sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["index_select", "index_put_accumulate"])
def test_index_select_and_index_put_float32(benchmark, impl, op):
    """x.index_select(0, i) and x.index_put_((i,), v, accumulate=True) with 2^14 random rows
    of 1024 float32, synchronised (index.cu over index.c's tables, built on the host: the
    index is read back, a synchronisation; torch: sort-based accumulate)."""
    benchmark.group = f"{op} float32 2^14 rows of 1024, synchronised"
    lib, sync = library(impl)
    x = lib.ones(INDEX_ROWS, INDEX_COLS, device="cuda")
    values = lib.ones(INDEX_ROWS, INDEX_COLS, device="cuda")
    idx = lib.randint(0, INDEX_ROWS, (INDEX_ROWS,), device="cuda")
    if op == "index_select":
        run_synchronised(benchmark, lambda: x.index_select(0, idx), sync)
    else:
        run_synchronised(benchmark, lambda: x.index_put_((idx,), values, accumulate=True), sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [2, 64])
def test_cat_float32(benchmark, impl, n):
    """cat of n [2^14 / n, 1024] float32 blocks along dim 1 (every input strided in the
    output), synchronised (index.cu: one launch over the inputs' table)."""
    benchmark.group = f"cat of {n} float32 inputs, 2^24 elements, dim 1, synchronised"
    lib, sync = library(impl)
    ts = [lib.ones(INDEX_COLS, INDEX_ROWS // n, device="cuda") for _ in range(n)]
    run_synchronised(benchmark, lambda: lib.cat(ts, 1), sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["sort", "topk"])
@pytest.mark.parametrize("shape", [(4096, 1024), (1, 1 << 22)])
def test_sort_and_topk_float32(benchmark, impl, op, shape):
    """sort (stable) and topk k=16 of float32 rows along the last dim, synchronised
    (sort.cu: a merge sort of every row at once, one thread per element)."""
    benchmark.group = f"{op} float32 {shape[0]}x{shape[1]} dim -1, synchronised"
    lib, sync = library(impl)
    x = lib.randn(*shape, device="cuda")
    if op == "sort":
        run_synchronised(benchmark, lambda: lib.sort(x, dim=-1, stable=True), sync)
    else:
        run_synchronised(benchmark, lambda: lib.topk(x, 16, -1), sync)


CONV_SHAPE = (32, 64, 56, 56)   # a ResNet stage: 32 x 64 x 56 x 56 through 64 3x3 filters


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("pass_", ["forward", "forward+backward"])
def test_conv2d_3x3(benchmark, impl, dtype, pass_):
    """F.conv2d 3x3, padding 1, on 32 x 64 x 56 x 56, synchronised (pytorchlite: conv.cu's
    implicit GEMM, the backward its input and weight gradients and the bias' reduction;
    torch: cuDNN, with TF32 allowed as PyTorch's default for convolutions)."""
    benchmark.group = f"conv2d 3x3 {dtype} {pass_} 32x64x56x56, synchronised"
    lib, sync = library(impl)
    F = __import__(f"{lib.__name__}.nn.functional", fromlist=["conv2d"])
    dt = getattr(lib, dtype)
    x = lib.ones(*CONV_SHAPE, device="cuda").to(dt).requires_grad_(pass_ != "forward")
    w = lib.ones(64, 64, 3, 3, device="cuda").to(dt).requires_grad_(pass_ != "forward")
    b = lib.ones(64, device="cuda").to(dt).requires_grad_(pass_ != "forward")

    def step():
        y = F.conv2d(x, w, b, padding=1)
        if pass_ != "forward":
            y.sum().backward()
    run_synchronised(benchmark, step, sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["max_pool2d", "avg_pool2d", "adaptive_avg_pool2d"])
def test_pool2d_forward_backward_float32(benchmark, impl, op):
    """A pooling of 32 x 64 x 112 x 112 float32 (3x3 stride 2 padding 1; adaptive to 7 x 7)
    and its backward, synchronised (pytorchlite: pool.cu, the backward a gather per
    input-gradient element; torch: its CUDA kernels)."""
    benchmark.group = f"{op} float32 forward+backward 32x64x112x112, synchronised"
    lib, sync = library(impl)
    F = __import__(f"{lib.__name__}.nn.functional", fromlist=[op])
    x = lib.ones(32, 64, 112, 112, device="cuda").requires_grad_(True)
    args = (7,) if op == "adaptive_avg_pool2d" else (3, 2, 1)

    def step():
        getattr(F, op)(x, *args).sum().backward()
    run_synchronised(benchmark, step, sync)


ATTN_SHAPE = (8, 16, 1024, 64)   # B, H, T, head dim: a GPT-2-small-sized attention


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_causal_attention_forward_backward(benchmark, impl, dtype):
    """F.scaled_dot_product_attention(q, k, v, is_causal=True) and its backward on
    [8, 16, 1024, 64], synchronised (pytorchlite: attention.cu's flash-style kernels, Note
    [CUDA flash attention]; torch: its flash or memory-efficient kernel)."""
    benchmark.group = f"causal sdpa forward+backward {dtype} {ATTN_SHAPE}, synchronised"
    lib, sync = library(impl)
    F = __import__(f"{lib.__name__}.nn.functional", fromlist=["scaled_dot_product_attention"])
    dt = getattr(lib, dtype)
    q, k, v = (lib.randn(*ATTN_SHAPE, device="cuda").to(dt).requires_grad_(True)
               for _ in range(3))
    g = lib.randn(*ATTN_SHAPE, device="cuda").to(dt)

    def step():
        F.scaled_dot_product_attention(q, k, v, is_causal=True).backward(g)
    run_synchronised(benchmark, step, sync)


# ---- CUDA graphs (pytorchlite/cuda/graphs.py) ----

def mlp_training_step(lib, width=256, depth=4, batch=64):
    """A small MLP's SGD step on static tensors, eager and captured in a CUDA graph (the
    whole-network capture of PyTorch's CUDA graphs docs): (eager step, replay)."""
    layers = []
    for _ in range(depth):
        layers += [lib.nn.Linear(width, width), lib.nn.ReLU()]
    model = lib.nn.Sequential(*layers).cuda()
    opt = lib.optim.SGD(model.parameters(), lr=0.01)
    x = lib.randn(batch, width, device="cuda")
    target = lib.randn(batch, width, device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        lib.nn.functional.mse_loss(model(x), target).backward()
        opt.step()

    side = lib.cuda.Stream()
    side.wait_stream(lib.cuda.current_stream())
    with lib.cuda.stream(side):
        for _ in range(3):
            step()
    lib.cuda.current_stream().wait_stream(side)
    graph = lib.cuda.CUDAGraph()
    with lib.cuda.graph(graph):
        step()
    return step, graph.replay


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_mlp_training_step_eager_and_replayed(benchmark, impl, mode):
    """The launch overhead that a graph removes: 4 Linear+ReLU layers of 256, batch 64, one
    SGD step, synchronised."""
    benchmark.group = "MLP training step (4x256, batch 64), synchronised"
    lib, sync = library(impl)
    eager, replay = mlp_training_step(lib)
    run_synchronised(benchmark, eager if mode == "eager" else replay, sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["adaptive_max_pool2d", "max_unpool2d"])
def test_adaptive_max_pool_and_unpool_forward_backward_float32(benchmark, impl, op):
    """adaptive_max_pool2d of 32 x 64 x 112 x 112 float32 to 7 x 7, or max_unpool2d of its 2x2
    max pooling back to 112 x 112, and the backward, synchronised (pytorchlite: pool.cu, Note
    [CUDA pooling] and Note [CUDA max_unpool]; torch: its CUDA kernels)."""
    benchmark.group = f"{op} float32 forward+backward 32x64x112x112, synchronised"
    lib, sync = library(impl)
    F = __import__(f"{lib.__name__}.nn.functional", fromlist=[op])
    x = lib.randn(32, 64, 112, 112, device="cuda")
    if op == "max_unpool2d":
        x, idx = F.max_pool2d(x, 2, return_indices=True)
    x.requires_grad_(True)

    def step():
        y = F.adaptive_max_pool2d(x, 7) if op != "max_unpool2d" else F.max_unpool2d(x, idx, 2)
        y.sum().backward()
    run_synchronised(benchmark, step, sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["masked_fill", "take", "where", "gt"])
def test_masked_fill_and_take_float32(benchmark, impl, op):
    """x.masked_fill(mask, 0.5) with a row-broadcast mask over 4096 x 4096 float32,
    where(mask, x, 0.5), x > 0.5, or x.take of 2^24 random indices, synchronised
    (pytorchlite: index.cu, Note [CUDA masked_fill and take]; torch: its CUDA kernels)."""
    benchmark.group = f"{op} float32 4096x4096, synchronised"
    lib, sync = library(impl)
    x = lib.randn(4096, 4096, device="cuda")
    mask = lib.rand(4096, 1, device="cuda") > 0.5
    idx = lib.randint(0, 4096 * 4096, (1 << 24,), device="cuda")
    fns = {"masked_fill": lambda: x.masked_fill(mask, 0.5), "take": lambda: x.take(idx),
           "where": lambda: lib.where(mask, x, 0.5), "gt": lambda: x > 0.5}
    run_synchronised(benchmark, fns[op], sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["flip", "roll", "tril"])
def test_flip_roll_tril_float32(benchmark, impl, op):
    """x.flip(1), x.roll(7, 1) or x.tril() of 4096 x 4096 float32, synchronised
    (pytorchlite: index.cu's shape movers, Note [CUDA masked_fill and take]; torch: its CUDA
    kernels)."""
    benchmark.group = f"{op} float32 4096x4096, synchronised"
    lib, sync = library(impl)
    x = lib.randn(4096, 4096, device="cuda")
    fns = {"flip": lambda: x.flip(1), "roll": lambda: x.roll(7, 1), "tril": lambda: x.tril()}
    run_synchronised(benchmark, fns[op], sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum_float32(benchmark, impl, dim):
    """x.cumsum(dim) of 4096 x 4096 float32, synchronised (pytorchlite: one thread per line,
    Note [CUDA scans]; torch: its CUB-based scan)."""
    benchmark.group = f"cumsum({dim}) float32 4096x4096, synchronised"
    lib, sync = library(impl)
    x = lib.randn(4096, 4096, device="cuda")
    run_synchronised(benchmark, lambda: x.cumsum(dim), sync)



@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_forward_backward_float32(benchmark, impl, mode):
    """F.grid_sample of 16x32x64x64 float32 at a 16x64x64 grid, forward and backward of
    input and grid, synchronised (pytorchlite: grid_sampler.cu on float64 copies, Note [CUDA
    grid sampler]; torch: its CUDA grid sampler in float)."""
    benchmark.group = f"grid_sample {mode} float32 forward+backward 16x32x64x64, synchronised"
    lib, sync = library(impl)
    x = lib.randn(16, 32, 64, 64, device="cuda", requires_grad=True)
    grid = (lib.rand(16, 64, 64, 2, device="cuda") * 2.2 - 1.1).requires_grad_(True)

    def step():
        y = lib.nn.functional.grid_sample(x, grid, mode=mode, align_corners=False)
        y.backward(lib.ones_like(y))
        x.grad = grid.grad = None
    run_synchronised(benchmark, step, sync)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("cls", ["LSTM", "GRU"])
def test_recurrent_layer_forward_backward_float32(benchmark, impl, cls):
    """nn.LSTM / GRU 256 -> 512, 2 layers, 64 steps of a batch of 64, float32, forward and
    backward, synchronised (pytorchlite: the device GEMM and one cell launch a step, Note
    [CUDA recurrent layer]; torch: cuDNN)."""
    benchmark.group = f"{cls} 2x512 seq 64 b64 float32 forward+backward, synchronised"
    lib, sync = library(impl)
    module = getattr(lib.nn, cls)(256, 512, 2).cuda()
    x = lib.randn(64, 64, 256, device="cuda")

    def step():
        module(x)[0].sum().backward()
        module.zero_grad()
    run_synchronised(benchmark, step, sync)


# ---- whole training steps (test_bench_training.py's models, on the device) ----

@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("which", ["gpt", "resnet"])
def test_training_step_on_the_device(benchmark, impl, which):
    """The step's first loss on the device is the CPU step's, to float32 tolerance."""
    benchmark.group = f"{TRAINING_GROUPS[which]} on the device, synchronised"
    lib, sync = library(impl)
    first_on_cpu = training_step(impl, which)().item()
    step = training_step(impl, which, device="cuda")
    assert abs(step().item() - first_on_cpu) <= 1e-4 * max(1.0, abs(first_on_cpu))
    run_synchronised(benchmark, step, sync)
