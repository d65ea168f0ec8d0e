"""The Python face of Tensor: construction, NumPy interop, protocols, dtype/device/Size
objects, conversions and pickling, compared with NumPy and with PyTorch's recorded outputs
(golden.py; live torch too when installed)."""
import copy
import pickle
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from golden import Raised, golden
from golden import Tensor as TorchTensor
from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, NP_DTYPE, SHAPES,
                     assert_close, make, to_numpy, torch)


DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64"]


@pytest.fixture
def default_dtype():
    """Restores the default dtype of both libraries after the test."""
    old_ptl = ptl.get_default_dtype()
    old_ref = torch.get_default_dtype() if torch is not None else None
    yield
    ptl.set_default_dtype(old_ptl)
    if torch is not None:
        torch.set_default_dtype(old_ref)


def same_error(fn_ptl, fn_ref):
    """fn_ptl() raises the exception type and message that fn_ref() raised in torch."""
    want = golden(fn_ref)
    assert isinstance(want, Raised), f"torch did not raise but gave {want}"
    want.check(fn_ptl)


def same_tensor(t_ptl, fn_ref):
    """t_ptl equals the tensor fn_ref() gave in torch: dtype, shape, values."""
    want = golden(fn_ref)
    assert not isinstance(want, Raised), f"torch raised {want}"
    assert str(t_ptl.dtype) == str(want.dtype)
    assert tuple(t_ptl.shape) == want.shape
    np.testing.assert_array_equal(np.array(t_ptl.tolist()), np.array(want.tolist()))


def same_result(fn_ptl, fn_ref):
    """Equal tensors, or the same exception and message."""
    want = golden(fn_ref)
    if isinstance(want, Raised):
        want.check(fn_ptl)
        return
    got = fn_ptl()
    assert str(got.dtype) == str(want.dtype)
    assert tuple(got.shape) == want.shape
    np.testing.assert_array_equal(np.array(got.tolist()), np.array(want.tolist()))


def torch_kw(name):
    """The dtype keyword for torch.tensor(): none, or torch's dtype of that name."""
    return {"dtype": getattr(torch, name)} if name else {}


