"""out= on the operator functions that have no out overload of their own (Note [Out through
the functional overload] in src/python/arg_parse.c) and on the Python composites: the value is
the call's without out, written into out (resized, cast), and out is what is returned; PyTorch's
errors and warning.  The generated table is checked against the installed torch."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref

x = np.random.default_rng(0).standard_normal((3, 4))
m = np.random.default_rng(1).standard_normal((4, 5))
v = np.random.default_rng(2).standard_normal(4)
b3 = np.random.default_rng(3).standard_normal((2, 3, 4))
b4 = np.random.default_rng(4).standard_normal((2, 4, 5))
idx = np.array([[0], [2], [1]])
sq = np.random.default_rng(5).standard_normal((3, 3)) + 3 * np.eye(3)


def _t(lib, a, dtype=None):
    return lib.tensor(a, dtype=dtype if dtype is not None else lib.float64)


# name -> (call(lib, out), outputs: dtypes of the out tensors ("f": float64, "l": int64, "b": bool))
CASES = {
    "addmm": (lambda L, o: L.addmm(_t(L, np.ones((3, 5))), _t(L, x), _t(L, m), out=o), "f"),
    "addmv": (lambda L, o: L.addmv(_t(L, np.ones(3)), _t(L, x), _t(L, v), out=o), "f"),
    "all_dim": (lambda L, o: L.all(_t(L, x) > 0, 1, out=o), "b"),
    "any": (lambda L, o: L.any(_t(L, x) > 0, out=o), "b"),
    "arange": (lambda L, o: L.arange(0, 5, out=o), "f"),
    "argmax": (lambda L, o: L.argmax(_t(L, x), 1, out=o), "l"),
    "argsort": (lambda L, o: L.argsort(_t(L, x), stable=True, out=o), "l"),
    "baddbmm": (lambda L, o: L.baddbmm(_t(L, np.ones((2, 3, 5))), _t(L, b3), _t(L, b4), out=o),
                "f"),
    "bmm": (lambda L, o: L.bmm(_t(L, b3), _t(L, b4), out=o), "f"),
    "cat": (lambda L, o: L.cat([_t(L, x), _t(L, x)], 1, out=o), "f"),
    "clamp_min": (lambda L, o: L.clamp_min(_t(L, x), 0.25, out=o), "f"),
    "cummax": (lambda L, o: L.cummax(_t(L, x), 1, out=o), "fl"),
    "cumsum": (lambda L, o: L.cumsum(_t(L, x), 1, out=o), "f"),
    "diag": (lambda L, o: L.diag(_t(L, v), out=o), "f"),
    "dot": (lambda L, o: L.dot(_t(L, v), _t(L, v), out=o), "f"),
    "eye": (lambda L, o: L.eye(3, 2, out=o), "f"),
    "gather": (lambda L, o: L.gather(_t(L, x), 1, L.tensor(idx), out=o), "f"),
    "index_reduce": (lambda L, o: L.index_reduce(_t(L, x), 0, L.tensor([0, 0, 2]), _t(L, x), "amax",
                                                 out=o), "f"),
    "isin": (lambda L, o: L.isin(_t(L, x), _t(L, x[0]), out=o), "b"),
    "kthvalue": (lambda L, o: L.kthvalue(_t(L, x), 2, 1, out=o), "fl"),
    "lerp": (lambda L, o: L.lerp(_t(L, x), _t(L, x) * 2, 0.25, out=o), "f"),
    "linalg.inv": (lambda L, o: L.linalg.inv(_t(L, sq), out=o), "f"),
    "linalg.matrix_norm": (lambda L, o: L.linalg.matrix_norm(_t(L, x), out=o), "f"),
    "linalg.vector_norm": (lambda L, o: L.linalg.vector_norm(_t(L, x), dim=1, out=o), "f"),
    "linalg.matrix_power": (lambda L, o: L.linalg.matrix_power(_t(L, sq), 3, out=o), "f"),
    "logsumexp": (lambda L, o: L.logsumexp(_t(L, x), 1, out=o), "f"),
    "masked_select": (lambda L, o: L.masked_select(_t(L, x), _t(L, x) > 0, out=o), "f"),
    "matmul": (lambda L, o: L.matmul(_t(L, x), _t(L, m), out=o), "f"),
    "max_dim": (lambda L, o: L.max(_t(L, x), 1, out=o), "fl"),
    "max_other": (lambda L, o: L.max(_t(L, x), _t(L, x) * -1, out=o), "f"),
    "mean_dim": (lambda L, o: L.mean(_t(L, x), 1, out=o), "f"),
    "nanmean": (lambda L, o: L.nanmean(_t(L, x), 1, out=o), "f"),
    "narrow_copy": (lambda L, o: L.narrow_copy(_t(L, x), 1, 1, 2, out=o), "f"),
    "nonzero": (lambda L, o: L.nonzero(_t(L, x) > 0, out=o), "l"),
    "nonzero_static": (lambda L, o: L.nonzero_static(_t(L, x) > 0, size=4, out=o), "l"),
    "ones": (lambda L, o: L.ones(2, 3, out=o), "f"),
    "outer": (lambda L, o: L.outer(_t(L, v), _t(L, v), out=o), "f"),
    "prod_dim": (lambda L, o: L.prod(_t(L, x), 1, out=o), "f"),
    "quantile": (lambda L, o: L.quantile(_t(L, x), 0.25, 1, out=o), "f"),
    "slice_scatter": (lambda L, o: L.slice_scatter(_t(L, x), _t(L, np.zeros((3, 1))), 1, 0, 1,
                                                   out=o), "f"),
    "sort": (lambda L, o: L.sort(_t(L, x), 1, out=o), "fl"),
    "stack": (lambda L, o: L.stack([_t(L, x), _t(L, x)], out=o), "f"),
    "std_dim": (lambda L, o: L.std(_t(L, x), 1, out=o), "f"),
    "sum_dim": (lambda L, o: L.sum(_t(L, x), (0, 1), out=o), "f"),
    "take": (lambda L, o: L.take(_t(L, x), L.tensor([0, 5, 11]), out=o), "f"),
    "tensordot": (lambda L, o: L.tensordot(_t(L, x), _t(L, m), 1, out=o), "f"),
    "topk": (lambda L, o: L.topk(_t(L, x), 2, out=o), "fl"),
    "tril": (lambda L, o: L.tril(_t(L, x), out=o), "f"),
    "var_dim": (lambda L, o: L.var(_t(L, x), 1, out=o), "f"),
    "zeros": (lambda L, o: L.zeros(2, 3, out=o), "f"),
}
KINDS = {"f": "float64", "l": "int64", "b": "bool"}


def _outs(lib, kinds):
    made = tuple(lib.empty(0, dtype=getattr(lib, KINDS[k])) for k in kinds)
    return made[0] if len(made) == 1 else made


def _arrays(r):
    return [t.numpy() for t in (r if isinstance(r, tuple) else (r,))]


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_is_written_with_the_value_of_the_call_without_it(name):
    call, kinds = CASES[name]
    out = _outs(ptl, kinds)
    got = call(ptl, out)
    want = call(ptl, None)
    outs = out if isinstance(out, tuple) else (out,)
    for o, r in zip(outs, got if isinstance(got, tuple) else (got,)):
        assert o is r
    for a, b, k in zip(_arrays(got), _arrays(want), kinds):
        assert a.dtype == np.dtype(KINDS[k]) and a.shape == b.shape   # factories: out's dtype
        np.testing.assert_array_equal(a, b)


@torch_ref
@pytest.mark.parametrize("name", sorted(CASES))
def test_out_matches_torch(name):
    call, kinds = CASES[name]
    got = call(ptl, _outs(ptl, kinds))
    want = call(torch, _outs(torch, kinds))
    for a, b in zip(_arrays(got), [t.numpy() for t in (want if isinstance(want, tuple)
                                                        else (want,))]):
        assert a.shape == b.shape and str(a.dtype) == str(b.dtype)
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_a_dtype_parameter_left_none_is_outs():
    """sum, cumsum and zeros compute in out's dtype, as PyTorch's out= overloads do."""
    a = ptl.tensor([[1.5, 2.25], [3.0, 4.5]])
    o = ptl.empty(0, dtype=ptl.float64)
    ptl.sum(a, 1, out=o)
    assert o.dtype == ptl.float64 and o.tolist() == [3.75, 7.5]
    z = ptl.empty(0, dtype=ptl.int64)
    assert ptl.zeros(2, out=z).dtype == ptl.int64 and z.tolist() == [0, 0]
    c = ptl.empty(0, dtype=ptl.float64)
    ptl.cumsum(ptl.tensor([1, 2, 3]), 0, out=c)
    assert c.tolist() == [1.0, 3.0, 6.0]


def test_a_result_out_cannot_hold_is_refused_before_writing():
    o = ptl.full((2,), 7, dtype=ptl.int64)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ptl.cat([ptl.ones(1), ptl.ones(1)], out=o)
    assert o.tolist() == [7, 7]


def test_out_with_elements_of_another_shape_is_resized_with_pytorchs_warning():
    o = ptl.empty(2)
    with pytest.warns(UserWarning, match=r"An output with one or more elements was resized "
                                         r"since it had shape \[2\], which does not match the "
                                         r"required output shape \[3, 4\]"):
        ptl.cumsum(ptl.ones(3, 4), 1, out=o)
    assert o.shape == (3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ptl.cumsum(ptl.ones(3, 4), 1, out=ptl.empty(0))
        ptl.cumsum(ptl.ones(3, 4), 1, out=o)


def test_out_none_is_the_call_without_out():
    assert ptl.cumsum(ptl.ones(3), 0, out=None).tolist() == [1.0, 2.0, 3.0]
    assert ptl.sum(ptl.ones(2, 2), 0, out=None).tolist() == [2.0, 2.0]


def test_inputs_that_require_grad_are_refused():
    a = ptl.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^cumsum\(\): functions with out=\.\.\. arguments "
                                           r"don't support automatic differentiation, but one "
                                           r"of the arguments requires grad\.$"):
        ptl.cumsum(a, 0, out=ptl.empty(0))
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        ptl.cat([ptl.ones(1), a], out=ptl.empty(0))
    with ptl.no_grad():
        assert ptl.cumsum(a, 0, out=ptl.empty(0)).tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("call, message", [
    (lambda: ptl.cumsum(ptl.ones(3), 0, out=3), "cumsum(): argument 'out' must be Tensor, not int"),
    (lambda: ptl.max(ptl.ones(2, 2), 1, out=ptl.empty(0)), "max() received an invalid"),
    (lambda: ptl.transpose(ptl.ones(2, 2), 0, 1, out=ptl.empty(0)), "transpose()"),
])
def test_an_out_of_the_wrong_kind_or_on_a_function_without_out_is_a_type_error(call, message):
    with pytest.raises(TypeError) as e:
        call()
    assert message in str(e.value)


def test_a_tuple_out_of_the_wrong_length_is_a_type_error():
    with pytest.raises(TypeError, match="expected tuple of 2 elements but got 3"):
        ptl.sort(ptl.ones(3), out=(ptl.empty(0), ptl.empty(0, dtype=ptl.int64), ptl.empty(0)))


def test_docstrings_show_the_python_signatures_and_the_dispatcher_operators():
    doc = ptl.add.__doc__
    assert doc.startswith("add(Tensor input, Tensor other, *, Number alpha = 1, "
                          "Tensor out = None)\n")
    assert "    aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor\n" in doc
    assert "cumsum(Tensor input, int dim, *, torch.dtype dtype = None, Tensor out = None)" in \
        ptl.cumsum.__doc__
    assert ptl.Tensor.add.__doc__.startswith("add(Tensor other, *, Number alpha = 1)\n")


def _load_tool():
    import importlib.util
    import os
    from helpers import ROOT
    spec = importlib.util.spec_from_file_location(
        "torch_out_overloads_tool", os.path.join(ROOT, "tools", "torch_out_overloads.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


TOOL = _load_tool()
with open(TOOL.HEADER) as _f:
    TABLE = TOOL.read_header(_f.read())
FUNCTIONS = TOOL.functions_of(TABLE)


@torch_ref
def test_the_table_is_what_the_tool_writes_from_torch():
    """src/python/torch_out_overloads.h is tools/torch_out_overloads.py's output for the
    installed torch and this build, byte for byte: the overloads and each output's dtype rule
    as torch showed it."""
    with open(TOOL.HEADER) as f:
        assert f.read() == TOOL.generate()


def _probe(lib, qual):
    path, schema = FUNCTIONS[qual]
    args, kwargs = TOOL.sample(lib, qual, schema)
    return TOOL.probe(lib, TOOL.lib_function(lib, path), args, kwargs)


def test_the_table_names_every_overload_of_ours_it_was_written_from():
    assert sorted(FUNCTIONS) == sorted(TABLE)
    assert {"mm.out", "add.out", "index_select.out", "cumsum", "sort"} <= set(TABLE)


@pytest.mark.parametrize("qual", sorted(TABLE))
def test_out_follows_the_dtype_rule_of_the_table(qual):
    """Each output given a wider and a narrower dtype than its result's: cast into where the
    table says so, refused with the table's message (its template rendered) where it is
    strict.  The native out overloads (add.out, mm.out...) check in their kernels, the others
    through the functional overload (Note [Out through the functional overload])."""
    strict, also = TABLE[qual]
    assert _probe(ptl, qual) == (strict, also)


@torch_ref
@pytest.mark.parametrize("qual", sorted(set(TABLE) - set(TOOL.NO_CPU_KERNEL)))
def test_out_follows_the_dtype_rule_of_torch(qual):
    path, schema = FUNCTIONS[qual]
    args, kwargs = TOOL.sample(torch, qual, schema)
    assert _probe(ptl, qual) == TOOL.probe(torch, TOOL.lib_function(torch, path), args, kwargs)


@torch_ref
@pytest.mark.parametrize("qual", sorted(TOOL.NO_CPU_KERNEL))
def test_out_dtype_overloads_take_the_rule_of_their_base(qual):
    """torch's CPU build has no kernel for mm(..., out_dtype) and its family, so the tool gives
    them the rule of the overload without out_dtype (strict, as torch's meta functions are)."""
    path, schema = FUNCTIONS[qual]
    args, kwargs = TOOL.sample(torch, qual, schema)
    with pytest.raises(NotImplementedError):
        TOOL.lib_function(torch, path)(*args, **kwargs)
    assert TABLE[qual] == TABLE[TOOL.NO_CPU_KERNEL[qual]] and TABLE[qual][0] != [None]


# The functions written in Python with out=: a valid call of each (lib -> (args, kwargs)) and
# its outputs' dtype rule as torch shows it to tools/torch_out_overloads.py's probe (strict
# templates per output or None where cast, the dtype a strict output also accepts)
_M = TOOL._matrix
_SAME = "Expected out tensor to have dtype {result_cpp}, but got {out_cpp} instead"
_MATRIX_NORM = "linalg.matrix_norm expected out tensor dtype {result} but got: {out}"
COMPOSITES = {
    "nanmean": (lambda L: ((_M(L), 1), {}), [None]),
    "column_stack": (lambda L: (([_M(L), _M(L)],), {}), [None]),
    "dstack": (lambda L: (([_M(L), _M(L)],), {}), [None]),
    "addr": (lambda L: ((_M(L), L.ones(3), L.ones(3)), {}), [None]),
    "special.logit": (lambda L: ((_M(L) / 5,), {}), [None]),
    "special.xlog1py": (lambda L: ((_M(L), _M(L)), {}), [None]),
    "special.sinc": (lambda L: ((_M(L),), {}), [None]),
    "deg2rad": (lambda L: ((_M(L),), {}), [None]),
    "mvlgamma": (lambda L: ((_M(L) + 2, 2), {}), [None]),
    "logaddexp": (lambda L: ((_M(L), _M(L)), {}), [None]),
    "ldexp": (lambda L: ((_M(L), _M(L)), {}), [None]),
    "copysign": (lambda L: ((_M(L), _M(L)), {}), [None]),
    "xlogy": (lambda L: ((_M(L), _M(L)), {}), [None]),
    "sgn": (lambda L: ((_M(L),), {}), ["Found dtype {out} but expected {result}"]),
    "signbit": (lambda L: ((_M(L),), {}), ["signbit does not support non-boolean outputs."]),
    "isposinf": (lambda L: ((_M(L),), {}), ["isposinf does not support non-boolean outputs."]),
    "isneginf": (lambda L: ((_M(L),), {}), ["isneginf does not support non-boolean outputs."]),
    "heaviside": (lambda L: ((_M(L), _M(L)), {}),
                  ["heaviside is not yet implemented for tensors with different dtypes."]),
    "float_power": (lambda L: ((_M(L), 2), {}),
                    ["the output given to float_power has dtype {out} but the operation's result "
                     "requires dtype {result}"]),
    "tensordot": (lambda L: ((_M(L), _M(L)), {"dims": 1}),
                  ["tensordot: Expected the output tensor to have dtype {result}, but got an "
                   "output tensor with dtype {out}"]),
    "linalg.qr": (lambda L: ((_M(L),), {}), [_SAME, _SAME]),
    "linalg.matrix_norm": (lambda L: ((_M(L),), {}), [_MATRIX_NORM]),
    "linalg.norm": (lambda L: ((_M(L),), {}),
                    ["linalg.norm expected out tensor dtype {result} but got: {out}"]),
    "linalg.matrix_power": (lambda L: ((_M(L), 2), {}), [_SAME]),
    "linalg.det": (lambda L: ((_M(L),), {}), [_SAME]),
    "nonzero": (lambda L: ((_M(L),), {}),
                ["nonzero: Expected out tensor to have scalar type {result} but got scalar "
                 "type{out}"]),
    "isin": (lambda L: ((_M(L), _M(L)), {}), [_SAME]),
    "narrow_copy": (lambda L: ((_M(L), 0, 0, 2), {}),
                    ["Expected self.dtype() == output.dtype() to be true, but got false.  (Could "
                     "this error message be improved?  If so, please report an enhancement "
                     "request to PyTorch.)"]),
    "norm": (lambda L: ((_M(L),), {}), [_SAME]),
    "nuclear_norm": (lambda L: ((_M(L),), {}), [_MATRIX_NORM]),
    "frobenius_norm": (lambda L: ((_M(L), [0, 1]), {}), [_SAME]),
}


def _probe_composite(lib, name):
    sample, _ = COMPOSITES[name]
    args, kwargs = sample(lib)
    return TOOL.probe(lib, TOOL.lib_function(lib, name), args, kwargs)


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_the_python_functions_follow_their_dtype_rule(name):
    assert _probe_composite(ptl, name) == (COMPOSITES[name][1], None)


@torch_ref
@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_the_dtype_rule_of_the_python_functions_is_torchs(name):
    assert _probe_composite(torch, name) == (COMPOSITES[name][1], None)


@pytest.mark.parametrize("call, message", [
    (lambda o: ptl.mm(ptl.ones(2, 3), ptl.ones(3, 2), out=o),
     "Expected out tensor to have dtype float, but got double instead"),
    (lambda o: ptl.index_select(ptl.ones(2, 3), 0, ptl.tensor([1]), out=o),
     "index_select(): self and result must have the same scalar type"),
    (lambda o: ptl.sort(ptl.ones(3), out=(o, ptl.empty(0, dtype=ptl.int64))),
     "Expected out tensor to have dtype float, but got double instead"),
    (lambda o: ptl.amax(ptl.ones(2, 3), 1, out=o),
     "Expected the dtype for input and out to match, but got Float for input's dtype and Double "
     "for out's dtype."),
    (lambda o: ptl.median(ptl.ones(2, 3), 1, out=(o, ptl.empty(0, dtype=ptl.int64))),
     "Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but "
     "type torch.DoubleTensor does not equal torch.FloatTensor (while checking arguments for "
     "median)"),
])
def test_a_strict_out_of_a_wider_dtype_is_refused_before_writing(call, message):
    o = ptl.full((2,), 7.0, dtype=ptl.float64)
    with pytest.raises(RuntimeError) as e:
        call(o)
    assert str(e.value) == message
    assert o.tolist() == [7.0, 7.0]


def test_a_dtype_parameter_left_none_is_not_outs_where_out_is_strict():
    """softmax's out= does not compute in out's dtype (sum's does): a float64 out of a float32
    softmax is refused, as in PyTorch."""
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype float, but got "
                                           "double instead"):
        ptl.softmax(ptl.ones(2, 3), 1, out=ptl.empty(0, dtype=ptl.float64))
    o = ptl.empty(0, dtype=ptl.float64)
    ptl.softmax(ptl.ones(2, 3), 1, dtype=ptl.float64, out=o)
    assert o.tolist() == [[1 / 3] * 3] * 2


