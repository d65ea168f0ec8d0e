"""The CUDA devices' generators and the random factories on a device (Note [CUDA generators]
in src/aten/generator.h, Note [CUDA randperm and multinomial] in src/aten/native/random.c):
after the same seed a device gives the CPU's draws (the bytes where no libm is involved),
its generator's state advances as the CPU's, and torch.cuda's seeding and state functions
act on the device's generator only.  Skips, with the reason, without a GPU;
tools/gpu_check.sh runs it on one, PTL_REQUIRE_GPU=1 turning a skip into a failure.  The
stream arithmetic itself is checked without a device in test_random_plan.py."""

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from device_required import pytestmark, require_device  # noqa: F401



FLOATS = [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16]
INTS = [ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64]


def raw(t):
    """t's bytes in row-major order (on the host)."""
    dense = ptl.empty(t.numel(), dtype=t.dtype).copy_(t.cpu().reshape(-1))
    return dense.view(ptl.uint8).numpy().tobytes()


def offset(state):
    """The offset half of a generator state."""
    return int.from_bytes(state.numpy().tobytes()[8:], "little")


def probs(device):
    return ptl.tensor([[0.1, 0.0, 0.5, 0.4, 0.0], [1.0, 2.0, 3.0, 4.0, 5.0]], device=device)


# (name, draw on device, exact): exact draws need no libm and give the CPU's bytes; the
# normals call log and sincos, within an ulp or two of glibc's (Note [CUDA random fills])
FACTORIES = [
    ("rand", lambda d, dt: ptl.rand(37, 129, device=d, dtype=dt), FLOATS, True),
    ("randint", lambda d, dt: ptl.randint(3, 90, (4099,), device=d, dtype=dt),
     INTS + FLOATS, True),
    ("randint_high", lambda d, dt: ptl.randint(50, (3, 5), device=d, dtype=dt), INTS, True),
    ("randperm", lambda d, dt: ptl.randperm(1000, device=d, dtype=dt),
     [ptl.int64, ptl.int32, ptl.float32], True),
    ("randperm_large", lambda d, dt: ptl.randperm(100003, device=d), [ptl.int64], True),
    ("multinomial", lambda d, dt: ptl.multinomial(probs(d).to(dt), 4), FLOATS[:2], True),
    ("multinomial_replacement", lambda d, dt: ptl.multinomial(probs(d).to(dt), 300, True),
     FLOATS, True),
    ("rand_like", lambda d, dt: ptl.rand_like(ptl.empty(5, 7, device=d, dtype=dt)), FLOATS,
     True),
    ("empty_uniform_", lambda d, dt: ptl.empty(1001, device=d, dtype=dt).uniform_(-1, 2),
     FLOATS, True),
    ("bernoulli_", lambda d, dt: ptl.empty(1001, device=d, dtype=dt).bernoulli_(0.3),
     FLOATS + INTS, True),
    ("randn", lambda d, dt: ptl.randn(37, 129, device=d, dtype=dt), FLOATS, False),
    ("normal_float_float", lambda d, dt: ptl.normal(1.0, 2.0, (4099,), device=d, dtype=dt),
     FLOATS, False),
    ("empty_normal_", lambda d, dt: ptl.empty(129, 3, device=d, dtype=dt).t().normal_(),
     FLOATS, False),
]
CASES = [(n, f, dt, e) for n, f, dts, e in FACTORIES for dt in dts]


