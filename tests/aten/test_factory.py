"""Factory functions against NumPy (values, shapes) and PyTorch (dtype inference, integer
rounding rules, errors), whose outputs are recorded in tests/fixtures/golden_factory.json
(golden.py; live torch too when installed)."""
import builtins
import re

import numpy as np
import pytest

import pytorchlite as ptl
from golden import Raised, golden
from helpers import (ALL_DTYPES, FLOAT_DTYPES, INT_DTYPES, NO_CUDA_MESSAGE, NP_DTYPE, SHAPES,
                     assert_close, assert_raises_like_torch, torch)

TORCH_DTYPE = {d: getattr(torch, str(d).split(".")[-1]) for d in ALL_DTYPES} if torch else {}


def assert_like_torch(got, make_ref):
    """Same shape, dtype and values as the torch tensor make_ref() returns (exact for integers
    and bools)."""
    want = golden(make_ref)
    assert not isinstance(want, Raised), f"torch raised {want}"
    assert tuple(got.shape) == want.shape
    assert str(got.dtype) == str(want.dtype)
    assert_close(got, want.numpy())


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_zeros_ones_full_empty(shape, dtype):
    assert_close(ptl.zeros(shape, dtype=dtype), np.zeros(shape), dtype=dtype)
    assert_close(ptl.ones(shape, dtype=dtype), np.ones(shape), dtype=dtype)
    fill = True if dtype == ptl.bool else 3
    assert_close(ptl.full(shape, fill, dtype=dtype), np.full(shape, fill), dtype=dtype)
    e = ptl.empty(shape, dtype=dtype)
    assert tuple(e.shape) == shape and e.dtype == dtype and e.is_contiguous()


def test_varargs_and_default_dtype():
    assert_close(ptl.zeros(2, 3), np.zeros((2, 3)), dtype=ptl.float32)
    assert_close(ptl.ones(4), np.ones(4), dtype=ptl.float32)
    assert tuple(ptl.empty(2, 0, 3).shape) == (2, 0, 3)
    ptl.set_default_dtype(ptl.float64)
    try:
        assert ptl.zeros(2).dtype == ptl.float64
        assert ptl.full((2,), 1.5).dtype == ptl.float64
        assert ptl.arange(0.5, 3).dtype == ptl.float64
        assert ptl.linspace(0, 1, 3).dtype == ptl.float64
        assert ptl.eye(2).dtype == ptl.float64
    finally:
        ptl.set_default_dtype(ptl.float32)


@pytest.mark.parametrize("fill,dtype", [
    (True, None), (False, None), (3, None), (-7, None), (2.5, None), (3.5, ptl.int32),
    (-1, ptl.uint8), (-255, ptl.uint8), (1.5, ptl.bool), (0.1, ptl.float16), (127, ptl.int8),
    (2, ptl.float64), (65504, ptl.float16), (2 ** 40, ptl.int64), (float('inf'), ptl.float16),
])
def test_full_dtype_inference_and_conversion(fill, dtype):
    got = ptl.full((2, 3), fill, dtype=dtype)
    assert_like_torch(got, lambda: torch.full((2, 3), fill, dtype=TORCH_DTYPE.get(dtype)))


def test_empty_strided():
    e = ptl.empty_strided((2, 3), (1, 2))
    assert tuple(e.shape) == (2, 3) and e.stride() == (1, 2)
    e = ptl.empty_strided((2, 0), (5, 1), dtype=ptl.int16)
    assert tuple(e.shape) == (2, 0) and e.dtype == ptl.int16


