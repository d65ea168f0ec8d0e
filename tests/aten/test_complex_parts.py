"""Complex ops made of the real kernels on the parts (Note [Complex ops by parts] in
src/aten/native/complex_parts.c): conv1d/2d/3d and conv_transpose* (and aten::convolution and
its backward refusing complex tensors, as PyTorch's), embedding, im2col/col2im
(F.unfold/fold), affine_grid_generator, bincount's complex weights; and the complex calls of
native_dropout and set_, and the refusals of fmax/fmin/max/min/frexp/multinomial/binomial, as
PyTorch's."""
import warnings

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

import pytorchlite as ptl
from helpers import torch, torch_ref
from pytorchlite.autograd import gradcheck

F = ptl.nn.functional
CDTYPES = [ptl.complex64, ptl.complex128]
TOL = {ptl.complex64: 2e-5, ptl.complex128: 1e-12}


def crand(gen, *shape):
    return gen.standard_normal(shape) + 1j * gen.standard_normal(shape)


def np_conv(x, w, b, stride, padding, dilation, groups):
    """N-d cross-correlation of complex arrays, [N, C, *S] x [O, C/g, *K] -> [N, O, *L]."""
    nd = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + [(padding, padding)] * nd)
    k = w.shape[2:]
    span = tuple(dilation * (kk - 1) + 1 for kk in k)
    win = sliding_window_view(x, span, axis=tuple(range(2, 2 + nd)))
    win = win[(Ellipsis,) + tuple(slice(None, None, dilation) for _ in k)]
    win = win[(slice(None), slice(None)) + tuple(slice(None, None, stride) for _ in k)]
    cg, og = w.shape[1], w.shape[0] // groups
    outs = []
    for g in range(groups):
        xw = win[:, g * cg:(g + 1) * cg]
        wg = w[g * og:(g + 1) * og]
        axes = list(range(1 + nd + 1, 1 + nd + 1 + nd))
        outs.append(np.tensordot(xw, wg, axes=([1] + axes, [1] + list(range(2, 2 + nd)))))
    out = np.concatenate(outs, axis=-1)          # [N, *L, O]
    out = np.moveaxis(out, -1, 1)
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nd)
    return out


CONV_CASES = [   # (input shape, weight shape, stride, padding, dilation, groups, bias)
    ((2, 3, 9), (4, 3, 3), 1, 0, 1, 1, True),
    ((1, 4, 10), (6, 2, 2), 2, 1, 2, 2, False),
    ((2, 2, 5, 6), (3, 2, 3, 2), 1, 1, 1, 1, True),
    ((1, 4, 6, 5), (4, 1, 2, 2), 2, 0, 1, 4, True),
    ((1, 2, 3, 4, 4), (3, 2, 2, 2, 2), 1, 0, 1, 1, False),
    ((0, 2, 5), (3, 2, 2), 1, 0, 1, 1, True),
]


