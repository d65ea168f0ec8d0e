"""torch.cuda.nvtx, torch.xpu and torch.mps where their backends are absent (pytorchlite/
cuda/nvtx.py, xpu.py, mps.py): PyTorch 2.13's answers and exceptions in its build without
them, stored, and compared with torch's where it is installed (torch's CPU build)."""
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

NOT_XPU = (AssertionError, "^Torch not compiled with XPU enabled$")

# (call, PyTorch's answer or (exception, message))
XPU = [
    (lambda m: m.is_available(), False), (lambda m: m.device_count(), 0),
    (lambda m: m.is_initialized(), False), (lambda m: m.is_bf16_supported(), False),
    (lambda m: m.is_tf32_supported(), False), (lambda m: m.get_arch_list(), []),
    (lambda m: m.get_gencode_flags(), ""), (lambda m: m.empty_cache(), None),
    (lambda m: m.manual_seed(0), None), (lambda m: m.manual_seed_all(0), None),
    (lambda m: m.seed(), None), (lambda m: m.seed_all(), None),
    (lambda m: m.memory_allocated(), 0), (lambda m: m.max_memory_allocated(), 0),
    (lambda m: m.memory_reserved(), 0), (lambda m: m.max_memory_reserved(), 0),
    (lambda m: dict(m.memory_stats()), {}), (lambda m: m.default_generators, ()),
    (lambda m: m.get_rng_state_all(), []), (lambda m: m.set_stream(None), None),
    (lambda m: m.current_device(), NOT_XPU), (lambda m: m.synchronize(), NOT_XPU),
    (lambda m: m.initial_seed(), NOT_XPU), (lambda m: m.get_rng_state(), NOT_XPU),
    (lambda m: m.get_device_name(), NOT_XPU), (lambda m: m.get_device_properties(), NOT_XPU),
    (lambda m: m.get_device_capability(), NOT_XPU), (lambda m: m.init(), NOT_XPU),
    (lambda m: m.current_stream(), NOT_XPU), (lambda m: m.set_device(0), NOT_XPU),
    (lambda m: m.mem_get_info(), NOT_XPU),
    (lambda m: m.device(0).__enter__(),
     (NotImplementedError, "^PyTorch was compiled without XPU support$")),
    (lambda m: m.Stream(), (RuntimeError, "^Tried to instantiate dummy base class Stream$")),
    (lambda m: m.Event(), (RuntimeError, "^Tried to instantiate dummy base class Event$")),
]


def _no_mps(call):
    return (RuntimeError, f"^Cannot execute {call}\\(\\) without MPS backend.$")


MPS = [
    (lambda m: m.is_available(), False), (lambda m: m.device_count(), 0),
    (lambda m: m.manual_seed(1), None), (lambda m: m.synchronize(), _no_mps("deviceSynchronize")),
    (lambda m: m.empty_cache(), _no_mps("emptyCache")),
    (lambda m: m.seed(), _no_mps("getDefaultGenerator")),
    (lambda m: m.get_rng_state(), _no_mps("getDefaultGenerator")),
    (lambda m: m.current_allocated_memory(), _no_mps("getCurrentAllocatedMemory")),
    (lambda m: m.driver_allocated_memory(), _no_mps("getDriverAllocatedMemory")),
    (lambda m: m.recommended_max_memory(), _no_mps("getRecommendedMaxMemory")),
    (lambda m: m.set_per_process_memory_fraction(0.5), _no_mps("setMemoryFraction")),
    (lambda m: m.compile_shader("x"), (RuntimeError, "^MPS is not available$")),
]


def _check(call, module, expected):
    if isinstance(expected, tuple) and expected and isinstance(expected[0], type) and \
            issubclass(expected[0], BaseException):
        with pytest.raises(expected[0], match=expected[1]):
            call(module)
    else:
        assert call(module) == expected


@pytest.mark.parametrize("i", range(len(XPU)))
def test_xpu(i):
    _check(XPU[i][0], ptl.xpu, XPU[i][1])


@pytest.mark.parametrize("i", range(len(MPS)))
def test_mps(i):
    _check(MPS[i][0], ptl.mps, MPS[i][1])


def test_xpu_stream_contexts_do_nothing():
    with ptl.xpu.stream(None):
        pass
    assert ptl.xpu.device_of(ptl.ones(1)).idx == -1


NVTX_STUB = "^NVTX functions not installed. Are you sure you have a CUDA build\\?$"


def test_nvtx():
    nvtx = ptl.cuda.nvtx
    assert ptl.cuda.nvtx is __import__("pytorchlite.cuda.nvtx").cuda.nvtx
    if ptl.cuda.is_built():   # NVTX without a tool attached (the module's docstring)
        assert nvtx.range_push("a") == -2 and nvtx.range_pop() == -2
        assert nvtx.mark("m") is None and nvtx.range_start("r") == 0
        assert nvtx.range_end(0) is None
        with nvtx.range("step {}", 1):
            pass
    else:
        for call in (lambda: nvtx.range_push("a"), nvtx.range_pop, lambda: nvtx.mark("m")):
            with pytest.raises(RuntimeError, match=NVTX_STUB):
                call()
        with pytest.raises(AttributeError, match="'_NVTXStub' object has no attribute "
                                                 "'rangeStartA'"):
            nvtx.range_start("r")
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        nvtx.range_push("a {}", 1)


def test_nvtx_stub_of_the_cpu_only_build():
    stub = ptl.cuda.nvtx._NVTXStub()
    with pytest.raises(RuntimeError, match=NVTX_STUB):
        stub.rangePushA("a")
    with pytest.raises(RuntimeError, match=NVTX_STUB):
        stub.markA("a")


@torch_ref
@pytest.mark.parametrize("i", range(len(XPU)))
def test_xpu_matches_torch(i):
    _check(XPU[i][0], torch.xpu, XPU[i][1])


@torch_ref
@pytest.mark.parametrize("i", range(len(MPS)))
def test_mps_matches_torch(i):
    _check(MPS[i][0], torch.mps, MPS[i][1])


@torch_ref
def test_nvtx_stub_matches_torch_cpu_build():
    assert torch.version.cuda is None   # the reference is PyTorch's CPU build
    for call in (lambda: torch.cuda.nvtx.range_push("a"), torch.cuda.nvtx.range_pop,
                 lambda: torch.cuda.nvtx.mark("m")):
        with pytest.raises(RuntimeError, match=NVTX_STUB):
            call()
