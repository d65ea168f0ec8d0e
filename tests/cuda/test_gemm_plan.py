"""The GEMM kernels' plan and index arithmetic (src/cuda/gemm_plan.c and gemm_plan.h, compiled
by gcc here and by nvcc for gemm.cu), checked on the host: with _C._cuda_gemm_emulation on,
matrix products of CPU tensors go through the CUDA path (gemm.c's geometry handed over, the
tile chosen, every thread's tile loads with the layout flags and edge masks, the SIMT
threads' micro-tiles or the tensor-core warps' fragments, the epilogue with alpha and beta,
the grid loops over y and z run on the host) and must reproduce NumPy in float64 on shapes at
and across every tile edge, transposed and strided operands, batches 0-3, k = 0 and size 0.
The fast paths (Note [CUDA GEMM plan]: simt_vector for float32 / float64, mma for float16 /
bfloat16) run their 16-byte vector loads, quad micro-tiles, ldmatrix lane addresses (the
PTX ISA's ldmatrix emulated on the padded shared layout) and mma fragment layouts; the
emulation fails a product whose tile loads take an element other than exactly once, or
whose block writes a C element other than exactly once.  Needs no device and no nvcc."""
import contextlib
import itertools

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C

# each dtype's tile (bm, bn, bk) and the tolerance of its result against float64
TILES = {ptl.float32: (64, 64, 16), ptl.float64: (64, 64, 16), ptl.float16: (64, 64, 32),
         ptl.bfloat16: (64, 64, 32)}
TOL = {ptl.float32: 1e-5, ptl.float64: 1e-12, ptl.float16: 2e-3, ptl.bfloat16: 1.6e-2}


@contextlib.contextmanager
def emulated(sms=132, max_grid=65535):
    """Runs the block with the GEMM kernels emulated; yields the dict of what ran."""
    ran = {}
    _C._cuda_gemm_emulation((sms, max_grid))
    try:
        yield ran
    finally:
        ran.update(_C._cuda_gemm_emulation(None))


def operand(rng, shape, dtype, transposed, strided=False):
    """A random operand of `shape` (last two dims transposed in memory, or every other
    column of a wider one) and its float64 NumPy value."""
    base = rng.standard_normal(shape)
    if transposed:
        t = ptl.tensor(np.swapaxes(base, -1, -2).copy()).to(dtype).transpose(-1, -2)
    elif strided:
        t = ptl.tensor(np.repeat(base, 2, axis=-1)).to(dtype)[..., ::2]
    else:
        t = ptl.tensor(base).to(dtype)
    return t, t.to(ptl.float64).numpy()


def check(got, want, dtype, k):
    got = got.to(ptl.float64).numpy()
    scale = np.sqrt(max(k, 1)) * (np.abs(want).max() if want.size else 1.0) + 1.0
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


def edges(tile):
    return (tile - 1, tile, tile + 1)


@pytest.mark.parametrize("dtype", list(TILES), ids=str)
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_mm_across_tile_edges(dtype, ta, tb):
    rng = np.random.default_rng(0)
    bm, bn, bk = TILES[dtype]
    with emulated() as ran:
        for m, n, k in itertools.product(edges(bm), edges(bn), edges(bk) + (2 * bk + 1,)):
            a, an = operand(rng, (m, k), dtype, ta)
            b, bn_ = operand(rng, (k, n), dtype, tb)
            check(ptl.mm(a, b), an @ bn_, dtype, k)
    assert sum(ran.values()) == 3 * 3 * 4


@pytest.mark.parametrize("dtype", list(TILES), ids=str)
@pytest.mark.parametrize("batch", [0, 1, 2, 3])
def test_bmm_and_baddbmm_batches(dtype, batch):
    rng = np.random.default_rng(batch)
    with emulated(max_grid=2):   # grid z and y of 2: the kernels' loops over the rest
        for (m, n, k), ta, tb in itertools.product([(65, 3, 17), (1, 65, 33), (130, 2, 5)],
                                                   [False, True], [False, True]):
            a, an = operand(rng, (batch, m, k), dtype, ta)
            b, bn_ = operand(rng, (batch, k, n), dtype, tb)
            check(ptl.bmm(a, b), an @ bn_, dtype, k)
            c, cn = operand(rng, (batch, m, n), dtype, False, strided=True)
            check(ptl.baddbmm(c, a, b, beta=0.5, alpha=-2.0), 0.5 * cn - 2.0 * (an @ bn_),
                  dtype, k)


