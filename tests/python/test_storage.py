"""Storages: Tensor.untyped_storage() / storage(), UntypedStorage, TypedStorage, Tensor.layout,
Tensor.set_ / resize_ and the in-place view ops built on them (squeeze_, unsqueeze_, t_,
transpose_, as_strided_), with PyTorch's identity rules (a view and its base report one storage).
Expected values are written out and checked on PyTorch too where it is installed
(golden.LIBRARIES); the bytes are compared with NumPy's view of the same memory."""
import gc
import pickle
import sys
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import LIBRARIES
from helpers import torch, torch_ref

SHAPES = [(), (0,), (3,), (2, 3), (4, 1, 2)]


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_a_view_and_its_base_report_one_storage(lib):
    a = lib.arange(6.0)
    views = [a[1:], a.view(2, 3).t(), a[::2], a.reshape(3, 2)[1]]
    for v in views:
        s = v.untyped_storage()
        assert s._cdata == a.untyped_storage()._cdata
        assert s.data_ptr() == a.untyped_storage().data_ptr() == a.data_ptr()
        assert s.nbytes() == 24 and len(s) == 24 and s.size() == 24 and s.element_size() == 1
    assert a[1:].data_ptr() - a.data_ptr() == 4 and a[3:].storage_offset() == 3
    assert a.untyped_storage()._cdata != a.clone().untyped_storage()._cdata
    assert a.layout == lib.strided and a[::2].layout is lib.strided
    assert str(lib.strided) == repr(lib.strided) == "torch.strided"


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "uint8", "bool"])
def test_untyped_storage_bytes_match_numpy(shape, dtype):
    rng = np.random.default_rng(len(shape))
    x = (rng.standard_normal(shape) * 50).astype(dtype)
    t = ptl.tensor(x)
    s = t.untyped_storage()
    assert s.tolist() == list(x.tobytes()) and list(s) == s.tolist()
    typed = t.storage() if t.numel() else None
    if typed is not None:
        assert typed.dtype == t.dtype and typed.size() == x.size == len(typed)
        assert typed.tolist() == x.reshape(-1).tolist()
        assert typed[-1] == x.reshape(-1)[-1].item()
        assert typed._untyped_storage._cdata == s._cdata and typed.nbytes() == x.nbytes


@pytest.mark.filterwarnings("ignore:TypedStorage is deprecated")
def test_storage_of_a_non_contiguous_view_is_the_whole_block():
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = ptl.tensor(x).t()[1:]
    assert t.untyped_storage().tolist() == list(x.tobytes())
    assert t.storage().tolist() == list(range(12)) and t.storage_offset() == 1


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_untyped_storage_reads_and_writes(lib):
    s = lib.UntypedStorage(3)
    s.fill_(300)
    assert s.tolist() == [44, 44, 44]
    s[0] = 5
    s[1:3] = 9
    assert s.tolist() == [5, 9, 9] and s[-1] == 9 and s[0:2].tolist() == [5, 9]
    assert isinstance(s[0:2], lib.UntypedStorage) and s[0:2].nbytes() == 2
    assert lib.UntypedStorage([1, 2, 300, -1]).tolist() == [1, 2, 44, 255]
    assert lib.UntypedStorage().nbytes() == 0 and str(lib.UntypedStorage(2).device) == "cpu"
    t = lib.zeros(2)
    t.untyped_storage().fill_(0)
    u = t.untyped_storage()
    u[3] = 63
    u[2] = 128
    assert t.tolist() == [1.0, 0.0]      # writes through the storage are seen by the tensor
    c = u.clone()
    assert c.tolist() == u.tolist() and c.data_ptr() != u.data_ptr() and u.cpu() is u
    d = lib.UntypedStorage(8).copy_(u)
    assert d.tolist() == u.tolist()
    assert repr(lib.UntypedStorage([1, 2])) == (
        " 1\n 2\n[torch.storage.UntypedStorage(device=cpu) of size 2]")
    assert repr(lib.UntypedStorage()) == " \n[torch.storage.UntypedStorage(device=cpu) of size 0]"


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_untyped_storage_errors(lib):
    s = lib.UntypedStorage(3)
    with pytest.raises(IndexError, match=r"^index 100 out of range for storage of size 3$"):
        s[100]
    with pytest.raises(IndexError, match=r"^index -1 out of range for storage of size 3$"):
        s[-4]
    with pytest.raises(TypeError, match=r"^can't index a torch.UntypedStorage with str$"):
        s["x"]
    with pytest.raises(RuntimeError, match="^out of bounds$"):
        s[5] = 1
    with pytest.raises(RuntimeError, match=r"^Trying to slice with a step of 2, but only a step "
                       "of 1 is supported$"):
        s[::2]
    with pytest.raises(RuntimeError, match="^fill_ expects int, but got float$"):
        s.fill_(1.5)
    with pytest.raises(RuntimeError, match="^size does not match, self was 3 bytes but src was "
                       "4 bytes$"):
        s.copy_(lib.UntypedStorage(4))