def test_all_and_any_also_write_a_uint8_out():
    o = ptl.empty(0, dtype=ptl.uint8)
    assert ptl.all(ptl.ones(2, 3), 1, out=o).tolist() == [1, 1] and o.dtype == ptl.uint8
    with pytest.raises(RuntimeError, match="^any only supports bool tensor for result, got: "
                                           "Long$"):
        ptl.any(ptl.ones(2, 3), out=ptl.empty(0, dtype=ptl.int64))


RESIZED = (r"^An output with one or more elements was resized since it had shape {}, which does "
           r"not match the required output shape {}\. This behavior is deprecated, and in a "
           r"future PyTorch release outputs will not be resized unless they have zero elements\. "
           r"You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
           r"with t\.resize_\(0\)\.$")

# one out= call per route: TensorIterator (add, neg, where, clamp, frexp), the kernels that
# resize themselves (mm, index_select), the functional overload (cumsum, sort) and the Python
# composites (logaddexp, heaviside, tensordot); each makes a [2, 3] result into o (frexp's and
# sort's second output has the right shape).  One line each: the warning names it.
ROUTES = {
    "add": lambda L, o: L.add(L.ones(2, 3), L.ones(3), out=o),
    "neg": lambda L, o: L.neg(L.ones(2, 3), out=o),
    "where": lambda L, o: L.where(L.ones(2, 3) > 0, L.ones(3), L.zeros(2, 1), out=o),
    "clamp": lambda L, o: L.clamp(L.ones(2, 3), 0.5, out=o),
    "frexp": lambda L, o: L.frexp(L.ones(2, 3), out=(o, L.empty(2, 3, dtype=L.int32))),
    "mm": lambda L, o: L.mm(L.ones(2, 4), L.ones(4, 3), out=o),
    "index_select": lambda L, o: L.index_select(L.ones(4, 3), 0, L.tensor([0, 2]), out=o),
    "cumsum": lambda L, o: L.cumsum(L.ones(2, 3), 1, out=o),
    "sort": lambda L, o: L.sort(L.ones(2, 3), out=(o, L.empty(2, 3, dtype=L.int64))),
    "logaddexp": lambda L, o: L.logaddexp(L.ones(2, 3), L.ones(3), out=o),
    "heaviside": lambda L, o: L.heaviside(L.ones(2, 3), L.ones(3), out=o),
    "tensordot": lambda L, o: L.tensordot(L.ones(2, 4), L.ones(4, 3), dims=1, out=o),
}


