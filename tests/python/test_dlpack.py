"""DLPack: zero-copy exchange with NumPy and torch, capsule ownership, errors."""
import gc
import re
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ALL_DTYPES, NP_DTYPE, make, to_numpy, torch, torch_ref


NUMPY_DTYPES = [d for d in ALL_DTYPES if d != ptl.bfloat16]   # NumPy has no bfloat16
LAYOUT_SHAPES = [("contiguous", ()), ("contiguous", (0,)), ("contiguous", (7,)),
                 ("contiguous", (2, 0, 3)), ("contiguous", (3, 4)), ("transposed", (3, 4)),
                 ("sliced", (2, 3, 5)), ("expanded", (3, 4))]


def torch_dtype(d):
    return getattr(torch, str(d).split(".")[1])


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("layout,shape", LAYOUT_SHAPES)
def test_to_numpy(dtype, layout, shape):
    t, a = make(shape, dtype, layout, seed=1)
    n = np.from_dlpack(t)
    assert n.dtype == NP_DTYPE[dtype]
    assert n.shape == tuple(t.shape)
    np.testing.assert_array_equal(n, a)
    if t.numel():
        assert n.ctypes.data == t.data_ptr()
        assert n.strides == tuple(s * t.element_size() for s in t.stride())


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("layout,shape", LAYOUT_SHAPES)
def test_from_numpy_array(dtype, layout, shape):
    _, a = make(shape, dtype, layout, seed=2)
    t = ptl.from_dlpack(a)
    assert t.dtype == dtype
    assert tuple(t.shape) == a.shape
    np.testing.assert_array_equal(to_numpy(t), a)
    if a.size:
        assert t.data_ptr() == a.ctypes.data
        assert tuple(s * t.element_size() for s in t.stride()) == a.strides


@torch_ref
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_torch_both_ways(dtype):
    t, _ = make((3, 5), dtype, "transposed", seed=3)
    r = torch.from_dlpack(t)
    assert r.dtype == torch_dtype(dtype)
    assert r.tolist() == t.tolist()
    assert r.data_ptr() == t.data_ptr() and r.stride() == t.stride()
    back = ptl.from_dlpack(r)
    assert back.dtype == dtype and back.tolist() == t.tolist()
    assert back.data_ptr() == t.data_ptr()


def test_writes_visible_both_ways():
    t = ptl.tensor([[1.0, 2.0], [3.0, 4.0]])
    n = np.from_dlpack(t)              # DLPack 1.0: writable
    n[0, 1] = 20.0
    assert t.tolist() == [[1.0, 20.0], [3.0, 4.0]]
    t[1, 0] = 30.0
    assert n[1, 0] == 30.0
    a = np.zeros(3, dtype=np.int32)
    u = ptl.from_dlpack(a)
    u[2] = 7
    assert a.tolist() == [0, 0, 7]
    a[0] = -1
    assert u.tolist() == [-1, 0, 7]
    if torch is not None:
        r = torch.from_dlpack(t)
        r[0, 0] = -5.0
        assert t[0, 0].item() == -5.0


def test_capsules_and_versions():
    t = ptl.tensor([1, 2, 3])
    old = t.__dlpack__()
    assert "dltensor" in repr(old) and "versioned" not in repr(old)
    new = t.__dlpack__(max_version=(1, 0))
    assert '"dltensor_versioned"' in repr(new)
    assert '"dltensor"' in repr(t.__dlpack__(max_version=(0, 8)))
    u = ptl.from_dlpack(old)
    assert '"used_dltensor"' in repr(old)
    v = ptl.from_dlpack(new)
    assert '"used_dltensor_versioned"' in repr(new)
    assert u.tolist() == v.tolist() == [1, 2, 3]
    assert u.data_ptr() == v.data_ptr() == t.data_ptr()
    # NumPy gives a read-only array for a 0.8 capsule and a writable one for 1.0
    assert np.from_dlpack(t).flags.writeable
    if torch is not None:
        assert torch.from_dlpack(t.__dlpack__()).tolist() == [1, 2, 3]


def test_device():
    assert ptl.tensor([1.0]).__dlpack_device__() == (1, 0)   # kDLCPU, device 0
    if torch is not None:
        assert ptl.tensor([1.0]).__dlpack_device__() == torch.tensor([1.0]).__dlpack_device__()


def test_copy_and_dl_device():
    t = ptl.tensor([1.0, 2.0])
    c = ptl.from_dlpack(t.__dlpack__(copy=True))
    assert c.data_ptr() != t.data_ptr() and c.tolist() == [1.0, 2.0]
    same = ptl.from_dlpack(t.__dlpack__(dl_device=(1, 0), copy=False))
    assert same.data_ptr() == t.data_ptr()
    with pytest.raises(BufferError, match=re.escape(
            "cannot move DLPack tensor from device (1, 0) to (2, 0) without copying. "
            "Set copy=None or copy=True.")):
        t.__dlpack__(dl_device=(2, 0), copy=False)


def test_source_kept_alive():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    before = sys.getrefcount(a)
    t = ptl.from_dlpack(a)
    assert sys.getrefcount(a) > before     # NumPy's managed tensor holds the array
    del a
    gc.collect()
    assert t.tolist()[2] == [8.0, 9.0, 10.0, 11.0]

    n = np.from_dlpack(ptl.tensor([5, 6, 7]))   # the only reference to the tensor is NumPy's
    gc.collect()
    assert n.tolist() == [5, 6, 7]