def test_negative_storage_size_raises():
    with pytest.raises(RuntimeError, match="must be non-negative, got -1"):
        ptl.UntypedStorage(-1)
    with pytest.raises(RuntimeError, match="must be non-negative, got -2"):
        ptl.UntypedStorage(4).resize_(-2)


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_from_buffer(lib):
    fb = lib.UntypedStorage.from_buffer
    data = b"\x01\x00\x02\x00"
    assert fb(data, dtype=lib.uint8).tolist() == [1, 0, 2, 0]
    assert fb(data, byte_order="little", dtype=lib.int16).tolist() == [1, 0, 2, 0]
    assert fb(data, byte_order="big", dtype=lib.int16).tolist() == [0, 1, 0, 2]
    assert fb(bytearray(data), "little", dtype=lib.float32).tolist() == [1, 0, 2, 0]
    assert fb(data, "little", dtype=lib.uint8, count=2, offset=1).tolist() == [0, 2]
    assert fb(data, "little", dtype=lib.int16, count=1, offset=2).tolist() == [2, 0]
    big = np.arange(5, dtype=">i4").tobytes()
    assert lib.tensor([], dtype=lib.int32).set_(fb(big, "big", dtype=lib.int32)).tolist() == [
        0, 1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="^argument 'dtype' cannot be None$"):
        fb(data)
    with pytest.raises(RuntimeError, match=r"missing required argument 'byte_order' \(pos 2\)"):
        fb(data, dtype=lib.int16)
    with pytest.raises(ValueError, match=r"^buffer size \(3\) must be a multiple of element "
                       r"size \(2\)$"):
        fb(data[:3], byte_order="little", dtype=lib.int16)
    with pytest.raises(ValueError, match=r"^invalid byte_order 'middle' \(expected 'big', "
                       r"'little', or 'native'\)$"):
        fb(data, byte_order="middle", dtype=lib.int16)


def test_from_buffer_bounds():
    with pytest.raises(ValueError, match="exceeds the maximum allowed length"):
        ptl.UntypedStorage.from_buffer(b"\x01\x00\x02\x00", "little", dtype=ptl.int16, count=3)
    with pytest.raises(ValueError, match="offset must be non-negative"):
        ptl.UntypedStorage.from_buffer(b"\x01\x00", "little", dtype=ptl.uint8, offset=5)


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_typed_storage(lib):
    a = lib.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = a.storage()
    assert (s.dtype, s.size(), len(s), s.element_size(), s.nbytes()) == (lib.float32, 3, 3, 4, 12)
    assert s.tolist() == [0.0, 1.0, 2.0] and s[1] == 1.0 and s[-1] == 2.0
    assert s.data_ptr() == a.data_ptr() and isinstance(s._untyped_storage, lib.UntypedStorage)
    s[0] = 7
    assert a.tolist() == [7.0, 1.0, 2.0]
    assert repr(s) == (" 7.0\n 1.0\n 2.0\n"
                       "[torch.storage.TypedStorage(dtype=torch.float32, device=cpu) of size 3]")
    with pytest.raises(IndexError, match="^index 3 out of range for storage of size 3$"):
        s[3]


def test_typed_storage_warns_once():
    from pytorchlite import storage
    storage._typed_storage_warned = False
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ptl.ones(1).storage()
        ptl.ones(1).storage()
    assert [(x.category, str(x.message)) for x in w] == [(UserWarning, (
        "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will "
        "be the only storage class. This should only matter to you if you are using storages "
        "directly.  To access UntypedStorage directly, use tensor.untyped_storage() instead of "
        "tensor.storage()"))]


def test_storage_outlives_its_tensors():
    gc.collect()
    base = ptl._C._live_counts()["Storage"]
    a = ptl.arange(4.0)
    s = a[1:].untyped_storage()
    expected = a.untyped_storage().tolist()
    del a
    gc.collect()
    assert s.tolist() == expected and s.nbytes() == 16
    ref = sys.getrefcount(s)
    t = ptl.tensor([], dtype=ptl.float32).set_(s)
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0] and sys.getrefcount(s) == ref
    del s
    gc.collect()
    assert t.tolist() == [0.0, 1.0, 2.0, 3.0]   # the tensor holds the storage now
    del t
    gc.collect()
    assert ptl._C._live_counts()["Storage"] == base


