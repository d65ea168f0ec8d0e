"""The generator= overloads of rand_like, randn_like and randint_like (PyTorch 2.13;
src/aten/native/random_like.c): the draws are those of rand / randn / randint from the same
generator state, and those of the overloads without generator= from the default generator
(both fill the elements in their logical order: PyTorch's CPU fills go in memory order, but
its generator's stream differs anyway); the result has empty_like's layout, the options
work, and the errors are the samplers' (PyTorch's texts, and torch's own where installed)."""
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

FACTORY = {"rand_like": ptl.rand, "randn_like": ptl.randn}
SHAPES = [(2, 3), (), (0, 4), (3, 1, 2)]


def _like(shape, dtype, layout):
    x = ptl.zeros(shape, dtype=dtype)
    return x.t() if layout == "transposed" and x.dim() == 2 and x.numel() else x


@pytest.mark.parametrize("name", ["rand_like", "randn_like"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.float16, ptl.bfloat16])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_same_draws_as_the_factory(name, shape, dtype, layout):
    x = _like(shape, dtype, layout)
    g, h = ptl.Generator().manual_seed(5), ptl.Generator().manual_seed(5)
    for _ in range(2):   # the generator advances as the factory's does
        got = getattr(ptl, name)(x, generator=g)
        ref = FACTORY[name](tuple(x.shape), generator=h, dtype=dtype)
        assert got.dtype == dtype and got.shape == x.shape and got.stride() == x.stride()
        assert ptl.equal(got, ref)   # in the order of the elements, whatever the layout
    ptl.manual_seed(4)
    plain = getattr(ptl, name)(x)
    assert ptl.equal(getattr(ptl, name)(x, generator=ptl.Generator().manual_seed(4)), plain)


@pytest.mark.parametrize("low", [None, -3])
@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32, ptl.uint8, ptl.float32, ptl.float64])
def test_randint_like_same_draws_as_randint(low, dtype):
    x = ptl.zeros(3, 4, dtype=dtype)
    g, h = ptl.Generator().manual_seed(9), ptl.Generator().manual_seed(9)
    lo = 0 if low is None or dtype == ptl.uint8 else low
    args = (7,) if low is None else (lo, 7)
    got = ptl.randint_like(x, *args, generator=g)
    ref = ptl.randint(lo, 7, (3, 4), generator=h, dtype=dtype)
    assert got.dtype == dtype and ptl.equal(got, ref)
    assert ((got >= lo) & (got < 7)).all()


@pytest.mark.parametrize("high", [(7, "int64"), (7, "int32"), (7.9, "float64"),
                                  (True, "bool"), (7.0, "float32")])
def test_randint_like_tensor_high(high):
    """randint_like.Tensor(_generator): high alone as a 0-dim CPU tensor of any dtype, read as
    an int64 (7.9 -> 7, True -> 1): the draws of the int high."""
    value, dtype = high
    t = ptl.tensor(value, dtype=getattr(ptl, dtype))
    x = ptl.zeros(3, 4)

    def seeded(call):
        ptl.manual_seed(2)
        return call(ptl.Generator().manual_seed(2))
    ref = seeded(lambda g: ptl.randint_like(x, int(value)))
    for call in (lambda g: ptl.randint_like(x, t), lambda g: ptl.randint_like(x, high=t),
                 lambda g: ptl.randint_like(x, t, generator=g),
                 lambda g: ptl.randint_like(x, high=t, generator=g)):
        got = seeded(call)
        assert got.dtype == ptl.float32 and ptl.equal(got, ref)
    # with low, both are SymInts: integer 0-dim tensors only, as in PyTorch
    g, h = ptl.Generator().manual_seed(3), ptl.Generator().manual_seed(3)
    assert ptl.equal(ptl.randint_like(x, ptl.tensor(2), ptl.tensor(7), generator=g),
                     ptl.randint_like(x, 2, 7, generator=h))


