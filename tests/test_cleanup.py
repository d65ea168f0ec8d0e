"""The cleanup of derivatives_double.c: its formula tables cover every row that names them,
and the in-place ELU family (elu_, selu, celu with inplace=True) differentiates twice like
torch.  Like torch's, the in-place ops save their result and differentiate through
elu_backward(..., is_result=True, result) (tests/test_elures.py)."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch", reason="the double derivatives are compared with torch")

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "autograd")


def _rows_using(function):
    text = open(os.path.join(SRC, "derivatives.def")).read()
    start = text.index("(double) ---- */")
    end = text.find("/* ----", start)
    return re.findall(r"^PTL_GRAD\((\w+),\s*\"\w+\",[^)]*?\)?[^,]*,\s*" + function + r"\)",
                      text[start:end if end >= 0 else None], re.M)


def _table_ops(table):
    text = open(os.path.join(SRC, "derivatives_double.c")).read()
    body = text[text.index(table + "[] = {"):]
    body = body[:body.index("\n};")]
    return re.findall(r"\{PTL_OP_(\w+),", body)


# in-place ELU family: (name, fn(lib, x)); x has a tie at 0 and values on both sides
INPLACE = [
    ("elu_inplace", lambda m, x: m.nn.functional.elu(x.clone(), 1.3, inplace=True)),
    ("elu_", lambda m, x: m.nn.functional.elu_(x.clone(), 0.6)),
    ("selu_inplace", lambda m, x: m.nn.functional.selu(x.clone(), inplace=True)),
    ("celu_inplace", lambda m, x: m.nn.functional.celu(x.clone(), 0.5, inplace=True)),
]
VALUES = [[-2.0, -0.7, 0.0], [0.0, 0.4, 1.5]]


def _grads(m, fn):
    x = m.tensor(VALUES, dtype=m.float64).t().requires_grad_(True)   # non-contiguous
    y = fn(m, x)
    g, = m.autograd.grad((y * y).sum(), x, create_graph=True)
    gg, = m.autograd.grad((g * g).sum(), x)
    return y, g, gg


@pytest.mark.parametrize("name, fn", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_elu_double_backward_matches_torch(name, fn):
    y, g, gg = _grads(ptl, fn)
    ty, tg, tgg = _grads(torch, fn)
    # celu's input_scale 1/alpha: torch rounds it through float, hence 1e-7
    for ours, ref in ((y, ty), (g, tg), (gg, tgg)):
        np.testing.assert_allclose(ours.detach().numpy(), ref.detach().numpy(), rtol=1e-7,
                                   atol=1e-7)
    assert g.grad_fn.name() == tg.grad_fn.name() == "EluBackwardBackward0"


@pytest.mark.parametrize("name, fn", INPLACE, ids=[c[0] for c in INPLACE])
def test_inplace_elu_gradgradcheck(name, fn):
    x = ptl.tensor([[-1.3, 0.4], [2.0, -0.2], [-0.6, 0.9]], dtype=ptl.float64).t()
    x.requires_grad_(True)
    assert gradcheck(lambda t: fn(ptl, t), (x,))
    assert gradgradcheck(lambda t: fn(ptl, t), (x,))
