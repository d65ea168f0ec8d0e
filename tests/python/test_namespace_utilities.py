"""The small torch-namespace functions: the tensor predicates (is_nonzero, is_same_size,
is_signed, is_conj, is_neg, get_device, is_distributed), get_device_module, init_num_threads,
the deprecated Tensor.resize / resize_as, typename / is_storage, the process switches of
pytorchlite/_settings.py, fill, the unsafe_ splits, nonzero_static, and the creation functions
of pytorchlite/_creation.py (asarray, frombuffer, empty_permuted, range): values against NumPy,
memory sharing, PyTorch's warnings and errors, and the same calls in torch when installed."""
import array
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _settings
from pytorchlite.autograd import gradcheck
from helpers import assert_close, assert_raises_like_torch, make, torch, torch_ref


def test_predicates():
    assert ptl.is_nonzero(ptl.tensor([2])) and not ptl.is_nonzero(ptl.tensor(0.0))
    assert ptl.is_nonzero(ptl.tensor(1j)) and not ptl.is_nonzero(ptl.tensor([False]))
    assert_raises_like_torch(lambda lib: lib.is_nonzero(lib.tensor([])), RuntimeError,
                             "Boolean value of Tensor with no values is ambiguous")
    assert_raises_like_torch(lambda lib: lib.is_nonzero(lib.ones(2)), RuntimeError,
                             "Boolean value of Tensor with more than one value is ambiguous")
    assert ptl.is_same_size(ptl.ones(2, 3), ptl.zeros(2, 3, dtype=ptl.int8))
    assert not ptl.is_same_size(ptl.ones(2, 3), ptl.ones(3, 2))
    signed = {ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16, ptl.bfloat16,
              ptl.float32, ptl.float64, ptl.complex64, ptl.complex128}
    for dt in signed | {ptl.uint8, ptl.bool}:
        assert ptl.is_signed(ptl.ones(1, dtype=dt)) == (dt in signed)
    z = ptl.tensor([1 + 1j])   # z.conj() carries the conjugate bit (a view), its imag a copy
    assert z.conj().is_conj() and not z.conj().imag.is_neg()
    for t in (z, z.conj(), z.conj().imag):
        assert ptl.is_conj(t) is t.is_conj() and ptl.is_neg(t) is t.is_neg()
    assert ptl.get_device(ptl.ones(1)) == -1


def test_is_distributed_get_device_module_and_init_num_threads():
    assert ptl.is_distributed(ptl.ones(2)) is False and ptl.init_num_threads() is None
    assert_raises_like_torch(lambda lib: lib.is_distributed(1), TypeError,
                             "is_distributed(): argument 'input' (position 1) must be Tensor, "
                             "not int")
    assert ptl.get_device_module("cpu") is ptl.cpu
    assert ptl.get_device_module(ptl.device("cuda", 0)) is ptl.cuda
    assert ptl.get_device_module("cuda:1") is ptl.cuda
    assert ptl.get_device_module() is (ptl.cuda if ptl.cuda.is_available() else ptl.cpu)
    assert_raises_like_torch(lambda lib: lib.get_device_module(3), RuntimeError,
                             "Invalid value of device '3', expect torch.device, str, or None")
    assert_raises_like_torch(lambda lib: lib.get_device_module("meta"), RuntimeError,
                             "Device 'meta' does not have a corresponding module registered as "
                             "'torch.meta'.")
    assert_raises_like_torch(lambda lib: lib.get_device_module("xyz"), RuntimeError,
                             "device type at start of device string: xyz")