@pytest.mark.parametrize("overload", ["Tensor", "Tensor_generator"])
def test_randint_like_tensor_overloads(overload):
    """randint_like.Tensor and .Tensor_generator are operators with PyTorch's schemas (the
    function is the binding over every overload); a complex high with a zero imaginary part
    reads its real part, as item<int64_t>() does."""
    op = getattr(ptl.ops.aten.randint_like, overload)
    gen = "Generator? generator, " if overload == "Tensor_generator" else ""
    assert str(op._schema) == (
        f"aten::randint_like.{overload}(Tensor self, Tensor high, *, {gen}ScalarType? "
        "dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None, "
        "MemoryFormat? memory_format=None) -> Tensor")
    assert ptl.randint_like is ptl._C._functions["randint_like"]
    x = ptl.zeros(2, 5, dtype=ptl.int32)
    kwargs = {"generator": ptl.Generator().manual_seed(6)} if gen else {}
    ptl.manual_seed(6)
    got = op(x, ptl.tensor(3 + 0j), **kwargs)
    ptl.manual_seed(6)
    ref = ptl.randint_like(x, 3, generator=ptl.Generator().manual_seed(6) if gen else None)
    assert got.dtype == ptl.int32 and ptl.equal(got, ref)


def test_options_and_default_generator():
    x = ptl.zeros(2, 3)
    r = ptl.rand_like(x, generator=ptl.Generator(), dtype=ptl.float64, requires_grad=True)
    assert r.dtype == ptl.float64 and r.requires_grad and r.is_leaf
    i = ptl.randint_like(x, 5, generator=ptl.Generator(), dtype=ptl.int16)
    assert i.dtype == ptl.int16
    ptl.manual_seed(11)
    a = ptl.randn_like(x)
    ptl.manual_seed(11)
    b = ptl.randn_like(x, generator=None)
    assert ptl.equal(a, b)
    ptl.manual_seed(11)
    c = ptl.randn_like(x, generator=ptl.default_generator)
    assert ptl.equal(a, c)


ERRORS = [
    (lambda lib: lib.rand_like(lib.ones(2, dtype=lib.long), generator=lib.Generator()),
     NotImplementedError, "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda lib: lib.randn_like(lib.ones(2, dtype=lib.long), generator=lib.Generator()),
     NotImplementedError, "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda lib: lib.randint_like(lib.ones(2), 5, 5, generator=lib.Generator()),
     RuntimeError, "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda lib: lib.randint_like(lib.ones(2), 0, generator=lib.Generator()),
     RuntimeError, "random_ expects 'from' to be less than 'to', but got from=0 >= to=0"),
    (lambda lib: lib.randint_like(lib.ones(2), lib.tensor([5])),
     RuntimeError, "high must be a scalar tensor and on CPU"),
    (lambda lib: lib.randint_like(lib.ones(2), high=lib.tensor([[5.0]]),
                                  generator=lib.Generator()),
     RuntimeError, "high must be a scalar tensor and on CPU"),
    (lambda lib: lib.randint_like(lib.ones(2), lib.tensor(0.5)),
     RuntimeError, "random_ expects 'from' to be less than 'to', but got from=0 >= to=0"),
    # high read as item<int64_t>(): c10's checked conversion
    (lambda lib: lib.randint_like(lib.ones(2), lib.tensor(1e30)),
     RuntimeError, "value cannot be converted to type int64_t without overflow"),
    (lambda lib: lib.randint_like(lib.ones(2), lib.tensor(float("nan")),
                                  generator=lib.Generator()),
     RuntimeError, "value cannot be converted to type int64_t without overflow"),
    (lambda lib: lib.randint_like(lib.ones(2), lib.tensor(2 + 1j)),
     RuntimeError, "value cannot be converted to type int64_t without overflow"),
    (lambda lib: lib.ops.aten.randint_like.Tensor(lib.ones(2), lib.tensor([5])),
     RuntimeError, "high must be a scalar tensor and on CPU"),
    (lambda lib: lib.ops.aten.randint_like.Tensor_generator(
        lib.ones(2), lib.tensor(5, device="meta"), generator=None),
     RuntimeError, "high must be a scalar tensor and on CPU"),
]


def _raises(lib, i):
    fn, exc, msg = ERRORS[i]
    with pytest.raises(exc) as info:
        fn(lib)
    assert str(info.value) == msg


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors(i):
    _raises(ptl, i)


@torch_ref
@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    _raises(torch, i)


@torch_ref
def test_torch_draws_the_same_way():
    """The property the tests above check, in PyTorch itself (its generator differs)."""
    x = torch.zeros(3, 4).t()
    got = torch.rand_like(x, generator=torch.Generator().manual_seed(3))
    ref = torch.rand(3, 4, generator=torch.Generator().manual_seed(3)).t()
    assert got.stride() == x.stride() and torch.equal(got, ref)
    got = torch.randint_like(x, -2, 4, generator=torch.Generator().manual_seed(3))
    assert torch.equal(got, torch.randint(-2, 4, (3, 4), generator=torch.Generator()
                                          .manual_seed(3)).t().to(got.dtype))