def test_resize_shrinking_a_shared_storage_never_dangles():
    # PyTorch frees the block and the tensor reading it crashes; here the block stays while
    # the tensor holds the storage (Note [Storage capacity])
    b = ptl.ones(64)
    s = b.untyped_storage()
    assert s.resize_(0) is s and s.nbytes() == 0 and b.untyped_storage().nbytes() == 0
    assert (b + 1).shape == (64,)
    s.resize_(256)
    assert s.nbytes() == 256 and b.tolist() == [1.0] * 64
    lone = ptl.UntypedStorage([1, 2, 3, 4])
    lone.resize_(2)
    assert lone.tolist() == [1, 2]
    lone.resize_(6)
    assert lone.nbytes() == 6 and lone.tolist()[:2] == [1, 2]
    grown = ptl.zeros(2)
    grown.untyped_storage().resize_(400)
    assert grown.tolist() == [0.0, 0.0] and grown.untyped_storage().nbytes() == 400


def test_shared_memory_storage():
    s = ptl.UntypedStorage([1, 2, 3])
    assert not s.is_shared() and s.share_memory_() is s and s.is_shared()
    assert s.tolist() == [1, 2, 3]
    with pytest.raises(RuntimeError, match="^Trying to resize storage that is not resizable$"):
        s.resize_(8)
    t = ptl.zeros(3)
    t.untyped_storage().share_memory_()
    assert t.is_shared()
    del s, t
    gc.collect()


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_set_(lib):
    x, y = lib.zeros(3), lib.arange(4.0)
    v = x._version
    assert x.set_(y) is x and x.tolist() == [0.0, 1.0, 2.0, 3.0] and x._version > v
    assert x.is_set_to(y) and y.is_set_to(x) and x.data_ptr() == y.data_ptr()
    x.set_(y.untyped_storage(), 1, (2,), (1,))
    assert x.tolist() == [1.0, 2.0] and x.storage_offset() == 1 and not x.is_set_to(y)
    assert x.untyped_storage()._cdata == y.untyped_storage()._cdata
    x.set_(y.untyped_storage(), 0, (2, 2))
    assert x.tolist() == [[0.0, 1.0], [2.0, 3.0]] and x.stride() == (2, 1)
    x.set_(y.untyped_storage(), 0, (2,), (2,))
    assert x.tolist() == [0.0, 2.0]
    x[1] = 9
    assert y.tolist() == [0.0, 1.0, 9.0, 3.0]
    x.set_()
    assert x.shape == (0,) and x.untyped_storage().nbytes() == 0 and x.dtype == lib.float32
    x.set_(y.untyped_storage())
    assert x.tolist() == [0.0, 1.0, 9.0, 3.0]
    z = lib.zeros(2)
    z.set_(y[1:3])
    assert z.tolist() == [1.0, 9.0] and z.storage_offset() == 1
    # a geometry past the end grows the storage, as PyTorch's set_ does
    w = lib.arange(2.0)
    lib.zeros(1).set_(w.untyped_storage(), 1, (3,), (1,))
    assert w.untyped_storage().nbytes() == 16 and w.tolist() == [0.0, 1.0]
    with lib.no_grad():
        leaf = lib.zeros(2, requires_grad=True)
        leaf.set_(y)
    assert leaf.requires_grad and leaf.tolist() == y.tolist()


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_set_errors(lib):
    y = lib.arange(4.0)
    with pytest.raises(RuntimeError, match="^Could not set tensor of type long int to a tensor "
                       "of type float$"):
        lib.zeros(2).set_(lib.zeros(2, dtype=lib.int64))
    with pytest.raises(RuntimeError, match=r"^Could not set tensor of type c10::BFloat16 to a "
                       r"tensor of type c10::Half$"):
        lib.zeros(2, dtype=lib.float16).set_(lib.zeros(2, dtype=lib.bfloat16))
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in "
                       "an in-place operation.$"):
        lib.zeros(2, requires_grad=True).set_(y)
    with pytest.raises(RuntimeError, match=r"^Tensor: invalid storage offset -1$"):
        lib.zeros(2).set_(y.untyped_storage(), -1, (2,), (1,))
    with pytest.raises(RuntimeError, match=r"^unequal size length \(1\) and stride length "
                       r"\(2\)$"):
        lib.zeros(2).set_(y.untyped_storage(), 0, (2,), (1, 1))
    with pytest.raises(TypeError):
        lib.zeros(2).set_(5)
    with pytest.raises(TypeError):
        lib.zeros(2).set_(y.untyped_storage(), 1)


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_set_to_a_tensor_records_a_node_without_derivative(lib):
    h = lib.zeros(2, requires_grad=True) * 2
    assert h.set_(lib.arange(2.0)) is h and h.requires_grad and h.tolist() == [0.0, 1.0]
    assert type(h.grad_fn).__name__ == "NotImplemented"
    with pytest.raises((RuntimeError, NotImplementedError), match="derivative for .*set_"):
        h.sum().backward()
    x, y = lib.zeros(2), lib.ones(2, requires_grad=True)
    x.set_(y)
    assert x.requires_grad and not x.is_leaf and type(x.grad_fn).__name__ == "NotImplemented"
    with lib.no_grad():
        z = lib.zeros(2).set_(y)
    assert not z.requires_grad and z.data_ptr() == y.data_ptr()