@pytest.mark.filterwarnings("ignore:non-inplace resize")
def test_deprecated_out_of_place_resize():
    x, a = make((2, 3, 4), ptl.float64, "transposed")
    with pytest.warns(UserWarning, match="^non-inplace resize is deprecated$"):
        y = x.resize(4, 6)
    assert_close(y, a.reshape(4, 6))
    assert x.resize((24,)).shape == (24,) and x.shape == (2, 3, 4)
    c = ptl.ones(2, 3)
    assert c.resize(3, 2)._base is c
    with pytest.warns(UserWarning, match="^non-inplace resize_as is deprecated$"):
        z = x.resize_as(ptl.empty(6, 4))
    assert_close(z, a.reshape(6, 4))
    assert_raises_like_torch(
        lambda lib: lib.ones(2, 3).resize(7), RuntimeError,
        "requested resize to 7 (7 elements in total), but the given tensor has a size of 2x3 "
        "(6 elements). autograd's resize can only change the shape of a given tensor, while "
        "preserving the number of elements.")
    w = ptl.ones(2, 3, dtype=ptl.float64, requires_grad=True)
    (w.resize(6) * ptl.arange(6.0, dtype=ptl.float64)).sum().backward()
    assert w.grad.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_typename_and_is_storage():
    assert ptl.typename(ptl.ones(2)) == "torch.FloatTensor"
    assert ptl.typename(ptl.ones(2, dtype=ptl.int64)) == "torch.LongTensor"
    assert ptl.typename(1) == "int" and ptl.typename(int) == "int"
    assert ptl.typename(ptl.nn.Linear(1, 1)) == "pytorchlite.nn.modules.linear.Linear"
    assert ptl.typename(ptl.nn.Linear) == "pytorchlite.nn.modules.linear.Linear"
    t = ptl.ones(2)
    assert ptl.is_storage(t.untyped_storage())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ptl.is_storage(t.storage())
    assert not ptl.is_storage(t) and not ptl.is_storage([1])


@pytest.fixture
def restore_switches():
    det = (ptl.are_deterministic_algorithms_enabled(),
           ptl.is_deterministic_algorithms_warn_only_enabled())
    anomaly = (ptl.is_anomaly_enabled(), ptl.is_anomaly_check_nan_enabled())
    dtype, warn_always = ptl.get_default_dtype(), ptl.is_warn_always_enabled()
    interop = _settings._interop_threads
    yield
    ptl.use_deterministic_algorithms(det[0], warn_only=det[1])
    ptl.set_anomaly_enabled(*anomaly)
    ptl.set_default_dtype(dtype)
    ptl.set_warn_always(warn_always)
    _settings._interop_threads = interop


def test_switches(restore_switches):
    ptl.set_warn_always(True)
    assert ptl.is_warn_always_enabled() is True
    ptl.set_warn_always(False)
    assert ptl.is_warn_always_enabled() is False
    for mode, number, on, warn_only in [("warn", 1, True, True), ("error", 2, True, False),
                                        ("default", 0, False, False)]:
        for value in (mode, number):
            ptl.set_deterministic_debug_mode(value)
            assert ptl.get_deterministic_debug_mode() == number
            assert ptl.are_deterministic_algorithms_enabled() is on
            assert ptl.is_deterministic_algorithms_warn_only_enabled() is warn_only
    ptl.set_anomaly_enabled(True, False)
    assert ptl.is_anomaly_enabled() and not ptl.is_anomaly_check_nan_enabled()
    ptl.set_anomaly_enabled(False)
    assert not ptl.is_anomaly_enabled() and ptl.is_anomaly_check_nan_enabled()
    assert ptl.autograd.is_anomaly_enabled is ptl.is_anomaly_enabled
    _settings._interop_threads = None
    assert ptl.get_num_interop_threads() >= 1
    ptl.set_num_interop_threads(3)
    assert ptl.get_num_interop_threads() == 3
    with pytest.raises(RuntimeError, match="cannot set number of interop threads after "
                                           "parallel work has started"):
        ptl.set_num_interop_threads(2)
    with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated"):
        ptl.set_default_tensor_type(ptl.DoubleTensor)
    assert ptl.get_default_dtype() == ptl.float64
    with pytest.warns(UserWarning):
        ptl.set_default_tensor_type("torch.FloatTensor")
    assert ptl.get_default_dtype() == ptl.float32