def warning_messages(fn):
    """The messages of the warnings fn() gives (every time, torch's too)."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        if torch is not None:
            torch._C._set_warnAlways(True)
        try:
            fn()
        finally:
            if torch is not None:
                torch._C._set_warnAlways(False)
    return [str(w.message) for w in got]


# ---- tensor() ----

DATA = [
    3, 2.5, True, -7, [], [[]], [1, 2, 3], [1.0, 2, 3], [True, False], [True, 2], [True, 2.0],
    [[1, 2], [3, 4]], ((1, 2), (3, 4)), [(1, 2.5), [3, 4]], [[[1], [2]], [[3], [4]]],
    [np.float32(1.5), 2], [np.int32(4), 5], np.float64(2.0), np.int16(3), np.bool_(True),
    [np.bool_(True), False], [2**62, -2**62], [1e300, -1e-300], [float("nan"), float("inf")],
    [[], []], [0.1, 1 / 3],
]


@pytest.mark.parametrize("data", DATA, ids=repr)
def test_tensor_inference(data):
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # tensor() copies: read-only sources are fine
        same_tensor(ptl.tensor(data), lambda: torch.tensor(data))


@pytest.mark.parametrize("data", [
    [np.array([1, 2]), np.array([3, 4])], [np.array([1.5, 2], dtype=np.float16), [3, 4]],
    [[np.float32(1), np.float32(2)], np.array([3, 4], dtype=np.int8)], [np.zeros((2, 0))],
    [np.array([True]), np.array([2])], (np.arange(6).reshape(2, 3), np.ones((2, 3))),
    [np.array([1, 2]), np.array([3])], [np.array(["a"])],
], ids=repr)
@pytest.mark.parametrize("name", [None, "float64", "int16", "bool"])
def test_tensor_from_list_of_arrays(data, name):
    kw_ptl = {"dtype": getattr(ptl, name)} if name else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch: "... a list of numpy.ndarrays is extremely slow"
        same_result(lambda: ptl.tensor(data, **kw_ptl), lambda: torch.tensor(data, **torch_kw(name)))


@pytest.mark.parametrize("data", DATA[:16], ids=repr)
@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_tensor_dtype_argument(data, name):
    same_result(lambda: ptl.tensor(data, dtype=getattr(ptl, name)),
                lambda: torch.tensor(data, dtype=getattr(torch, name)))


@pytest.mark.parametrize("name", DTYPE_NAMES[:-2] + ["float32", "float64"])
def test_tensor_from_numpy_array(name):
    if name == "bfloat16":
        return
    a = np.array([[1, 0, 3], [4, 5, 6]]).astype(name)
    same_tensor(ptl.tensor(a), lambda: torch.tensor(a))
    same_tensor(ptl.tensor(a.T), lambda: torch.tensor(a.T))
    same_tensor(ptl.tensor(a, dtype=ptl.float64), lambda: torch.tensor(a, dtype=torch.float64))
    t = ptl.tensor(a)
    a[0, 0] = 9
    assert t[0, 0].item() != 9          # tensor() copies


def test_tensor_from_tensors():
    for data, name in [([1, 2], None), (2.5, "float64")]:
        t_ptl = ptl.tensor(data, dtype=getattr(ptl, name) if name else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            same_tensor(ptl.tensor(t_ptl), lambda: torch.tensor(
                torch.tensor(data, dtype=getattr(torch, name) if name else None)))
            same_tensor(ptl.tensor(t_ptl, dtype=ptl.int16), lambda: torch.tensor(
                torch.tensor(data, dtype=getattr(torch, name) if name else None),
                dtype=torch.int16))
    same_tensor(ptl.tensor([ptl.tensor(1.5), ptl.tensor(2.5)]),
                lambda: torch.tensor([torch.tensor(1.5), torch.tensor(2.5)]))
    src = ptl.tensor([1.0, 2.0])
    dst = ptl.tensor(src)
    dst[0] = 5.0
    assert src[0].item() == 1.0


def test_tensor_default_dtype(default_dtype):
    ptl.set_default_dtype(ptl.float64)
    if torch is not None:
        torch.set_default_dtype(torch.float64)
    for data in ([1.5, 2], 2.5, [1, 2], [True]):
        same_tensor(ptl.tensor(data), lambda: torch.tensor(data))
    assert ptl.get_default_dtype() == ptl.float64
    same_error(lambda: ptl.set_default_dtype(ptl.int32),
               lambda: torch.set_default_dtype(torch.int32))


@pytest.mark.parametrize("data", [
    [[1, 2, 3], [4, 5]], [[1, 2], 3], [1, [2, 3]], [[[1, 2]], [[3]]], [[1], []],
])
def test_tensor_ragged(data):
    same_error(lambda: ptl.tensor(data), lambda: torch.tensor(data))


@pytest.mark.parametrize("data", [["a", 1], [1, None], "abc", {1: 2}, [object()], None])
def test_tensor_bad_leaves(data):
    def raised_type():
        try:
            torch.tensor(data)
        except Exception as exc:  # noqa: BLE001 -- the class of torch's error is the value
            return type(exc).__name__
        return None
    want = golden(raised_type)
    with pytest.raises(Exception) as got:
        ptl.tensor(data)
    assert want in [c.__name__ for c in type(got.value).__mro__]


@pytest.mark.parametrize("data,name", [
    ([2**63], None), ([-2**63 - 1], None), ([2**64], "float32"), ([300], "int8"),
    ([-1], "uint8"), ([-256], "uint8"), ([256], "uint8"), ([2**63], "int8"), ([2**63], "bool"),
    ([2**1100], "float64"), ([1.5], "int8"), ([300.0], "int8"), ([float("nan")], "int32"),
    ([float("inf")], "int64"), ([2.0**63], "int64"), ([-2.0**63], "int64"), ([-1.0], "uint8"),
    ([1e40], "float32"), ([1e40], "float16"), ([np.int64(300)], "int8"), ([2.5], "bool"),
    ([np.float32(2)], "bool"), ([np.bool_(True)], "int16"), ([1 + 2j], "float32"),
    ([32768], "int16"), ([-32769], "int16"), ([2**31], "int32"), ([[1, 2], 3], None),
    ([1, [2, 3]], None), ([1, [2, 3]], "float64"), ([None], "float32"),
])
def test_tensor_overflow(data, name):
    kw_ptl = {"dtype": getattr(ptl, name)} if name else {}
    same_result(lambda: ptl.tensor(data, **kw_ptl), lambda: torch.tensor(data, **torch_kw(name)))


# ---- NumPy ----

@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != ptl.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_from_numpy_zero_copy(dtype, layout):
    _, a = make((3, 4), dtype, layout, seed=4)
    a = np.array(a, copy=False)
    t = ptl.from_numpy(a)
    assert t.dtype == dtype and tuple(t.shape) == a.shape
    assert t.data_ptr() == a.ctypes.data
    assert tuple(s * t.element_size() for s in t.stride()) == a.strides
    a[1, 2] = 1
    assert t[1, 2].item() == 1
    n = t.numpy()
    assert n.ctypes.data == a.ctypes.data and n.dtype == a.dtype
    t[0, 0] = 0
    assert a[0, 0] == 0 and n[0, 0] == 0


@pytest.mark.parametrize("dtype", [d for d in ALL_DTYPES if d != ptl.bfloat16])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_numpy_values(dtype, shape, layout):
    t, a = make(shape, dtype, layout, seed=5)
    n = t.numpy()
    assert n.dtype == NP_DTYPE[dtype] and n.shape == a.shape
    np.testing.assert_array_equal(n, a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(np.array(t, dtype=np.float64), a.astype(np.float64))


def test_from_numpy_errors():
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.warns(UserWarning) as got:
        t = ptl.from_numpy(ro)
    want = golden(lambda: warning_messages(lambda: torch.from_numpy(ro)))
    assert want[0].startswith(str(got[0].message))   # torch adds where from
    assert t.tolist() == [0.0, 1.0, 2.0]
    neg = np.arange(6.0)[::-1]
    same_error(lambda: ptl.from_numpy(neg), lambda: torch.from_numpy(neg))
    swapped = np.array([1.0], dtype=">f8")
    same_error(lambda: ptl.from_numpy(swapped), lambda: torch.from_numpy(swapped))
    ours = ("float64, float32, float16, complex64, complex128, int64, int32, int16, int8, "
            "uint8, and bool.")
    for bad in (np.array(["a"]), np.array([b"x"]), np.array([None]),
                np.array([1], dtype=np.uint32)):
        with pytest.raises(TypeError) as got:
            ptl.from_numpy(bad)
        prefix = f"can't convert np.ndarray of type numpy.{bad.dtype.type.__name__}. "
        assert str(got.value) == prefix + "The only supported types are: " + ours
        if bad.dtype.kind in "USO":   # torch rejects these too, with the same opening
            want = golden(lambda: torch.from_numpy(bad))
            assert want.type_name == "TypeError" and want.message.startswith(prefix)
    same_error(lambda: ptl.from_numpy([1, 2]), lambda: torch.from_numpy([1, 2]))
    same_error(lambda: ptl.tensor([1.0], requires_grad=True).numpy(),
               lambda: torch.tensor([1.0], requires_grad=True).numpy())
    same_error(lambda: ptl.tensor([1.0], dtype=ptl.bfloat16).numpy(),
               lambda: torch.tensor([1.0], dtype=torch.bfloat16).numpy())
    assert ptl.tensor([1.0], requires_grad=True).numpy(force=True).tolist() == [1.0]


def test_buffer_protocol():
    t, a = make((3, 4), ptl.float32, "transposed")
    m = memoryview(t)
    assert m.shape == a.shape and m.strides == a.strides and m.format == "f"
    assert m.itemsize == 4 and not m.readonly
    formats = {ptl.bool: "?", ptl.uint8: "B", ptl.int8: "b", ptl.int16: "h", ptl.int32: "i",
               ptl.float16: "e", ptl.float64: "d"}
    for dtype, fmt in formats.items():
        assert memoryview(make((2,), dtype)[0]).format == fmt
    assert np.dtype(memoryview(ptl.tensor([1])).format) == np.int64
    with pytest.raises(BufferError):
        memoryview(ptl.tensor([1.0], dtype=ptl.bfloat16))


# ---- Python protocols ----

VALUES = [[[1.5, -2.0], [3.0, 4.0]], [7], [[0]], 5, -2.7, True, [], [[1, 2]], [False], 0.0]


@pytest.mark.parametrize("data", VALUES, ids=repr)
def test_scalar_conversions(data):
    t_ptl = ptl.tensor(data)
    assert t_ptl.tolist() == golden(lambda: torch.tensor(data).tolist())
    for fn in (len, bool, int, float, lambda t: t.item(), lambda t: list(iter(t)),
               lambda t: [0, 1, 2][t], lambda t: t.__index__(), lambda t: len(list(t))):
        want = golden(lambda: fn(torch.tensor(data)))
        if isinstance(want, Raised):
            want.check(lambda: fn(t_ptl))
            continue
        got = fn(t_ptl)
        if isinstance(want, list) and want and isinstance(want[0], TorchTensor):
            assert [x.tolist() for x in got] == [x.tolist() for x in want]
        else:
            assert got == want and type(got) is type(want)


def test_item_types():
    for name in DTYPE_NAMES:
        v_ptl = ptl.tensor([1], dtype=getattr(ptl, name)).item()
        v_ref = golden(lambda: torch.tensor([1], dtype=getattr(torch, name)).item())
        assert v_ptl == v_ref and type(v_ptl) is type(v_ref)


def test_iteration_and_len():
    t = ptl.tensor([[1, 2], [3, 4], [5, 6]])
    assert len(t) == 3
    assert [r.tolist() for r in t] == [[1, 2], [3, 4], [5, 6]]
    assert [r.tolist() for r in reversed(t)] == [[5, 6], [3, 4], [1, 2]] if hasattr(t, "flip") \
        else True
    same_error(lambda: iter(ptl.tensor(1)), lambda: iter(torch.tensor(1)))
    same_error(lambda: len(ptl.tensor(1)), lambda: len(torch.tensor(1)))


# ---- dtype, device, Size ----

@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtype_objects(name):
    d = getattr(ptl, name)
    r = golden(lambda: (lambda r: (repr(r), str(r), r.itemsize, r.is_floating_point,
                                   r.is_signed))(getattr(torch, name)))
    assert (repr(d), str(d), d.itemsize, d.is_floating_point, d.is_signed) == r
    assert pickle.loads(pickle.dumps(d)) is d
    assert copy.deepcopy(d) is d
    assert hash(d) == hash(getattr(ptl, name))


def test_dtype_aliases():
    assert ptl.float is ptl.float32 and ptl.double is ptl.float64 and ptl.half is ptl.float16
    assert ptl.int is ptl.int32 and ptl.long is ptl.int64 and ptl.short is ptl.int16
    assert ptl.float32 != ptl.float64


@pytest.mark.parametrize("spec", ["cpu", "cuda", "cuda:1", "cpu:0", ("cuda", 2), "cuda:0"])
def test_device_objects(spec):
    args = spec if isinstance(spec, tuple) else (spec,)
    d = ptl.device(*args)
    r = golden(lambda: (lambda r: (r.type, r.index, repr(r), str(r)))(torch.device(*args)))
    assert (d.type, d.index, repr(d), str(d)) == r
    assert d == ptl.device(*args) and hash(d) == hash(ptl.device(*args))
    assert pickle.loads(pickle.dumps(d)) == d


def test_device_eq_and_errors():
    assert ptl.device("cuda:0") != ptl.device("cuda:1")
    assert ptl.device("cuda", 1) == ptl.device("cuda:1")
    for bad in ("cuda:x", "cuda:-1", "cpu:0:1", "cuda:"):
        same_error(lambda: ptl.device(bad), lambda: torch.device(bad))
    # torch lists every backend it knows; we list ours, in the same sentence
    ref = golden(lambda: torch.device("gpu"))
    assert ref.type_name == "RuntimeError"
    assert ref.message.startswith("Expected one of cpu, cuda, ")
    with pytest.raises(RuntimeError, match=re.escape(
            "Expected one of cpu, cuda, meta device type at start of device string: gpu")):
        ptl.device("gpu")
    same_error(lambda: ptl.device("cuda:1", 2), lambda: torch.device("cuda:1", 2))


def test_cpu_device_takes_any_index():
    # PyTorch 2.x keeps a CPU index on the device object; tensors made there are on 'cpu'
    for d in (ptl.device("cpu:1"), ptl.device("cpu", 1)):
        assert (repr(d), str(d), d.index, d == ptl.device("cpu")) == \
            ("device(type='cpu', index=1)", "cpu:1", 1, False)
    x = ptl.ones(2, device="cpu:1")
    assert repr(x.device) == "device(type='cpu')" and x.to("cpu:2").tolist() == [1.0, 1.0]
    c = ptl.ops.aten._to_copy(ptl.ones(2, dtype=ptl.complex64), device="cpu:1")
    assert c.device == ptl.device("cpu") and c.dtype == ptl.complex64


def test_size():
    s = ptl.tensor(np.zeros((2, 3, 4))).shape
    r = golden(lambda: (lambda r: (repr(r), str(r), repr(r[1:]), r.numel(), repr(torch.Size([])),
                                   repr(r + (5,))))(torch.zeros(2, 3, 4).shape))
    assert repr(s) == r[0] == "torch.Size([2, 3, 4])" and str(s) == r[1]
    assert isinstance(s, ptl.Size) and isinstance(s, tuple)
    assert isinstance(s[1:], ptl.Size) and repr(s[1:]) == r[2]
    assert s.numel() == r[3] == 24
    assert s == (2, 3, 4) and s[-1] == 4
    assert repr(ptl.Size([])) == r[4] and ptl.Size([]).numel() == 1
    assert pickle.loads(pickle.dumps(s)) == s and type(pickle.loads(pickle.dumps(s))) is ptl.Size
    assert repr(s + (5,)) == r[5]



# Each takes the library (torch or pytorchlite) and uses its Size (Note [Size in C]).
SIZE_CASES = [
    lambda m: m.Size([2, 3])[0:1], lambda m: m.Size([2, 3])[-1], lambda m: m.Size([2, 3])[::-1],
    lambda m: m.Size([2, 3])[5], lambda m: m.Size([2, 3])["a"],
    lambda m: m.Size([2, 3]) + (4,), lambda m: (4,) + m.Size([2, 3]), lambda m: m.Size([2]) + m.Size([3]),
    lambda m: m.Size([2, 3]) + [4], lambda m: [4] + m.Size([2, 3]),
    lambda m: m.Size([2, 3]) * 2, lambda m: 2 * m.Size([2, 3]), lambda m: m.Size([2, 3]) * 2.5,
    lambda m: m.Size([2, 3]).numel(), lambda m: m.Size().numel(), lambda m: m.Size([-1, 0]),
    lambda m: m.Size([True, 3]), lambda m: m.Size([1.5]), lambda m: m.Size(["a"]), lambda m: m.Size([None]),
    lambda m: m.Size(5), lambda m: m.Size([2 ** 70]), lambda m: m.Size([m.tensor(3.0)]),
    lambda m: m.Size([m.tensor([3, 4])]), lambda m: m.Size([m.tensor([3])]), lambda m: m.Size([m.tensor(3)]),
    lambda m: m.Size([np.int64(3), np.int32(2)]), lambda m: m.Size(range(3)),
    lambda m: m.Size(x for x in [1, 2]), lambda m: m.Size(sizes=[1]), lambda m: m.Size([1], [2]),
    lambda m: hash(m.Size([2, 3])) == hash((2, 3)), lambda m: copy.deepcopy(m.Size([2, 3])),
    lambda m: pickle.loads(pickle.dumps(m.Size([2, 3]))), lambda m: m.ones(()).size(),
]


def describe_size_result(fn, lib):
    """repr and type name of fn(lib), or the exception's type and message; the Size type's
    name written as torch's"""
    try:
        r = fn(lib)
        text = f"{r!r} {type(r).__name__}"
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
    return text.replace("pytorchlite.Size", "torch.Size")


