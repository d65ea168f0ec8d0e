"""CUDA benchmarks (run by tools/gpu_check.sh; skipped without a GPU): the caching
allocator's malloc/free cycle on the device, next to torch.cuda's caching allocator when the
installed PyTorch has CUDA; elementwise add and the matrix products (issue 15's targets:
float32 GEMM at least 70% of cuBLAS, bfloat16 at least 50%).  Kernel benchmarks join this file
with the CUDA kernels."""
import pytest

from pytorchlite import _C

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
