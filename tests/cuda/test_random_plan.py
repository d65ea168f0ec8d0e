"""The random fill kernel (src/cuda/random.cu: its plan in random_plan.c, its per-thread work
ptl_dist_fill_block in src/aten/distributions.h) checked on the host: with
_C._cuda_kernel_emulation on, the random ops on CPU tensors take the CUDA path (the CPU
kernel's checks, reservation and contiguous temporary, then one thread per Philox block in
the kernel's grid-stride order) and must give the bytes the CPU kernel gives for the same
seed, and leave the generator at the same offset.  The sizes put the last Philox block's
element count (k = 4, 2 or 1 elements per block) at every tail and the blocks below, at and
above a grid's width under each tuning (grids of one block: the grid-stride loop's edges);
every dtype each op takes; contiguous and strided outputs; the CPU reference on 1 and 2
threads.  The normals of every float dtype compare the CPU's vector Box-Muller (Note
[Vector Box-Muller]) with its scalar twins, which the device runs.  What this cannot check
is the device's libm (Note [CUDA random fills]): tests/cuda/test_cuda_kernels.py compares
the device with the CPU on a GPU.  Needs no device and no nvcc."""
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


# ---- the CUDA devices' generators (Note [CUDA generators] in src/aten/generator.h) ----
#
# Each device has its own default generator, seeded with the CPU's by manual_seed, and a
# launch reserves one counter per element as the CPU's fill does.  While the kernels are
# emulated a CPU tensor stands for a CUDA one and takes a CUDA generator, so the device's
# stream can be checked here: after the same seed, the same values as the CPU generator's,
# and the same state (seed, offset) after each launch.

def cuda_generator(index=0):
    return ptl.cuda._generator(index)


def offset_of(state):
    return int.from_bytes(state.numpy().tobytes()[8:], "little")


# (name, dtypes, fill drawing from generator g): the ops with a generator argument that the
# CUDA key runs through the fill kernel
GENERATOR_FILLS = [
    ("uniform_", FLOATS, lambda t, g: t.uniform_(-2.0, 3.0, generator=g)),
    ("normal_", FLOATS, lambda t, g: t.normal_(0.5, 2.0, generator=g)),
    ("exponential_", FLOATS, lambda t, g: t.exponential_(1.5, generator=g)),
    ("bernoulli_", FLOATS + INTS, lambda t, g: t.bernoulli_(0.3, generator=g)),
    ("random_", FLOATS + INTS[1:], lambda t, g: t.random_(3, 90, generator=g)),
    ("rand", FLOATS, lambda t, g: ptl.rand(t.shape, generator=g, dtype=t.dtype)),
    ("randn", FLOATS, lambda t, g: ptl.randn(t.shape, generator=g, dtype=t.dtype)),
    ("randint", FLOATS + INTS[1:],
     lambda t, g: ptl.randint(3, 50, t.shape, generator=g, dtype=t.dtype)),
    ("normal_float_float", [ptl.float32, ptl.float64],
     lambda t, g: ptl.normal(0.5, 2.0, t.shape, generator=g, dtype=t.dtype)),
    ("bernoulli", FLOATS, lambda t, g: ptl.bernoulli(t.fill_(0.25), generator=g)),
    ("poisson", [ptl.float32, ptl.float64], lambda t, g: ptl.poisson(t.fill_(3.5), g)),
]
GENERATOR_CASES = [(name, dt, fn) for name, dts, fn in GENERATOR_FILLS for dt in dts]
# one element, every tail of a block of 4 around a one-block grid, and many grids
GENERATOR_SIZES = [0, 1, 3, 127, 128, 129, 130, 2051]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("name,dtype,fn", GENERATOR_CASES,
                         ids=[f"{n}-{d}" for n, d, _ in GENERATOR_CASES])
def test_a_cuda_generator_draws_the_cpu_generators_stream(name, dtype, fn, tuning):
    """Two launches on the device's generator after manual_seed(s): the values of two CPU
    fills after manual_seed(s), the device generator's offset advanced by the element count
    at each launch as the CPU's, and the CPU generator untouched."""
    for n in GENERATOR_SIZES:
        ptl.manual_seed(500 + n)
        want = [as_bytes(fn(ptl.empty(n, dtype=dtype), None)) for _ in range(2)]
        cpu_state = ptl.get_rng_state()
        ptl.manual_seed(500 + n)
        gen = cuda_generator()
        with emulated(TUNINGS[tuning]) as ran:
            got = [as_bytes(fn(ptl.empty(n, dtype=dtype), gen))]
            assert offset_of(gen.get_state()) == n, (name, n, "first launch")
            got.append(as_bytes(fn(ptl.empty(n, dtype=dtype), gen)))
        assert got == want, (name, dtype, n)
        assert ptl.equal(gen.get_state(), cpu_state), (name, n)
        assert offset_of(gen.get_state()) == 2 * n
        assert offset_of(ptl.get_rng_state()) == 0, "the CPU generator drew"
        assert ran["random"] == (2 if n > 0 else 0), (name, n, ran)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_a_cuda_generator_fills_a_strided_output_in_row_major_order(layout):
    make = dict(layouts(ptl.float32, 129))[layout]
    ptl.manual_seed(3)
    want = as_bytes(make().normal_())
    ptl.manual_seed(3)
    with emulated(TUNINGS["small"]):
        got = as_bytes(make().normal_(generator=cuda_generator()))
    assert got == want