@pytest.mark.parametrize("case", range(len(SIZE_CASES)))
def test_size_behaves_as_pytorchs(case):
    ours = describe_size_result(SIZE_CASES[case], ptl)
    assert ours == golden(lambda: describe_size_result(SIZE_CASES[case], torch))


def test_size_is_not_subclassable():
    with pytest.raises(TypeError, match="not an acceptable base type"):
        type("S", (ptl.Size,), {})


# ---- shape and layout queries ----

def torch_layout(shape, layout):
    """(stride(), is_contiguous()) of a torch tensor of this shape laid out as make() does."""
    ref = torch.zeros(shape)
    if layout == "transposed" and shape:
        ref = torch.zeros(shape[::-1]).permute(*reversed(range(len(shape))))
    elif layout == "sliced" and shape:
        ref = torch.zeros(tuple(2 * n for n in shape))[tuple(slice(None, None, 2) for _ in shape)]
    elif layout == "expanded" and shape:
        ref = torch.zeros((1,) + shape[1:]).expand(*shape)
    return ref.stride(), ref.is_contiguous()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_shape_queries(shape, layout):
    t, a = make(shape, ptl.float32, layout)
    assert tuple(t.shape) == a.shape and t.ndim == a.ndim and t.dim() == a.ndim
    assert t.numel() == a.size and t.nelement() == a.size
    for d in range(-a.ndim, a.ndim):
        assert t.size(d) == a.shape[d]
        assert t.stride(d) * 4 == a.strides[d] or a.shape[d] <= 1 or a.size == 0
    assert t.element_size() == 4 and t.itemsize == 4
    stride, contiguous = golden(lambda: torch_layout(shape, layout))
    assert t.is_contiguous() == contiguous
    assert t.stride() == stride or (a.size == 0 and layout != "contiguous")


