"""grid_sample: every interpolation and padding mode against torch (values, gradients and second
derivatives; live, or PyTorch's stored answers without it: tests/golden.py), a float64
gradcheck / gradgradcheck of every row of the grid_sampler.c section of
src/autograd/derivatives.def, node names, and the errors. Bilinear/trilinear and nearest
sampling with zeros and border padding are also checked against a NumPy float64 reference
(np_grid_sample), in 2-D and 3-D."""
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck, gradgradcheck
import golden
from helpers import ROOT, assert_close, torch

TF = torch.nn.functional if torch is not None else None
F = ptl.nn.functional
aten = ptl.ops.aten
DEF = os.path.join(ROOT, "src", "autograd", "derivatives.def")
MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
MODE_ID = {m: i for i, m in enumerate(MODES)}
PAD_ID = {p: i for i, p in enumerate(PADDINGS)}


def arr(shape, seed, low=-2.0, high=2.0):
    return np.random.default_rng(seed).uniform(low, high, size=shape)


def T(m, a, grad=False, dtype=None):
    return m.tensor(a, dtype=dtype or m.float64, requires_grad=grad)


def tr(x):
    """A transposed view (last two dims): kernels see non-contiguous inputs."""
    return x.transpose(-1, -2)


# input (N, C, H, W) given transposed as (N, C, W, H); grid points reach outside [-1, 1]
X2 = arr((2, 2, 4, 3), 1)
G2 = arr((2, 3, 2, 2), 2, -1.4, 1.4)


def sample2d(m, mode, pad, align):
    fn = torch.nn.functional if m is torch else F
    return lambda x, g: fn.grid_sample(tr(x), g, mode, pad, align)


# ---- values and first derivatives vs torch ------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sample_2d_vs_torch(mode, pad, align, dtype):
    def run(m):
        dt = getattr(m, dtype)
        x, g = T(m, X2, True, dt), T(m, G2, True, dt)
        y = sample2d(m, mode, pad, align)(x, g)
        gx, gg = m.autograd.grad(y, [x, g], T(m, arr(tuple(y.shape), 3), dtype=dt))
        return {"output": y.detach(), "grad input": gx, "grad grid": gg}
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    golden.assert_same_results(run, **tol)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_grid_sample_2d_half(dtype):
    """Computed in double and rounded once (torch's bfloat16 kernel rounds every step), so
    the reference is torch in float64 on the same rounded inputs."""
    x, g = T(ptl, X2, dtype=getattr(ptl, dtype)), T(ptl, G2, dtype=getattr(ptl, dtype))
    got = F.grid_sample(x, g, "bicubic", "reflection", False)
    assert got.dtype == getattr(ptl, dtype)
    rtol, atol = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}[dtype]
    golden.assert_close(got, lambda: TF.grid_sample(T(torch, x.double().numpy()),
                                                    T(torch, g.double().numpy()), "bicubic",
                                                    "reflection", False),
                        rtol=rtol, atol=atol, check_dtype=False)


# ---- double backward ------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d_gradgradcheck(mode, pad, align):
    x, g = T(ptl, X2, True), T(ptl, G2, True)
    assert gradgradcheck(sample2d(ptl, mode, pad, align), [x, g])


def second_derivatives(m, f, xs_np, go_np):
    """d/d(inputs, grad_output) of sum(v * first_grads), all float64."""
    xs = [T(m, a, True) for a in xs_np]
    y = f(*xs)
    go = T(m, go_np, True)
    gs = m.autograd.grad(y, xs, go, create_graph=True)
    s = sum((g * T(m, arr(tuple(g.shape), 20 + i))).sum() for i, g in enumerate(gs))
    return [None if o is None else o.detach().numpy()
            for o in m.autograd.grad(s, xs + [go], allow_unused=True)]


def second_derivatives_match(sample, xs_np, go_np):
    """second_derivatives of sample(m) in both libraries agree; an input the gradient does
    not depend on may get None or zeros on either side."""
    def run(m):
        got = second_derivatives(m, sample(m), xs_np, go_np)
        return {f"d/d input {k}": np.zeros(a.shape) if o is None else o
                for k, (o, a) in enumerate(zip(got, xs_np + [go_np]))}
    golden.assert_same_results(run, rtol=1e-9, atol=1e-10, prefix="second derivatives: ")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d_second_derivatives_match_torch(mode, pad, align):
    go = arr((2, 2, 3, 2), 11)
    second_derivatives_match(lambda m: sample2d(m, mode, pad, align), [X2, G2], go)