def test_switch_errors(restore_switches):
    assert_raises_like_torch(lambda lib: lib.set_deterministic_debug_mode("bad"), RuntimeError,
                             "invalid value of debug_mode, expected one of `default`, `warn`, "
                             "`error`, but got bad")
    assert_raises_like_torch(lambda lib: lib.set_deterministic_debug_mode(3), RuntimeError,
                             "invalid value of debug_mode, expected 0, 1, or 2, but got 3")
    assert_raises_like_torch(lambda lib: lib.set_deterministic_debug_mode(1.5), TypeError,
                             "debug_mode must be str or int, but got <class 'float'>")
    assert_raises_like_torch(lambda lib: lib.set_num_interop_threads(0), RuntimeError,
                             "set_num_interop_threads expects a positive integer")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_raises_like_torch(lambda lib: lib.set_default_tensor_type(lib.IntTensor),
                                 TypeError, "only floating-point types are supported as the "
                                 "default type")


def test_fill():
    x, a = make((3, 4), ptl.float64, "transposed")
    assert_close(ptl.fill(x, 2.5), np.full_like(a, 2.5))
    assert_close(ptl.fill(ptl.ones(2, dtype=ptl.int32), 2.7), np.array([2, 2]),
                 dtype=ptl.int32)
    assert_close(ptl.fill(ptl.ones(0, 2), ptl.tensor(3.0)), np.zeros((0, 2)))
    v = ptl.tensor(1.5, dtype=ptl.float64, requires_grad=True)
    assert gradcheck(lambda t: ptl.fill(x, t), (v,))
    assert_raises_like_torch(lambda lib: lib.fill(lib.ones(2), lib.ones(2)), RuntimeError,
                             "fill_ only supports 0-dimension value tensor but got tensor with "
                             "1 dimensions.")


def test_unsafe_splits():
    x = ptl.arange(10).reshape(5, 2)
    for got, want in [(ptl.unsafe_chunk(x, 2), x.chunk(2)), (x.unsafe_split(2), x.split(2)),
                      (ptl.unsafe_split_with_sizes(x, [1, 1], 1), x.split([1, 1], 1))]:
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert_close(g, w.numpy())


@pytest.mark.parametrize("shape", [(5,), (3, 4), (), (0, 3), (2, 2, 2)])
def test_nonzero_static_against_numpy(shape):
    x, a = make(shape, ptl.int64, "transposed", low=-1, high=1)
    found = np.argwhere(a)
    for size in (0, 1, found.shape[0], found.shape[0] + 3):
        want = np.full((size, a.ndim), -1, dtype=np.int64)
        want[:min(size, len(found))] = found[:size]
        assert_close(ptl.nonzero_static(x, size=size), want)
        assert_close(x.nonzero_static(size=size, fill_value=7),
                     np.where(np.arange(size)[:, None] < len(found), want, 7))
    assert_raises_like_torch(lambda lib: lib.nonzero_static(lib.ones(3), size=-1), RuntimeError,
                             "nonzero_static: 'size' must be an non-negative integer")


def test_empty_permuted():
    for size, layout, strides in [((2, 3, 4), (0, 2, 1), (12, 1, 3)), ((2, 3), (1, 0), (1, 2)),
                                  ((5,), (0,), (1,)), ((0, 2), (1, 0), (1, 1))]:
        t = ptl.empty_permuted(size, layout, dtype=ptl.float64)
        assert tuple(t.shape) == size and t.dtype == ptl.float64
        if t.numel():
            assert t.stride() == strides
    assert ptl.empty_permuted((2, 2), (1, 0), requires_grad=True).requires_grad
    assert_raises_like_torch(lambda lib: lib.empty_permuted((2, 3), (0, 0)), RuntimeError,
                             "Duplicate dim not allowed")
    assert_raises_like_torch(lambda lib: lib.empty_permuted((2, 3), (0,)), RuntimeError,
                             "Number of dimensions in size does not match the length of the "
                             "physical_layout; i.e. len(size) = 2 is not equal to "
                             "len(physical_layout) = 1")
    assert_raises_like_torch(lambda lib: lib.empty_permuted((2, 3), (0, 2)), RuntimeError,
                             "Dimension out of range (expected to be between 0 and 1, but got 2 "
                             "at index 1)")