def _warnings_of(call):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        call()
    return [str(x.message) for x in w if issubclass(x.category, UserWarning)]


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_resizing_an_out_with_elements_warns_once(route):
    o = ptl.empty(5)
    got = _warnings_of(lambda: ROUTES[route](ptl, o))
    assert len(got) == 1 and re.match(RESIZED.format(r"\[5\]", r"\[2, 3\]"), got[0]), got
    assert o.shape == (2, 3)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_an_empty_out_or_one_of_the_right_shape_is_resized_quietly(route):
    o = ptl.empty(0)
    assert _warnings_of(lambda: ROUTES[route](ptl, o)) == []
    assert o.shape == (2, 3)
    assert _warnings_of(lambda: ROUTES[route](ptl, o)) == []


@torch_ref
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_the_resize_warning_is_torchs(route):
    """The same text, once (torch adds where in its C++ it was raised)."""
    got = _warnings_of(lambda: ROUTES[route](ptl, ptl.empty(5)))
    want = _warnings_of(lambda: ROUTES[route](torch, torch.empty(5)))
    assert got == [re.sub(r" \(Triggered internally at .*\)$", "", w) for w in want]


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_the_resize_warning_names_the_line_that_passed_out(route):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ROUTES[route](ptl, ptl.empty(5))
    [got] = [x for x in w if issubclass(x.category, UserWarning)]
    code = ROUTES[route].__code__
    assert (got.filename, got.lineno) == (code.co_filename, code.co_firstlineno)