def test_shape_query_errors():
    t_ptl = ptl.tensor([[1, 2, 3]])
    same_error(lambda: t_ptl.size(2), lambda: torch.tensor([[1, 2, 3]]).size(2))
    same_error(lambda: t_ptl.stride(-3), lambda: torch.tensor([[1, 2, 3]]).stride(-3))
    assert t_ptl.T.shape == golden(lambda: torch.tensor([[1, 2, 3]]).T.shape)
    assert t_ptl.mT.shape == golden(lambda: torch.tensor([[1, 2, 3]]).mT.shape)
    same_error(lambda: ptl.tensor([1]).mT, lambda: torch.tensor([1]).mT)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4)])
def test_T_and_H(shape):
    t_ptl = ptl.tensor(np.zeros(shape))
    got = warning_messages(lambda: t_ptl.T)
    want = golden(lambda: warning_messages(lambda: torch.zeros(shape).T))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert t_ptl.T.shape == golden(lambda: torch.zeros(shape).T.shape)
    assert len(got) == len(want)
    for g, w in zip(got, want):   # torch appends where it was triggered
        assert w.startswith(g)
    if len(shape) in (1, 3):
        same_error(lambda: t_ptl.H, lambda: torch.zeros(shape).H)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert t_ptl.H.shape == golden(lambda: torch.zeros(shape).H.shape)