@pytest.mark.parametrize("dtype", list(TILES), ids=str)
def test_addmm_beta_alpha_and_broadcast_bias(dtype):
    rng = np.random.default_rng(5)
    with emulated():
        for m, n, k in [(65, 63, 17), (3, 130, 1), (64, 64, 32)]:
            a, an = operand(rng, (m, k), dtype, False, strided=True)
            b, bn_ = operand(rng, (k, n), dtype, True)
            for bias_shape in [(n,), (m, 1), (m, n)]:
                c, cn = operand(rng, bias_shape, dtype, False)
                check(ptl.addmm(c, a, b, beta=1.5, alpha=0.25), 1.5 * cn + 0.25 * (an @ bn_),
                      dtype, k)
            nan_bias = ptl.full((m, n), float("nan"), dtype=dtype)
            check(ptl.addmm(nan_bias, a, b, beta=0), an @ bn_, dtype, k)


@pytest.mark.parametrize("dtype", list(TILES), ids=str)
def test_k_zero_and_size_zero(dtype):
    rng = np.random.default_rng(2)
    with emulated():
        c, cn = operand(rng, (65, 3), dtype, False)
        a = ptl.zeros((65, 0), dtype=dtype)
        b = ptl.zeros((0, 3), dtype=dtype)
        check(ptl.addmm(c, a, b, beta=2.0), 2.0 * cn, dtype, 0)
        check(ptl.mm(a, b), np.zeros((65, 3)), dtype, 0)
        assert ptl.mm(ptl.zeros((0, 4), dtype=dtype), ptl.zeros((4, 5), dtype=dtype)).shape == (0, 5)
        assert ptl.bmm(ptl.zeros((2, 3, 4), dtype=dtype),
                       ptl.zeros((2, 4, 0), dtype=dtype)).shape == (2, 3, 0)


@pytest.mark.parametrize("dtype", list(TILES), ids=str)
def test_matmul_linear_mv_dot(dtype):
    rng = np.random.default_rng(3)
    with emulated(max_grid=1) as ran:
        a, an = operand(rng, (2, 3, 33, 17), dtype, True)
        b, bn_ = operand(rng, (2, 3, 17, 65), dtype, False)
        check(ptl.matmul(a, b), an @ bn_, dtype, 17)
        x, xn = operand(rng, (5, 70), dtype, False)
        w, wn = operand(rng, (66, 70), dtype, False)
        bias, biasn = operand(rng, (66,), dtype, False)
        check(ptl.nn.functional.linear(x, w, bias), xn @ wn.T + biasn, dtype, 70)
        v, vn = operand(rng, (70,), dtype, False)
        check(ptl.mv(w, v), wn @ vn, dtype, 70)
        check(ptl.dot(v, v), vn @ vn, dtype, 70)
    assert sum(ran.values()) >= 4


def test_float32_tile_choice_at_the_sm_threshold():
    """128 x 64 blocks when they give at least one block per SM, else 64 x 64."""
    rng = np.random.default_rng(4)
    for (m, n, batch), sms, kind in [((128, 64, 1), 1, "simt_large"),
                                     ((128, 64, 1), 2, "simt_small"),
                                     ((129, 64, 1), 2, "simt_large"),
                                     ((129, 65, 1), 5, "simt_small"),
                                     ((129, 65, 1), 4, "simt_large"),
                                     ((128, 64, 3), 3, "simt_large"),
                                     ((128, 64, 3), 4, "simt_small")]:
        a, an = operand(rng, (batch, m, 9), ptl.float32, False)
        b, bn_ = operand(rng, (batch, 9, n), ptl.float32, False)
        with emulated(sms=sms, max_grid=1) as ran:
            got = ptl.bmm(a, b)
        check(got, an @ bn_, ptl.float32, 9)
        assert ran[kind] == 1 and sum(ran.values()) == 1, (m, n, batch, sms, ran)
    with emulated(sms=1) as ran:
        ptl.mm(ptl.ones((201, 201), dtype=ptl.float64), ptl.ones((201, 201), dtype=ptl.float64))
        ptl.mm(ptl.ones((201, 201), dtype=ptl.bfloat16), ptl.ones((201, 201), dtype=ptl.bfloat16))
    assert ran == {"simt_large": 0, "simt_small": 1, "tensor_core": 1, "simt_vector": 0, "mma": 0}


def test_integer_products_are_refused_as_on_cuda():
    with emulated():
        with pytest.raises(NotImplementedError, match="\"addmm_cuda\" not implemented for 'Long'"):
            ptl.mm(ptl.ones((2, 2), dtype=ptl.int64), ptl.ones((2, 2), dtype=ptl.int64))


@pytest.mark.parametrize("arg", [(0, 1), (1, 0), (1, 65536)])
def test_emulation_arguments_are_checked(arg):
    with pytest.raises(ValueError, match="sms must be positive"):
        _C._cuda_gemm_emulation(arg)