def test_resize_output_binding_resizes_warns_and_says_whether_it_resized():
    o = ptl.arange(6.0)
    with pytest.warns(UserWarning) as w:
        assert ptl._C._resize_output(o, ptl.Size([2, 2])) is True
    assert len(w) == 1 and re.match(RESIZED.format(r"\[6\]", r"\[2, 2\]"), str(w[0].message))
    assert w[0].filename == __file__
    assert o.shape == (2, 2) and o.flatten().tolist() == [0.0, 1.0, 2.0, 3.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ptl._C._resize_output(o, (2, 2)) is False
        e = ptl.empty(0)
        assert ptl._C._resize_output(e, (3, 0, 2)) is True and e.shape == (3, 0, 2)
        assert ptl._C._resize_output(e, ()) is True and e.shape == () and e.numel() == 1


def test_resize_output_binding_grows_the_storage_of_a_view_past_its_offset():
    base = ptl.zeros(4)
    view = base[2:]
    with pytest.warns(UserWarning, match="was resized"):
        ptl._C._resize_output(view, (3, 2))
    view.fill_(1.0)
    assert view.shape == (3, 2) and view.storage_offset() == 2
    assert base.tolist() == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("args, exc, msg", [
    ((3, (2,)), TypeError, r"^_resize_output\(\) argument 1 must be .*TensorBase, not int$"),
    ((None, (2,)), TypeError, r"^_resize_output\(\) argument 1 must be .*TensorBase, not None"),
    (("o", [2]), TypeError, r"^_resize_output\(\) argument 2 must be tuple, not list$"),
    (("o", (2, 1.5)), TypeError, r"^_resize_output\(\): shape must be a tuple of ints, but "
                                 r"got float at position 1$"),
    (("o", (2,) * 30), RuntimeError, r"^_resize_output\(\): a shape of 30 dimensions; "
                                     r"pytorchlite supports at most \d+$"),
    (("o",), TypeError, r"^_resize_output\(\) takes exactly 2 arguments \(1 given\)$"),
])
def test_resize_output_binding_argument_errors(args, exc, msg):
    o = ptl.ones(2)
    args = tuple(o if a == "o" else a for a in args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(exc, match=msg):
            ptl._C._resize_output(*args)
    assert o.shape == (2,)


def test_resize_output_binding_refuses_a_negative_size_without_warning():
    o = ptl.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeError, match="negative"):
            ptl._C._resize_output(o, (2, -1))
    assert o.shape == (2,)


@pytest.mark.parametrize("route", ["add", "cumsum", "logaddexp"])
def test_the_resize_warning_raised_as_an_error_propagates(route):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning, match="was resized"):
            ROUTES[route](ptl, ptl.empty(5))