def test_set_to_a_storage_on_a_graph_tensor_is_refused():
    h = ptl.zeros(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="part of an autograd graph"):
        h.set_(ptl.arange(2.0).untyped_storage())


def test_set_makes_saved_tensors_stale():
    a = ptl.ones(2, requires_grad=True)
    b = a * 1
    c = b.detach()
    out = (a * c).sum()
    c.set_(ptl.arange(2.0))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_resize_(lib):
    x = lib.arange(6.0)
    v = x._version
    assert x.resize_(2, 3) is x and x.shape == (2, 3) and x.stride() == (3, 1)
    assert x.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and x._version > v
    x.resize_((3,))
    assert x.tolist() == [0.0, 1.0, 2.0] and x.untyped_storage().nbytes() == 24   # never shrinks
    x.resize_(lib.Size([2, 4]))
    assert x.untyped_storage().nbytes() == 32 and x[0].tolist() == [0.0, 1.0, 2.0, 3.0]
    # the same sizes keep the strides; an explicit memory format sets them
    t = lib.arange(12.0).view(3, 4).t()
    assert t.resize_(4, 3).stride() == (1, 4)
    assert t.resize_(4, 3, memory_format=lib.contiguous_format).stride() == (3, 1)
    assert lib.zeros(3).resize_(2, 3, 4, 5, memory_format=lib.channels_last).stride() == (
        60, 1, 15, 3)
    # a view grows the storage it shares with its base, past its own offset
    base = lib.arange(3.0)
    view = base[1:]
    view.resize_(5)
    assert base.untyped_storage().nbytes() == 24 and view[:2].tolist() == [1.0, 2.0]
    assert base.tolist() == [0.0, 1.0, 2.0]
    assert lib.zeros(0).resize_(0, 7).shape == (0, 7) and lib.zeros(3).resize_(()).shape == ()
    y = lib.zeros(2, 2, dtype=lib.int64)
    assert lib.resize_as_(y, lib.zeros(3)) is y and y.shape == (3,)
    assert y.resize_as_(lib.zeros(1, 1)).shape == (1, 1)
    # under no_grad a tensor that does not require grad resizes; a detached one too
    with lib.no_grad():
        assert lib.zeros(2).resize_(4).shape == (4,)
    assert lib.ones(3, requires_grad=True).detach().resize_(4).shape == (4,)


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_resize_errors(lib):
    msg = "^cannot resize variables that require grad$"
    with pytest.raises(RuntimeError, match=msg):
        lib.ones(3, requires_grad=True).resize_(5)
    with pytest.raises(RuntimeError, match=msg):
        (lib.ones(3, requires_grad=True) * 2).resize_(3)
    with pytest.raises(RuntimeError, match=msg):
        (lib.ones(3, requires_grad=True) * 2)[:2].resize_(1)
    with pytest.raises(RuntimeError, match=msg):
        lib.ones(3, requires_grad=True).resize_as_(lib.ones(2))
    with lib.no_grad(), pytest.raises(RuntimeError, match=msg):
        lib.ones(3, requires_grad=True).resize_(5)
    with pytest.raises(RuntimeError, match="^Unsupported memory formatPreserve$"):
        lib.ones(3).resize_(2, 2, memory_format=lib.preserve_format)
    with pytest.raises(RuntimeError, match="^required rank 4 tensor to use channels_last format$"):
        lib.ones(3).resize_(2, 2, memory_format=lib.channels_last)
    with pytest.raises(RuntimeError, match="^Trying to resize storage that is not resizable$"):
        lib.from_numpy(np.ones(3)).resize_(10)
    with pytest.raises(TypeError):
        lib.ones(3).resize_(2.0)
    with pytest.raises(TypeError):
        lib.ones(3).resize_()
    with pytest.raises(RuntimeError):
        lib.ones(3).resize_(2**62, 4)
    with pytest.raises(NotImplementedError, match="Could not run 'aten::resize_' with arguments "
                       "from the 'SparseCPU' backend"):
        lib.ones(3).to_sparse().resize_(5)


