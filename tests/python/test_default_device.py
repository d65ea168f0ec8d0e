"""The default device of factory functions (Note [The default device] in
src/python/default_device.c): set_default_device / get_default_device and
`with torch.device(...)`; which calls take it (the factories, tensor(), as_tensor(), modules
built inside the block) and which keep their input's device (*_like, new_*, from_numpy), per
thread, nested and re-entered.  The same checks run on PyTorch where it is installed."""
import threading

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

LIBS = ["ptl", pytest.param("torch", marks=torch_ref)]


def L(lib):
    return ptl if lib == "ptl" else torch


@pytest.fixture(autouse=True)
def reset_default_device():
    yield
    ptl.set_default_device(None)
    if torch is not None:
        torch.set_default_device(None)


FACTORIES = [
    ("zeros", lambda t: t.zeros(2, 3)),
    ("ones", lambda t: t.ones(2)),
    ("empty", lambda t: t.empty(4)),
    ("empty_strided", lambda t: t.empty_strided((2, 2), (1, 2))),
    ("full", lambda t: t.full((2,), 1.5)),
    ("arange", lambda t: t.arange(5)),
    ("arange_start_step", lambda t: t.arange(1, 7, 2)),
    ("linspace", lambda t: t.linspace(0, 1, 3)),
    ("logspace", lambda t: t.logspace(0, 1, 3)),
    ("eye", lambda t: t.eye(2, 3)),
    ("scalar_tensor", lambda t: t.scalar_tensor(1.0)),
    ("rand", lambda t: t.rand(3)),
    ("randn", lambda t: t.randn(3)),
    ("randint", lambda t: t.randint(0, 5, (3,))),
    ("tensor", lambda t: t.tensor([1.0, 2.0])),
    ("as_tensor_list", lambda t: t.as_tensor([1, 2])),
    ("as_tensor_ndarray", lambda t: t.as_tensor(np.zeros(2))),
    ("device_none_given", lambda t: t.zeros(2, device=None)),
]

KEEP_INPUT_DEVICE = [
    ("zeros_like", lambda t, x: t.zeros_like(x)),
    ("randn_like", lambda t, x: t.randn_like(x)),
    ("new_zeros", lambda t, x: x.new_zeros(3)),
    ("new_tensor", lambda t, x: x.new_tensor([1.0])),
    ("add", lambda t, x: x + 1),
]


@pytest.mark.parametrize("lib", LIBS)
def test_initial_default_is_cpu(lib):
    t = L(lib)
    assert t.get_default_device() == t.device("cpu")
    assert repr(t.get_default_device()) == "device(type='cpu')"
    assert t.zeros(1).device.type == "cpu"


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name,make", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_factories_take_the_context_device(lib, name, make):
    t = L(lib)
    with t.device("meta") as d:
        assert d == t.device("meta")
        out = make(t)
        assert out.device.type == "meta", name
        assert t.get_default_device() == t.device("meta")
    assert make(t).device.type == "cpu"


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name,make", FACTORIES, ids=[f[0] for f in FACTORIES])
def test_factories_take_set_default_device(lib, name, make):
    t = L(lib)
    t.set_default_device("meta")
    assert make(t).device.type == "meta", name
    t.set_default_device(None)
    assert make(t).device.type == "cpu"
    assert t.get_default_device() == t.device("cpu")


@pytest.mark.parametrize("lib", LIBS)
@pytest.mark.parametrize("name,make", KEEP_INPUT_DEVICE, ids=[f[0] for f in KEEP_INPUT_DEVICE])
def test_ops_on_a_tensor_keep_its_device(lib, name, make):
    t = L(lib)
    x = t.ones(2, device="cpu")
    with t.device("meta"):
        assert make(t, x).device.type == "cpu", name


@pytest.mark.parametrize("lib", LIBS)
def test_explicit_device_wins_and_from_numpy_keeps_the_cpu(lib):
    t = L(lib)
    with t.device("meta"):
        assert t.zeros(2, device="cpu").device.type == "cpu"
        assert t.tensor([1.0], device="cpu").device.type == "cpu"
        assert t.from_numpy(np.zeros(2)).device.type == "cpu"
        assert t.normal(0.0, 1.0, (2,)).device.type == "cpu"   # not among PyTorch's factories