# Grid points on pixel centres, on the borders (+-1 with align_corners) and beyond them, and
# nearest's halfway points: the ties of the piecewise definitions.
TIE_GRID = np.array([[[[-1.0, -1.0], [1.0, 1.0], [0.0, 0.5]],
                      [[1.5, -1.0], [-1.0 / 3, 1.0 / 3], [-0.5, 0.25]]]])


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d_ties_match_torch(mode, pad, align):
    x = arr((1, 2, 4, 3), 5)
    go = arr((1, 2, 2, 3), 12)
    second_derivatives_match(lambda m: sample2d(m, mode, pad, align), [x, TIE_GRID], go)

    def run(m):
        xs = [T(m, x, True), T(m, TIE_GRID, True)]
        y = sample2d(m, mode, pad, align)(*xs)
        gx, gg = m.autograd.grad(y, xs, T(m, go))
        return {"output": y.detach(), "grad input": gx, "grad grid": gg}
    golden.assert_same_results(run, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("pad", PADDINGS)
def test_grid_sampler_2d_backward_gradcheck(mode, pad):
    """The row itself, for all three inputs (grad_output transposed, a sliced grid)."""
    go = T(ptl, arr((2, 2, 2, 3), 7), True)
    x = T(ptl, X2, True)
    g = T(ptl, arr((2, 3, 4, 2), 8, -1.3, 1.3), True)

    def f(go, x, g):
        return aten.grid_sampler_2d_backward(tr(go), tr(x), g[:, :, ::2], MODE_ID[mode],
                                             PAD_ID[pad], False, [1, 1])
    assert gradcheck(f, [go, x, g])


def test_node_names():
    x, g = T(ptl, X2, True), T(ptl, G2, True)
    y = F.grid_sample(x, g, "bicubic", "zeros", False)
    assert type(y.grad_fn).__name__ == "GridSampler2DBackward0"
    gx, gg = ptl.autograd.grad(y.sum(), [x, g], create_graph=True)
    assert type(gx.grad_fn).__name__ == "GridSampler2DBackwardBackward0"
    assert type(gg.grad_fn).__name__ == "GridSampler2DBackwardBackward0"

    def torch_name():
        tx, tg = T(torch, X2, True), T(torch, G2, True)
        tgx, _ = torch.autograd.grad(TF.grid_sample(tx, tg, "bicubic", "zeros", False).sum(),
                                     [tx, tg], create_graph=True)
        return type(tgx.grad_fn).__name__
    golden.assert_equal(type(gx.grad_fn).__name__, torch_name)


def test_only_the_needed_gradients():
    """One first gradient undefined, one second-order input not requiring grad."""
    def run(m):
        x, g = T(m, X2, True), T(m, G2)
        y = m.nn.functional.grid_sample(x, g, "bilinear", "border", True)
        (gx,) = m.autograd.grad((y * y).sum(), [x], create_graph=True)
        return {"second derivative": m.autograd.grad(gx.sum(), [x])[0]}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


def test_third_derivative_is_not_implemented():
    x, g = T(ptl, X2, True), T(ptl, G2, True)
    y = F.grid_sample(x, g, "bilinear", "zeros", False)
    gx, gg = ptl.autograd.grad(y.sum(), [x, g], create_graph=True)
    h = ptl.autograd.grad((gg * gg).sum(), [g], create_graph=True)[0]
    msg = "the derivative for 'aten::_grid_sampler_backward_backward' is not implemented."
    with pytest.raises(NotImplementedError, match=re.escape(msg)):
        ptl.autograd.grad(h.sum(), [g])


def _my_rows():
    text = open(DEF).read()
    start = text.index("/* ---- grid_sampler.c ---- */") + 1
    end = text.find("/* ----", start)
    return re.findall(r"^PTL_GRAD\((\w+),", text[start:end if end >= 0 else None], re.M)


# row -> the test that gradchecks it
ROW_TESTS = {
    "grid_sampler_2d": "test_grid_sample_2d_gradgradcheck",
    "grid_sampler_2d_backward": "test_grid_sampler_2d_backward_gradcheck",
    "grid_sampler_3d": "test_grid_sample_3d_gradcheck_and_gradgradcheck",
    "grid_sampler_3d_backward": "test_grid_sampler_3d_backward_gradcheck",
}


def test_every_row_has_a_gradcheck():
    rows = _my_rows()
    assert set(rows) == set(ROW_TESTS)
    for name in ROW_TESTS.values():
        assert callable(globals()[name])


# ---- errors -----------------------------------------------------------------------------

def check_error(ours, theirs):
    """ours() raises torch's exception class, with torch's message in its own."""
    golden.assert_raises(ours, theirs, compare=lambda a, b: b in a)


ERRORS = [
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3), t.randn(2, 2, 2, 3), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3), t.randn(1, 2, 2, 2, 2), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 0, 3), t.randn(1, 2, 2, 2, 2), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3).long(), t.randn(1, 2, 2, 2).long(),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3).long(), t.randn(1, 2, 2, 2),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3), t.randn(1, 2, 2, 2).long(),
                               align_corners=False),
    lambda F, t: t.ops.aten.grid_sampler_2d(t.randn(()), t.randn(1, 2, 2, 2), 0, 0, False),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_errors_match_torch(i):
    check_error(lambda: ERRORS[i](F, ptl), lambda: ERRORS[i](TF, torch))


