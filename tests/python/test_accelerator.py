"""torch.accelerator: the build's accelerator, consistent with pytorchlite.cuda, and PyTorch's
errors when no device is visible."""
import pytest

import pytorchlite as ptl

from helpers import torch

acc = ptl.accelerator
no_device = pytest.mark.skipif(ptl.cuda.is_available(), reason="a CUDA device is visible")
with_device = pytest.mark.skipif(not ptl.cuda.is_available(), reason="no CUDA device")
needs_torch_without_device = pytest.mark.skipif(
    torch is None or torch.accelerator.is_available(),
    reason="needs PyTorch installed and without an accelerator device")


def test_current_accelerator_follows_the_build():
    if ptl.cuda.is_built():
        assert acc.current_accelerator() == ptl.device("cuda")
        assert acc.current_accelerator().index is None
    else:
        assert acc.current_accelerator() is None
    if not ptl.cuda.is_available():
        assert acc.current_accelerator(check_available=True) is None


def test_queries_match_cuda():
    assert acc.is_available() is ptl.cuda.is_available()
    assert acc.device_count() == ptl.cuda.device_count()
    assert isinstance(acc.device_count(), int)


@pytest.mark.skipif(torch is None or torch.backends.cuda.is_built() != ptl.cuda.is_built(),
                    reason="needs a PyTorch built with the same accelerator as pytorchlite")
def test_current_accelerator_as_torch_for_the_same_build():
    mine, ref = acc.current_accelerator(), torch.accelerator.current_accelerator()
    assert (mine is None) == (ref is None)
    if ref is not None:
        assert str(mine) == str(ref)


@needs_torch_without_device
def test_queries_as_torch_without_device():
    assert acc.is_available() is torch.accelerator.is_available() is False
    assert acc.device_count() == torch.accelerator.device_count() == 0
    assert acc.current_accelerator(True) is torch.accelerator.current_accelerator(True) is None


NO_DEVICE_CALLS = [
    lambda m: m.current_device_index(),
    lambda m: m.set_device_index(0),
    lambda m: m.synchronize(),
    lambda m: m.synchronize(0),
]


@no_device
@pytest.mark.parametrize("call", NO_DEVICE_CALLS)
def test_device_calls_raise_without_device(call):
    with pytest.raises(RuntimeError, match="^Cannot access accelerator device when none is "
                                           r"available\.$"):
        call(acc)


@no_device
def test_device_index_context_without_device():
    with acc.device_index(None):
        pass
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        with acc.device_index(0):
            pass


@needs_torch_without_device
@pytest.mark.parametrize("call", NO_DEVICE_CALLS)
def test_device_call_errors_as_torch(call):
    with pytest.raises(RuntimeError) as ref:
        call(torch.accelerator)
    with pytest.raises(RuntimeError) as mine:
        call(acc)
    assert str(mine.value) == str(ref.value)


def test_negative_index_is_ignored():
    assert acc.set_device_index(-1) is None


def test_device_argument_errors():
    with pytest.raises(ValueError, match="^Expected a torch.device with a specified index or an "
                                         "integer, but got:None$"):
        acc.set_device_index(None)
    if ptl.cuda.is_built():
        with pytest.raises(ValueError, match="^Expected a torch.device with a specified index or "
                                             "an integer, but got:cuda$"):
            acc.set_device_index("cuda")
        with pytest.raises(ValueError, match="^cpu doesn't match the current accelerator cuda.$"):
            acc.set_device_index(ptl.device("cpu"))
    else:
        with pytest.raises(RuntimeError, match="^Accelerator expected$"):
            acc.set_device_index("cpu")


@with_device
def test_device_index_with_device():
    assert acc.current_device_index() == 0
    acc.set_device_index(ptl.device("cuda", 0))
    acc.synchronize()
    acc.synchronize("cuda:0")
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    with pytest.raises(RuntimeError, match="Invalid device index"):
        acc.set_device_index(acc.device_count())