def test_views_share_data():
    t = ptl.tensor(np.arange(12.0).reshape(3, 4))
    v = t[1:, 2:]
    assert v.storage_offset() == 6 and v.data_ptr() == t.data_ptr() + 6 * t.element_size()
    assert t.T.stride() == (1, 4) and t.T.shape == (4, 3)
    t3 = ptl.tensor(np.zeros((2, 3, 4)))
    assert t3.permute(2, 1, 0).shape == (4, 3, 2) and t3.mT.shape == (2, 4, 3)
    assert t3.mT.data_ptr() == t3.data_ptr() and t3.mT.stride() == (12, 1, 4)


# ---- conversions ----

CONVERSIONS = [("float", ptl.float32), ("double", ptl.float64), ("half", ptl.float16),
               ("int", ptl.int32), ("long", ptl.int64), ("short", ptl.int16),
               ("char", ptl.int8), ("byte", ptl.uint8), ("bool", ptl.bool),
               ("bfloat16", ptl.bfloat16)]


@pytest.mark.parametrize("method,target", CONVERSIONS)
@pytest.mark.parametrize("source", [ptl.float32, ptl.float64, ptl.int64, ptl.int16, ptl.bool,
                                    ptl.uint8, ptl.float16])
def test_conversions(method, target, source):
    t, a = make((3, 5), source, "transposed", seed=6, low=0 if target == ptl.uint8 else -5)
    got = getattr(t, method)()
    assert got.dtype == target
    if target == ptl.bfloat16:
        same_tensor(got, lambda: torch.from_numpy(np.array(a)).to(torch.bfloat16))
        return
    assert_close(got, a.astype(NP_DTYPE[target]), dtype=target)   # NumPy truncates floats
    same = t.to(target)
    assert same.dtype == target and same.tolist() == got.tolist()
    if target == source:
        assert t.to(target) is t and getattr(t, method)() is t


