"""Tensor.is_* flags and predicates: device, layout and dtype queries, against PyTorch where
it is installed."""
import pytest

import pytorchlite as ptl

from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

ALWAYS_FALSE = ["is_xpu", "is_mps", "is_meta", "is_ipu", "is_maia", "is_mtia", "is_vulkan",
                "is_xla", "is_sparse", "is_sparse_csr", "is_mkldnn", "is_quantized",
                "is_nested", "is_cuda"]
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64"]


@pytest.mark.parametrize("name", ALWAYS_FALSE)
def test_absent_backends_and_layouts(name):
    for t in (ptl.zeros(2), ptl.nn.Parameter(ptl.zeros(2)), ptl.tensor(3)):
        assert getattr(t, name) is False


def test_is_cpu():
    assert ptl.zeros(2).is_cpu is True


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_predicates(dtype):
    t = ptl.zeros(2, dtype=getattr(ptl, dtype))
    assert t.is_complex() is False and t.is_conj() is False and t.is_neg() is False
    assert t.is_signed() is (dtype not in ("bool", "uint8"))
    assert t.is_distributed() is False


@needs_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_flags_as_torch(dtype):
    mine, ref = ptl.zeros(2, dtype=getattr(ptl, dtype)), torch.zeros(2, dtype=getattr(torch, dtype))
    for name in ALWAYS_FALSE + ["is_cpu"]:
        assert getattr(mine, name) == getattr(ref, name), name
    for name in ("is_complex", "is_conj", "is_neg", "is_signed", "is_distributed"):
        assert getattr(mine, name)() == getattr(ref, name)(), name


def test_is_nonzero():
    assert ptl.tensor([1.5]).is_nonzero() is True
    assert ptl.tensor([0.0]).is_nonzero() is False
    assert ptl.tensor(True).is_nonzero() is True
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with more than one value "
                                           "is ambiguous$"):
        ptl.zeros(2).is_nonzero()
    with pytest.raises(RuntimeError, match="^Boolean value of Tensor with no values is "
                                           "ambiguous$"):
        ptl.zeros(0).is_nonzero()


def test_is_same_size_and_is_set_to():
    x = ptl.zeros(2, 3)
    assert x.is_same_size(ptl.ones(2, 3)) and not x.is_same_size(ptl.ones(3, 2))
    assert x.is_set_to(x) and x.is_set_to(x[:])
    assert not x.is_set_to(x[1:]) and not x.is_set_to(x.t()) and not x.is_set_to(x.clone())


def test_is_coalesced_on_dense():
    with pytest.raises(RuntimeError, match="^is_coalesced expected sparse coordinate tensor "
                                           "layout but got Strided$"):
        ptl.zeros(2).is_coalesced()
