"""The float32 sums of batch_norm.c (Note [Batch norm float lanes]): 32 float lanes in steps
of 32 and 8 values, flushed to double lanes every BN_FLUSH steps, a double tail of each run's
last < 8 values.  Training forward and backward across run lengths at and around the vector
widths, channel counts around the thread split, the flush, channels-last and strided inputs,
on one and two threads against NumPy float64; the AVX2 loop against the portable one (the
same bits); gradcheck of the float32 rows; N HW = 1, which training rejects."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_close, assert_raises_like_torch, make
from test_batch_norm import bn_backward_ref, bn_ref

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BN_LANES, BN_FLUSH = 32, 8


def run_bn(x, w, b, g):
    """(out, mean, invstd, dx, dw, db) of a training batch norm of x"""
    xr, wr, br = (t.detach().clone().requires_grad_(True) for t in (x, w, b))
    out, mean, invstd = ptl.native_batch_norm(xr, wr, br, None, None, True, 0.1, 1e-5)
    out.backward(g)
    return [t.detach() for t in (out, mean, invstd, xr.grad, wr.grad, br.grad)]


def chan_abs_sum(a):
    """the largest sum of |a| over one channel"""
    return np.abs(a).sum(axis=tuple(d for d in range(a.ndim) if d != 1)).max()


def check(shape, layout="contiguous", offset=0.0, threads=(1, 2), memory_format=None):
    x, xa = make(shape, ptl.float32, layout, seed=21)
    x, xa = x + offset, xa.astype(np.float64) + offset
    if memory_format is not None:
        x = x.contiguous(memory_format=memory_format)
    c = shape[1]
    w, wa = make((c,), ptl.float32, seed=22)
    b, _ = make((c,), ptl.float32, seed=23)
    g, ga = make(shape, ptl.float32, seed=24)
    before = ptl.get_num_threads()
    results = []
    try:
        for t in threads:
            ptl.set_num_threads(t)
            results.append(run_bn(x, w, b, g))
    finally:
        ptl.set_num_threads(before)
    eo, em, ei, _, _ = bn_ref(xa, wa, b.numpy().astype(np.float64))
    gx, gw, gb = bn_backward_ref(ga, xa, wa)
    out, mean, invstd, dx, dw, db = results[0]
    scale = max(1.0, abs(offset))
    assert_close(mean, em, rtol=1e-6, atol=1e-6 * scale)
    assert_close(invstd, ei, rtol=1e-5, atol=0)
    assert_close(out, eo, rtol=1e-4, atol=1e-4 * scale)
    assert_close(dx, gx, rtol=1e-4, atol=1e-4 * scale)
    # the saved float32 mean is off by up to half an ulp of the offset: dw moves by that
    # times sum(dy)
    assert_close(dw, gw, rtol=1e-4, atol=1e-3 + 2 ** -24 * scale * chan_abs_sum(ga))
    assert_close(db, gb, rtol=1e-5, atol=1e-4)
    for other in results[1:]:
        for a, e in zip(results[0], other):
            assert np.array_equal(a.numpy(), e.numpy())
    return results[0]


# run lengths (HW) at and around the step widths 8 and 32, runs read in place (HW >= 16)
@pytest.mark.parametrize("hw", [16, 17, 23, 24, 31, 32, 33, 39, 40, 63, 64, 65, 257])
@pytest.mark.parametrize("n", [1, 3, BN_FLUSH + 1])
def test_run_lengths(n, hw):
    check((n, 3, hw))


# channel counts around the split over two threads; a channel of one chunk and of several
@pytest.mark.parametrize("c", [1, 2, 3, 4, 5, 16, 17])
@pytest.mark.parametrize("hw", [64, 1024])
def test_channels_across_threads(c, hw):
    check((9 if hw == 64 else 10, c, hw))


# the flush: a lane's steps up to BN_FLUSH and past it, in one run and across runs
@pytest.mark.parametrize("m", [BN_LANES * BN_FLUSH - 1, BN_LANES * BN_FLUSH,
                               BN_LANES * BN_FLUSH + 1, BN_LANES * BN_FLUSH * 3 + 8])
def test_flush(m):
    check((1, 2, m))
    check((m // 32, 2, 32))


def test_large_offset():
    # shifted sums: the float lanes hold x - K, K the channel's first value
    check((8, 3, 300), offset=1e4)
    check((4, 2, 4096), offset=-3e3)


@pytest.mark.parametrize("layout", ["transposed", "sliced", "expanded"])
def test_non_contiguous(layout):
    check((6, 5, 40), layout)


@pytest.mark.parametrize("shape", [(4, 6, 8, 8), (5, 17, 3, 7), (2, 3, 16, 16)])
def test_channels_last(shape):
    check(shape, memory_format=ptl.channels_last)


def test_batch_norm_1d():
    check((37, 5))
    check((2, 3))


def test_avx2_and_portable_same_bits(tmp_path):
    # every run length of the lanes and the flush, under the default capability in a child
    # process: the same bits as the AVX2 loop's
    code = ("import sys, numpy as np, pytorchlite as ptl\n"
            "g = np.random.default_rng(0)\n"
            "out = []\n"
            "for shape in [(3, 4, 16), (2, 3, 31), (5, 2, 71), (9, 2, 256), (1, 2, 1000)]:\n"
            "    x = ptl.tensor(g.standard_normal(shape).astype(np.float32) + 7)\n"
            "    dy = ptl.tensor(g.standard_normal(shape).astype(np.float32))\n"
            "    w = ptl.tensor(g.standard_normal(shape[1]).astype(np.float32))\n"
            "    y, mean, inv = ptl.native_batch_norm(x, w, None, None, None, True, 0.1, 1e-5)\n"
            "    r = ptl.ops.aten.native_batch_norm_backward(dy, x, w, None, None, mean, inv, True,\n"
            "                                                1e-5, [1, 1, 1])\n"
            "    out += [t.numpy() for t in (y, mean, inv) + tuple(r)]\n"
            "np.savez(sys.argv[1], *out)\n")
    got = []
    for cap in (None, "default"):
        env = dict(os.environ)
        if cap is not None:
            env["PTL_CPU_CAPABILITY"] = cap
        path = str(tmp_path / f"{cap}.npz")
        subprocess.run([sys.executable, "-c", code, path], check=True, env=env, cwd=ROOT)
        with np.load(path) as f:
            got.append([f[k] for k in sorted(f.files, key=lambda s: int(s.split("_")[1]))])
    for a, e in zip(*got):
        assert np.array_equal(a, e)


def test_gradcheck_float32_rows():
    # float64 gradcheck of the training rows (the float32 kernel's formulas are the same;
    # float64 takes the double lanes), then float32 against the float64 gradients
    from pytorchlite.autograd import gradcheck
    x = make((3, 2, 20), ptl.float64, seed=31)[0].requires_grad_(True)
    w = make((2,), ptl.float64, seed=32)[0].requires_grad_(True)
    b = make((2,), ptl.float64, seed=33)[0].requires_grad_(True)
    assert gradcheck(lambda x, w, b: ptl.native_batch_norm(x, w, b, None, None, True, 0.1,
                                                           1e-5)[0], (x, w, b))
    g = make((3, 2, 20), ptl.float64, seed=34)[0]
    want = run_bn(x, w, b, g)
    got = run_bn(x.float(), w.float(), b.float(), g.float())
    for a, e in zip(got, want):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-4, atol=1e-4)


def test_one_value_per_channel_in_training():
    assert_raises_like_torch(
        lambda m: m.nn.functional.batch_norm(m.randn(1, 3), None, None, training=True),
        ValueError, "Expected more than 1 value per channel when training")
    assert_raises_like_torch(
        lambda m: m.nn.functional.batch_norm(m.randn(1, 3, 1, 1), None, None, training=True),
        ValueError, "Expected more than 1 value per channel when training")


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
@pytest.mark.parametrize("c", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("training", [True, False])
def test_fused_channels_threshold(dtype, c, training):
    # Note [Batch norm fused channels]: one task a channel from 2 channels a thread (2 on one
    # thread, 4 on two), the two-phase passes below; the same bits either way
    shape = (3, c, 4100)
    x, xa = make(shape, dtype, seed=41)
    w, wa = make((c,), dtype, seed=42)
    b, ba = make((c,), dtype, seed=43)
    g, ga = make(shape, dtype, seed=44)
    rm, rma = make((c,), dtype, seed=45)
    rv, rva = make((c,), dtype, seed=46, low=0.5, high=2)
    before = ptl.get_num_threads()
    results = []
    try:
        for t in (1, 2):
            ptl.set_num_threads(t)
            out, mean, inv = ptl.native_batch_norm(x, w, b, rm.clone(), rv.clone(), training,
                                                   0.1, 1e-5)
            r = ptl.ops.aten.native_batch_norm_backward(
                g, x, w, rm, rv, mean if training else None, inv if training else None,
                training, 1e-5, [1, 1, 1])
            results.append([out] + list(r))
    finally:
        ptl.set_num_threads(before)
    eo = bn_ref(xa, wa, ba, rma, rva, training)[0]
    gx, gw, gb = bn_backward_ref(ga, xa, wa, rma, rva, training)
    tol = 1e-4 if dtype == ptl.float32 else 1e-9
    for got, want in zip(results[0], (eo, gx, gw, gb)):
        assert_close(got, want, rtol=tol, atol=tol * max(1.0, np.abs(want).max()))
    for a, e in zip(*results):
        assert np.array_equal(a.numpy(), e.numpy())