@pytest.mark.parametrize("dtype", [None, ptl.int32, ptl.float64, ptl.bool], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded", "sliced"])
def test_like_family(layout, dtype):
    x = ptl.arange(24, dtype=ptl.int16).reshape(2, 3, 4)
    views = {"contiguous": lambda t: t, "transposed": lambda t: t.permute(2, 0, 1),
             "expanded": lambda t: t[:, :1].expand(2, 3, 4), "sliced": lambda t: t[:, ::2]}
    x = views[layout](x)
    want_dt = x.dtype if dtype is None else dtype
    shape = tuple(x.shape)
    assert_close(ptl.zeros_like(x, dtype=dtype), np.zeros(shape), dtype=want_dt)
    assert_close(ptl.ones_like(x, dtype=dtype), np.ones(shape), dtype=want_dt)
    assert_close(ptl.full_like(x, 1, dtype=dtype), np.full(shape, 1), dtype=want_dt)
    for name in ("empty_like", "zeros_like", "ones_like"):
        got = getattr(ptl, name)(x, dtype=dtype)
        shape, stride = golden(lambda: (lambda t: (t.shape, t.stride()))(getattr(torch, name)(
            views[layout](torch.arange(24, dtype=torch.int16).reshape(2, 3, 4)),
            dtype=TORCH_DTYPE.get(dtype))))
        assert tuple(got.shape) == shape
        assert got.stride() == stride
        assert got.dtype == want_dt


def test_full_like_converts_fill():
    x = ptl.zeros(2, dtype=ptl.int32)
    assert_like_torch(ptl.full_like(x, 2.7),
                      lambda: torch.full_like(torch.zeros(2, dtype=torch.int32), 2.7))
    assert_like_torch(ptl.full_like(x, 2.7, dtype=ptl.float64),
                      lambda: torch.full_like(torch.zeros(2, dtype=torch.int32), 2.7,
                                              dtype=torch.float64))


ARANGES = [
    (5,), (5.,), (True,), (0,), (2.5,), (1, 1), (-3, 4), (0.5, 3), (0, 1, 0.3), (10., 0., -3),
    (0, 10, 3), (1, -5, -2), (-1.5, 2.5), (0, 1, 0.1), (0, 5, 1.5),
]


@pytest.mark.parametrize("args", ARANGES, ids=repr)
@pytest.mark.parametrize("dtype", [None] + [d for d in ALL_DTYPES if d != ptl.bool], ids=str)
def test_arange_vs_torch(args, dtype):
    if dtype in (ptl.uint8,) and any(a < 0 for a in args):
        args = tuple(abs(a) for a in args[:2])
    want = golden(lambda: torch.arange(*args, dtype=TORCH_DTYPE.get(dtype)))
    if isinstance(want, Raised):
        assert want.type_name in ("RuntimeError", "ValueError")
        with pytest.raises(getattr(builtins, want.type_name), match=re.escape(want.message)):
            ptl.arange(*args, dtype=dtype)
        return
    got = ptl.arange(*args, dtype=dtype)
    assert tuple(got.shape) == want.shape and str(got.dtype) == str(want.dtype)
    assert_close(got, want.numpy())


@pytest.mark.parametrize("args", [(7,), (2, 9), (0, 1, 0.125), (5, -5, -0.5), (3.,)], ids=repr)
def test_arange_vs_numpy(args):
    got = ptl.arange(*args)
    want = np.arange(*args)
    assert_close(got, want, dtype=ptl.int64 if want.dtype.kind == "i" else ptl.float32)


def test_arange_overloads_and_wrap():
    assert_close(ptl.arange(end=4), np.arange(4), dtype=ptl.int64)
    assert_close(ptl.arange(start=1, end=4), np.arange(1, 4), dtype=ptl.int64)
    assert_close(ptl.arange(1, 10, step=4), np.arange(1, 10, 4), dtype=ptl.int64)
    assert_close(ptl.arange(300, dtype=ptl.uint8), np.arange(300) % 256, dtype=ptl.uint8)
    big = ptl.arange(100000, dtype=ptl.float64)   # above the grain: runs in parallel
    assert_close(big, np.arange(100000.0), dtype=ptl.float64)


LINSPACES = [(0, 10, 5), (0, 10, 4), (-1, 1, 7), (10, 0, 4), (0, 1, 1), (0, 1, 0), (2, 2, 3),
             (0.5, -2.5, 6), (True, False, 3), (0, 1, 11)]


@pytest.mark.parametrize("args", LINSPACES, ids=repr)
@pytest.mark.parametrize("dtype", [None, ptl.float64, ptl.float16, ptl.bfloat16, ptl.int64,
                                   ptl.int8, ptl.int32], ids=str)
def test_linspace_vs_torch(args, dtype):
    assert_like_torch(ptl.linspace(*args, dtype=dtype),
                      lambda: torch.linspace(*args, dtype=TORCH_DTYPE.get(dtype)))


@pytest.mark.parametrize("args", LINSPACES, ids=repr)
def test_linspace_vs_numpy(args):
    assert_close(ptl.linspace(*args, dtype=ptl.float64), np.linspace(*map(float, args[:2]),
                                                                     args[2]),
                 dtype=ptl.float64)


@pytest.mark.parametrize("args,base", [((0, 2, 3), 10.0), ((0, 2, 3), 2.0), ((-1, 1, 5), 10.0),
                                       ((0, 1, 5), 10.0), ((2, -2, 4), 3.0), ((0, 1, 0), 2.0)])
@pytest.mark.parametrize("dtype", [None, ptl.float64, ptl.int64, ptl.int32, ptl.float16],
                         ids=str)
def test_logspace_vs_torch_and_numpy(args, base, dtype):
    got = ptl.logspace(*args, base=base, dtype=dtype)
    assert_like_torch(got, lambda: torch.logspace(*args, base=base, dtype=TORCH_DTYPE.get(dtype)))
    if dtype is None or dtype in FLOAT_DTYPES:
        assert_close(got, np.logspace(*args, base=base))


def _integer_range_model(start, end, n, log, base=10.0):
    """PyTorch's linspace / logspace into an integer dtype: start and end truncated to
    integers first, the step in double, the second half counted back from end; one step is
    a fill of start (base ** start) in double"""
    if n == 1:
        return np.trunc(np.array([base ** start if log else start]))
    s, e = float(int(start)), float(int(end))
    step = (e - s) / (n - 1) if n > 1 else 0.0
    v = np.array([s + step * i if i < n // 2 else e - step * (n - 1 - i) for i in range(n)])
    return np.trunc(base ** v if log else v)


@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32, ptl.int16, ptl.int8, ptl.uint8],
                         ids=str)
@pytest.mark.parametrize("args", [(1.157, 5.9, 4), (0.5, 10.5, 11), (9.99, 0.01, 3),
                                  (2.9, 2.1, 1), (1.5, 2.7, 7), (0, 2, 5), (0.2, 0.9, 0)],
                         ids=repr)
def test_linspace_and_logspace_of_integers_take_integer_ends(args, dtype):
    """PyTorch's kernels convert start and end to an integer dtype before stepping: linspace
    (1.157, 5.9, 4) into int64 runs from 1 to 5 ([1, 2, 3, 5]), logspace(1.157, 2.9, 4) from
    10 to 100 (fuzzer --torch seed 78, call 1077: pytorchlite stepped from 1.157, [14, ...])"""
    for log in (False, True):
        want = _integer_range_model(*args, log)
        if want.size and want.max() > np.iinfo(NP_DTYPE[dtype]).max:
            continue   # base ** v past the dtype: a conversion C leaves undefined
        fn = ptl.logspace if log else ptl.linspace
        got = fn(*args, dtype=dtype)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want)
        if torch is not None:
            tfn = torch.logspace if log else torch.linspace
            np.testing.assert_array_equal(got.numpy(),
                                          tfn(*args, dtype=TORCH_DTYPE[dtype]).numpy())


