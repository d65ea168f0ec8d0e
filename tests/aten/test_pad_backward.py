"""The reflection, replication and circular pads' backward on the CPU (Note [Pad backward by
input rows] in src/aten/native/resample.c): float32, float64, complex64 and complex128
gradients, each input-gradient row written once as the sum of the output rows that read it.
Against NumPy in float64/complex128 (the pad as a gather through np.pad's index maps, its
backward as np.add.at through the same maps) for every mode in 1, 2 and 3 dims, batched and
batch-less, pads 0, positive, negative (cropping) and at the reflect limit (size - 1), on
contiguous and strided gradients and inputs; the thread split at and across its grain (1 and
2 threads give the same bytes); float16 keeps the weighted maps' path; gradcheck in float64
and complex128; complex gradients in one pass (no real/imag parts).  Channels-last inputs
(Note [Pads keep channels-last]): reflect and replicate keep the format forward and
backward, as PyTorch does, circular returns contiguous results."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_raises_like_torch, torch, torch_ref
from pytorchlite.autograd import gradcheck

F = ptl.nn.functional
NP_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}
NP_DT = {ptl.float32: np.float32, ptl.float64: np.float64, ptl.complex64: np.complex64,
         ptl.complex128: np.complex128, ptl.float16: np.float16}
TOL = {ptl.float32: 1e-5, ptl.float64: 1e-12, ptl.complex64: 1e-5, ptl.complex128: 1e-12,
       ptl.float16: 2e-2}


def index_map(n, lo, hi, mode):
    """The input position each output position reads along one dim: output o reads what
    np.pad puts at o - lo of the whole input; circular (PyTorch's) first crops by the
    negative pads, then wraps within what is kept."""
    if mode == "circular":
        kept = np.arange(n)[max(0, -lo):n - max(0, -hi)]
        return np.pad(kept, (max(0, lo), max(0, hi)), mode="wrap")
    far = n + abs(lo) + abs(hi)
    return np.pad(np.arange(n), (far, far), mode=NP_MODE[mode])[far - lo:far + n + hi]


def reference(a, gy, pad, mode):
    """(y, grad of a) in float64/complex128: y = a gathered through the maps, the grad the
    scatter-add of gy through them."""
    nd = len(pad) // 2
    maps = [index_map(a.shape[a.ndim - nd + i], pad[2 * (nd - 1 - i)],
                      pad[2 * (nd - 1 - i) + 1], mode) for i in range(nd)]
    wide = np.complex128 if np.iscomplexobj(a) else np.float64
    lead = tuple(slice(None) for _ in range(a.ndim - nd))
    ix = lead + np.ix_(*maps)
    y = a.astype(wide)[ix]
    gi = np.zeros(a.shape, wide)
    np.add.at(gi, ix, gy.astype(wide))
    return y, gi


def data(shape, dtype, seed):
    g = np.random.default_rng(seed)
    a = g.uniform(-2, 2, shape)
    if dtype in (ptl.complex64, ptl.complex128):
        a = a + 1j * g.uniform(-2, 2, shape)
    return a.astype(NP_DT[dtype])


def strided(a, layout):
    """a as a pytorchlite tensor: contiguous, transposed (last two dims swapped in memory)
    or sliced (every other element of a tensor twice as wide along the last dim)."""
    if layout == "contiguous" or a.ndim < 2:
        return ptl.tensor(a)
    if layout == "transposed":
        return ptl.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2))).transpose(-1, -2)
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    return ptl.tensor(wide)[..., ::2]


def check(shape, pad, mode, dtype, layout="contiguous", seed=0):
    a = data(shape, dtype, seed)
    x = strided(a, layout).requires_grad_()
    y = F.pad(x, pad, mode=mode)
    gy = data(tuple(y.shape), dtype, seed + 1)
    want_y, want_g = reference(a, gy, pad, mode)
    (g,) = ptl.autograd.grad(y, x, strided(gy, layout))
    assert g.dtype == dtype and tuple(g.shape) == shape
    np.testing.assert_array_equal(y.detach().numpy(), want_y.astype(NP_DT[dtype]))
    tol = TOL[dtype] * max([1.0] + list(np.abs(want_g).ravel()))
    np.testing.assert_allclose(g.numpy(), want_g, rtol=0, atol=tol,
                               err_msg=str((shape, pad, mode, dtype, layout)))


# (shape, pad): batched and batch-less, pads 0, positive, negative, at the reflect limit
CASES = {
    1: [((2, 3, 7), (0, 0)), ((3, 7), (2, 3)), ((2, 1, 7), (6, 6)), ((2, 3, 9), (-2, 3)),
        ((3, 8), (4, -3)), ((1, 2, 5), (-1, -2))],
    2: [((2, 3, 5, 6), (1, 2, 0, 3)), ((3, 5, 6), (5, 5, 4, 4)), ((1, 2, 5, 6), (-1, 2, 3, -2)),
        ((2, 4, 7), (0, 0, 0, 0)), ((1, 1, 2, 2), (1, 1, 1, 1))],
    3: [((2, 2, 3, 4, 5), (1, 0, 2, 1, 0, 2)), ((2, 3, 4, 5), (4, 4, 3, 3, 2, 2)),
        ((1, 2, 4, 5, 6), (-1, 2, 1, -1, 2, 0))],
}
SAMPLES = [(nd, shape, pad) for nd, cases in CASES.items() for shape, pad in cases]


def allowed(shape, pad, mode):
    """Whether PyTorch accepts the pad: reflect's below each size, circular's at most it."""
    nd = len(pad) // 2
    for i in range(nd):
        n, lo, hi = shape[-1 - i], pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= n or hi >= n):
            return False
        if mode == "circular" and (lo > n or hi > n):
            return False
    return True


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.complex64, ptl.complex128])
@pytest.mark.parametrize("mode", sorted(NP_MODE))
@pytest.mark.parametrize("nd,shape,pad", SAMPLES, ids=str)
def test_against_numpy(nd, shape, pad, mode, dtype):
    if not allowed(shape, pad, mode):
        pytest.skip("PyTorch refuses this pad (test_errors)")
    check(shape, pad, mode, dtype)


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.complex128])
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_strided_inputs_and_gradients(mode, dtype, layout):
    check((2, 3, 6, 7), (2, 1, 3, 2), mode, dtype, layout, seed=3)
    check((4, 6, 7), (1, 2), mode, dtype, layout, seed=4)


@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_float16_keeps_the_weighted_path(mode):
    check((2, 3, 5, 6), (1, 2, 2, 1), mode, ptl.float16)


def test_empty_batch():
    for mode in NP_MODE:
        check((0, 3, 5, 6), (1, 2, 2, 1), mode, ptl.float32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("rows", [2, 3121, 3122, 3123, 4683, 4684])
def test_thread_split_at_and_across_the_grain(threads, rows):
    """rows input-gradient rows of 16, padded by (2, 2, 1, 1): 20 output elements an input
    row, so the parallel loop's grain is 32768 // 21 + 1 = 1561 rows and it splits from two
    grains (3122 rows) on, in three chunks from 4684; every split writes the same bytes."""
    a = data((rows, 16), ptl.float32, 5)
    gy = data((rows + 2, 20), ptl.float32, 6)
    want_g = reference(a[None], gy[None], (2, 2, 1, 1), "reflect")[1][0]
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        x = ptl.tensor(a[None]).requires_grad_()
        (g,) = ptl.autograd.grad(F.pad(x, (2, 2, 1, 1), mode="reflect"), x,
                                 ptl.tensor(gy[None]))
    finally:
        ptl.set_num_threads(old)
    np.testing.assert_allclose(g[0].numpy(), want_g, rtol=0, atol=1e-5)


@pytest.mark.parametrize("mode", sorted(NP_MODE))
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.complex128])
def test_gradcheck(nd, mode, dtype):
    shape = {1: (2, 4), 2: (1, 3, 4), 3: (1, 2, 3, 3)}[nd]
    pad = {1: (2, 3), 2: (1, 2, 2, 0), 3: (1, 2, 0, 2, 1, 1)}[nd]
    x = ptl.tensor(data(shape, dtype, 7)).requires_grad_()
    assert gradcheck(lambda t: F.pad(t, pad, mode=mode), (x,))


def test_complex_gradients_in_one_pass():
    """complex gradients add whole elements in the real kernel: no real/imag views, no join
    (the by-parts path ran the backward twice and joined the parts)."""
    x = ptl.tensor(data((1, 2, 4, 5), ptl.complex64, 8)).requires_grad_()
    ys = [F.pad(x, (1, 1, 1, 1), mode=m) for m in NP_MODE]
    with ptl.profiler.profile() as prof:
        ptl.autograd.grad(ys, x, [ptl.ones_like(y) for y in ys])
    names = {e.name for e in prof.events()}
    assert {"aten::reflection_pad2d_backward", "aten::replication_pad2d_backward",
            "aten::_pad_circular_backward"} <= names, names
    assert not names & {"aten::real", "aten::imag", "aten::complex"}, names


@torch_ref
@pytest.mark.parametrize("mode", sorted(NP_MODE))
@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_like_torch(mode, dtype):
    a = data((2, 3, 6, 7), getattr(ptl, dtype), 9)
    gy = data((2, 3, 9, 10), getattr(ptl, dtype), 10)
    got, ref = [], []
    for lib, out in ((ptl, got), (torch, ref)):
        x = lib.tensor(a).requires_grad_()
        (g,) = lib.autograd.grad(lib.nn.functional.pad(x, (1, 2, 2, 1), mode=mode), x,
                                 lib.tensor(gy))
        out.append(g.numpy())
    np.testing.assert_allclose(got[0], ref[0], rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("op,gshape,msg", [
    ("reflection_pad2d_backward", (1, 2, 6, 6), "gradOutput width unexpected. Expected: 7, "
                                                "Got: 6"),
    ("replication_pad2d_backward", (1, 2, 5, 7), "gradOutput height unexpected. Expected: 6, "
                                                 "Got: 5"),
])
def test_errors(op, gshape, msg):
    assert_raises_like_torch(
        lambda lib: getattr(lib.ops.aten, op)(lib.zeros(gshape, dtype=lib.complex64),
                                              lib.zeros((1, 2, 4, 5), dtype=lib.complex64),
                                              [1, 1, 1, 1]), RuntimeError, msg)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.complex64, ptl.complex128,
                                   ptl.float16])
@pytest.mark.parametrize("mode", sorted(NP_MODE))
@pytest.mark.parametrize("fmt,shape,pad", [
    ("channels_last", (2, 5, 6, 7), (1, 2, 0, 3)),
    ("channels_last", (2, 3, 5, 6), (-1, 2, 1, -2)),
    ("channels_last", (1, 4, 3, 3), (2, 2, 2, 2)),
    ("channels_last", (0, 3, 5, 6), (1, 1, 1, 1)),
    ("channels_last_3d", (2, 3, 4, 5, 6), (1, 0, 2, 1, 0, 2)),
    ("channels_last_3d", (1, 2, 3, 4, 5), (-1, 1, 1, 1, 2, -1)),
], ids=str)
@pytest.mark.parametrize("grad_layout", ["like_output", "contiguous"])
def test_channels_last(fmt, shape, pad, mode, dtype, grad_layout):
    if not allowed(shape, pad, mode):
        pytest.skip("PyTorch refuses this pad")
    memory_format = getattr(ptl, fmt)
    a = data(shape, dtype, 11)
    x = ptl.tensor(a).contiguous(memory_format=memory_format).requires_grad_()
    y = F.pad(x, pad, mode=mode)
    gy = data(tuple(y.shape), dtype, 12)
    g = ptl.tensor(gy)
    if grad_layout == "like_output":
        g = g.contiguous(memory_format=memory_format)
    (gx,) = ptl.autograd.grad(y, x, g)
    keeps = mode != "circular" and shape[0] > 0   # an empty batch suggests contiguous
    assert y.is_contiguous(memory_format=memory_format if keeps else ptl.contiguous_format)
    assert gx.is_contiguous(memory_format=memory_format if keeps else ptl.contiguous_format)
    want_y, want_g = reference(a, gy, pad, mode)
    np.testing.assert_array_equal(y.detach().numpy(), want_y.astype(NP_DT[dtype]))
    tol = TOL[dtype] * max([1.0] + list(np.abs(want_g).ravel()))
    np.testing.assert_allclose(gx.numpy(), want_g, rtol=0, atol=tol)


def test_channels_last_sliced_input():
    """a channels-last tensor sliced along H still suggests channels-last: the pad reads it
    densely laid out first"""
    a = data((2, 4, 10, 6), ptl.float32, 13)
    x = ptl.tensor(a).contiguous(memory_format=ptl.channels_last)[:, :, ::2]
    for mode in ("reflect", "replicate"):
        y = F.pad(x, (1, 2, 2, 1), mode=mode)
        assert y.is_contiguous(memory_format=ptl.channels_last)
        np.testing.assert_array_equal(y.numpy(), reference(a[:, :, ::2], np.zeros(
            tuple(y.shape), np.float32), (1, 2, 2, 1), mode)[0].astype(np.float32))


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("h", [2, 203, 204, 205, 310])
def test_channels_last_thread_split(threads, h):
    """pixels of 16 float32 in rows of 20 after the pad: the gather's grain is
    32768 // (20 * 16 + 1) + 1 = 103 of its h + 2 output rows, the backward's
    32768 // ((h + 2) * 320 // h + 1) + 1 = 102 of its h input rows near h = 204, so both
    split from h = 204 on; the same bytes on 1 and 2 threads"""
    a = data((1, 16, h, 16), ptl.float32, 14)
    gy = data((1, 16, h + 2, 20), ptl.float32, 15)
    want_y, want_g = reference(a, gy, (2, 2, 1, 1), "reflect")
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        x = ptl.tensor(a).contiguous(memory_format=ptl.channels_last).requires_grad_()
        y = F.pad(x, (2, 2, 1, 1), mode="reflect")
        (gx,) = ptl.autograd.grad(y, x, ptl.tensor(gy).contiguous(
            memory_format=ptl.channels_last))
    finally:
        ptl.set_num_threads(old)
    np.testing.assert_array_equal(y.detach().numpy(), want_y.astype(np.float32))
    np.testing.assert_allclose(gx.numpy(), want_g, rtol=0, atol=1e-5)


@torch_ref
@pytest.mark.parametrize("mode", sorted(NP_MODE))
def test_channels_last_strides_like_torch(mode):
    a = data((2, 3, 5, 6), ptl.float32, 16)
    strides = []
    for lib in (ptl, torch):
        x = lib.tensor(a).contiguous(memory_format=lib.channels_last).requires_grad_()
        y = lib.nn.functional.pad(x, (1, 2, 2, 1), mode=mode)
        (gx,) = lib.autograd.grad(y, x, lib.ones_like(y))
        strides.append((y.stride(), gx.stride()))
    assert strides[0] == strides[1]


@pytest.mark.parametrize("mode,shape,pad,exc,msg", [
    ("reflect", (1, 2, 4), (4, 0), RuntimeError,
     "Argument #4: Padding size should be less than the corresponding input dimension, but "
     "got: padding (4, 0) at dimension 2 of input [1, 2, 4]"),
    ("reflect", (1, 2, 3, 4), (1, 1, 3, 0), RuntimeError,
     "Argument #6: Padding size should be less than the corresponding input dimension"),
    ("circular", (1, 2, 4), (5, 0), RuntimeError,
     "Padding value causes wrapping around more than once."),
    ("replicate", (1, 2, 4), (-3, -2), RuntimeError, "input (W: 4) is too small. "
                                                     "Calculated output W: -1"),
])
def test_pads_too_large_raise_as_torch(mode, shape, pad, exc, msg):
    assert_raises_like_torch(
        lambda lib: lib.nn.functional.pad(lib.zeros(shape), pad, mode=mode), exc, msg)


@pytest.mark.parametrize("op,shape,pad,result", [
    # one padded size of 0 and another of at least 1: an empty result (tools/fuzz seed 11,
    # call 1236)
    ("replication_pad2d", (2, 5, 3), (-3, 0, 1, 2), (2, 8, 0)),
    ("replication_pad3d", (4, 2, 5, 3), (-5, 2, 1, 2, 2, 1), (4, 5, 8, 0)),
    ("reflection_pad2d", (2, 5, 3), (-3, 0, 1, 2), (2, 8, 0)),
    ("reflection_pad3d", (2, 2, 5, 3), (-3, 0, 1, 2, 0, 0), (2, 2, 8, 0)),
    ("_pad_circular", (1, 2, 5, 3), (-3, 0, 1, 2), (1, 2, 8, 0)),
    ("_pad_circular", (1, 2, 5, 3), (-3, 0, -5, 0), (1, 2, 0, 0)),
    ("_pad_circular", (1, 2, 3), (-1, -2), (1, 2, 0)),
    # every padded size below 1: too small; a negative one beside a positive one: empty()'s
    ("replication_pad1d", (2, 3), (-5, 2), "input (W: 3) is too small. Calculated output W: 0"),
    ("reflection_pad1d", (2, 3), (-3, 0), "input (W: 3) is too small. Calculated output W: 0"),
    ("replication_pad3d", (4, 2, 5, 3), (-5, 2, -5, -2, -2, -1),
     "input (D: 2 H: 5, W: 3) is too small. Calculated output D: -1 H: -2 W: 0"),
    ("replication_pad2d", (2, 5, 3), (-4, 0, 1, 2),
     "Trying to create tensor with negative dimension -1: [2, 8, -1]"),
    ("replication_pad3d", (2, 2, 5, 3), (-4, 0, 1, 2, 0, 0),
     "Trying to create tensor with negative dimension -1: [2, 2, 8, -1]"),
])
def test_pads_to_empty_sizes_as_torch(op, shape, pad, result):
    """PyTorch's pads call an output too small only when all its padded sizes are below 1
    (circular padding never)"""
    call = lambda lib: getattr(lib.ops.aten, op)(lib.ones(shape), list(pad))  # noqa: E731
    if isinstance(result, str):
        assert_raises_like_torch(call, RuntimeError, result)
        return
    assert tuple(call(ptl).shape) == result
    if torch is not None:
        assert tuple(call(torch).shape) == result
