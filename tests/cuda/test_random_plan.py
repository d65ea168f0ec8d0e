"""The random fill kernel (src/cuda/random.cu: its plan in random_plan.c, its per-thread work
ptl_dist_fill_block in src/aten/distributions.h) checked on the host: with
_C._cuda_kernel_emulation on, the random ops on CPU tensors take the CUDA path (the CPU
kernel's checks, reservation and contiguous temporary, then one thread per Philox block in
the kernel's grid-stride order) and must give the bytes the CPU kernel gives for the same
seed, and leave the generator at the same offset.  The sizes put the last Philox block's
element count (k = 4, 2 or 1 elements per block) at every tail and the blocks below, at and
above a grid's width under each tuning (grids of one block: the grid-stride loop's edges);
every dtype each op takes; contiguous and strided outputs; the CPU reference on 1 and 2
threads.  The float normals compare the CPU's vector Box-Muller (Note [Vector Box-Muller])
with its scalar twins, which the device runs.  What this cannot check is the device's libm
(Note [CUDA random fills]): tests/cuda/test_cuda_kernels.py compares the device with the CPU
on a GPU.  Needs no device and no nvcc."""
import pytest

import pytorchlite as ptl
from kernel_emulation import TUNINGS, emulated

FLOATS = [ptl.float64, ptl.float32, ptl.float16, ptl.bfloat16]
INTS = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]

# units of work (Philox blocks) below, at and above one grid's width under "tiny" (32
# threads, one block), "small" (64 threads, 3 blocks: 192) and "device" (512 threads), in
# elements for k = 4, 2 and 1, with every tail of the last block
SIZES = sorted({0, 1, 2, 3, 5, 6, 7}
               | {k * u + d for k in (1, 2, 4) for u in (31, 32, 33, 191, 192, 193, 512)
                  for d in (-1, 0, 1, 2, 3)})

# (name, dtypes, fill of a tensor in place): every op the CUDA key runs through the hook
FILLS = [
    ("uniform_", FLOATS, lambda t: t.uniform_(-2.0, 3.0)),
    ("uniform_unit", FLOATS, lambda t: t.uniform_()),
    ("normal_", FLOATS, lambda t: t.normal_(0.5, 2.0)),
    ("log_normal_", FLOATS, lambda t: t.log_normal_(0.1, 0.5)),
    ("exponential_", FLOATS, lambda t: t.exponential_(1.5)),
    ("cauchy_", FLOATS, lambda t: t.cauchy_(0.0, 2.0)),
    ("geometric_", FLOATS + INTS[1:], lambda t: t.geometric_(0.3)),
    ("bernoulli_float", FLOATS + INTS, lambda t: t.bernoulli_(0.3)),
    ("bernoulli_tensor", FLOATS + INTS,
     lambda t: t.bernoulli_(ptl.linspace(0, 1, t.shape[-1] if t.dim() else 1)
                            .to(ptl.float32))),
    ("random_", FLOATS + INTS, lambda t: t.random_()),
    ("random_to", FLOATS + INTS[1:], lambda t: t.random_(100)),
    ("random_from_to", FLOATS + INTS[1:], lambda t: t.random_(3, 90)),
    ("random_wide", [ptl.int64], lambda t: t.random_(-5, 2 ** 40)),
    ("random_from", [ptl.int64, ptl.int32, ptl.float32], lambda t: t.random_(-7, None)),
    ("rand_like", FLOATS, lambda t: ptl.rand_like(t)),
    ("randn_like", FLOATS, lambda t: ptl.randn_like(t)),
    ("randint_like", FLOATS + INTS[1:], lambda t: ptl.randint_like(t, 3, 50)),
    ("bernoulli", FLOATS, lambda t: ptl.bernoulli(t.fill_(0.25))),
    ("bernoulli_p", FLOATS + INTS[1:], lambda t: ptl.bernoulli(t, 0.75)),
    ("normal_tensor_float", FLOATS, lambda t: ptl.normal(t.fill_(0.5), 2.0)),
    ("normal_float_tensor", FLOATS, lambda t: ptl.normal(1.0, t.fill_(0.5))),
    ("normal_tensor_tensor", FLOATS,
     lambda t: ptl.normal(t.fill_(-1.0), ptl.linspace(0, 2, t.shape[-1] if t.dim() else 1))),
    ("poisson", FLOATS, lambda t: ptl.poisson(t.fill_(3.5))),
    ("poisson_large", [ptl.float64, ptl.float32], lambda t: ptl.poisson(t.fill_(40.0))),
    ("standard_gamma", [ptl.float64, ptl.float32], lambda t: ptl._standard_gamma(t.fill_(0.7))),
    ("native_dropout", FLOATS, lambda t: ptl.native_dropout(t.fill_(1.5), 0.4, True)[0]),
]
CASES = [(name, dt, fn) for name, dts, fn in FILLS for dt in dts]


