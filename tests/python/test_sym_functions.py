"""torch.sym_int, sym_float, sym_max, sym_min, sym_not, sym_ite, sym_sum, sym_sqrt,
sym_fresh_size, sym_constrain_range(_for_size) on plain numbers (pytorchlite/_sym.py): the
answers, types and errors PyTorch 2.13 gives, stored; and checked against torch itself where
it is installed."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

# (function name, args, kwargs, PyTorch's answer): the answer's value and type both count
CASES = [
    ("sym_int", (3.7,), {}, 3), ("sym_int", (-3.7,), {}, -3), ("sym_int", (True,), {}, 1),
    ("sym_int", ("3",), {}, 3), ("sym_float", (3,), {}, 3.0), ("sym_float", (True,), {}, 1.0),
    ("sym_float", ("2.5",), {}, 2.5), ("sym_max", (2, 3.0), {}, 3.0),
    ("sym_max", (3, 2.0), {}, 3.0), ("sym_max", (2, 3), {}, 3), ("sym_max", (True, 0), {}, True),
    ("sym_max", (np.int32(4), 1), {}, np.int32(4)), ("sym_max", (np.float32(1), 2), {}, 2.0),
    ("sym_min", (2, 3.0), {}, 2.0), ("sym_min", (3.0, 2), {}, 2.0), ("sym_min", (2, 3), {}, 2),
    ("sym_not", (True,), {}, False), ("sym_not", (0,), {}, True),
    ("sym_ite", (True, 1, 2), {}, 1), ("sym_ite", (False, 1.0, 2.0), {}, 2.0),
    ("sym_sum", ([1, 2, 3],), {}, 6), ("sym_sum", ((1, 2.5, 3),), {}, 6.5),
    ("sym_sum", (1, 2, 3), {}, 6), ("sym_sum", ([],), {}, 0), ("sym_sum", (), {}, 0),
    ("sym_sqrt", (4,), {}, 2.0), ("sym_sqrt", (2.0,), {}, math.sqrt(2.0)),
    ("sym_fresh_size", (3,), {}, 3), ("sym_constrain_range", (3,), dict(min=0, max=5), None),
    ("sym_constrain_range", (-5,), dict(max=3), None),
    ("sym_constrain_range_for_size", (3,), {}, None),
    ("sym_constrain_range_for_size", (-1,), dict(min=-3), None),
]

ERRORS = [
    ("sym_int", (float("inf"),), {}, OverflowError, "cannot convert float infinity to integer"),
    ("sym_int", (float("nan"),), {}, ValueError, "cannot convert float NaN to integer"),
    ("sym_max", (1, 2, 3), {}, TypeError, "takes 2 positional arguments but 3 were given"),
    ("sym_max", ("a", 1), {}, AssertionError, "got <class 'str'>"),
    ("sym_min", (1, None), {}, AssertionError, "got <class 'NoneType'>"),
    ("sym_ite", (0, 1, 2), {}, AssertionError, "expected SymBool or bool, got <class 'int'>"),
    ("sym_ite", (False, 1.0, 2), {}, AssertionError,
     "type mismatch: <class 'float'> vs <class 'int'>"),
    ("sym_sqrt", (-1,), {}, ValueError, "math domain error"),
    ("sym_constrain_range", (7,), dict(min=0, max=5), RuntimeError,
     r"Invalid value range for 7 between \[0, 5\]."),
    ("sym_constrain_range", (5,), dict(max=2), RuntimeError,
     r"Invalid value range for 5 between \[-9223372036854775808, 2\]."),
    ("sym_constrain_range", (5,), dict(min=6, max=2), RuntimeError,
     "Max must be greater than or equal to min. Got min=6 max=2"),
    ("sym_constrain_range", (3, 0, 5), {}, TypeError, "takes 1 positional argument"),
    ("sym_constrain_range_for_size", (-1,), {}, RuntimeError,
     r"Invalid value range for -1 between \[0, 9223372036854775807\]."),
    ("sym_constrain_range_for_size", (1,), dict(max=2), RuntimeError,
     "Max value to constrain_range_for_size must be greater than 2. got: 2"),
    ("sym_constrain_range_for_size", (2,), dict(min=3, max=1), RuntimeError,
     "Max value to constrain_range_for_size must be greater than 2. got: 1"),
    ("sym_constrain_range_for_size", (4,), dict(min=5, max=3), RuntimeError,
     "Max must be greater than or equal to min. Got min=5 max=3"),
]


@pytest.mark.parametrize("name,args,kwargs,expected", CASES)
def test_answers(name, args, kwargs, expected):
    got = getattr(ptl, name)(*args, **kwargs)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("name,args,kwargs,exc,msg", ERRORS)
def test_errors(name, args, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        getattr(ptl, name)(*args, **kwargs)


def test_tensor_arguments():
    assert ptl.sym_int(ptl.tensor(3.5)) == 3 and ptl.sym_float(ptl.tensor(3)) == 3.0
    assert ptl.sym_not(ptl.tensor(True)) is False
    total = ptl.sym_sum([ptl.tensor(1.0), ptl.tensor(2.0)])
    assert isinstance(total, ptl.Tensor) and total.item() == 3.0
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value "
                                           "is ambiguous"):
        ptl.sym_not(ptl.tensor([True, False]))
    with pytest.raises(AssertionError, match="got <class 'pytorchlite._tensor.Tensor'>"):
        ptl.sym_max(ptl.tensor(1), ptl.tensor(2))


def test_torch_function_sees_them():
    seen = []

    class Logged(ptl.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func.__name__)
            return 7

    x = ptl.tensor(1.0).as_subclass(Logged)
    assert ptl.sym_int(x) == 7 and ptl.sym_max(x, 1) == 7
    assert seen == ["sym_int", "sym_max"]


@torch_ref
@pytest.mark.parametrize("name,args,kwargs,expected", CASES)
def test_answers_match_torch(name, args, kwargs, expected):
    theirs = getattr(torch, name)(*args, **kwargs)
    assert theirs == expected and type(theirs) is type(expected)


@torch_ref
@pytest.mark.parametrize("name,args,kwargs,exc,msg", ERRORS)
def test_errors_match_torch(name, args, kwargs, exc, msg):
    with pytest.raises(exc, match=msg):
        getattr(torch, name)(*args, **kwargs)
