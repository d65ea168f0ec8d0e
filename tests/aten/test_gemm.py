"""The float32 fast paths of the GEMM engine (gemm.c, Note [GEMM packing of B]): a row-major
float32 B read in place by products of at most 64 rows, B slivers packed just before use when
A is one block, AVX2 packing (copies of row-major B, 8 x 8 transposes of transposed B and of
row-major A, tails in the portable packer), and whole 6 x 16 tiles stored straight into C with
alpha and beta.  Against NumPy in float64, on sizes that hit whole tiles and edge tiles,
transposed and strided operands, several K blocks, alpha/beta, size-0; the paths must give
the same bits as the generic ones and as each other on 1 and 2 threads."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT, assert_close, to_numpy, torch

FALLBACK = os.environ.get("PTL_CPU_CAPABILITY") == "default"

# (m, k, n): whole tiles, edge rows (m % 6), edge columns (n % 16), k % 8 tails, k < 8,
# one A block with m <= 64 (B in place) and m > 64, several A blocks (m > 144), several K
# blocks (k > 320)
MKN = [(6, 8, 16), (32, 128, 512), (7, 13, 17), (13, 7, 33), (64, 40, 48), (65, 41, 47),
       (128, 96, 80), (150, 24, 40), (30, 700, 35), (2, 3, 5)]


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)


def operand(x, layout):
    """x as a pytorchlite matrix with the same values in the given layout."""
    if layout == "contiguous":
        return ptl.tensor(x)
    if layout == "transposed":
        return ptl.tensor(np.ascontiguousarray(x.T)).t()
    # every other column of a wider matrix: no unit stride
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, ::2] = x
    return ptl.tensor(wide)[:, ::2]


def close(actual, exp, k):
    assert_close(actual, exp, dtype=ptl.float32, rtol=1e-5, atol=4e-7 * max(k, 1) * 4)


@pytest.mark.parametrize("mkn", MKN)
@pytest.mark.parametrize("la", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("lb", ["contiguous", "transposed", "strided"])
def test_mm_float32_layouts(mkn, la, lb):
    m, k, n = mkn
    a, b = rand((m, k), 1), rand((k, n), 2)
    r = ptl.mm(operand(a, la), operand(b, lb))
    close(r, a.astype(np.float64) @ b.astype(np.float64), k)
    # the layouts only change how the operands are read, never the bits of the result
    assert np.array_equal(to_numpy(r), to_numpy(ptl.mm(ptl.tensor(a), ptl.tensor(b))))


@pytest.mark.parametrize("mkn", [(32, 128, 512), (13, 7, 33), (65, 41, 47), (30, 700, 35)])
def test_tile_store_matches_update(mkn):
    """A transposed out makes C's columns strided, so every tile goes through the
    accumulator and the generic update instead of being stored by the tile."""
    m, k, n = mkn
    a, b = ptl.tensor(rand((m, k), 3)), ptl.tensor(rand((k, n), 4))
    out = ptl.empty((n, m)).t()
    ptl.mm(a, b, out=out)
    assert np.array_equal(to_numpy(out), to_numpy(ptl.mm(a, b)))


@pytest.mark.parametrize("mkn", [(32, 128, 512), (7, 13, 17), (150, 24, 40), (30, 700, 35)])
@pytest.mark.parametrize("beta, alpha", [(1, 1), (0.5, 2), (0, 1), (0, -1.5), (2, 0)])
def test_addmm_float32_beta_alpha(mkn, beta, alpha):
    m, k, n = mkn
    s, a, b = rand((n,), 5), rand((m, k), 6), rand((n, k), 7)
    r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b).t(), beta=beta, alpha=alpha)
    exp = beta * s.astype(np.float64) + alpha * (a.astype(np.float64) @ b.T.astype(np.float64))
    close(r, exp, k)
    if torch is not None:
        t = torch.addmm(torch.from_numpy(s), torch.from_numpy(a), torch.from_numpy(b).t(),
                        beta=beta, alpha=alpha)
        close(r, t.double().numpy(), k)


def test_addmm_beta_zero_ignores_nan():
    a, b = rand((13, 300), 8), rand((300, 33), 9)
    nan = ptl.full((13, 33), float("nan"))
    r = ptl.addmm(nan, ptl.tensor(a), ptl.tensor(b), beta=0)
    close(r, a.astype(np.float64) @ b.astype(np.float64), 300)
    assert np.isnan(to_numpy(ptl.addmm(nan, ptl.tensor(a), ptl.tensor(b)))).all()


@pytest.mark.parametrize("dtype", [ptl.float16, ptl.bfloat16])
@pytest.mark.parametrize("mkn", [(32, 128, 64), (7, 13, 17)])
def test_mm_half_through_float_tiles(dtype, mkn):
    m, k, n = mkn
    a, b = ptl.tensor(rand((m, k), 10)).to(dtype), ptl.tensor(rand((k, n), 11)).to(dtype)
    an, bn = to_numpy(a.float()).astype(np.float64), to_numpy(b.float()).astype(np.float64)
    r = ptl.mm(a, b)
    assert r.dtype == dtype
    tol = 1e-2 if dtype == ptl.float16 else 6e-2
    assert_close(r, an @ bn, dtype=dtype, rtol=tol, atol=tol * k)


@pytest.mark.parametrize("mkn", [(7, 13, 17), (32, 128, 64)])
def test_float64_and_int_unchanged(mkn):
    m, k, n = mkn
    a, b = rand((m, k), 12, np.float64), rand((k, n), 13, np.float64)
    assert_close(ptl.mm(ptl.tensor(a), ptl.tensor(b)), a @ b, dtype=ptl.float64)
    ai = np.random.default_rng(14).integers(-50, 50, (m, k))
    bi = np.random.default_rng(15).integers(-50, 50, (k, n))
    assert_close(ptl.mm(ptl.tensor(ai), ptl.tensor(bi)), ai @ bi, dtype=ptl.int64)


@pytest.mark.parametrize("mkn", [(0, 5, 16), (6, 0, 16), (6, 5, 0)])
def test_size_zero(mkn):
    m, k, n = mkn
    a, b = rand((m, k), 16), rand((k, n), 17)
    assert_close(ptl.mm(ptl.tensor(a), ptl.tensor(b)), np.zeros((m, n)), dtype=ptl.float32)
    s = rand((m, n), 18)
    r = ptl.addmm(ptl.tensor(s), ptl.tensor(a), ptl.tensor(b), beta=0.5)
    assert_close(r, 0.5 * s.astype(np.float64), dtype=ptl.float32)


@pytest.mark.parametrize("bmkn", [(3, 32, 128, 48), (4, 7, 13, 17)])
def test_bmm_float32(bmkn):
    bs, m, k, n = bmkn
    a, b = rand((bs, m, k), 19), rand((bs, n, k), 20)
    r = ptl.bmm(ptl.tensor(a), ptl.tensor(b).transpose(1, 2))
    close(r, a.astype(np.float64) @ b.transpose(0, 2, 1).astype(np.float64), k)
    r2 = ptl.bmm(ptl.tensor(a), ptl.tensor(np.ascontiguousarray(b.transpose(0, 2, 1))))
    assert np.array_equal(to_numpy(r), to_numpy(r2))


@pytest.mark.parametrize("mkn, bt", [((32, 128, 512), False), ((128, 784, 512), True),
                                     ((150, 300, 200), False), ((40, 64, 33), True)])
def test_same_bits_on_one_and_two_threads(mkn, bt):
    m, k, n = mkn
    a = ptl.tensor(rand((m, k), 21))
    b = ptl.tensor(rand((n, k), 22)).t() if bt else ptl.tensor(rand((k, n), 22))
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        one = to_numpy(ptl.mm(a, b))
        ptl.set_num_threads(2)
        two = to_numpy(ptl.mm(a, b))
    finally:
        ptl.set_num_threads(old)
    assert np.array_equal(one, two)


def test_mm_float32_grad():
    a = ptl.tensor(rand((13, 40), 23), requires_grad=True)
    b = ptl.tensor(rand((40, 33), 24), requires_grad=True)
    g = rand((13, 33), 25)
    ptl.mm(a, b).backward(ptl.tensor(g))
    an, bn, gn = (x.astype(np.float64) for x in (rand((13, 40), 23), rand((40, 33), 24), g))
    close(a.grad, gn @ bn.T, 33)
    close(b.grad, an.T @ gn, 13)


@pytest.mark.skipif(FALLBACK, reason="already running the portable kernels")
def test_portable_fallback():
    """Reruns this file with the AVX2 packing and tiles switched off."""
    env = dict(os.environ, PTL_CPU_CAPABILITY="default")
    r = subprocess.run([sys.executable, "-m", "pytest", __file__, "-x", "-q",
                        "-p", "no:cacheprovider"], env=env, capture_output=True, text=True,
                       cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]


BIAS = {  # addmm's self, for an (m, n) product: shape and how it is laid out
    "row": lambda m, n: ptl.tensor(rand((n,), 30)),
    "column": lambda m, n: ptl.tensor(rand((m, 1), 31)),
    "matrix": lambda m, n: ptl.tensor(rand((m, n), 32)),
    "transposed": lambda m, n: ptl.tensor(rand((n, m), 33)).t(),
    "scalar": lambda m, n: ptl.tensor(rand((), 34)),
}


@pytest.mark.parametrize("bias", list(BIAS))
@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64, ptl.int64, ptl.int32, ptl.float16])
@pytest.mark.parametrize("mkn", [(32, 128, 512), (13, 300, 33), (1, 40, 20), (20, 40, 1),
                                 (4, 0, 5), (3, 8200, 2)])
def test_addmm_bias_in_place(bias, dtype, mkn):
    """addmm and baddbmm read the bias through its strides as the beta term (1-D bias: rows
    0 apart) instead of copying it into the result first; vectors, k = 0 and long-K products
    still copy it."""
    m, k, n = mkn
    s = BIAS[bias](m, n)
    a, b = ptl.tensor(rand((m, k), 35)), ptl.tensor(rand((k, n), 36))
    if dtype in (ptl.int64, ptl.int32):
        s, a, b = (ptl.tensor(np.rint(to_numpy(x) * 10)).to(dtype) for x in (s, a, b))
    else:
        s, a, b = s.to(dtype), a.to(dtype), b.to(dtype)
    sn, an, bn = (to_numpy(x).astype(np.float64) for x in (s, a, b))
    beta, alpha = (2, 3) if dtype in (ptl.int64, ptl.int32) else (0.5, 1.5)
    r = ptl.addmm(s, a, b, beta=beta, alpha=alpha)
    exp = beta * np.broadcast_to(sn, (m, n)) + alpha * (an @ bn)
    if dtype in (ptl.int64, ptl.int32):
        assert_close(r, exp.astype(np.int64), dtype=dtype)
    else:
        tol = 2e-2 if dtype == ptl.float16 else 1e-5
        assert_close(r, exp, dtype=dtype, rtol=tol, atol=tol * max(k, 1) * 4)
    r3 = ptl.baddbmm(s, a.unsqueeze(0).expand(2, m, k), b.unsqueeze(0).expand(2, k, n),
                     beta=beta, alpha=alpha)
    assert np.array_equal(to_numpy(r3[1]), to_numpy(r))


@pytest.mark.parametrize("mkn", [(32, 128, 512), (13, 200, 33), (128, 256, 70)])
def test_addmm_bias_same_bits_as_mm_plus_bias(mkn):
    """One K block: alpha * acc + beta * bias is acc + bias for alpha = beta = 1, as mm + add."""
    m, k, n = mkn
    s, a, b = ptl.tensor(rand((n,), 37)), ptl.tensor(rand((m, k), 38)), ptl.tensor(rand((n, k), 39))
    r = ptl.addmm(s, a, b.t())
    assert np.array_equal(to_numpy(r), to_numpy(ptl.mm(a, b.t()) + s))
