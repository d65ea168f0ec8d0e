"""Every PTL_GRAD row of src/autograd/derivatives.def, checked on the samples of its operator's
entry in tests/opinfo.py: a float64 gradcheck and gradgradcheck (complex outputs, and the
complex inputs an entry's grad_call makes, part by part), and the node the row names; and
the float32 gradients against the float64 ones on the same values (the backward kernels'
float32 paths, which gradcheck never runs).

Rows whose op has no usable finite differences say so in their entry (opinfo.OpInfo.grad):
random ops get zeros (derivatives.yaml's zeros_like), reparameterised samplers are compared
with a NumPy gradient, NotImplemented rows raise on backward.
Rows without a second-derivative check carry the reason in OpInfo.gradgrad."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
from opinfo import SCHEMAS, TABLE

DERIVATIVES_DEF = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src",
                               "autograd", "derivatives.def")


def derivatives_rows():
    """(op id, node name) of every PTL_GRAD row, in file order."""
    text = open(DERIVATIVES_DEF).read()
    return re.findall(r'^PTL_GRAD\((\w+),\s*"(\w+)"', text, re.M)


# op id (schema name with '.' -> '_') -> schema name
NAME_OF_ID = {name.replace(".", "_"): name for name in SCHEMAS}
ROWS = derivatives_rows()


def entry(op_id):
    return TABLE.get(NAME_OF_ID.get(op_id))


def test_every_row_has_an_entry():
    assert len(ROWS) > 300
    missing = [op for op, _ in ROWS if entry(op) is None or entry(op).grad == "none"]
    assert not missing, f"derivatives.def rows without an entry in tests/opinfo.py: {missing}"


def test_every_row_has_a_gradcheck_sample():
    empty = [op for op, _ in ROWS if entry(op) is not None and not entry(op).gradcheck_samples()]
    assert not empty, f"entries without a sample gradcheck can run: {empty}"


def _substitute(x, new):
    if isinstance(x, ptl.Tensor) and id(x) in new:
        return new[id(x)]
    if isinstance(x, (list, tuple)):
        return type(x)(_substitute(y, new) for y in x)
    return x


def _function(info, args, kwargs, leaves):
    """f(*leaves) -> the op's outputs on the sample, the leaves replaced by f's arguments.
    An in-place op works on a copy of self (a leaf that requires grad cannot be modified)."""
    def f(*xs):
        new = {id(a): b for a, b in zip(leaves, xs)}
        a = [_substitute(x, new) for x in args]
        k = {key: _substitute(v, new) for key, v in kwargs.items()}
        if info.inplace:
            a[0] = a[0].clone()
        if info.grad == "zeros":
            ptl.manual_seed(0)
        out = info.grad_call(info.op, *a, **k) if info.grad_call else info.op(*a, **k)
        if info.grad_outputs is not None:
            out = info.grad_outputs(out)
        return _outputs(out)
    return f


def _outputs(out):
    """The floating and complex outputs (indices are not differentiable), as a tuple."""
    outs = out if isinstance(out, (list, tuple)) else (out,)
    return tuple(o for o in outs if isinstance(o, ptl.Tensor)
                 and (o.is_floating_point() or o.is_complex()))


def _params(rows):
    """The rows with an entry."""
    return [pytest.param(op, node, id=op) for op, node in rows if entry(op) is not None]


@pytest.mark.parametrize("op_id, node", _params(ROWS))
def test_gradcheck(op_id, node):
    info = entry(op_id)
    for sample in info.gradcheck_samples():
        args, kwargs, _, _, leaves = sample.make(ptl.float64, info.domain, requires_grad=True)
        f = _function(info, args, kwargs, leaves)
        outs = [o for o in f(*leaves) if o.grad_fn is not None]
        assert outs, f"{info.name}{sample}: no output has a grad_fn"
        fn = outs[0].grad_fn
        if fn.name() == "ToDenseBackward0" and node != fn.name():
            fn = fn.next_functions[0][0]   # a sparse result seen through opinfo._dense
        assert fn.name() == node, f"{info.name}{sample}"
        if info.grad == "check":
            assert gradcheck(f, leaves), f"{info.name}{sample}"
        elif info.grad == "ref":
            grads = ptl.autograd.grad(outs, leaves, [ptl.ones_like(o) for o in outs])
            want = info.grad_ref(*[x.detach().numpy() for x in leaves], outs[0].detach().numpy())
            np.testing.assert_allclose(grads[0].numpy(), want, rtol=1e-5, atol=1e-8)
        elif info.grad == "zeros":
            grads = ptl.autograd.grad(outs, leaves, [ptl.ones_like(o) for o in outs],
                                      allow_unused=True)
            assert all(g is None or not g.abs().sum().item() for g in grads), info.name
        else:
            with pytest.raises(RuntimeError, match="is not implemented"):
                outs[0].sum().backward()


GG_ROWS = [(op, node) for op, node in ROWS
           if entry(op) is not None and entry(op).grad == "check" and entry(op).gradgrad is True]


@pytest.mark.parametrize("op_id, node", _params(GG_ROWS))
def test_gradgradcheck(op_id, node):
    info = entry(op_id)
    for sample in info.gradcheck_samples()[:2]:
        args, kwargs, _, _, leaves = sample.make(ptl.float64, info.domain, requires_grad=True)
        assert gradgradcheck(_function(info, args, kwargs, leaves), leaves), \
            f"{info.name}{sample}"


def test_rows_without_a_gradgradcheck_say_why():
    """A row's entry either runs gradgradcheck (gradgrad=True) or gives the reason it does
    not; random and NotImplemented rows have no first derivative to differentiate."""
    for op, _ in ROWS:
        info = entry(op)
        if info is not None and info.grad == "check" and info.gradgrad is not True:
            assert isinstance(info.gradgrad, str) and info.gradgrad, op
        if info is not None and info.grad != "check":
            assert info.note, f"{op}: an entry without a gradcheck says why (note=)"


def _in_float64(x, new):
    """x with its float32 tensors (and the float32 dtype) in float64: the same values, the
    leaves new leaves (recorded in new)."""
    if isinstance(x, ptl.Tensor) and x.dtype == ptl.float32 and x.layout == ptl.strided:
        y = x.detach().to(ptl.float64).requires_grad_(x.requires_grad)
        new[id(x)] = y
        return y
    if x is ptl.float32:
        return ptl.float64
    if isinstance(x, (list, tuple)):
        return type(x)(_in_float64(y, new) for y in x)
    return x


F32_ROWS = [(op, node) for op, node in ROWS if entry(op) is not None
            and entry(op).grad == "check" and ptl.float32 in entry(op).dtypes]


@pytest.mark.parametrize("op_id, node", _params(F32_ROWS))
def test_float32_gradients_are_the_float64_ones(op_id, node):
    """Each backward kernel in float32 against float64 on the same values, on every sample
    (gradcheck runs in float64 only, on three, and a float32 kernel gave zeros where it
    compared a double with a float-rounded value): equal to float32 rounding, scaled by the
    gradient's size."""
    info = entry(op_id)
    for sample in _differentiable_samples(info):
        args, kwargs, _, _, leaves = sample.make(ptl.float32, info.domain, requires_grad=True)
        new = {}
        args64 = [_in_float64(x, new) for x in args]
        kwargs64 = {k: _in_float64(v, new) for k, v in kwargs.items()}
        leaves64 = [new[id(x)] for x in leaves]
        got, error = _grads_or_error(_function(info, args, kwargs, leaves), leaves)
        want, error64 = _grads_or_error(_function(info, args64, kwargs64, leaves64), leaves64)
        # a sample without a derivative by design (eigh without eigenvectors, qr's mode 'r')
        # refuses it alike in both dtypes
        assert error == error64, f"{info.name}{sample}"
        for g, w in zip(got or [], want or []):
            scale = max(1.0, float(np.abs(w).max(initial=0.0)))
            np.testing.assert_allclose(g, w, rtol=2e-3, atol=2e-3 * scale,
                                       err_msg=f"{info.name}{sample}")


