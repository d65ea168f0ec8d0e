"""The parser's conversions of Python values where PyTorch's and torch.ops' differ from a
plain type check (src/python/arg_parse.c): a huge Python int standing for a number
(Note [Huge int Scalars]), and a bool parameter of a torch.ops call, which takes anything
with a truth value (pybind11's converting cast).  Each outcome is PyTorch 2.13's, checked
against torch where it is installed."""
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

TOO_BIG = [(2**64, "int too big to convert"), (2**100, "int too big to convert"),
           (-2**63 - 1, "can't convert negative int to unsigned"),
           (-2**70, "can't convert negative int to unsigned")]


def _number_calls(lib, v):
    """calls where v stands for a number: a Scalar of a binding, of a torch.ops overload,
    of a method, and a number given for a Tensor parameter"""
    x = lib.ones(3)
    return [lambda: lib.add(x, x, alpha=v), lambda: lib.ops.aten.softshrink.default(x, v),
            lambda: lib.ops.aten.add.Tensor(x, x, alpha=v), lambda: x.clone().fill_(v),
            lambda: x.clamp(max=v), lambda: x * v, lambda: lib.full((2,), v)]


def _outcomes(lib, v):
    got = []
    for call in _number_calls(lib, v):
        with pytest.raises(OverflowError) as info:
            call()
        got.append(str(info.value))
    return got


@pytest.mark.parametrize("v,msg", TOO_BIG)
def test_huge_int_number_is_overflow_error(v, msg):
    assert _outcomes(ptl, v) == [msg] * len(_number_calls(ptl, v))


@torch_ref
@pytest.mark.parametrize("v,msg", TOO_BIG)
def test_huge_int_number_matches_torch(v, msg):
    assert _outcomes(torch, v) == [msg] * len(_number_calls(torch, v))


@pytest.mark.parametrize("v", [2**64, -2**63 - 1])
def test_boxed_huge_int_for_a_tensor_is_refused(v):
    """torch.ops takes no int for a Tensor: a huge one gets its RuntimeError, not the
    number's OverflowError"""
    with pytest.raises(RuntimeError, match="^aten::sinh\\(\\) Expected a value of type "
                                           "'Tensor' for argument 'self' but instead found "
                                           "type 'int'"):
        ptl.ops.aten.sinh.default(v)


@pytest.mark.parametrize("v", [2**63 - 1, -2**63])
def test_int64_extremes_are_numbers(v):
    x = ptl.zeros(2, dtype=ptl.int64)
    assert x.add(v).tolist() == [v, v]
    assert ptl.ops.aten.add.Tensor(x, x, alpha=v).tolist() == [0, 0]
    assert ptl.full((1,), v).tolist() == [v]


@pytest.mark.parametrize("v", [2**63, 2**64 - 1])
def test_uint64_range_is_refused(v):
    """2**63 .. 2**64-1, a uint64 Scalar in PyTorch, has no Scalar here: the parser's
    overflow error"""
    for call in _number_calls(ptl, v):
        with pytest.raises(RuntimeError, match="^Overflow when unpacking long$"):
            call()


def test_int_parameter_overflow_is_unchanged():
    """an int (not a number) parameter keeps the parser's RuntimeError"""
    with pytest.raises(RuntimeError, match="^Overflow when unpacking long$"):
        ptl.narrow(ptl.ones(3), 0, 2**64, 1)


BOOLS = [(1, True), (0, False), (-2, True), (1.5, True), (0.0, False), (None, False),
         ("tensor1", True), ("tensor0", False)]


def _bool_value(lib, v):
    return lib.tensor(v == "tensor1") if isinstance(v, str) else v


@pytest.mark.parametrize("v,keep", BOOLS, ids=[repr(b[0]) for b in BOOLS])
@pytest.mark.parametrize("lib", ["ptl", pytest.param("torch", marks=torch_ref)])
def test_boxed_bool_takes_a_truth_value(lib, v, keep):
    lib = ptl if lib == "ptl" else torch
    x = lib.ones(2, 3)
    got = lib.ops.aten.sum.dim_IntList(x, [1], _bool_value(lib, v))
    assert tuple(got.shape) == ((2, 1) if keep else (2,))
    # the overload packet picks the overload the value parses for, as torch.ops does
    assert tuple(lib.ops.aten.sum(x, [1], _bool_value(lib, v)).shape) == tuple(got.shape)


@pytest.mark.parametrize("v,found", [("a", "str"), ([1], "list"),
                                     (ptl.ones(2), "Tensor")])
def test_boxed_bool_refuses_what_has_no_truth_value(v, found):
    """a str or a list has no nb_bool; a tensor of two elements raises in it"""
    with pytest.raises(RuntimeError, match=f"^aten::sum\\(\\) Expected a value of type 'bool' "
                                           f"for argument 'keepdim' but instead found type "
                                           f"'{found}'"):
        ptl.ops.aten.sum.dim_IntList(ptl.ones(2, 3), [1], v)


@pytest.mark.parametrize("v", [1, None, 1.5])
def test_binding_bool_stays_strict(v):
    """the Python bindings keep PyTorch's TypeError for a bool that is no bool"""
    with pytest.raises(TypeError, match=r"^sum\(\): argument 'keepdim' \(position 3\) must be "
                                        r"bool, not " + type(v).__name__ + "$"):
        ptl.sum(ptl.ones(2, 3), [1], v)
