"""repr/str of tensors, compared character for character with PyTorch's."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref


DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64"]
FLOAT_NAMES = ["float16", "bfloat16", "float32", "float64"]
INF, NAN = math.inf, math.nan


@pytest.fixture(autouse=True)
def restore_printoptions():
    yield
    ptl.set_printoptions(profile="default")
    if torch is not None:
        torch.set_printoptions(profile="default")


def pair(values, dtype_name=None):
    """The same values as a pytorchlite tensor and a torch tensor (float64 -> dtype)."""
    a = np.asarray(values)
    t_ref = torch.tensor(a)
    t_ptl = ptl.tensor(a)
    if dtype_name is not None:
        t_ref = t_ref.to(getattr(torch, dtype_name))
        t_ptl = t_ptl.to(getattr(ptl, dtype_name))
    return t_ptl, t_ref


def check(t_ptl, t_ref):
    got, want = str(t_ptl), str(t_ref)
    assert got == want, f"\n--- pytorchlite:\n{got}\n--- torch:\n{want}"
    assert repr(t_ptl) == repr(t_ref)


def random_values(shape, dtype_name, gen, kind):
    if dtype_name == "bool":
        return gen.integers(0, 2, size=shape).astype(bool)
    if dtype_name in ("uint8", "int8", "int16", "int32", "int64"):
        info = np.iinfo(getattr(np, dtype_name))
        hi = {"small": 10, "wide": info.max}.get(kind, 1000)
        lo = max(info.min, -hi)
        return gen.integers(lo, hi, size=shape, endpoint=True).astype(np.int64)
    if kind == "small":
        return gen.standard_normal(shape)
    if kind == "wide":          # spans many decades: scientific notation
        return gen.standard_normal(shape) * 10.0 ** gen.integers(-6, 10, size=shape)
    return np.round(gen.standard_normal(shape) * 100)   # integer-valued floats


SHAPES = [(), (1,), (5,), (3, 4), (2, 3, 4), (2, 2, 3, 2), (1, 1, 1, 1), (4, 1, 3)]


@torch_ref
@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("kind", ["small", "wide", "ints"])
def test_random_shapes(dtype_name, kind):
    gen = np.random.default_rng(hash((dtype_name, kind)) % 2**32)
    for shape in SHAPES:
        check(*pair(random_values(shape, dtype_name, gen, kind), dtype_name))


@torch_ref
@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("shape", [(1000,), (1001,), (10, 100), (10, 101), (2, 3, 200),
                                   (7, 7, 7, 7), (3, 400), (400, 3), (6, 167)])
def test_threshold_summarization(dtype_name, shape):
    gen = np.random.default_rng(len(shape) * 1000 + shape[-1])
    check(*pair(random_values(shape, dtype_name, gen, "small"), dtype_name))


@torch_ref
@pytest.mark.parametrize("values", [
    [1.0, 2.0, 3.0], [1.5, 2.0, 3.0], [0.0, 0.0], [-0.0, 0.0], [-0.0], [1e-5, 1.0, 1e9],
    [1e-4, 1.0], [9.99e-5, 1.0], [1e8, 1.0], [1.1e8, 1.0], [1.0, 1000.0], [1.0, 1001.0],
    [NAN, 1.0, INF], [NAN, NAN], [INF, -INF], [NAN, 1.5, -INF], [1e20, -1e20, NAN],
    [123456789.0, 1.0], [0.1, 0.2, 0.3], [-1.0, 2.5e-3], [1e-30], [3e38], [65504.0, 1.0],
    [1e300, 1e-300], [[1.0, NAN], [INF, 2.0]], [[0.5, 1e-8], [NAN, 3.0]],
    [[[1.0]], [[2.0]]], [12345.678, -0.001],
])
@pytest.mark.parametrize("dtype_name", FLOAT_NAMES)
def test_special_values(values, dtype_name):
    with np.errstate(over="ignore"):
        check(*pair(values, dtype_name))


@torch_ref
@pytest.mark.parametrize("value", [3.0, -2.5, 0.0, -0.0, NAN, INF, 1e-7, 1e10, 7, True, -9])
def test_zero_dim(value):
    check(*pair(value))
    if isinstance(value, float):
        check(*pair(value, "float64"))
        check(*pair(value, "float16"))


@torch_ref
@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (2, 0, 4), (0, 0)])
@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_empty(shape, dtype_name):
    check(*pair(np.zeros(shape), dtype_name))


@torch_ref
def test_empty_from_list():
    check(ptl.tensor([]), torch.tensor([]))
    check(ptl.tensor([[], []]), torch.tensor([[], []]))


@torch_ref
@pytest.mark.parametrize("options", [
    {"precision": 2}, {"precision": 0}, {"precision": 8}, {"threshold": 5},
    {"threshold": 0}, {"edgeitems": 1, "threshold": 10}, {"edgeitems": 0, "threshold": 10},
    {"edgeitems": 5, "threshold": 10}, {"linewidth": 40}, {"linewidth": 10},
    {"linewidth": 200}, {"profile": "short"}, {"profile": "full"}, {"profile": "default"},
    {"sci_mode": True}, {"sci_mode": False}, {"sci_mode": True, "precision": 2},
    {"profile": "short", "precision": 6}, {"threshold": 3, "edgeitems": 1, "linewidth": 30},
])
def test_printoptions(options):
    ptl.set_printoptions(**options)
    torch.set_printoptions(**options)
    gen = np.random.default_rng(7)
    cases = [
        pair(gen.standard_normal((30,))), pair(gen.standard_normal((12, 12))),
        pair(gen.standard_normal((4, 5, 6)) * 1e5), pair(np.arange(50.0)),
        pair(np.arange(60).reshape(3, 4, 5)), pair(gen.standard_normal((2, 40)), "float16"),
        pair(np.array([0.0, NAN, INF])), pair(gen.standard_normal((1200,))), pair(2.5),
        pair(gen.integers(0, 2, (5, 9)).astype(bool)), pair(np.arange(2000) - 1000, "int32"),
        pair([1.0, 2.0]), pair(gen.standard_normal((2, 3, 3, 4)), "float64"),
    ]
    for t_ptl, t_ref in cases:
        check(t_ptl, t_ref)


@torch_ref
def test_printoptions_context_and_get():
    from pytorchlite import _tensor_str
    with _tensor_str.printoptions(precision=2), torch._tensor_str.printoptions(precision=2):
        check(*pair([1.23456, 2.0]))
        assert _tensor_str.get_printoptions()["precision"] == 2
    assert _tensor_str.get_printoptions() == torch._tensor_str.get_printoptions()
    check(*pair([1.23456, 2.0]))


@torch_ref
@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_views(layout):
    a = np.random.default_rng(3).standard_normal((6, 8))
    t_ptl, t_ref = ptl.tensor(a), torch.tensor(a)
    if layout == "transposed":
        check(t_ptl.t(), t_ref.t())
    elif layout == "sliced":
        check(t_ptl[1::2, ::3], t_ref[1::2, ::3])
    else:
        check(t_ptl[:1].expand(4, 8), t_ref[:1].expand(4, 8))


@torch_ref
def test_requires_grad_suffix():
    check(ptl.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True))
    check(ptl.tensor(3.0, requires_grad=True), torch.tensor(3.0, requires_grad=True))
    long = np.random.default_rng(0).standard_normal(15)
    check(ptl.tensor(long, requires_grad=True), torch.tensor(long, requires_grad=True))
    check(ptl.tensor(long[:7], dtype=ptl.float16, requires_grad=True),
          torch.tensor(long[:7], dtype=torch.float16, requires_grad=True))


@torch_ref
def test_grad_fn_suffix(monkeypatch):
    class AddBackward0:
        pass

    monkeypatch.setattr(ptl.Tensor, "grad_fn", property(lambda self: AddBackward0()),
                        raising=False)
    leaf = torch.tensor([1.0, 2.0], requires_grad=True)
    check(ptl.tensor([2.0, 3.0], requires_grad=True), leaf + 1)


def test_device_suffix(monkeypatch):
    # A CUDA tensor prints its device; no GPU is needed to check the suffix.
    monkeypatch.setattr(ptl.Tensor, "device", property(lambda self: ptl.device("cuda:0")))
    monkeypatch.setattr(ptl.Tensor, "cpu", lambda self: self)
    assert repr(ptl.tensor([1.0, 2.0])) == "tensor([1., 2.], device='cuda:0')"
    assert repr(ptl.tensor([1, 2], dtype=ptl.int32)) == \
        "tensor([1, 2], device='cuda:0', dtype=torch.int32)"


@torch_ref
@pytest.mark.parametrize("default", ["float64", "float16"])
def test_default_dtype_suffix(default):
    old_ptl, old_ref = ptl.get_default_dtype(), torch.get_default_dtype()
    ptl.set_default_dtype(getattr(ptl, default))
    torch.set_default_dtype(getattr(torch, default))
    try:
        for name in ("float32", "float64", "float16", "int64", "bool"):
            check(*pair([1.0, 0.0], name))
        check(ptl.tensor([1.5, 2.0]), torch.tensor([1.5, 2.0]))
        check(*pair(np.zeros((0,), dtype=np.int64)))
        check(ptl.tensor([[], []]), torch.tensor([[], []]))
    finally:
        ptl.set_default_dtype(old_ptl)
        torch.set_default_dtype(old_ref)


@torch_ref
def test_subclass_prefix():
    class MyTensor(ptl.Tensor):
        __slots__ = ()

    t = ptl.Tensor._make_subclass(MyTensor, ptl.tensor([1.0, 2.0]))
    r = torch.Tensor._make_subclass(type("MyTensor", (torch.Tensor,), {}),
                                    torch.tensor([1.0, 2.0]))
    assert repr(t) == repr(r) == "MyTensor([1., 2.])"


@torch_ref
def test_str_equals_repr_and_format():
    t = ptl.tensor([[1.0, 2.5]])
    assert str(t) == repr(t)
    assert f"{ptl.tensor(2.5):.2f}" == f"{torch.tensor(2.5):.2f}" == "2.50"
    assert f"{t}" == f"{torch.tensor([[1.0, 2.5]])}"
    assert f"{ptl.tensor(0.5)}" == f"{torch.tensor(0.5)}" == "0.5"
    assert f"{ptl.tensor(3)}" == f"{torch.tensor(3)}" == "3"


@torch_ref
def test_suffix_wrapping():
    # The dtype suffix moves to its own line when the last line would pass linewidth.
    for n in range(1, 30):
        a = np.linspace(-1, 1, n)
        check(*pair(a, "float16"))
        check(*pair(np.arange(n) * 1234567, "int32"))


@torch_ref
def test_large_tensor_is_fast():
    import time
    t = ptl.tensor(np.zeros((1000, 1000)), dtype=ptl.float32)
    start = time.perf_counter()
    text = repr(t)
    assert time.perf_counter() - start < 0.5
    assert text == repr(torch.zeros((1000, 1000)))