def test_integer_range_ends_convert_as_c10():
    """an int end wraps into uint8 (-1 is 255); an end past the dtype is refused with c10's
    overflow error, as PyTorch's"""
    assert ptl.linspace(-1, 255, 2, dtype=ptl.uint8).tolist() == [255, 255]
    calls = [(lambda L: L.linspace(-300, 5, 3, dtype=L.uint8), "uint8_t"),
             (lambda L: L.logspace(-300, 5, 3, dtype=L.int8), "int8_t"),
             (lambda L: L.linspace(0, 1e20, 3, dtype=L.int64), "int64_t")]
    for lib in [ptl] + ([torch] if torch is not None else []):
        for call, name in calls:
            with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} "
                                                   "without overflow"):
                call(lib)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
@pytest.mark.parametrize("nm", [(0,), (1,), (3,), (2, 3), (4, 2), (0, 3), (3, 0)], ids=str)
def test_eye_vs_numpy(nm, dtype):
    got = ptl.eye(*nm, dtype=dtype)
    assert_close(got, np.eye(*nm).astype(NP_DTYPE[dtype]), dtype=dtype)
    assert got.is_contiguous()


@pytest.mark.parametrize("value,dtype", [(1, None), (True, None), (2.5, None), (2.5, ptl.int32),
                                         (-3, ptl.int8), (0.5, ptl.bool), (7, ptl.float64)])