def test_backward_shape_errors():
    """torch reads out of bounds here; we refuse."""
    x, g = ptl.randn(1, 2, 3, 3), ptl.randn(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match=re.escape(
            "grid_sampler backward: expected grad_output of size [1, 2, 2, 2], but got [1, 2, 3]")):
        aten.grid_sampler_2d_backward(ptl.randn(1, 2, 3), x, g, 0, 0, False, [1, 1])
    go = ptl.randn(1, 2, 2, 2)
    with pytest.raises(RuntimeError, match=re.escape(
            "grid_sampler backward: expected grad of grad_input of size [1, 2, 3, 3], but got "
            "[1, 2, 3]")):
        aten._grid_sampler_backward_backward(ptl.randn(1, 2, 3), None, go, x, g, 0, 0, False,
                                             [1, 1, 1])
    with pytest.raises(RuntimeError, match=re.escape(
            "grid_sampler backward: expected grad of grad_grid of size [1, 2, 2, 2], but got "
            "[2]")):
        aten._grid_sampler_backward_backward(None, ptl.randn(2), go, x, g, 0, 0, False,
                                             [1, 1, 1])
    with pytest.raises(RuntimeError, match=re.escape(
            "grid_sampler(): invalid interpolation_mode 3")):
        aten.grid_sampler_2d(x, g, 3, 0, False)


# ---- 3-D (volumetric) sampling ----------------------------------------------------------

# input (N, C, D, H, W) given transposed as (N, C, D, W, H); grid (N, Do, Ho, Wo, 3)
X3 = arr((2, 2, 3, 3, 2), 31)
G3 = arr((2, 2, 1, 2, 3), 32, -1.4, 1.4)
MODES3 = ["bilinear", "nearest"]


def sample3d(m, mode, pad, align):
    fn = torch.nn.functional if m is torch else F
    return lambda x, g: fn.grid_sample(tr(x), g, mode, pad, align)


@pytest.mark.parametrize("mode", MODES3)
@pytest.mark.parametrize("pad", PADDINGS)
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_3d_vs_torch(mode, pad, align):
    x, g = T(ptl, X3, True), T(ptl, G3, True)
    assert type(sample3d(ptl, mode, pad, align)(x, g).grad_fn).__name__ == \
        "GridSampler3DBackward0"

    def run(m):
        x, g = T(m, X3, True), T(m, G3, True)
        y = sample3d(m, mode, pad, align)(x, g)
        gx, gg = m.autograd.grad(y, [x, g], T(m, arr(tuple(y.shape), 33)))
        return {"output": y.detach(), "grad input": gx, "grad grid": gg}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-10)
    go = arr((2, 2, 2, 1, 2), 34)
    second_derivatives_match(lambda m: sample3d(m, mode, pad, align), [X3, G3], go)