@pytest.mark.parametrize("lib", [ptl, pytest.param(torch, marks=torch_ref)], ids=["ptl", "torch"])
@pytest.mark.parametrize("route", sorted(ROUTES))
def test_an_out_that_requires_grad_is_resized_under_no_grad_and_bumped_once(route, lib):
    """As PyTorch's resize_output, which does not dispatch: no resize_ (that refuses a tensor
    that requires grad), and one version bump, the write's."""
    o = lib.empty(5, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib.no_grad():
            ROUTES[route](lib, o)
    assert tuple(o.shape) == (2, 3) and o._version == 1


def _frexp_into_wrong_shapes(L):
    return L.frexp(L.ones(3), out=(L.empty(2), L.empty(5, dtype=L.int32)))


def test_each_resized_output_warns():
    """frexp's two outputs, both resized: two warnings, in order (PyTorch warns per output);
    sort's, with one of the right shape: one."""
    got = _warnings_of(lambda: _frexp_into_wrong_shapes(ptl))
    assert len(got) == 2, got
    assert re.match(RESIZED.format(r"\[2\]", r"\[3\]"), got[0])
    assert re.match(RESIZED.format(r"\[5\]", r"\[3\]"), got[1])
    if torch is not None:
        want = _warnings_of(lambda: _frexp_into_wrong_shapes(torch))
        assert got == [re.sub(r" \(Triggered internally at .*\)$", "", w) for w in want]
    got = _warnings_of(lambda: ptl.sort(ptl.ones(2, 3), out=(ptl.empty(5),
                                                             ptl.empty(2, 3, dtype=ptl.int64))))
    assert len(got) == 1