@pytest.mark.parametrize("method,target", CONVERSIONS)
def test_conversion_methods_are_to(method, target):
    """x.float(), x.int(), ... skip to()'s parsing (Tensor._cast): the same tensor as
    x.to(dtype), strides kept (preserve_format), on 0-dim, size-0 and channels-last
    tensors, recorded by autograd as _to_copy; self when it has the dtype."""
    x = ptl.tensor(np.random.default_rng(7).standard_normal((2, 3, 4, 5)) * 3)
    for t in (x, x[0, 0, 0, 0], x[:, :0], x.contiguous(memory_format=ptl.channels_last),
              x.transpose(1, 3)):
        got, want = getattr(t, method)(), t.to(target)
        assert got.dtype == target and got.shape == want.shape
        assert got.stride() == want.stride() and got.tolist() == want.tolist()
        assert (got is t) == (target == ptl.float64)
    if target.is_floating_point and target != ptl.float64:
        leaf = x.clone().requires_grad_(True)
        y = getattr(leaf, method)()
        assert y.grad_fn.name() == "ToCopyBackward0"
        y.sum().backward()
        assert leaf.grad.dtype == ptl.float64 and (leaf.grad == 1).all()


def test_to_variants():
    t = ptl.tensor([1.7, -2.7])
    assert t.to(ptl.int32).tolist() == [1, -2]
    assert t.to(dtype=ptl.float64).dtype == ptl.float64
    assert t.to("cpu") is t and t.to(ptl.device("cpu")) is t
    assert t.to(ptl.tensor([1], dtype=ptl.int16)).dtype == ptl.int16
    assert t.to(ptl.float32, copy=True) is not t
    assert t.type() == "torch.FloatTensor" and t.type(ptl.float64).dtype == ptl.float64