@pytest.mark.parametrize("fn", [
    lambda g: ptl.randperm(1000, generator=g),
    lambda g: ptl.randperm(300, generator=g, dtype=ptl.int16),
    lambda g: ptl.multinomial(ptl.tensor([[0.1, 0.0, 0.5, 0.4], [1.0, 2.0, 3.0, 4.0]]), 40,
                              True, generator=g),
    lambda g: ptl.multinomial(ptl.linspace(0, 1, 50), 20, generator=g),
], ids=["randperm", "randperm-int16", "multinomial-replacement", "multinomial"])
def test_randperm_and_multinomial_draw_the_cpu_stream_from_a_cuda_generator(fn):
    """Note [CUDA randperm and multinomial]: the host code on the device generator's
    counters, so the CPU's values and offsets."""
    ptl.manual_seed(21)
    want = fn(None)
    cpu_state = ptl.get_rng_state()
    ptl.manual_seed(21)
    with emulated(TUNINGS["tiny"]):
        got = fn(cuda_generator())
    assert ptl.equal(got, want) and got.dtype == want.dtype
    assert ptl.equal(cuda_generator().get_state(), cpu_state)


def test_the_cuda_generator_state_is_pytorchs_layout():
    """16 bytes, seed then offset, little-endian; PyTorch's 8-byte form (a seed, offset 0);
    negative seeds wrap as on the CPU; every device's generator is seeded alike."""
    gen = cuda_generator(1)
    ptl.cuda.manual_seed_all(0x0102030405060708)
    state = gen.get_state().numpy().tobytes()
    assert state == bytes([8, 7, 6, 5, 4, 3, 2, 1]) + bytes(8)
    assert gen.initial_seed() == 0x0102030405060708 and gen.device == ptl.device("cuda", 1)
    with emulated(TUNINGS["tiny"]):
        ptl.empty(10).uniform_(generator=gen)
        ptl.empty(7, dtype=ptl.float64).normal_(generator=gen)
    assert offset_of(gen.get_state()) == 17
    gen.set_state(ptl.tensor(list(range(16)), dtype=ptl.uint8))
    assert gen.get_state().tolist() == list(range(16))
    assert gen.initial_seed() == int.from_bytes(bytes(range(8)), "little")
    gen.set_state(ptl.tensor([9, 0, 0, 0, 0, 0, 0, 0], dtype=ptl.uint8))
    assert gen.initial_seed() == 9 and offset_of(gen.get_state()) == 0
    gen.manual_seed(-1)
    assert gen.initial_seed() == 2 ** 64 - 1 == ptl.Generator().manual_seed(-1).initial_seed()
    for state in (ptl.zeros(3, dtype=ptl.uint8), ptl.zeros(17, dtype=ptl.uint8)):
        with pytest.raises(RuntimeError, match="RNG state is wrong size"):
            gen.set_state(state)
    for state in (ptl.zeros(16), ptl.zeros(16, dtype=ptl.uint8, device="meta")):
        with pytest.raises(TypeError, match="RNG state must be a torch.ByteTensor"):
            gen.set_state(state)
    assert offset_of(cuda_generator(0).get_state()) == 0


def test_a_kernel_refuses_a_generator_of_another_device():
    """PyTorch's check_generator message; the emulation lets a CPU tensor take a CUDA
    generator, nothing lets it take one of another type without it."""
    with pytest.raises(RuntimeError,
                       match="Expected a 'cpu' device type for generator but found 'cuda'"):
        ptl.rand(3, generator=cuda_generator())
    with pytest.raises(RuntimeError,
                       match="Expected a 'cpu' device type for generator but found 'cuda'"):
        ptl.randperm(3, generator=cuda_generator())
    with pytest.raises(RuntimeError,
                       match="Expected a 'cpu' device type for generator but found 'cuda'"):
        ptl.empty(0).normal_(generator=cuda_generator())


