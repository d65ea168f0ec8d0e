"""repr/str of tensors, compared character for character with PyTorch's, as recorded in
tests/fixtures/golden_tensor_str.json (golden.py; live torch too when installed)."""
import contextlib
import math
import zlib

import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import torch


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
    """The same values as a pytorchlite tensor and a function making the torch tensor
    (float64 -> dtype)."""
    a = np.asarray(values)

    def make_ref():
        t_ref = torch.tensor(a)
        return t_ref if dtype_name is None else t_ref.to(getattr(torch, dtype_name))

    t_ptl = ptl.tensor(a)
    if dtype_name is not None:
        t_ptl = t_ptl.to(getattr(ptl, dtype_name))
    return t_ptl, make_ref


def check(t_ptl, make_ref):
    """str and repr of t_ptl are those of the torch tensor make_ref() returns (torch's repr
    is its str)."""
    want, repr_is_str = golden(lambda: (lambda t: (str(t), repr(t) == str(t)))(make_ref()))
    got = str(t_ptl)
    assert got == want, f"\n--- pytorchlite:\n{got}\n--- torch:\n{want}"
    assert repr_is_str and repr(t_ptl) == got


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


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("kind", ["small", "wide", "ints"])
def test_random_shapes(dtype_name, kind):
    gen = np.random.default_rng(zlib.crc32(f"{dtype_name} {kind}".encode()))
    for shape in SHAPES:
        check(*pair(random_values(shape, dtype_name, gen, kind), dtype_name))


@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
@pytest.mark.parametrize("shape", [(1000,), (1001,), (10, 100), (10, 101), (2, 3, 200),
                                   (7, 7, 7, 7), (3, 400), (400, 3), (6, 167)])
def test_threshold_summarization(dtype_name, shape):
    gen = np.random.default_rng(len(shape) * 1000 + shape[-1])
    check(*pair(random_values(shape, dtype_name, gen, "small"), dtype_name))


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


@pytest.mark.parametrize("value", [3.0, -2.5, 0.0, -0.0, NAN, INF, 1e-7, 1e10, 7, True, -9])
def test_zero_dim(value):
    check(*pair(value))
    if isinstance(value, float):
        check(*pair(value, "float64"))
        check(*pair(value, "float16"))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0), (2, 0, 4), (0, 0)])
@pytest.mark.parametrize("dtype_name", DTYPE_NAMES)
def test_empty(shape, dtype_name):
    check(*pair(np.zeros(shape), dtype_name))


def test_empty_from_list():
    check(ptl.tensor([]), lambda: torch.tensor([]))
    check(ptl.tensor([[], []]), lambda: torch.tensor([[], []]))


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
    if torch is not None:
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
    for t_ptl, make_ref in cases:
        check(t_ptl, make_ref)


def test_printoptions_context_and_get():
    from pytorchlite import _tensor_str
    with contextlib.ExitStack() as stack:
        stack.enter_context(_tensor_str.printoptions(precision=2))
        if torch is not None:
            stack.enter_context(torch._tensor_str.printoptions(precision=2))
        check(*pair([1.23456, 2.0]))
        assert _tensor_str.get_printoptions()["precision"] == 2
    assert _tensor_str.get_printoptions() == golden(lambda: torch._tensor_str.get_printoptions())
    check(*pair([1.23456, 2.0]))


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_views(layout):
    a = np.random.default_rng(3).standard_normal((6, 8))
    t_ptl = ptl.tensor(a)
    if layout == "transposed":
        check(t_ptl.t(), lambda: torch.tensor(a).t())
    elif layout == "sliced":
        check(t_ptl[1::2, ::3], lambda: torch.tensor(a)[1::2, ::3])
    else:
        check(t_ptl[:1].expand(4, 8), lambda: torch.tensor(a)[:1].expand(4, 8))


def test_requires_grad_suffix():
    check(ptl.tensor([1.0, 2.0], requires_grad=True),
          lambda: torch.tensor([1.0, 2.0], requires_grad=True))
    check(ptl.tensor(3.0, requires_grad=True), lambda: torch.tensor(3.0, requires_grad=True))
    long = np.random.default_rng(0).standard_normal(15)
    check(ptl.tensor(long, requires_grad=True), lambda: torch.tensor(long, requires_grad=True))
    check(ptl.tensor(long[:7], dtype=ptl.float16, requires_grad=True),
          lambda: torch.tensor(long[:7], dtype=torch.float16, requires_grad=True))