# the fast path of each dtype, its tile (bm, bn, bk) and its elements per 16-byte vector
FAST = {ptl.float32: ("simt_vector", (128, 128, 8), 4),
        ptl.float64: ("simt_vector", (128, 128, 8), 2),
        ptl.float16: ("mma", (128, 128, 32), 8), ptl.bfloat16: ("mma", (128, 128, 32), 8)}


def padded_operand(rng, shape, dtype, transposed):
    """A random operand of `shape` (last two dims transposed in memory or not) whose rows in
    memory are padded to a multiple of 8 elements: 16-byte vectors whatever the shape."""
    base = rng.standard_normal(shape)
    mem = np.swapaxes(base, -1, -2) if transposed else base
    inner = mem.shape[-1]
    buf = np.zeros(mem.shape[:-1] + (-(-inner // 8) * 8,))
    buf[..., :inner] = mem
    t = ptl.tensor(buf).to(dtype)[..., :inner]
    t = t.transpose(-1, -2) if transposed else t
    return t, t.to(ptl.float64).numpy()


@pytest.mark.parametrize("dtype", list(FAST), ids=str)
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_fast_paths_across_tile_edges(dtype, ta, tb):
    """Every layout of A and B on the fast path, m and n at and across the 128 edge, k
    across the k-tile's and the vector's edges (zero-filled part vectors)."""
    rng = np.random.default_rng(11)
    kind, (bm, bn, bk), vec = FAST[dtype]
    shapes = list(itertools.product((1, bm - 1, bm + 1), (1, bn, bn + 1),
                                    (1, vec + 1, bk - 1, bk, 2 * bk + 1)))
    with emulated() as ran:
        for m, n, k in shapes:
            a, an = padded_operand(rng, (m, k), dtype, ta)
            b, bn_ = padded_operand(rng, (k, n), dtype, tb)
            check(ptl.mm(a, b), an @ bn_, dtype, k)
    assert ran[kind] == len(shapes) and sum(ran.values()) == len(shapes), ran


@pytest.mark.parametrize("dtype", list(FAST), ids=str)
def test_fast_paths_batches_alpha_beta_and_grid_loops(dtype):
    rng = np.random.default_rng(12)
    kind, _, _ = FAST[dtype]
    with emulated(max_grid=1) as ran:   # one block in y and z: the kernels' loops over the rest
        for (batch, m, n, k), ta, tb in itertools.product([(3, 129, 20, 40), (1, 260, 9, 3)],
                                                          [False, True], [False, True]):
            a, an = padded_operand(rng, (batch, m, k), dtype, ta)
            b, bn_ = padded_operand(rng, (batch, k, n), dtype, tb)
            c, cn = operand(rng, (batch, m, n), dtype, False, strided=True)
            check(ptl.baddbmm(c, a, b, beta=0.5, alpha=-2.0), 0.5 * cn - 2.0 * (an @ bn_),
                  dtype, k)
            check(ptl.bmm(a, b), an @ bn_, dtype, k)
    assert ran[kind] == 16 and sum(ran.values()) == 16, ran


@pytest.mark.parametrize("dtype", list(FAST), ids=str)
def test_unaligned_operands_take_the_strided_kernels(dtype):
    """An operand whose pointer, leading dimension or batch stride is not a whole number of
    16-byte vectors, or with no unit stride, falls back (and still computes the product)."""
    rng = np.random.default_rng(13)
    kind, _, vec = FAST[dtype]
    m, n, k = 33, 40, 24
    b, bn_ = padded_operand(rng, (k, n), dtype, False)
    a_flat = ptl.tensor(rng.standard_normal(m * k + 1)).to(dtype)
    offset = a_flat[1:].view(m, k)                       # the pointer one element off
    narrow = ptl.tensor(rng.standard_normal((m, k + 1))).to(dtype)[:, :k]   # ld k + 1
    spaced = ptl.tensor(rng.standard_normal((m, 2 * k))).to(dtype)[:, ::2]  # no unit stride
    with emulated() as ran:
        for a in (offset, narrow, spaced):
            check(ptl.mm(a, b), a.to(ptl.float64).numpy() @ bn_, dtype, k)
    assert ran[kind] == 0 and sum(ran.values()) == 3, ran
    batched = ptl.tensor(rng.standard_normal(2 * m * k + 1)).to(dtype)[:2 * m * k + 1]
    odd_batch = batched.as_strided((2, m, k), (m * k + 1, k, 1))  # batch stride m k + 1
    bb, bbn = padded_operand(rng, (2, k, n), dtype, False)
    with emulated() as ran:
        check(ptl.bmm(odd_batch, bb), odd_batch.to(ptl.float64).numpy() @ bbn, dtype, k)
        check(ptl.mm(offset[:1], b), offset[:1].to(ptl.float64).numpy() @ bn_, dtype, k)
    assert ran[kind] == 0 and sum(ran.values()) == 2, ran