def test_resize_negative_size_names_it():
    with pytest.raises(RuntimeError, match=r"^Trying to create tensor with negative dimension -1: "
                       r"\[-1, 2\]$"):
        ptl.ones(3).resize_(-1, 2)


def test_resize_through_the_dispatcher_refuses_grad_tensors():
    op = ptl.ops.aten.resize_
    x = ptl.zeros(2)
    assert op(x, [3]) is x and x.shape == (3,)
    with pytest.raises(RuntimeError, match="^cannot resize variables that require grad$"):
        op(ptl.zeros(2, requires_grad=True), [3])


def test_resize_makes_saved_tensors_stale():
    a = ptl.ones(2, requires_grad=True)
    c = ptl.ones(2)
    out = (a * c).sum()
    c.resize_(3)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


def test_layout_objects():
    assert isinstance(ptl.strided, ptl.layout) and pickle.loads(pickle.dumps(ptl.strided)) is (
        ptl.strided)
    assert ptl.zeros(2, layout=ptl.strided).layout is ptl.strided
    with pytest.raises(TypeError, match="^cannot create 'torch.layout' instances$"):
        ptl.layout()


@torch_ref
def test_layout_matches_torch():
    assert repr(ptl.strided) == repr(torch.strided) and str(ptl.strided) == str(torch.strided)
    with pytest.raises(TypeError, match="^cannot create 'torch.layout' instances$"):
        torch.layout()


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_in_place_view_ops(lib):
    base = lib.arange(12.0)
    x = base.view(3, 4)[1:]
    v = x._version
    cases = [(lambda t: t.unsqueeze_(0), lambda t: t.unsqueeze(0)),
             (lambda t: t.unsqueeze_(-1), lambda t: t.unsqueeze(-1)),
             (lambda t: t.squeeze_(), lambda t: t.squeeze()),
             (lambda t: t.t_(), lambda t: t.t()),
             (lambda t: t.transpose_(0, 1), lambda t: t.transpose(0, 1)),
             (lambda t: t.swapaxes_(1, 0), lambda t: t.swapaxes(1, 0)),
             (lambda t: t.swapdims_(0, 1), lambda t: t.swapdims(0, 1)),
             (lambda t: t.unsqueeze_(1).squeeze_(1), lambda t: t),
             (lambda t: t.as_strided_((2, 2), (1, 4), 1),
              lambda t: t.as_strided((2, 2), (1, 4), 1)),
             (lambda t: t.as_strided_((3,), (2,)), lambda t: t.as_strided((3,), (2,)))]
    for in_place, view in cases:
        want = view(x)
        shape, stride, offset, values = want.shape, want.stride(), want.storage_offset(), \
            want.tolist()
        assert in_place(x) is x
        assert (x.shape, x.stride(), x.storage_offset()) == (shape, stride, offset)
        assert x.tolist() == values
    assert x._version > v
    # still a view of base: writes through x show in base
    x.fill_(-1.0)
    assert (base == -1.0).sum().item() == x.numel()
    assert lib.ones(2, 1, 3).squeeze_(1).shape == (2, 3)
    assert lib.ones(1, 1).squeeze_((0, 1)).shape == ()
    assert lib.tensor(5.0).unsqueeze_(0).shape == (1,)
    with lib.no_grad():
        y = lib.ones(2, 1, requires_grad=True) * 2
        assert y.squeeze_().shape == (2,)


@pytest.mark.parametrize("lib", LIBRARIES, ids=lambda m: m.__name__)
def test_in_place_view_op_errors(lib):
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used "
                                           "in an in-place operation.$"):
        lib.ones(2, 1, requires_grad=True).squeeze_()
    with pytest.raises(RuntimeError, match="expects a tensor with <= 2 dimensions, but self "
                                           "is 3D"):
        lib.ones(2, 3, 4).t_()
    with pytest.raises(IndexError, match="Dimension out of range"):
        lib.ones(2).unsqueeze_(3)


def test_in_place_view_op_on_a_graph_tensor_is_refused():
    y = ptl.ones(2, 1, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="squeeze_\\(\\): in-place view ops on a tensor that "
                                           "is part of an autograd graph are not supported"):
        y.squeeze_()
    assert y.shape == (2, 1)