def test_grad_fn_suffix(monkeypatch):
    class AddBackward0:
        pass

    monkeypatch.setattr(ptl.Tensor, "grad_fn", property(lambda self: AddBackward0()),
                        raising=False)
    check(ptl.tensor([2.0, 3.0], requires_grad=True),
          lambda: torch.tensor([1.0, 2.0], requires_grad=True) + 1)


def test_device_suffix(monkeypatch):
    # A CUDA tensor prints its device; no GPU is needed to check the suffix.
    monkeypatch.setattr(ptl.Tensor, "device", property(lambda self: ptl.device("cuda:0")))
    monkeypatch.setattr(ptl.Tensor, "cpu", lambda self: self)
    assert repr(ptl.tensor([1.0, 2.0])) == "tensor([1., 2.], device='cuda:0')"
    assert repr(ptl.tensor([1, 2], dtype=ptl.int32)) == \
        "tensor([1, 2], device='cuda:0', dtype=torch.int32)"


@pytest.mark.parametrize("default", ["float64", "float16"])
def test_default_dtype_suffix(default):
    old_ptl = ptl.get_default_dtype()
    old_ref = torch.get_default_dtype() if torch is not None else None
    ptl.set_default_dtype(getattr(ptl, default))
    if torch is not None:
        torch.set_default_dtype(getattr(torch, default))
    try:
        for name in ("float32", "float64", "float16", "int64", "bool"):
            check(*pair([1.0, 0.0], name))
        check(ptl.tensor([1.5, 2.0]), lambda: torch.tensor([1.5, 2.0]))
        check(*pair(np.zeros((0,), dtype=np.int64)))
        check(ptl.tensor([[], []]), lambda: torch.tensor([[], []]))
    finally:
        ptl.set_default_dtype(old_ptl)
        if torch is not None:
            torch.set_default_dtype(old_ref)


def test_subclass_prefix():
    class MyTensor(ptl.Tensor):
        __slots__ = ()

    t = ptl.Tensor._make_subclass(MyTensor, ptl.tensor([1.0, 2.0]))
    want = golden(lambda: repr(torch.Tensor._make_subclass(
        type("MyTensor", (torch.Tensor,), {}), torch.tensor([1.0, 2.0]))))
    assert repr(t) == want == "MyTensor([1., 2.])"


def test_str_equals_repr_and_format():
    t = ptl.tensor([[1.0, 2.5]])
    assert str(t) == repr(t)
    assert f"{ptl.tensor(2.5):.2f}" == golden(lambda: f"{torch.tensor(2.5):.2f}") == "2.50"
    assert f"{t}" == golden(lambda: f"{torch.tensor([[1.0, 2.5]])}")
    # a 0-dim tensor formats as its number (PyTorch 2.13's outputs, written out)
    assert f"{ptl.tensor(0.5)}" == "0.5" and f"{ptl.tensor(3)}" == "3"


def test_suffix_wrapping():
    # The dtype suffix moves to its own line when the last line would pass linewidth.
    for n in range(1, 30):
        a = np.linspace(-1, 1, n)
        check(*pair(a, "float16"))
        check(*pair(np.arange(n) * 1234567, "int32"))


def test_large_tensor_reads_only_its_edges(monkeypatch):
    """A summarized tensor's printer reads and formats only the shown elements (3 edge items a
    side of each dimension: 36 of the million), not the whole tensor."""
    from pytorchlite import _tensor_str
    seen = []
    formatter = _tensor_str._formatter

    def spy(values, dtype):
        seen.append(len(values))
        return formatter(values, dtype)
    monkeypatch.setattr(_tensor_str, "_formatter", spy)
    t = ptl.tensor(np.zeros((1000, 1000)), dtype=ptl.float32)
    text = repr(t)
    assert seen == [36]
    assert text == golden(lambda: repr(torch.zeros((1000, 1000))))