def test_grid_sample_3d_float32_vs_torch():
    x, g = X3.astype(np.float32), G3.astype(np.float32)
    got = F.grid_sample(T(ptl, x, dtype=ptl.float32), T(ptl, g, dtype=ptl.float32),
                        "bilinear", "reflection", True)
    golden.assert_close(got, lambda: TF.grid_sample(
        T(torch, x, dtype=torch.float32), T(torch, g, dtype=torch.float32), "bilinear",
        "reflection", True), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("mode", MODES3)
@pytest.mark.parametrize("pad", PADDINGS)
def test_grid_sample_3d_gradcheck_and_gradgradcheck(mode, pad):
    x, g = T(ptl, X3, True), T(ptl, G3, True)
    f = sample3d(ptl, mode, pad, False)
    assert gradcheck(f, [x, g])
    assert gradgradcheck(f, [x, g])
    _, gg = ptl.autograd.grad(f(x, g).sum(), [x, g], create_graph=True)
    assert type(gg.grad_fn).__name__ == "GridSampler3DBackwardBackward0"


@pytest.mark.parametrize("pad", PADDINGS)
def test_grid_sampler_3d_backward_gradcheck(pad):
    go = T(ptl, arr((2, 2, 2, 2, 1), 35), True)
    x = T(ptl, X3, True)
    g = T(ptl, arr((2, 2, 1, 4, 3), 36, -1.3, 1.3), True)

    def f(go, x, g):
        return aten.grid_sampler_3d_backward(tr(go), tr(x), g[:, :, :, ::2], 0, PAD_ID[pad],
                                             True, [1, 1])
    assert gradcheck(f, [go, x, g])


def test_grid_sample_3d_empty():
    for shapes in [((1, 0, 3, 3, 3), (1, 2, 2, 2, 3)), ((0, 2, 3, 3, 3), (0, 2, 2, 2, 3)),
                   ((1, 2, 3, 3, 3), (1, 0, 2, 2, 3))]:
        got = F.grid_sample(ptl.randn(*shapes[0]), ptl.randn(*shapes[1]), align_corners=False)
        golden.assert_equal(list(got.shape), lambda: list(TF.grid_sample(
            torch.randn(*shapes[0]), torch.randn(*shapes[1]), align_corners=False).shape),
            sub=repr(shapes))


def test_affine_grid_5d_into_grid_sample():
    theta = arr((2, 3, 4), 37, -1.0, 1.0)

    def run(m):
        fn = m.nn.functional
        t = T(m, theta, True)
        y = fn.grid_sample(T(m, X3), fn.affine_grid(t, (2, 2, 2, 3, 2), align_corners=False),
                           align_corners=False)
        return {"output": y.detach(), "grad theta": m.autograd.grad(y.sum(), [t])[0]}
    golden.assert_same_results(run, rtol=1e-10, atol=1e-12)


ERRORS3 = [
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3), t.randn(1, 2, 2, 2, 3), "bicubic",
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3), t.randn(1, 2, 2, 2, 2),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3), t.randn(2, 2, 2, 2, 3),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3), t.randn(1, 2, 2, 3), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3), t.randn(1, 2, 3), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3), t.randn(1, 2, 1), align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 0, 3), t.randn(1, 2, 2, 2, 3),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3, 3), t.randn(1, 2, 2, 2, 3, 4),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3).double(), t.randn(1, 2, 2, 2, 3),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3).long(), t.randn(1, 2, 2, 2, 3).long(),
                               align_corners=False),
    lambda F, t: F.grid_sample(t.randn(1, 2, 3, 3, 3).long(), t.randn(1, 2, 2, 2, 3).long(),
                               "bicubic", align_corners=False),
    lambda F, t: t.ops.aten.grid_sampler_3d(t.randn(1, 2, 3, 3), t.randn(1, 2, 2, 2), 0, 0,
                                            False),
    lambda F, t: t.ops.aten.grid_sampler_3d(t.randn(1, 2, 3, 3, 3), t.randn(1, 2, 2, 2, 3), 2,
                                            0, False),
]