# ---- pickling ----

@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
def test_pickle_round_trip(dtype, shape, layout):
    t, _ = make(shape, dtype, layout, seed=8)
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        u = pickle.loads(pickle.dumps(t, protocol=proto))
        assert type(u) is ptl.Tensor and u.dtype == dtype and u.shape == t.shape
        assert u.tolist() == t.tolist() and u.is_contiguous()


def test_pickle_special_values_and_grad():
    t = ptl.tensor([float("nan"), float("inf"), -0.0, 1e-45, 3.4e38])
    u = pickle.loads(pickle.dumps(t))
    assert np.array_equal(to_numpy(u), to_numpy(t), equal_nan=True)
    assert np.signbit(to_numpy(u)[2])
    g = pickle.loads(pickle.dumps(ptl.tensor([1.0], requires_grad=True)))
    assert g.requires_grad
    big = ptl.tensor(np.arange(10**6, dtype=np.int64))
    data = pickle.dumps(big, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(data) < 8 * 10**6 + 1000          # raw bytes, not a list of Python ints
    assert pickle.loads(data).tolist()[-3:] == [999997, 999998, 999999]
    nested = pickle.loads(pickle.dumps({"w": t, "b": [t, t]}))
    assert nested["b"][0] is nested["b"][1]
    assert copy.deepcopy(t).tolist() == pytest.approx(t.tolist(), nan_ok=True)


@pytest.mark.parametrize("shape, wrap", [((3, 3), False), ((3, 5), False), ((7, 3), False),
                                         ((7, 3), True), ((8, 2), True), ((4, 3), True),
                                         ((3, 3, 3), False), ((0, 2), False), ((5, 4), True)])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.int32, ptl.bool])
