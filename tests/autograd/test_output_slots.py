"""A backward op whose output_mask leaves some of its returns undefined still numbers its
outputs by return position: the weight gradient of convolution_backward is output 1 even
when the input needs no gradient (it used to be numbered 0, and double backward then read
the weight's gradient as the input's)."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradgradcheck
import golden

F = ptl.nn.functional


def arr(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape)


CONVS = {
    "conv1d": (F.conv1d, (2, 3, 7), (4, 3, 3)),
    "conv2d": (F.conv2d, (1, 2, 5, 5), (2, 2, 3, 3)),
    "conv3d": (F.conv3d, (1, 2, 4, 4, 4), (2, 2, 2, 2, 2)),
    "conv_transpose2d": (F.conv_transpose2d, (1, 2, 4, 4), (2, 3, 3, 3)),
}
# which of (input, weight, bias) require grad
NEEDS = [(0, 1, 0), (0, 0, 1), (0, 1, 1), (1, 0, 0), (1, 0, 1), (1, 1, 1)]


def conv_args(name, needs):
    fn, xs, ws = CONVS[name]
    nb = ws[1] if "transpose" in name else ws[0]
    vals = [arr(xs, 1), arr(ws, 2), arr((nb,), 3)]
    ts = [ptl.tensor(v, dtype=ptl.float64, requires_grad=bool(n)) for v, n in zip(vals, needs)]
    return fn, ts


@pytest.mark.parametrize("needs", NEEDS, ids=str)
@pytest.mark.parametrize("name", sorted(CONVS))
def test_conv_gradgradcheck_with_some_inputs_constant(name, needs):
    fn, ts = conv_args(name, needs)
    wanted = [t for t in ts if t.requires_grad]

    def f(*a):
        it = iter(a)
        full = [next(it) if t.requires_grad else t for t in ts]
        return fn(*full).square()

    assert gradgradcheck(f, wanted)


@pytest.mark.parametrize("needs", NEEDS, ids=str)
def test_output_nr_and_second_derivative_match_torch(needs):
    def run(lib):
        x, w, b = (lib.tensor(arr(s, k), dtype=lib.float64, requires_grad=bool(n))
                   for s, k, n in zip([(1, 2, 5, 5), (2, 2, 3, 3), (2,)], (1, 2, 3), needs))
        wanted = [t for t in (x, w, b) if t.requires_grad]
        y = lib.nn.functional.conv2d(x, w, b).square().sum()
        gs = lib.autograd.grad(y, wanted, create_graph=True)
        nrs = [g.output_nr for g in gs]
        seconds = lib.autograd.grad(sum(g.square().sum() for g in gs), wanted)
        return {"output_nr": nrs, **golden.named(seconds, "second derivative")}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-10)
