"""Every operator of src/aten/ops.def, driven by its entry in tests/opinfo.py: the samples run
in each dtype the entry lists, match the NumPy reference in float64 (exactly for integers and
bools) where one is given, in-place and out= variants agree with the functional op, and the
error samples raise.  Also the completeness of the operator table (STYLE 2.5): every op has
a CPU kernel (or a CompositeImplicitAutograd one), a Python binding where its flags ask for
one, and a derivatives.def row unless it is not differentiable."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import FLOAT_DTYPES, assert_close, to_numpy
from opinfo import SCHEMAS, TABLE

DERIVATIVES_DEF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src",
                               "autograd", "derivatives.def")


def test_every_op_has_an_entry():
    missing = [name for name in SCHEMAS if name not in TABLE]
    assert not missing, f"ops.def rows without an entry in tests/opinfo.py: {missing}"


def test_every_entry_is_an_op():
    assert not set(TABLE) - set(SCHEMAS), sorted(set(TABLE) - set(SCHEMAS))


def test_every_op_has_a_cpu_kernel():
    # (or a SparseCPU one: _values, indices, ... exist only for sparse tensors, as in PyTorch)
    missing = [name for name, row in SCHEMAS.items()
               if not {"CPU", "CompositeImplicitAutograd", "SparseCPU"} & set(row["kernels"])]
    assert not missing, f"ops without a CPU kernel: {missing}"


def test_every_function_and_method_is_bound():
    for name, row in SCHEMAS.items():
        base = name.split(".")[0]
        if row["flags"] & 1:   # PTL_OPF_FUNCTION
            assert callable(getattr(ptl, base, None)), f"pytorchlite.{base} missing"
        if row["flags"] & 2 and "out" not in row["schema"].split("->")[0].split("*")[-1] \
                and not base.startswith("_"):   # PTL_OPF_METHOD
            assert hasattr(ptl.Tensor, base), f"Tensor.{base} missing"


# Differentiable ops (no PTL_OPF_NONDIFF, no CompositeImplicitAutograd kernel) without a
# derivatives.def row, and why: autograd refuses them ("the derivative for ... is not
# implemented").  A new op lands in derivatives.def, in PTL_OPF_NONDIFF, or here.
NO_DERIVATIVE = {
    "bernoulli.p": "PyTorch has no derivative for bernoulli.p either",
    "set_.source_Tensor": "derivatives.yaml: set_ has none (its NotImplemented grad_fn is "
                          "PyTorch's too)",
    "_cdist_backward": "PyTorch's _cdist_backward has no derivative",
    "_pdist_backward": "derivatives.yaml: _pdist_backward's derivative is not_implemented",
    "_grid_sampler_backward_backward": "a third derivative of grid_sampler",
    "_ptl_rnn_layer_backward": "PyTorch's _cudnn_rnn_backward has no derivative either "
                               "(Note [Recurrent layer] in native/rnn.c)",
    "_standard_gamma_grad": "derivatives.yaml: not_implemented(\"_standard_gamma_grad\")",
    "_sample_dirichlet": "derivatives.yaml: not_implemented(\"_sample_dirichlet\"); "
                         "Dirichlet.rsample differentiates it with _dirichlet_grad",
    "_dirichlet_grad": "derivatives.yaml: not_implemented(\"_dirichlet_grad\")",
    "linalg_ldl_factor_ex": "derivatives.yaml has no linalg_ldl_factor_ex row (PyTorch: "
                            "\"derivative for aten::linalg_ldl_factor_ex is not implemented\")",
    "linalg_ldl_solve": "derivatives.yaml has no linalg_ldl_solve row",
    "_scaled_dot_product_flash_attention_for_cpu_backward": "PyTorch has none either; under "
        "create_graph the forward's formula computes through dispatcher ops "
        "(derivatives/attention.c)",
}


def _is_out_variant(schema):
    """An out= overload: a keyword-only tensor it writes (out, or log_sigmoid_forward.output's
    output and buffer)."""
    args = schema.split("->")[0]
    return re.search(r"\bout\b", args.split("*")[-1]) is not None or \
        ("*" in args and re.search(r"Tensor\([a-z]!\)", args.split("*")[-1]) is not None)


def test_every_differentiable_op_has_a_derivative():
    text = open(DERIVATIVES_DEF).read()
    rows = set(re.findall(r"^PTL_GRAD\((\w+),", text, re.M))
    missing = {name for name, row in SCHEMAS.items()
               if not row["flags"] & 8 and "CompositeImplicitAutograd" not in row["kernels"]
               and name.replace(".", "_") not in rows and not _is_out_variant(row["schema"])}
    assert missing == set(NO_DERIVATIVE), sorted(missing ^ set(NO_DERIVATIVE))


def test_no_derivative_is_refused():
    x = ptl.rand(2, 3, dtype=ptl.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="derivative for 'aten::bernoulli.p' is not"):
        ptl.ops.aten.bernoulli.p(x, 0.5).sum().backward()


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _compare(actual, expected, info, what):
    actual, expected = _as_list(actual), _as_list(expected)
    assert len(actual) >= len(expected), f"{info.name}{what}: {len(actual)} outputs"
    for k, (a, e) in enumerate(zip(actual, expected)):
        if not isinstance(a, ptl.Tensor):
            assert a == e, f"{info.name}{what}, output {k}: {a!r} != {e!r}"
            continue
        if a.is_sparse:   # a sparse result compares as the dense tensor it stands for
            a = a.to_dense()
        try:
            assert_close(a, np.asarray(e), rtol=info.rtol, atol=info.atol)
        except AssertionError as err:
            raise AssertionError(f"{info.name}{what}, output {k}: {err}") from None


PARAMS = [pytest.param(name, dtype, id=f"{name}-{str(dtype).split('.')[-1]}")
          for name in sorted(TABLE) for dtype in TABLE[name].dtypes]


@pytest.mark.parametrize("name, dtype", PARAMS)
def test_samples(name, dtype):
    info = TABLE[name]
    exact = dtype not in FLOAT_DTYPES
    for sample in info.samples:
        args, kwargs, np_args, np_kwargs, _ = sample.make(dtype, info.domain)
        ptl.manual_seed(0)   # random ops run the same way every time
        if info.out_of is not None:
            expected = TABLE[info.out_of].op(*args, **kwargs)
            outs = [ptl.empty(0, dtype=e.dtype) for e in _as_list(expected)]
            got = info.op(*args, **kwargs, out=outs[0] if len(outs) == 1 else tuple(outs))
            assert got is outs[0] or len(outs) > 1
            for g, e in zip(outs, _as_list(expected)):
                assert_close(g, to_numpy(e))
            continue
        got = info.op(*args, **kwargs)
        if info.inplace:
            assert got is args[0], f"{name}{sample}: an in-place op returns self"
        if info.ref is not None and (dtype == ptl.float64 or exact):
            with np.errstate(all="ignore"):
                expected = info.ref(*np_args, **np_kwargs)
            _compare(got, expected, info, sample)


ERROR_PARAMS = [pytest.param(name, k, id=f"{name}-{k}") for name in sorted(TABLE)
                for k in range(len(TABLE[name].errors))]


@pytest.mark.parametrize("name, k", ERROR_PARAMS)
def test_error_samples(name, k):
    info = TABLE[name]
    sample, exc = info.errors[k]
    args, kwargs, _, _, _ = sample.make(info.dtypes[-1], info.domain)
    with pytest.raises(exc):
        info.op(*args, **kwargs)