def test_range():
    cases = [((1, 4), {}, np.array([1.0, 2, 3, 4], dtype=np.float32)),
             ((0, 1, 0.25), {"dtype": ptl.float64}, np.arange(5) * 0.25),
             ((5, 1, -2), {}, np.array([5.0, 3, 1], dtype=np.float32)),
             ((1.7, 4.2), {"dtype": ptl.int64}, np.array([1, 2, 3, 4])),
             ((0, 1, 0.1), {"dtype": ptl.float64}, np.arange(11) * 0.1),
             ((2, 2), {}, np.array([2.0], dtype=np.float32))]
    for args, kwargs, want in cases:
        with pytest.warns(UserWarning, match="torch.range is deprecated"):
            got = ptl.range(*args, **kwargs)
        assert_close(got, want, dtype=kwargs.get("dtype", ptl.float32))
    with pytest.warns(UserWarning):
        assert ptl.range(1, 2, requires_grad=True).requires_grad
    with pytest.warns(UserWarning):
        out = ptl.empty(0)
        assert ptl.range(0, 2, out=out) is out
    assert_close(out, np.array([0.0, 1, 2], dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert_raises_like_torch(lambda lib: lib.range(1, 4, 0), RuntimeError,
                                 "step must be nonzero")
        assert_raises_like_torch(lambda lib: lib.range(4, 1), RuntimeError,
                                 "upper bound and lower bound inconsistent with step sign")
        with pytest.raises(RuntimeError, match="step must be nonzero"):
            ptl.range(1, 2, 0.5, dtype=ptl.int64)   # PyTorch divides by zero here


def test_frombuffer():
    buf = bytearray(np.arange(6, dtype=np.float32).tobytes())
    t = ptl.frombuffer(buf, dtype=ptl.float32)
    assert_close(t, np.arange(6, dtype=np.float32))
    t[0] = 9.0                       # shares the buffer's memory
    assert np.frombuffer(buf, dtype=np.float32)[0] == 9.0
    assert_close(ptl.frombuffer(buf, dtype=ptl.float32, count=2, offset=8),
                 np.array([2.0, 3.0], dtype=np.float32))
    assert_close(ptl.frombuffer(array.array("h", [1, -2, 3]), dtype=ptl.int16),
                 np.array([1, -2, 3]))
    assert ptl.frombuffer(buf, dtype=ptl.uint8, requires_grad=False).numel() == 24
    errors = [
        (lambda lib: lib.frombuffer(bytearray(), dtype=lib.float32),
         "both buffer length (0) and count (-1) must not be 0"),
        (lambda lib: lib.frombuffer(bytearray(8), dtype=lib.float32, offset=9),
         "offset (9 bytes) must be non-negative and no greater than buffer length (8 bytes) "
         "minus 1"),
        (lambda lib: lib.frombuffer(bytearray(8), dtype=lib.float32, count=3),
         "requested buffer length (3 * 4 bytes) after offset (0 bytes) must not be greater "
         "than actual buffer length (8 bytes)"),
        (lambda lib: lib.frombuffer(bytearray(7), dtype=lib.float32),
         "buffer length (7 bytes) after offset (0 bytes) must be a multiple of element size "
         "(4)"),
    ]
    for fn, msg in errors:
        assert_raises_like_torch(fn, ValueError, msg)


def test_asarray():
    a = np.arange(4.0)
    t = ptl.asarray(a)
    a[0] = 7.0
    assert t[0].item() == 7.0 and t.dtype == ptl.float64
    assert_close(ptl.asarray(a, dtype=ptl.float32), a.astype(np.float32))
    assert ptl.asarray(a, copy=True)[0].item() == 7.0
    c = ptl.asarray(a, copy=True)
    a[0] = 1.0
    assert c[0].item() == 7.0
    x = ptl.ones(2)
    assert ptl.asarray(x) is x and ptl.asarray(x, copy=True) is not x
    assert ptl.asarray(x, dtype=ptl.float64).dtype == ptl.float64
    assert_close(ptl.asarray([1, 2]), np.array([1, 2]))
    assert_close(ptl.asarray(3.5), np.array(3.5, dtype=np.float32))
    assert ptl.asarray([1.0], requires_grad=True).requires_grad
    assert ptl.asarray(bytearray(8)).dtype == ptl.float32
    assert_raises_like_torch(lambda lib: lib.asarray(np.ones(2), dtype=lib.float32, copy=False),
                             ValueError, "can't alias tensor with dtype 'Double' into dtype "
                             "'Float'.")
    assert_raises_like_torch(lambda lib: lib.asarray(lib.ones(2), dtype=lib.int64, copy=False),
                             ValueError, "can't alias tensor with dtype 'Float' into dtype "
                             "'Long'.")
    assert_raises_like_torch(lambda lib: lib.asarray([1, 2], copy=False), ValueError,
                             "can't alias arbitrary sequence into a tensor.")
    assert_raises_like_torch(lambda lib: lib.asarray(lib.ones(2), device="meta", copy=False),
                             ValueError, "can't alias tensor from device 'cpu' to 'meta'.")


def test_tensor_method_gaps():
    x, a = make((2, 3), ptl.float64, "transposed")
    assert x.cfloat().dtype == ptl.complex64 and x.cdouble().dtype == ptl.complex128
    assert_close(x.cdouble(), a.astype(np.complex128))
    z = ptl.tensor(np.array([[1 + 2j, 3j], [-1, 2 - 1j]]))
    assert_close(ptl.adjoint(z), z.numpy().conj().T)
    assert_close(z.mH, z.numpy().conj().T)   # mH and H conjugate a complex tensor
    assert_close(z.H, z.numpy().conj().T)
    with pytest.warns(UserWarning, match="Tensor.H is deprecated on 0-D tensors"):
        assert_close(z[0, 0].H, np.array(1 - 2j))
    with pytest.raises(RuntimeError, match="tensor.mH is only supported on matrices"):
        ptl.ones(3).mH
    assert_close(x.adjoint(), a.T)
    assert x.const_data_ptr() == x.data_ptr()
    assert x.dim_order() == (1, 0) and x.contiguous().dim_order() == (0, 1)
    assert ptl.empty_permuted((2, 3, 4), (2, 0, 1)).dim_order() == (2, 0, 1)
    y = x.clone()
    assert y.apply_(lambda v: v * v + 1) is y
    assert_close(y, a * a + 1)
    r = np.array([1.0, -2.0, 0.5])
    assert_close(x.clone().map_(ptl.tensor(r), lambda u, v: u - v), a - r)
    assert_close(x.clone().map2_(x, ptl.tensor(r), lambda u, v, w: u * v + w), a * a + r)
    assert_close(ptl.arange(3).apply_(lambda v: v / 2), np.array([0, 0, 1]))
    with pytest.raises(RuntimeError, match=r"Can't call apply_\(\) on Variable that requires "
                                           "grad"):
        ptl.ones(2, requires_grad=True).apply_(abs)
    m, b = make((3, 2), ptl.float64, seed=1)
    n, c = make((2, 4), ptl.float64, seed=2)
    acc, d = make((3, 4), ptl.float64, seed=3)
    assert_close(acc.clone().addmm_(m, n, beta=0.5, alpha=2), 0.5 * d + 2 * b @ c)
    v, e = make((2,), ptl.float64, seed=4)
    out, f = make((3,), ptl.float64, seed=5)
    t = out.clone()
    assert ptl.addmv_(t, m, v, alpha=3) is t
    assert_close(t, f + 3 * b @ e)
    bb, g = make((2, 3, 2), ptl.float64, seed=6)
    cc, h = make((2, 2, 4), ptl.float64, seed=7)
    assert_close(acc.expand(2, 3, 4).clone().baddbmm_(bb, cc), d + g @ h)
    w = ptl.tensor([1 + 1j, 2 - 3j])
    assert ptl.conj_physical_(w) is w
    assert_close(w, np.array([1 - 1j, 2 + 3j]))
    q = ptl.ones(3, requires_grad=True) * 2
    assert ptl.detach_(q) is q and not q.requires_grad
    s = ptl.arange(6.0)
    assert ptl.as_strided_(s, (2,), (3,), 1) is s
    assert_close(s, np.array([1.0, 4.0], dtype=np.float32))


@torch_ref
def test_matches_torch():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args, kwargs in [((1, 4), {}), ((0, 1, 0.1), {}), ((-3, 3, 1.5), {}),
                             ((0.5, 2), {}), ((1.7, 4.2), {"dtype": "int64"})]:
            kw = {k: getattr(ptl, v) for k, v in kwargs.items()}
            kwt = {k: getattr(torch, v) for k, v in kwargs.items()}
            assert_close(ptl.range(*args, **kw), torch.range(*args, **kwt).numpy())
    for size, layout in [((2, 3, 4), (2, 0, 1)), ((3, 1, 2), (1, 2, 0))]:
        assert ptl.empty_permuted(size, layout).stride() == \
            torch.empty_permuted(size, layout).stride()
    a = np.array([[0, 3], [1, 0], [2, 2]])
    assert_close(ptl.nonzero_static(ptl.tensor(a), size=5, fill_value=9),
                 torch.nonzero_static(torch.tensor(a), size=5, fill_value=9).numpy())
    assert_close(ptl.fill(ptl.tensor(a), 4), torch.fill(torch.tensor(a), 4).numpy())
    buf = bytearray(np.arange(4, dtype=np.int32).tobytes())
    assert_close(ptl.frombuffer(buf, dtype=ptl.int16, offset=2, count=3),
                 torch.frombuffer(buf, dtype=torch.int16, offset=2, count=3).numpy())
    for obj in ([1, 2.5], 3, np.ones((2, 2), dtype=np.int16), [[True, False]]):
        got, want = ptl.asarray(obj), torch.asarray(obj)
        assert str(got.dtype) == str(want.dtype)
        assert_close(got, want.numpy())
    for dt in ("uint8", "bool", "int8", "float16", "complex64"):
        assert ptl.is_signed(ptl.ones(1, dtype=getattr(ptl, dt))) == \
            torch.is_signed(torch.ones(1, dtype=getattr(torch, dt)))
    assert ptl.typename(ptl.ones(1, dtype=ptl.bfloat16)) == \
        torch.typename(torch.ones(1, dtype=torch.bfloat16))
    assert ptl.typename(3.5) == torch.typename(3.5)
    for shape, perm in [((2, 3, 4), (2, 0, 1)), ((3, 1, 2), (0, 2, 1)), ((4,), (0,))]:
        assert ptl.ones(shape).permute(perm).dim_order() == \
            torch.ones(shape).permute(perm).dim_order()


def test_set_flush_denormal():
    tiny = np.array([1e-310, -3e-320, 1.0])      # float64 denormals and a normal number
    try:
        assert ptl.set_flush_denormal(True) is True
        # a few elements run on the calling thread, whose switch it is (Note [Flushing
        # denormals])
        got = (ptl.from_numpy(tiny) * 1.0).tolist()
        f32 = (ptl.tensor([1e-39, 2.0]) * 1.0).tolist()
        assert got == [0.0, 0.0, 1.0] and f32 == [0.0, 2.0]
    finally:
        assert ptl.set_flush_denormal(False) is True
    assert (ptl.from_numpy(tiny) * 1.0).tolist() == tiny.tolist()
    for bad in (1, "x", None):
        with pytest.raises(RuntimeError, match=f"^flush_denormal expects a bool, but got "
                                               f"{type(bad).__name__}$"):
            ptl.set_flush_denormal(bad)


@torch_ref
def test_set_flush_denormal_answer_matches_torch():
    try:
        assert ptl.set_flush_denormal(True) == torch.set_flush_denormal(True)
    finally:
        ptl.set_flush_denormal(False)
        torch.set_flush_denormal(False)