def _differentiable_samples(info):
    """Every sample with a differentiable float tensor and no empty one: the gradcheck
    samples and the larger ones after them (no finite differences here, so all of them)."""
    if info.grad_samples is not None:
        return info.grad_samples
    return [s for s in info.samples
            if any(t.grad and t.dtype in (None, ptl.float64) and t.layout != "expanded"
                   for t in s.specs())
            and all(0 not in t.shape for t in s.specs())]


def _grads_or_error(f, leaves):
    """(_float_grads(f, leaves), None), or (None, (the error's type, its message))"""
    try:
        return _float_grads(f, leaves), None
    except (RuntimeError, IndexError) as e:
        return None, (type(e), str(e))


def _float_grads(f, leaves):
    """The gradients of f's outputs (each weighted by a fixed pattern of +-1, 2) with respect
    to leaves, in float64 NumPy (zeros for an unused leaf)."""
    outs = [o for o in f(*leaves) if o.grad_fn is not None]
    weights = [ptl.tensor(np.resize([1.0, -1.0, 2.0], o.shape), dtype=o.dtype)
               for o in outs]
    grads = ptl.autograd.grad(outs, leaves, weights, allow_unused=True)
    return [np.zeros(x.shape) if g is None else g.to(ptl.float64).to_dense().numpy()
            if g.layout != ptl.strided else g.to(ptl.float64).numpy()
            for x, g in zip(leaves, grads)]