@pytest.mark.parametrize("name,draw,dtype,exact", CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_a_seed_gives_the_cpu_draws_on_the_device(name, draw, dtype, exact):
    """Two draws after manual_seed(s) on each device: the same values, and the device
    generator's state equal to the CPU's after them."""
    ptl.manual_seed(5)
    cpu = [draw("cpu", dtype) for _ in range(2)]
    cpu_state = ptl.get_rng_state()
    ptl.manual_seed(5)
    dev = [draw("cuda", dtype) for _ in range(2)]
    assert ptl.equal(ptl.cuda.get_rng_state(), cpu_state)
    assert ptl.get_rng_state()[8:].sum().item() == 0, "the CPU generator drew"
    for c, d in zip(cpu, dev):
        assert d.device == ptl.device("cuda", 0) and d.dtype == c.dtype and d.shape == c.shape
        if exact:
            assert raw(d) == raw(c), name
        else:
            tol = {ptl.float16: 2e-3, ptl.bfloat16: 1.6e-2}.get(dtype, 1e-5)
            np.testing.assert_allclose(d.cpu().double().numpy(), c.double().numpy(),
                                       rtol=tol, atol=tol)


def test_a_cuda_generator_object():
    g = ptl.Generator(device="cuda")
    assert g.device == ptl.device("cuda", 0) and g.initial_seed() == 67280421310721
    assert g.manual_seed(9) is g and g.initial_seed() == 9
    c = ptl.Generator().manual_seed(9)
    for _ in range(2):
        assert raw(ptl.rand(1001, generator=g, device="cuda")) == raw(ptl.rand(1001, generator=c))
        assert ptl.equal(g.get_state(), c.get_state())
    assert ptl.equal(ptl.randperm(77, generator=g, device="cuda").cpu(),
                     ptl.randperm(77, generator=c))
    state = g.get_state()
    a = ptl.randn(100, generator=g, device="cuda")
    g.set_state(state)
    assert ptl.equal(ptl.randn(100, generator=g, device="cuda").cpu(), a.cpu())
    with pytest.raises(RuntimeError,
                       match="Expected a 'cuda' device type for generator but found 'cpu'"):
        ptl.rand(3, device="cuda", generator=c)
    with pytest.raises(RuntimeError,
                       match="Expected a 'cpu' device type for generator but found 'cuda'"):
        ptl.rand(3, generator=g)
    with pytest.raises(RuntimeError, match="RNG state is wrong size"):
        g.set_state(ptl.zeros(4, dtype=ptl.uint8))


def test_torch_cuda_seeding_and_states():
    n = ptl.cuda.device_count()
    assert len(ptl.cuda.default_generators) == n
    assert ptl.cuda.default_generators[0] is ptl.cuda.default_generators[0]
    ptl.cuda.manual_seed_all(4)
    assert [ptl.cuda.get_rng_state(i)[:8].tolist() for i in range(n)] == [[4] + [0] * 7] * n
    ptl.cuda.manual_seed(8)
    assert ptl.cuda.initial_seed() == 8
    state = ptl.cuda.get_rng_state()
    a = ptl.rand(10, device="cuda")
    assert offset(ptl.cuda.get_rng_state()) == 10 and ptl.cuda.initial_seed() == 8
    ptl.cuda.set_rng_state(state)
    assert ptl.equal(ptl.rand(10, device="cuda").cpu(), a.cpu())
    states = ptl.cuda.get_rng_state_all()
    assert len(states) == n
    ptl.cuda.set_rng_state_all(states)
    with ptl.random.fork_rng():
        ptl.rand(10, device="cuda")
    assert ptl.equal(ptl.cuda.get_rng_state(), states[0])
    ptl.cuda.seed_all()
    assert len({ptl.cuda.default_generators[i].initial_seed() for i in range(n)}) == 1


def test_the_draws_follow_their_laws():
    """Moments of rand / randn on the device (5 sigma), randperm a permutation, multinomial's
    frequencies within 5 sigma of the probabilities."""
    ptl.manual_seed(0)
    n = 1 << 20
    u = ptl.rand(n, device="cuda").cpu().double().numpy()
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / n) and u.min() >= 0 and u.max() < 1
    z = ptl.randn(n, device="cuda", dtype=ptl.float64).cpu().numpy()
    assert abs(z.mean()) < 5 / np.sqrt(n) and abs(z.var() - 1) < 5 * np.sqrt(2 / n)
    p = ptl.randperm(n, device="cuda").cpu().numpy()
    assert np.array_equal(np.sort(p), np.arange(n))
    w = np.array([1.0, 0.0, 3.0, 6.0])
    s = ptl.multinomial(ptl.tensor(w, device="cuda"), n, True).cpu().numpy()
    freq, q = np.bincount(s, minlength=4) / n, w / w.sum()
    assert np.all(np.abs(freq - q) <= 5 * np.sqrt(q * (1 - q) / n))
    top = ptl.multinomial(ptl.tensor(w, device="cuda"), 3).cpu().numpy()
    assert sorted(top.tolist()) == [0, 2, 3]
