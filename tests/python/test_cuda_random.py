"""torch.cuda's random-number API without a CUDA device (pytorchlite/cuda/__init__.py, the
devices' default generators of src/aten/generator.c; Note [CUDA generators]): what PyTorch's
build without a GPU does.  Seeding never raises (programs seed CUDA unconditionally) and
takes effect on the devices' generators, which exist before CUDA is initialised; reading a
state initialises CUDA and raises the no-CUDA error; the _all readers see no device.  With a
device: tests/cuda/test_cuda_random_device.py."""
import pytest

import pytorchlite as ptl
from helpers import CUDA_KERNELS, NO_CUDA_ERROR, NO_CUDA_MESSAGE, torch

pytestmark = pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA device is present")


def state_of(index):
    return ptl.cuda._generator(index).get_state().numpy().tobytes()


def seed_of(index):
    return ptl.cuda._generator(index).initial_seed()


def test_seeding_never_raises_and_seeds_the_devices_generators():
    ptl.cuda.manual_seed_all(2)
    assert [seed_of(i) for i in (0, 1, 63)] == [2, 2, 2]
    ptl.cuda.manual_seed(1)   # the current device: 0 until CUDA is initialised
    assert [seed_of(i) for i in (0, 1, 63)] == [1, 2, 2]
    ptl.cuda.manual_seed("5")   # int(seed), as PyTorch's
    assert seed_of(0) == 5
    ptl.cuda.seed()
    assert seed_of(1) == 2
    ptl.cuda.seed_all()
    assert len({seed_of(i) for i in range(64)}) == 1
    with pytest.raises(ValueError):
        ptl.cuda.manual_seed("x")


def test_torch_manual_seed_and_seed_seed_every_cuda_device_too():
    """torch.manual_seed(s) seeds the CPU and every CUDA device with s (offset 0), so a seed
    gives the same draws on either device; torch.seed() likewise with its random seed."""
    ptl.cuda._generator(3).set_state(ptl.tensor(list(range(16)), dtype=ptl.uint8))
    assert ptl.manual_seed(1234).initial_seed() == 1234
    assert state_of(0) == state_of(3) == ptl.get_rng_state().numpy().tobytes()
    assert state_of(0) == (1234).to_bytes(8, "little") + bytes(8)
    assert ptl.manual_seed(2.9).initial_seed() == 2 == seed_of(7)   # int(seed)
    s = ptl.seed()
    assert seed_of(0) == seed_of(63) == s == ptl.initial_seed()


def test_set_rng_state_applies_at_once_and_readers_raise():
    state = ptl.tensor([7] + [0] * 7 + [3] + [0] * 7, dtype=ptl.uint8)
    ptl.cuda.set_rng_state(state)
    assert state_of(0) == state.numpy().tobytes()
    ptl.cuda.set_rng_state(state, "cuda:2")
    ptl.cuda.set_rng_state_all([state, state])
    assert state_of(1) == state_of(2) == state.numpy().tobytes()
    ptl.cuda.set_rng_state(state[:8], 4)   # PyTorch's 8-byte form: a seed, offset 0
    assert state_of(4) == state[:8].numpy().tobytes() + bytes(8)
    for fn in (ptl.cuda.initial_seed, ptl.cuda.get_rng_state, lambda: ptl.cuda.get_rng_state(1)):
        with pytest.raises(NO_CUDA_ERROR[0], match=NO_CUDA_ERROR[1]):
            fn()
    assert ptl.cuda.get_rng_state_all() == []
    assert ptl.cuda.default_generators == ()
    with ptl.random.fork_rng(device_type="cuda"):   # no device to save
        ptl.rand(2)
    with pytest.raises(NO_CUDA_ERROR[0], match=NO_CUDA_ERROR[1]):
        with ptl.random.fork_rng(devices=[0]):
            pass


def test_a_cuda_generator_and_cuda_draws_need_a_device():
    msg = NO_CUDA_MESSAGE if CUDA_KERNELS else "Cannot get CUDA generator without ATen_cuda"
    for device in ("cuda", "cuda:1", ptl.device("cuda", 0)):
        with pytest.raises(RuntimeError, match=msg):
            ptl.Generator(device=device)
    with pytest.raises(RuntimeError, match="META device type not an accelerator."):
        ptl.Generator(device="meta")
    if CUDA_KERNELS:
        for fn in (lambda: ptl.rand(3, device="cuda"), lambda: ptl.randperm(3, device="cuda"),
                   lambda: ptl.randint(0, 5, (2,), device="cuda")):
            with pytest.raises(RuntimeError, match=NO_CUDA_MESSAGE):
                fn()


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_pytorchs_build_without_cuda_agrees_on_what_raises():
    """torch (a CPU build here) and pytorchlite: the same functions raise and the same do
    not; the messages differ only where the builds do (no CUDA vs no GPU)."""
    calls = [
        lambda m: m.cuda.manual_seed(3), lambda m: m.cuda.manual_seed_all(3),
        lambda m: m.cuda.seed(), lambda m: m.cuda.seed_all(),
        lambda m: m.cuda.set_rng_state(m.zeros(16, dtype=m.uint8)),
        lambda m: m.cuda.set_rng_state_all([m.zeros(16, dtype=m.uint8)]),
        lambda m: m.cuda.get_rng_state_all(), lambda m: m.cuda.default_generators,
        lambda m: m.cuda.initial_seed(), lambda m: m.cuda.get_rng_state(),
        lambda m: m.Generator(device="cuda"),
    ]
    for call in calls:
        outcome = []
        for m in (torch, ptl):
            try:
                outcome.append(repr(call(m)))
            except (RuntimeError, AssertionError):
                outcome.append("raises")
        assert outcome[0] == outcome[1], outcome
    torch.manual_seed(0)