@pytest.mark.parametrize("i", range(len(ERRORS3)))
def test_3d_errors_match_torch(i):
    check_error(lambda: ERRORS3[i](F, ptl), lambda: ERRORS3[i](TF, torch))


# ---- NumPy float64 reference: linear and nearest sampling, zeros and border padding ----

def np_grid_sample(x, grid, mode, pad, align):
    """x [N, C, *S] (S = (H, W) or (D, H, W)), grid [N, *O, k] with grid[..., 0] indexing the
    last dim; the same unnormalization, padding and rounding (half to even) as PyTorch."""
    sizes = x.shape[2:]
    k = len(sizes)
    # grid coordinate j addresses spatial dim k - 1 - j
    coords = []
    for j in range(k):
        n = sizes[k - 1 - j]
        g = grid[..., j]
        c = (g + 1) / 2 * (n - 1) if align else ((g + 1) * n - 1) / 2
        coords.append(np.clip(c, 0, n - 1) if pad == "border" else c)
    coords = coords[::-1]                      # now coords[d] indexes spatial dim d
    out = np.zeros(x.shape[:2] + grid.shape[1:-1])
    if mode == "nearest":
        corners = [[(np.rint(c), np.ones_like(c))] for c in coords]
    else:
        corners = [[(np.floor(c), 1 - (c - np.floor(c))), (np.floor(c) + 1, c - np.floor(c))]
                   for c in coords]
    for taps in np.ndindex(*[len(cs) for cs in corners]):
        idx, w = [], 1.0
        for d, t in enumerate(taps):
            i, wt = corners[d][t]
            idx.append(i.astype(np.int64))
            w = w * wt
        inside = np.ones(w.shape, bool)
        for d, i in enumerate(idx):
            inside &= (i >= 0) & (i < sizes[d])
        safe = [np.clip(i, 0, sizes[d] - 1) for d, i in enumerate(idx)]
        for b in range(x.shape[0]):
            vals = x[b][(slice(None),) + tuple(s_[b] for s_ in safe)]   # [C, *O]
            out[b] += vals * np.where(inside[b], w[b], 0.0)
    return out


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("pad", ["zeros", "border"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("dims", [2, 3])
def test_grid_sample_matches_numpy(dims, mode, pad, align):
    x = arr((2, 3) + (4, 5, 3)[:dims], 40)
    g = arr((2,) + (3, 2, 2)[:dims] + (dims,), 41, -1.3, 1.3)
    got = F.grid_sample(ptl.tensor(x), ptl.tensor(g), mode, pad, align)
    assert_close(got, np_grid_sample(x, g, mode, pad, align))


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("n", [1, 2, 5])
def test_reflection_at_and_across_each_span(n, align):
    """Reflection padding at, just below and just above every multiple of the span and
    every half span, up to six spans out on both sides (grid_sampler_taps.h's ptl_gs_reflect: below two spans it
    skips fmod; past them it takes fmod), through a ramp whose bilinear samples are the
    padded coordinates themselves: against PyTorch's reflect_coordinates in NumPy."""
    from grid_sample_ref import padded
    lo, span = (0.0, n - 1.0) if align else (-0.5, float(n))
    xs = [lo + s * (k + h) * span for k in range(7) for h in (0, 0.5) for s in (1, -1)]
    xs = np.array([np.nextafter(v, d) for v in xs for d in (-np.inf, v, np.inf)])
    g = (2 * xs / (n - 1) - 1) if align and n > 1 else (2 * xs + 1) / n - 1
    x = (g + 1) / 2 * (n - 1) if align else ((g + 1) * n - 1) / 2
    ramp = np.arange(n, dtype=np.float64).reshape(1, 1, 1, n)
    grid = np.stack([g, np.zeros_like(g)], -1).reshape(1, 1, -1, 2)
    got = F.grid_sample(ptl.tensor(ramp), ptl.tensor(grid), "bilinear", "reflection", align)
    assert_close(got, padded(x, n, "reflection", align).reshape(1, 1, 1, -1), atol=1e-12,
                 rtol=1e-12)