def as_bytes(t):
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


def draw(fn, make, seed):
    """The result of fn on a fresh tensor from make() after seeding, and the generator's
    state after it."""
    ptl.manual_seed(seed)
    out = fn(make())
    return as_bytes(out), ptl.get_rng_state().numpy().tobytes()


def layouts(dtype, n):
    """(name, make): a contiguous output of n elements, a transposed [3, n] and a slice
    with step 2 of n elements (the kernel fills a contiguous temporary, copied in)."""
    return [
        ("contiguous", lambda: ptl.empty(n, dtype=dtype)),
        ("transposed", lambda: ptl.empty(n, 3, dtype=dtype).t()),
        ("sliced", lambda: ptl.empty(2 * n, dtype=dtype)[::2]),
    ]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("name,dtype,fn", CASES, ids=[f"{n}-{d}" for n, d, _ in CASES])
def test_device_fill_gives_the_cpu_generators_bits(name, dtype, fn, tuning, threads):
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        for n in SIZES:
            for layout, make in layouts(dtype, n) if n in (1, 33, 129, 769) else \
                    [("contiguous", lambda: ptl.empty(n, dtype=dtype))]:
                want = draw(fn, make, 1000 + n)
                with emulated(TUNINGS[tuning]) as ran:
                    got = draw(fn, make, 1000 + n)
                assert got[0] == want[0], (name, dtype, n, layout, "values")
                assert got[1] == want[1], (name, dtype, n, layout, "generator offset")
                assert ran["random"] == (1 if n > 0 else 0), (name, n, ran)
    finally:
        ptl.set_num_threads(old)


def test_a_large_fill_crosses_the_cpu_thread_split():
    """A fill over several CPU chunks (RANDOM_GRAIN) and, emulated, over many device grids:
    the same bits."""
    old = ptl.get_num_threads()
    ptl.set_num_threads(2)
    try:
        for dtype in (ptl.float32, ptl.float64, ptl.float16):
            for fn in (lambda t: t.uniform_(), lambda t: t.normal_(), lambda t: t.bernoulli_(0.5)):
                want = draw(fn, lambda: ptl.empty(200003, dtype=dtype), 7)
                with emulated(TUNINGS["small"]):
                    got = draw(fn, lambda: ptl.empty(200003, dtype=dtype), 7)
                assert got == want
    finally:
        ptl.set_num_threads(old)


@pytest.mark.parametrize("fn,exc,msg", [
    (lambda: ptl.empty(4).bernoulli_(1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda: ptl.empty(4).bernoulli_(ptl.tensor([0.5, 1.5, 0.0, 1.0])), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true"),
    (lambda: ptl.empty(4, dtype=ptl.int64).uniform_(), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda: ptl.empty(4, dtype=ptl.int32).normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Int'"),
    (lambda: ptl.empty(4).normal_(0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda: ptl.empty(4).uniform_(3, 2), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=3 > to=2"),
    (lambda: ptl.empty(4, dtype=ptl.uint8).random_(-1, 5), RuntimeError,
     "from is out of bounds for unsigned char"),
    (lambda: ptl.empty(4).random_(5, 5), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda: ptl.empty(4, dtype=ptl.int64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified Long"),
])
def test_bad_arguments_raise_the_cpu_kernels_errors_on_the_device_path(fn, exc, msg):
    """The checks run before the hook: the same exception and message, and no draw."""
    with emulated(TUNINGS["tiny"]) as ran:
        with pytest.raises(exc) as info:
            fn()
    assert msg in str(info.value)
    assert ran["random"] == 0