def test_scalar_tensor(value, dtype):
    assert_like_torch(ptl.scalar_tensor(value, dtype=dtype),
                      lambda: torch.scalar_tensor(value, dtype=TORCH_DTYPE.get(dtype)))


@pytest.mark.parametrize("make", [
    lambda **k: ptl.zeros(2, 3, **k), lambda **k: ptl.ones((2,), **k),
    lambda **k: ptl.empty(3, **k), lambda **k: ptl.full((2,), 1.5, **k),
    lambda **k: ptl.arange(3.0, **k), lambda **k: ptl.linspace(0, 1, 3, **k),
    lambda **k: ptl.logspace(0, 1, 3, **k), lambda **k: ptl.eye(2, **k),
    lambda **k: ptl.zeros_like(ptl.ones(2), **k), lambda **k: ptl.full_like(ptl.ones(2), 3, **k),
    lambda **k: ptl.empty_strided((2, 2), (2, 1), **k), lambda **k: ptl.scalar_tensor(1., **k),
])
def test_requires_grad_kwarg(make):
    assert make(requires_grad=True).requires_grad
    assert not make().requires_grad
    assert make(device="cpu").device.type == "cpu"


def test_tensors_are_fresh():
    z = ptl.zeros(3)
    assert z._version == 0
    o = ptl.ones_like(z)
    assert o.data_ptr() != z.data_ptr()
    assert ptl.eye(3)._version == 0