@pytest.mark.parametrize("lib", LIBS)
def test_as_tensor_moves_a_tensor_only_to_a_named_device(lib):
    t = L(lib)
    x = t.ones(2)
    assert t.as_tensor(x) is x
    m = t.ones(2, device="meta")
    assert t.as_tensor(m) is m                    # no device named: keeps its own
    with t.device("meta"):
        moved = t.as_tensor(x)
        assert moved.device.type == "meta" and moved is not x
        assert t.as_tensor(m) is m
    assert t.as_tensor(x, device="meta").device.type == "meta"
    a = np.arange(3.0)
    shared = t.as_tensor(a)
    a[0] = 7.0
    assert shared[0].item() == 7.0                # a NumPy array is still shared on the CPU


@pytest.mark.parametrize("lib", LIBS)
def test_contexts_nest_and_one_device_enters_twice(lib):
    t = L(lib)
    meta, cpu = t.device("meta"), t.device("cpu")
    with meta:
        with cpu:
            assert t.zeros(1).device.type == "cpu"
        assert t.zeros(1).device.type == "meta"
        with meta:
            assert t.zeros(1).device.type == "meta"
        assert t.zeros(1).device.type == "meta"
    assert t.zeros(1).device.type == "cpu"
    t.set_default_device("meta")
    with cpu:
        assert t.zeros(1).device.type == "cpu"
    assert t.zeros(1).device.type == "meta"


@pytest.mark.parametrize("lib", LIBS)
def test_an_exception_inside_the_block_restores_the_default(lib):
    t = L(lib)
    with pytest.raises(ValueError):
        with t.device("meta"):
            raise ValueError("inside")
    assert t.zeros(1).device.type == "cpu"


@pytest.mark.parametrize("lib", LIBS)
def test_the_default_belongs_to_the_thread(lib):
    t = L(lib)
    seen = []

    def worker():
        seen.append(t.zeros(1).device.type)

    with t.device("meta"):
        th = threading.Thread(target=worker)
        th.start()
        th.join()
    t.set_default_device("meta")
    th = threading.Thread(target=worker)
    th.start()
    th.join()
    assert seen == ["cpu", "cpu"]


@pytest.mark.parametrize("lib", LIBS)
def test_modules_built_in_the_block_live_on_its_device(lib):
    t = L(lib)
    nn = t.nn
    with t.device("meta"):
        m = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Embedding(5, 3),
                          nn.Conv2d(1, 2, 3), nn.BatchNorm2d(3))
    assert {p.device.type for p in m.parameters()} == {"meta"}
    assert {b.device.type for b in m.buffers()} == {"meta"}
    m.to_empty(device="cpu")
    assert {p.device.type for p in m.parameters()} == {"cpu"}


@pytest.mark.parametrize("lib", LIBS)
def test_tensor_of_data_on_the_meta_device(lib):
    t = L(lib)
    out = t.tensor([[1.0, 2.0]], device="meta")
    assert out.device.type == "meta" and tuple(out.shape) == (1, 2)
    assert out.dtype == t.float32
    with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
        t.tensor(t.ones(2, device="meta"), device="cpu")


@pytest.mark.parametrize("lib", LIBS)
def test_bad_devices_raise(lib):
    t = L(lib)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        t.set_default_device("foo")
    with pytest.raises(RuntimeError, match="Invalid device string: 'cuda:x'"):
        t.set_default_device("cuda:x")
    with pytest.raises(TypeError):
        t.set_default_device(3.5)
    with pytest.raises(RuntimeError, match="device type at start of device string: foo"):
        with t.device("foo"):
            pass
    assert t.get_default_device() == t.device("cpu")


def test_exit_without_enter_raises():
    with pytest.raises(RuntimeError, match="without a matching device.__enter__"):
        ptl.device("cpu").__exit__(None, None, None)
