"""The dispatcher from Python: DispatchKey, DispatchKeySet, the key sets of tensors and of the
thread (mirrors torch._C's names; our keys are fewer)."""
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from helpers import torch, torch_ref

K = _C.DispatchKey


def ks(*keys):
    out = _C.DispatchKeySet()
    for k in keys:
        out = out | _C.DispatchKeySet(k)
    return out


def test_dispatch_key_enum_names_our_keys_in_priority_order():
    assert [k.name for k in K] == _C._dispatch_keys()
    assert repr(K.CPU) == "<DispatchKey.CPU: 0>" and str(K.Autograd) == "DispatchKey.Autograd"


def test_tensor_key_set():
    keys = _C._dispatch_keys(ptl.ones(2))
    assert keys == ks(K.CPU, K.Autograd)
    assert repr(keys) == "DispatchKeySet(CPU, Autograd)"
    assert list(keys) == [K.CPU, K.Autograd]
    assert keys.highestPriorityTypeId() == K.Autograd
    assert _C._dispatch_keys(ptl.ones(2, requires_grad=True)) == keys
    with pytest.raises(TypeError, match="_dispatch_keys\\(\\): expected a Tensor, got int"):
        _C._dispatch_keys(3)


def test_key_set_algebra():
    a = ks(K.CPU, K.Autograd)
    b = _C.DispatchKeySet("CPU")
    assert a | b == a and a & b == b and a - b == ks(K.Autograd)
    assert a.has(K.CPU) and a.has("Autograd") and not a.has(K.CUDA)
    assert a.add(K.CUDA) == ks(K.CPU, K.CUDA, K.Autograd) and a.remove("CPU") == ks(K.Autograd)
    assert repr(_C.DispatchKeySet()) == "DispatchKeySet()"
    assert _C.DispatchKeySet().highestPriorityTypeId() is None
    assert list(_C.DispatchKeySet()) == []
    assert hash(a) == hash(ks(K.Autograd, K.CPU)) and a != b
    assert a.raw_repr() == (1 << K.CPU.value) | (1 << K.Autograd.value)
    assert _C.DispatchKeySet("AutogradCPU") == ks(K.Autograd)
    with pytest.raises(RuntimeError, match="could not parse dispatch key: Nope"):
        _C.DispatchKeySet("Nope")
    with pytest.raises(TypeError, match="expected a DispatchKey or a str, got int"):
        a.has(3)


def test_thread_local_include_and_exclude_sets():
    assert _C._dispatch_tls_local_include_set() == ks(K.CompositeImplicitAutograd)
    assert _C._dispatch_tls_local_exclude_set() == _C.DispatchKeySet()
    with ptl.no_grad():
        assert _C._dispatch_tls_local_exclude_set() == ks(K.Autograd)
    with ptl.autocast("cpu"):
        assert _C._dispatch_tls_local_include_set().has(K.AutocastCPU)


def test_has_kernel_for_builtin_ops():
    has = _C._dispatch_has_kernel_for_dispatch_key
    assert has("aten::add.Tensor", "CPU") and has("aten::add.Tensor", K.Autograd)
    assert not has("aten::add.Tensor", "CompositeImplicitAutograd")
    with pytest.raises(RuntimeError, match="operator aten::nope does not exist"):
        has("aten::nope", "CPU")
    with pytest.raises(RuntimeError, match="could not parse dispatch key: Bogus"):
        has("aten::add.Tensor", "Bogus")


@torch_ref
def test_same_surface_as_torch():
    for name in ["_dispatch_keys", "_dispatch_has_kernel_for_dispatch_key",
                 "_dispatch_tls_local_include_set", "_dispatch_tls_local_exclude_set",
                 "DispatchKey", "DispatchKeySet"]:
        assert hasattr(torch._C, name) and hasattr(_C, name)
    t = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
    o = _C.DispatchKeySet(K.CPU)
    assert repr(t) == repr(o) and t.has(torch._C.DispatchKey.CPU) == o.has(K.CPU)
    assert repr((t - t)) == repr(o - o)
    assert torch._C._dispatch_has_kernel_for_dispatch_key("aten::add.Tensor", "CPU")
    with pytest.raises(RuntimeError, match="could not parse dispatch key: Bogus"):
        torch._C._dispatch_has_kernel_for_dispatch_key("aten::add.Tensor", "Bogus")