# ---- graph-safe Philox (Note [Graph-safe Philox] in src/aten/philox.h) ----
#
# A launch captured in a CUDA graph reads its seed and base offset from the graph's memory
# when it runs and adds its offset within the graph.  Emulated, the launch runs at capture
# time, so each "replay" below does what replay() does (the generator's seed and offset into
# the graph's memory, the generator advanced by the graph's counters) and then captures the
# launches again, which read that memory: two replays must give the values of the same
# launches run eagerly twice from the same state, and leave the generator where they would.

def int64_bits(v):
    return v - (1 << 64) if v >= 1 << 63 else v


GRAPH_CASES = [c for c in GENERATOR_CASES
               if (c[0], c[1]) in {("uniform_", ptl.float32), ("uniform_", ptl.float64),
                                   ("normal_", ptl.bfloat16), ("bernoulli_", ptl.bool),
                                   ("random_", ptl.int64), ("randn", ptl.float64),
                                   ("poisson", ptl.float32)}]


@pytest.mark.parametrize("tuning", sorted(TUNINGS))
@pytest.mark.parametrize("name,dtype,fn", GRAPH_CASES,
                         ids=[f"{n}-{d}" for n, d, _ in GRAPH_CASES])
def test_replays_of_a_captured_launch_draw_the_eager_values(name, dtype, fn, tuning):
    g = cuda_generator(0)
    for n in (0, 1, 3, 129, 2051):
        g.manual_seed(700 + n)
        with emulated(TUNINGS[tuning]):
            fn(ptl.empty(5, dtype=dtype), g)          # an offset that is not 0
            start = g.get_state()
            want = [as_bytes(fn(ptl.empty(n, dtype=dtype), g)) for _ in range(4)]
        end = g.get_state()
        g.set_state(start)
        memory = ptl.zeros(2, dtype=ptl.int64)        # the graph's seed and base offset
        for replay in range(2):
            seed, offset = g._graph_replay_prologue(2 * n)
            memory.copy_(ptl.tensor([int64_bits(seed), int64_bits(offset)]))
            g._graph_capture_prologue(memory)
            try:
                with emulated(TUNINGS[tuning]) as ran:
                    got = [as_bytes(fn(ptl.empty(n, dtype=dtype), g)) for _ in range(2)]
            finally:
                assert g._graph_capture_epilogue() == 2 * n   # the graph's counters
            assert got == want[2 * replay:2 * replay + 2], (name, dtype, n, replay)
            assert ran["random"] == (2 if n > 0 else 0)
        assert g.get_state().numpy().tobytes() == end.numpy().tobytes()


def test_a_capture_reserves_counters_in_the_graph_not_in_the_generator():
    g = cuda_generator(0)
    g.manual_seed(3)
    before = g.get_state().numpy().tobytes()
    memory = ptl.tensor([3, 0])
    g._graph_capture_prologue(memory)
    try:
        with emulated(TUNINGS["small"]):
            ptl.rand(10, generator=g)
            ptl.empty(7, dtype=ptl.float64).normal_(generator=g)
        assert g.get_state().numpy().tobytes() == before
        with pytest.raises(RuntimeError, match="already being captured"):
            g._graph_capture_prologue(memory)
    finally:
        assert g._graph_capture_epilogue() == 17
    assert g._graph_capture_epilogue() == 0            # nothing captured since


@pytest.mark.parametrize("fn", [
    lambda g: ptl.randperm(10, generator=g),
    lambda g: ptl.multinomial(ptl.tensor([0.2, 0.8]), 3, True, generator=g),
], ids=["randperm", "multinomial"])
def test_host_draws_raise_during_a_capture(fn):
    """randperm and multinomial draw on the host: captured, their values would be baked
    into the graph, so they raise the CUDA capture error instead (and reserve nothing)."""
    g = cuda_generator(0)
    g.manual_seed(4)
    before = g.get_state().numpy().tobytes()
    g._graph_capture_prologue(ptl.zeros(2, dtype=ptl.int64))
    try:
        with emulated(TUNINGS["tiny"]):
            with pytest.raises(RuntimeError,
                               match="operation not permitted when stream is capturing"):
                fn(g)
    finally:
        g._graph_capture_epilogue()
    assert g.get_state().numpy().tobytes() == before


def test_graph_state_memory_must_be_two_int64s_of_a_cuda_generator():
    g = cuda_generator(0)
    for bad in (ptl.zeros(2), ptl.zeros(3, dtype=ptl.int64), ptl.zeros(4, dtype=ptl.int64)[::2]):
        with pytest.raises(TypeError, match="two elements"):
            g._graph_capture_prologue(bad)
    with pytest.raises(RuntimeError, match="only a CUDA generator"):
        ptl.Generator()._graph_capture_prologue(ptl.zeros(2, dtype=ptl.int64))
