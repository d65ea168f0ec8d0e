"""Type promotion (ptl_result_type, Note [TensorIterator]) against torch: for random dtype
pairs and operand kinds (n-dim tensor, 0-dim tensor, Python int/float/bool), result_type and
the output dtype of the binary ops equal torch's, including which combinations raise."""
import operator

import pytest

import pytorchlite as ptl
from helpers import ALL_DTYPES, torch, torch_ref

hypothesis = pytest.importorskip("hypothesis", reason="property tests need hypothesis")
st = hypothesis.strategies

pytestmark = torch_ref

KINDS = ["tensor", "zerodim", "int", "float", "bool"]


def tdt(d):
    return getattr(torch, str(d).split(".")[1])


def operand(lib, kind, dtype, value):
    """One operand of `kind` for lib (ptl or torch); `value` is small and non-zero."""
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value) + 0.5
    if kind == "bool":
        return True
    d = dtype if lib is ptl else tdt(dtype)
    data = [value, value] if kind == "tensor" else value
    if dtype == ptl.bool:
        data = [True, True] if kind == "tensor" else True
    return lib.tensor(data, dtype=d)


def outcome(fn):
    """(dtype name, None) or (None, exception type name) of fn()."""
    try:
        r = fn()
    except (RuntimeError, TypeError, NotImplementedError) as e:
        return None, type(e).__name__
    return str(r.dtype if hasattr(r, "dtype") else r).split(".")[-1], None


OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow,
    "eq": operator.eq, "lt": operator.lt, "and": operator.and_, "or": operator.or_,
    "xor": operator.xor, "lshift": operator.lshift,
}
# called as lib.NAME(a, b); the last six take no Python numbers in torch
BY_NAME = {"div_trunc", "fmod", "atan2", "maximum", "fmin", "logical_and", "remainder"}
TORCH_ONLY = BY_NAME - {"div_trunc", "fmod", "remainder"}


def call(lib, name, a, b):
    if name in OPS:
        return OPS[name](a, b)
    if name == "div_trunc":
        return lib.div(a, b, rounding_mode="trunc")
    return getattr(lib, name)(a, b)


dtypes = st.sampled_from(ALL_DTYPES)
kinds = st.sampled_from(KINDS)
values = st.integers(1, 3)


@torch_ref
@hypothesis.settings(max_examples=300, deadline=None, derandomize=True, database=None)
@hypothesis.given(da=dtypes, db=dtypes, ka=kinds, kb=kinds, va=values, vb=values)
def test_result_type_matches_torch(da, db, ka, kb, va, vb):
    hypothesis.assume(ka in ("tensor", "zerodim") or kb in ("tensor", "zerodim"))
    a, b = operand(ptl, ka, da, va), operand(ptl, kb, db, vb)
    ta, tb = operand(torch, ka, da, va), operand(torch, kb, db, vb)
    assert str(ptl.result_type(a, b)) == str(torch.result_type(ta, tb))


@torch_ref
@hypothesis.settings(max_examples=400, deadline=None, derandomize=True, database=None)
@hypothesis.given(name=st.sampled_from(sorted(set(OPS) | BY_NAME)), da=dtypes, db=dtypes,
                  ka=kinds, kb=kinds, va=values, vb=values)
def test_op_output_dtype_matches_torch(name, da, db, ka, kb, va, vb):
    hypothesis.assume(ka in ("tensor", "zerodim") or kb in ("tensor", "zerodim"))
    if name in TORCH_ONLY:   # no Python-number overloads in torch for these
        hypothesis.assume(ka in ("tensor", "zerodim") and kb in ("tensor", "zerodim"))
    if name == "fmod":   # torch.fmod(number, tensor) is a TypeError there, not here (binding)
        hypothesis.assume(ka in ("tensor", "zerodim"))
    a, b = operand(ptl, ka, da, va), operand(ptl, kb, db, vb)
    ta, tb = operand(torch, ka, da, va), operand(torch, kb, db, vb)
    ours = outcome(lambda: call(ptl, name, a, b))
    theirs = outcome(lambda: call(torch, name, ta, tb))
    assert ours == theirs, f"{name}({ka} {da}, {kb} {db}): ours {ours}, torch {theirs}"


@torch_ref
@hypothesis.settings(max_examples=150, deadline=None, derandomize=True, database=None)
@hypothesis.given(name=st.sampled_from(["add", "mul", "truediv", "eq", "and", "floordiv"]),
                  da=dtypes, db=dtypes, kb=kinds)
def test_inplace_dtype_rules_match_torch(name, da, db, kb):
    """In-place keeps self's dtype or raises "result type ... can't be cast" as torch."""
    iop = {"add": operator.iadd, "mul": operator.imul, "truediv": operator.itruediv,
           "eq": lambda x, y: x.eq_(y), "and": operator.iand,
           "floordiv": operator.ifloordiv}[name]
    a, b = operand(ptl, "tensor", da, 2), operand(ptl, kb, db, 1)
    ta, tb = operand(torch, "tensor", da, 2), operand(torch, kb, db, 1)
    assert outcome(lambda: iop(a, b)) == outcome(lambda: iop(ta, tb))