def test_no_leaks():
    gc.collect()
    counts = ptl._C._live_counts()
    t = ptl.tensor([1.0, 2.0, 3.0])
    for _ in range(20):
        t.__dlpack__()                                   # never consumed: destructor frees
        t.__dlpack__(max_version=(1, 0))
        ptl.from_dlpack(t.__dlpack__())                  # consumed, then freed with the tensor
        ptl.from_dlpack(t.__dlpack__(max_version=(1, 0)))
        np.from_dlpack(t)
        ptl.from_dlpack(np.ones(4))
        if torch is not None:
            torch.from_dlpack(t)
    del t
    gc.collect()
    assert ptl._C._live_counts() == counts


def test_errors():
    t = ptl.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(BufferError, match=re.escape(
            "Can't export tensors that require gradient, use tensor.detach()")):
        t.__dlpack__()
    u = ptl.tensor([1.0])
    with pytest.raises(TypeError, match=re.escape("stream must be ``int`` or ``none``")):
        u.__dlpack__(stream="x")
    with pytest.raises(AssertionError, match=re.escape("stream should be None on cpu.")):
        u.__dlpack__(stream=3)
    msg = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be "
           "consumed only once, so you might have already constructed a tensor from it once.")
    cap = u.__dlpack__()
    ptl.from_dlpack(cap)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.from_dlpack(cap)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.from_dlpack(5)
    if torch is not None:
        cap = torch.ones(1).__dlpack__()
        torch.from_dlpack(cap)
        with pytest.raises(RuntimeError, match=re.escape(msg)):   # torch words it the same
            torch.from_dlpack(cap)


@pytest.mark.parametrize("np_dtype,message", [
    (np.uint32, "Unsupported kDLUInt bits 32"), (np.uint16, "Unsupported kDLUInt bits 16"),
    (np.uint64, "Unsupported kDLUInt bits 64"),
])
def test_unsupported_dtypes(np_dtype, message):
    a = np.zeros(3, dtype=np_dtype)
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ptl.from_dlpack(a)
    cap = a.__dlpack__()
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ptl.from_dlpack(cap)
    assert "used" not in repr(cap)   # an error leaves the capsule to its own destructor


@pytest.mark.parametrize("layout,shape", LAYOUT_SHAPES)
def test_utils_dlpack_round_trip(layout, shape):
    t, a = make(shape, ptl.float64, layout, seed=2)
    for capsule in (ptl.to_dlpack(t), ptl.utils.dlpack.to_dlpack(t)):
        assert "dltensor" in repr(capsule)
        back = ptl.utils.dlpack.from_dlpack(capsule)
        assert tuple(back.stride()) == tuple(t.stride())
        np.testing.assert_array_equal(back.numpy(), a)
        if t.numel():
            assert back.data_ptr() == t.data_ptr()
    assert ptl.utils.dlpack.from_dlpack is ptl.from_dlpack


def test_utils_dlpack_copy_and_device():
    a = np.arange(6.0)
    shared = ptl.from_dlpack(a, copy=False)
    copied = ptl.from_dlpack(a, copy=True)
    moved = ptl.from_dlpack(a, device="cpu")
    a[0] = 42.0
    assert shared[0].item() == 42.0 and moved[0].item() == 42.0 and copied[0].item() == 0.0
    t = ptl.arange(3.0)
    assert ptl.from_dlpack(t, copy=True).data_ptr() != t.data_ptr()
    assert ptl.from_dlpack(t, device=ptl.device("cpu")).data_ptr() == t.data_ptr()
    # a tensor that requires grad exports through the legacy function, as in PyTorch
    w = ptl.ones(2, requires_grad=True)
    assert not ptl.from_dlpack(ptl.to_dlpack(w)).requires_grad


def test_utils_dlpack_errors_and_device_types():
    D = ptl.utils.dlpack.DLDeviceType
    assert (D.kDLCPU, D.kDLCUDA, D.kDLROCM, D.kDLMAIA) == (1, 2, 10, 17)
    with pytest.raises(TypeError, match=re.escape("_to_dlpack(): argument 'data' (position 1) "
                                                  "must be Tensor, not int")):
        ptl.to_dlpack(3)
    with pytest.raises(AssertionError, match="device and copy kwargs not supported when "
                                             "ext_tensor is already a DLPack capsule."):
        ptl.from_dlpack(ptl.to_dlpack(ptl.ones(1)), copy=True)


@torch_ref
def test_utils_dlpack_with_torch():
    assert [(m.name, int(m)) for m in ptl.utils.dlpack.DLDeviceType] == [
        (m.name, int(m)) for m in torch.utils.dlpack.DLDeviceType]
    t = ptl.arange(5.0)
    theirs = torch.utils.dlpack.from_dlpack(ptl.utils.dlpack.to_dlpack(t))
    assert theirs.data_ptr() == t.data_ptr()
    ours = ptl.utils.dlpack.from_dlpack(torch.to_dlpack(torch.arange(4)))
    assert ours.tolist() == [0, 1, 2, 3] and ours.dtype == ptl.int64
    copied = ptl.from_dlpack(torch.arange(3.0), copy=True)
    assert copied.tolist() == [0.0, 1.0, 2.0]