@pytest.mark.parametrize("dtype", CDTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_conv_matches_numpy(case, dtype, layout, threads):
    shape, wshape, stride, padding, dilation, groups, bias = case
    gen = np.random.default_rng(0)
    x, w = crand(gen, *shape), crand(gen, *wshape)
    b = crand(gen, wshape[0]) if bias else None
    xt = ptl.tensor(x, dtype=dtype)
    if layout == "transposed":   # a non-contiguous input of the same values
        xt = ptl.tensor(np.ascontiguousarray(np.swapaxes(x, 0, 1)), dtype=dtype).transpose(0, 1)
    conv = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[len(shape)]
    out = conv(xt, ptl.tensor(w, dtype=dtype), None if b is None else ptl.tensor(b, dtype=dtype),
               stride=stride, padding=padding, dilation=dilation, groups=groups)
    ref = np_conv(x, w, b, stride, padding, dilation, groups)
    assert out.dtype == dtype and tuple(out.shape) == ref.shape
    scale = max(1.0, np.abs(ref).max()) if ref.size else 1.0
    np.testing.assert_allclose(out.numpy(), ref, rtol=0, atol=TOL[dtype] * scale)


def test_conv_gradcheck():
    gen = np.random.default_rng(1)
    x = ptl.tensor(crand(gen, 1, 2, 5), requires_grad=True)
    w = ptl.tensor(crand(gen, 3, 2, 2), requires_grad=True)
    b = ptl.tensor(crand(gen, 3), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv1d(x, w, b, padding=1, stride=2), (x, w, b))
    x2 = ptl.tensor(crand(gen, 1, 2, 3, 3), requires_grad=True)
    w2 = ptl.tensor(crand(gen, 2, 1, 2, 2), requires_grad=True)
    assert gradcheck(lambda x, w: F.conv_transpose2d(x, w, stride=2, groups=2), (x2, w2))


@torch_ref
@pytest.mark.parametrize("fn", [
    lambda L, x, w, b: L.nn.functional.conv1d(x, w, b, padding=1, stride=2),
    lambda L, x, w, b: L.nn.functional.conv_transpose1d(x, w.transpose(0, 1), b,
                                                         stride=2, output_padding=1),
], ids=["conv1d", "conv_transpose1d"])
def test_conv_forward_and_backward_match_torch(fn):
    """The output and the gradients of input, weight and bias for a random complex
    grad_output (PyTorch's conjugate convention) against torch's."""
    gen = np.random.default_rng(2)
    arrays = [crand(gen, 2, 3, 7), crand(gen, 4, 3, 3), crand(gen, 4)]
    results, go = [], None
    for lib in (ptl, torch):
        ts = [lib.tensor(a, dtype=lib.complex128, requires_grad=True) for a in arrays]
        out = fn(lib, *ts)
        if go is None:
            go = crand(np.random.default_rng(3), *tuple(out.shape))
        grads = lib.autograd.grad(out, ts, lib.tensor(go, dtype=lib.complex128))
        results.append([out.detach().numpy()] + [t.numpy() for t in grads])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@torch_ref
def test_conv_errors_match_torch():
    cases = [
        lambda L: L.nn.functional.conv1d(L.ones(1, 2, 5, dtype=L.complex64), L.ones(3, 2, 2)),
        lambda L: L.nn.functional.conv1d(L.ones(1, 2, 5), L.ones(3, 2, 2, dtype=L.complex64)),
        lambda L: L.nn.functional.conv1d(L.ones(1, 2, 5, dtype=L.complex64),
                                         L.ones(3, 2, 2, dtype=L.complex64), L.ones(3)),
        lambda L: L.nn.functional.conv1d(L.ones(1, 3, 5, dtype=L.complex64),
                                         L.ones(3, 2, 2, dtype=L.complex64)),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as ours:
            case(ptl)
        with pytest.raises(RuntimeError) as theirs:
            case(torch)
        assert str(ours.value) == str(theirs.value).split("\n")[0]


def test_aten_convolution_refuses_complex():
    """PyTorch's aten::convolution takes complex tensors only through conv1d/2d/3d and
    conv_transpose*: its own CPU kernels have no complex loop."""
    x, w = ptl.ones(1, 2, 3, 3, dtype=ptl.complex64), ptl.ones(2, 2, 2, 2, dtype=ptl.complex64)
    args = ([1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    with pytest.raises(NotImplementedError, match="\"slow_conv2d_cpu\" not implemented for "
                                                  "'ComplexFloat'"):
        ptl.convolution(x, w, None, *args)
    g = ptl.tensor(np.arange(8).reshape(1, 2, 2, 2) * (1 - 2j), dtype=ptl.complex64)
    with pytest.raises(NotImplementedError, match="\"slow_conv2d_cpu_grad_input\" not "
                                                  "implemented for 'ComplexFloat'"):
        ptl.ops.aten.convolution_backward(g, x, w, [2], *args, [True, True, True])
    # the bias's gradient alone is a sum, which PyTorch's computes
    gi, gw, gb = ptl.ops.aten.convolution_backward(g, x, w, [2], *args, [False, False, True])
    assert gi is None and gw is None
    np.testing.assert_allclose(gb.numpy(), g.numpy().sum(axis=(0, 2, 3)))


def _conv_case(nd, transposed, dilation, groups, dtype, lib):
    x = lib.ones(1, 2, *([5] * nd), dtype=dtype)
    w = lib.ones(2, 2 // groups, *([2] * nd), dtype=dtype)
    return x, w, ([1] * nd, [0] * nd, [dilation] * nd, transposed, [0] * nd, groups)


@torch_ref
@pytest.mark.parametrize("dtype", ["complex64", "bool"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("dilation, groups", [(1, 1), (2, 1), (1, 2)])
def test_aten_convolution_refusals_match_torch(dtype, nd, transposed, dilation, groups):
    """Each refusal names the kernel PyTorch's backend choice reaches (im2col 2-D or 3-D,
    dilated, transposed; the input's and the weight's gradients apart)."""
    def run(lib, call):
        try:
            out = call(lib)
        except Exception as e:   # compared with torch's
            return type(e).__name__, str(e).split("\n")[0]
        return "ok", None if out is None else [None if o is None else o.shape for o in out]

    def forward(lib):
        x, w, args = _conv_case(nd, transposed, dilation, groups, getattr(lib, dtype), lib)
        lib.ops.aten.convolution(x, w, None, *args)

    assert run(ptl, forward) == run(torch, forward)
    for mask in ([True, True, True], [True, False, False], [False, True, False],
                 [False, False, True]):
        def backward(lib):
            x, w, args = _conv_case(nd, transposed, dilation, groups, getattr(lib, dtype), lib)
            xd, wd, _ = _conv_case(nd, transposed, dilation, groups, lib.float64, lib)
            y = lib.ops.aten.convolution(xd, wd, None, *args)
            return lib.ops.aten.convolution_backward(y.to(x.dtype), x, w, [2], *args, mask)
        if dtype == "bool" and mask == [False, False, True]:
            continue   # a bool bias gradient: not this test's matter
        assert run(ptl, backward) == run(torch, backward), mask


@pytest.mark.parametrize("dtype", CDTYPES)
def test_embedding(dtype):
    gen = np.random.default_rng(4)
    w = crand(gen, 5, 3)
    idx = np.array([[0, 4], [2, 2]])
    out = F.embedding(ptl.tensor(idx), ptl.tensor(w, dtype=dtype))
    assert out.dtype == dtype
    np.testing.assert_allclose(out.numpy(), w[idx], rtol=TOL[dtype])
    with pytest.raises(RuntimeError, match="^embedding does not support automatic "
                                           "differentiation for outputs with complex dtype.$"):
        F.embedding(ptl.tensor(idx), ptl.tensor(w, dtype=dtype, requires_grad=True))
    g = crand(gen, 3, 3)
    got = ptl.ops.aten.embedding_dense_backward(ptl.tensor(g, dtype=dtype),
                                                ptl.tensor([0, 4, 0]), 5, -1, False)
    ref = np.zeros((5, 3), complex)
    np.add.at(ref, [0, 4, 0], g)
    np.testing.assert_allclose(got.numpy(), ref, rtol=TOL[dtype])


def test_unfold_fold_match_numpy_and_gradcheck():
    gen = np.random.default_rng(5)
    x = crand(gen, 1, 2, 4, 4)
    cols = F.unfold(ptl.tensor(x), 2, padding=1)
    xp = np.pad(x, [(0, 0), (0, 0), (1, 1), (1, 1)])
    win = sliding_window_view(xp, (2, 2), axis=(2, 3))   # [1, 2, 5, 5, 2, 2]
    ref = win.transpose(0, 1, 4, 5, 2, 3).reshape(1, 8, 25)
    np.testing.assert_allclose(cols.numpy(), ref, rtol=1e-15)
    back = F.fold(cols, (4, 4), 2, padding=1)
    counts = F.fold(F.unfold(ptl.ones(1, 2, 4, 4, dtype=ptl.float64), 2, padding=1), (4, 4), 2,
                    padding=1)
    np.testing.assert_allclose(back.numpy(), x * counts.numpy(), rtol=1e-14)
    t = ptl.tensor(crand(gen, 1, 2, 3, 3), requires_grad=True)
    assert gradcheck(lambda t: F.unfold(t, 2), (t,))
    c = ptl.tensor(crand(gen, 1, 4, 4), requires_grad=True)
    assert gradcheck(lambda c: F.fold(c, (3, 3), 2), (c,))


@torch_ref
def test_affine_grid_generator_matches_torch():
    gen = np.random.default_rng(6)
    theta = crand(gen, 2, 2, 3)
    ours = ptl.ops.aten.affine_grid_generator(ptl.tensor(theta), [2, 1, 3, 4], False)
    theirs = torch.ops.aten.affine_grid_generator(torch.tensor(theta), [2, 1, 3, 4], False)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-14)
    with pytest.raises(RuntimeError, match="^affine_grid_generator does not support automatic"):
        ptl.ops.aten.affine_grid_generator(ptl.tensor(theta, requires_grad=True), [2, 1, 3, 4],
                                           False)


def test_bincount_complex_weights_take_real_parts_in_double():
    w = np.array([1j, 2 + 5j, 3, -1.5 - 1j])
    idx = [0, 1, 1, 3]
    with pytest.warns(UserWarning, match="Casting complex values to real discards the "
                                         "imaginary part"):
        got = ptl.bincount(ptl.tensor(idx), ptl.tensor(w, dtype=ptl.complex64), minlength=6)
    assert got.dtype == ptl.float64
    np.testing.assert_array_equal(got.numpy(), np.bincount(idx, w.real, minlength=6))


@pytest.mark.parametrize("dtype", CDTYPES)
def test_native_dropout_and_set(dtype):
    x = ptl.full((64,), 1 + 2j, dtype=dtype)
    out, mask = ptl.ops.aten.native_dropout(x, 0.25, True)
    assert out.dtype == dtype and mask.dtype == ptl.bool
    m = mask.numpy()
    np.testing.assert_allclose(out.numpy(), np.where(m, (1 + 2j) / 0.75, 0), rtol=1e-6)
    g = ptl.ops.aten.native_dropout_backward(x, mask, 1 / 0.75)
    np.testing.assert_allclose(g.numpy(), np.where(m, (1 + 2j) / 0.75, 0), rtol=1e-6)
    y = ptl.empty(0, dtype=dtype).set_(x.view(8, 8))
    assert tuple(y.shape) == (8, 8) and y.untyped_storage().data_ptr() == \
        x.untyped_storage().data_ptr()


@torch_ref
@pytest.mark.parametrize("call", [
    lambda L, x: L.fmax(x, x), lambda L, x: L.fmin(x, x), lambda L, x: L.max(x, x),
    lambda L, x: L.min(x, x), lambda L, x: L.frexp(x), lambda L, x: L.multinomial(x, 1),
    lambda L, x: L.binomial(x, x),
], ids=["fmax", "fmin", "max", "min", "frexp", "multinomial", "binomial"])
def test_refusals_match_torch(call):
    def run(lib):
        x = lib.ones(2, 3, dtype=lib.complex64)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                call(lib, x)
        except Exception as e:   # compared with torch's
            return type(e).__name__, str(e)
        return "ok", None
    assert run(ptl) == run(torch)


@pytest.mark.parametrize("start, end, steps", [(0, 1j, 3), (-1 - 2j, 3 + 1j, 7), (2.5, -1j, 1),
                                               (1j, 1 + 1j, 0), (0, 1 + 1j, 1001)])
@pytest.mark.parametrize("dtype", [None] + CDTYPES)
def test_linspace_logspace_complex_match_numpy(start, end, steps, dtype):
    got = ptl.linspace(start, end, steps, dtype=dtype)
    assert got.dtype == (dtype or ptl.complex64)
    tol = TOL[got.dtype]
    np.testing.assert_allclose(got.numpy(), np.linspace(start, end, steps), rtol=tol, atol=tol)
    got = ptl.logspace(start, end, steps, base=2.0, dtype=dtype)
    ref = 2.0 ** np.linspace(start, end, steps)
    np.testing.assert_allclose(got.numpy(), ref, rtol=10 * tol, atol=10 * tol)


def test_linspace_complex_default_dtype_and_refusals():
    old = ptl.get_default_dtype()
    ptl.set_default_dtype(ptl.float64)
    try:
        assert ptl.linspace(0, 1j, 3).dtype == ptl.complex128
    finally:
        ptl.set_default_dtype(old)
    assert ptl.linspace(0, 1, 5, dtype=ptl.complex64).tolist() == [0, 0.25, 0.5, 0.75, 1]
    with pytest.raises(RuntimeError, match=r"^torch.linspace\(\): inferred dtype "
                                           r"c10::complex<float> can't be safely cast to "
                                           r"passed dtype Float$"):
        ptl.linspace(0, 1j, 3, dtype=ptl.float32)
    with pytest.raises(RuntimeError, match=r"^torch.logspace\(\): inferred dtype "
                                           r"c10::complex<float> can't be safely cast to "
                                           r"passed dtype Long$"):
        ptl.logspace(0, 1j, 3, dtype=ptl.int64)
    with pytest.raises(RuntimeError, match="^number of steps must be non-negative$"):
        ptl.linspace(0, 1j, -1)


@torch_ref
@pytest.mark.parametrize("call", [
    lambda L: L.linspace(-1 - 2j, 3 + 1j, 9, dtype=L.complex128),
    lambda L: L.linspace(0, 1, 4, dtype=L.complex64), lambda L: L.linspace(0, 2j, 5),
    lambda L: L.logspace(1j, 2, 4, dtype=L.complex128), lambda L: L.logspace(0, 1j, 3, base=3),
], ids=["linspace", "linspace-real-ends", "linspace-default", "logspace", "logspace-base"])
def test_linspace_logspace_complex_match_torch(call):
    ours, theirs = call(ptl), call(torch)
    assert str(ours.dtype) == str(theirs.dtype)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-12)