def test_fill_diagonal_matches_numpy(shape, wrap, dtype):
    t, a = make(shape, dtype)
    a = a.copy()
    np.fill_diagonal(a, 1, wrap=wrap)
    assert t.fill_diagonal_(1, wrap=wrap) is t
    assert_close(t, a)


def test_fill_diagonal_of_a_view_and_errors():
    base = ptl.zeros(4, 6, dtype=ptl.float64)
    view = base[:, 1::2]
    view.fill_diagonal_(2.5)
    a = np.zeros((4, 6))
    np.fill_diagonal(a[:, 1::2], 2.5)
    assert_close(base, a)
    x = ptl.ones(3, 3, dtype=ptl.float64, requires_grad=True)
    y = x * 2
    y.fill_diagonal_(0)
    y.sum().backward()
    assert_close(x.grad, 2 * (1 - np.eye(3)))
    for fn, msg in ((lambda m: m.ones(3).fill_diagonal_(1), "dimensions must larger than 1"),
                    (lambda m: m.ones(2, 3, 2).fill_diagonal_(1),
                     "all dimensions of input must be of equal length")):
        for lib in ([torch] if torch is not None else []) + [ptl]:
            with pytest.raises(RuntimeError, match=re.escape(msg)):
                fn(lib)


def test_get_device_and_new_empty_strided():
    t = ptl.ones(2, 3, dtype=ptl.float64)
    assert t.get_device() == -1
    e = t.new_empty_strided((2, 3), (1, 2))
    assert e.shape == (2, 3) and e.stride() == (1, 2) and e.dtype == ptl.float64
    e = t.new_empty_strided((4,), (2,), dtype=ptl.int32, requires_grad=False)
    assert e.stride() == (2,) and e.dtype == ptl.int32
    if torch is not None:
        assert torch.ones(2).get_device() == -1
    assert t.resolve_conj() is t and t.resolve_neg() is t
    assert ptl.resolve_conj(t) is t and ptl.resolve_neg(t) is t


# NumPy scalars as operands of the number protocol: the numbers they hold (PyTorch's results)
NUMPY_SCALAR_OPS = [
    (lambda x: x / np.float32(2), ptl.float32, [2.0, 3.0]),
    (lambda x: np.float32(2) / x, ptl.float32, [0.5, 2 / 6]),
    (lambda x: x * np.float16(0.5), ptl.float32, [2.0, 3.0]),
    (lambda x: np.int64(3) * x, ptl.float32, [12.0, 18.0]),
    (lambda x: x - np.uint8(1), ptl.float32, [3.0, 5.0]),
    (lambda x: x + np.bool_(True), ptl.float32, [5.0, 7.0]),
    (lambda x: x > np.float32(5), ptl.bool, [False, True]),
    (lambda x: x.to(ptl.int32) * np.int64(2), ptl.int32, [8, 12]),
    (lambda x: x.to(ptl.int64) * np.float32(0.5), ptl.float32, [2.0, 3.0]),
    (lambda x: x.half() * np.float64(0.5), ptl.float16, [2.0, 3.0]),
    (lambda x: x * np.complex64(1j), ptl.complex64, [4j, 6j]),
]


@pytest.mark.parametrize("k", range(len(NUMPY_SCALAR_OPS)))
def test_numpy_scalar_operands(k):
    """A NumPy scalar is the number it holds: the result is a tensor of the dtype a Python
    number gives (x / np.float32(2) had fallen to NumPy's reflected division and returned an
    ndarray; np.float32(2) / x raised TypeError)."""
    f, dtype, want = NUMPY_SCALAR_OPS[k]
    got = f(ptl.tensor([4.0, 6.0]))
    assert isinstance(got, ptl.Tensor) and got.dtype == dtype
    np.testing.assert_allclose(got.numpy(), np.array(want), rtol=1e-6)