ERRORS = [
    (lambda m: m.zeros(-1), RuntimeError, "zeros: Dimension size must be non-negative."),
    (lambda m: m.empty(-1), RuntimeError, "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda m: m.ones(2, -1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [2, -1]"),
    (lambda m: m.full((-1,), 2), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda m: m.empty_strided((2, 3), (1,)), RuntimeError,
     "dimensionality of sizes (2) must match dimensionality of strides (1)"),
    (lambda m: m.arange(0, 1, 0), RuntimeError, "step must be nonzero"),
    (lambda m: m.arange(0, 5, 0.0), RuntimeError, "step must be nonzero"),
    (lambda m: m.arange(1, 2.5, 0.5, dtype=m.int64), ValueError, "step must be nonzero"),
    (lambda m: m.arange(0, 1, -1), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    (lambda m: m.arange(-3), RuntimeError,
     "upper bound and lower bound inconsistent with step sign"),
    (lambda m: m.arange(0, float("inf")), RuntimeError, "unsupported range: 0 -> inf"),
    (lambda m: m.arange(0, float("nan")), RuntimeError, "unsupported range: 0 -> nan"),
    (lambda m: m.arange(0, 1e30, 1e-10), RuntimeError, "invalid size, possible overflow?"),
    # int64 bounds and steps outside int64, and spans past it (INT64_MIN / -1 trapped here)
    (lambda m: m.arange(0.757, -1e308, -1, dtype=m.int64), RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    (lambda m: m.arange(0, 10, 1e30, dtype=m.int64), RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    (lambda m: m.arange(-2**63, 2**63 - 1, dtype=m.int64), RuntimeError,
     "invalid size, possible overflow?"),
    (lambda m: m.arange(2**63 - 1, -2**63, -1, dtype=m.int64), RuntimeError,
     "invalid size, possible overflow?"),
    (lambda m: m.full((1,), 1e19, dtype=m.int64), RuntimeError,
     "value cannot be converted to type int64_t without overflow"),
    (lambda m: m.arange(0, 5, dtype=m.bool), NotImplementedError,
     "\"arange_cpu\" not implemented for 'Bool'"),
    (lambda m: m.linspace(0, 1, 5, dtype=m.bool), NotImplementedError,
     "\"linspace_cpu\" not implemented for 'Bool'"),
    (lambda m: m.logspace(0, 1, 5, dtype=m.bool), NotImplementedError,
     "\"logspace_cpu\" not implemented for 'Bool'"),
    (lambda m: m.linspace(0, 10, -1), RuntimeError, "number of steps must be non-negative"),
    (lambda m: m.logspace(0, 10, -1), RuntimeError, "number of steps must be non-negative"),
    (lambda m: m.full((1,), 300, dtype=m.int8), RuntimeError,
     "value cannot be converted to type int8_t without overflow"),
    (lambda m: m.full((1,), -256, dtype=m.uint8), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    (lambda m: m.full((1,), 2.0 ** 40, dtype=m.int32), RuntimeError,
     "value cannot be converted to type int without overflow"),
    (lambda m: m.full((1,), 40000, dtype=m.int16), RuntimeError,
     "value cannot be converted to type int16_t without overflow"),
    (lambda m: m.full((2, 3), 70000, dtype=m.float16), RuntimeError,
     "value cannot be converted to type c10::Half without overflow"),
    (lambda m: m.full((1,), 1e39), RuntimeError,
     "value cannot be converted to type float without overflow"),
    (lambda m: m.full_like(m.zeros(2, dtype=m.int8), 128), RuntimeError,
     "value cannot be converted to type int8_t without overflow"),
    (lambda m: m.eye(-1), RuntimeError, "n must be greater or equal to 0, got -1"),
    (lambda m: m.eye(2, -1), RuntimeError, "m must be greater or equal to 0, got -1"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    assert_raises_like_torch(*ERRORS[case])


@pytest.mark.skipif(ptl.cuda.is_available(),
                    reason="CUDA is available: the CPU-only error path cannot be reached")
@pytest.mark.parametrize("make", [
    lambda: ptl.zeros(2, device="cuda"), lambda: ptl.empty(2, device="cuda"),
    lambda: ptl.arange(3, device="cuda"), lambda: ptl.eye(2, device="cuda"),
    lambda: ptl.ones_like(ptl.ones(2), device="cuda"),
    lambda: ptl.linspace(0, 1, 3, device="cuda"), lambda: ptl.scalar_tensor(1, device="cuda"),
])
def test_cuda_device_without_cuda(make):
    with pytest.raises(RuntimeError, match=re.escape(NO_CUDA_MESSAGE)):
        make()


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
def test_int_dtypes_exact(dtype):
    assert_close(ptl.arange(0, 100, 7, dtype=dtype), np.arange(0, 100, 7), dtype=dtype)
    assert_close(ptl.full((3,), 5, dtype=dtype), np.full(3, 5), dtype=dtype)


@pytest.mark.parametrize("op, args, dtype, expect", [
    ("linspace", (-3.32, 1j, 3), None, "complex64"),
    ("linspace", (0.0, 1.0, 3), "complex64", "complex64"),
    ("linspace", (0.0, 1.0, 3), None, "float32"),
    ("logspace", (0.0, 1j, 4), None, "complex64"),
    ("logspace", (0.0, 2.0, 4), "complex128", "complex128"),
])
def test_linspace_on_meta_infers_complex_as_on_cpu(op, args, dtype, expect):
    """On the meta device (no Complex key's kernel there) linspace and logspace give the dtype
    the CPU gives: complex ends or a complex dtype make a complex result, with no values."""
    kw = {} if dtype is None else {"dtype": getattr(ptl, dtype)}
    fn = getattr(ptl.ops.aten, op).default
    meta = fn(*args, device="meta", **kw)
    cpu = fn(*args, **kw)
    assert meta.device.type == "meta" and str(meta.dtype) == f"torch.{expect}"
    assert meta.dtype == cpu.dtype and tuple(meta.shape) == tuple(cpu.shape)
