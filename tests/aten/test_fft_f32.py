"""The float32 path of torch.fft (Note [FFT float32] in src/aten/native/fft_f32.c): complex64 /
float32 transforms of lengths whose factors are 2, 3 and 5 run in float32 arithmetic over
blocks of 16 lines, a line alone of 256 m points through the four-step over 16.

Accuracy is bounded by PyTorch's own (pocketfft in float32): the relative Frobenius error
against NumPy's float64 on the same float32 inputs stays within 2x of PyTorch's, measured
on these inputs with torch 2.13 as the worst over each size class (powers of two:
1.62e-7, 3/5-smooth: 1.85e-7, lengths with a prime factor 7 .. 31: 1.22e-7, Bluestein
lengths: 2.63e-7); the last two keep the double path (about 4e-8).  A wrong twiddle or a
wrong butterfly constant gives errors of 1e-4 or more.  Where torch is installed each
input is also checked against torch's error on it.

The paths change with the number of lines (1: the four-step or the double path; more:
blocks of 8 lines, or on AVX-512 hosts of 16 where the lines lie 8 bytes apart, the last
block of a task filled up with copies of its last line), with the host (without AVX-512
the four-step runs in 32-byte vectors, 8 columns at a time), with the length
(n % 256 == 0: the four-step; the float radices 8 .. 8 4 4 / 4 / 2, 3, 5; a factor above 5:
the double path) and with the split of lines over threads (FFT_GRAIN_POINTS = 16384 points
per task); the tests run at and across each, on 1 and 2 threads, and check that a line's
bits do not depend on its block (either width), its task or its layout."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import ROOT, num_threads, skip_native_capability, torch

C64 = ptl.complex64
# 2x PyTorch's worst error on the size class (see the docstring)
BOUND = {"pow2": 3.3e-7, "smooth": 3.7e-7, "prime": 2.5e-7, "bluestein": 5.3e-7}
# ORDER: classes of BOUND
SIZES = {"pow2": [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384],
         "smooth": [3, 5, 6, 12, 15, 60, 100, 360, 768, 1000, 1280, 6000],
         "prime": [7, 11, 13, 31, 14, 56, 448],
         "bluestein": [37, 97, 1031, 2062]}
CASES = [(cls, n) for cls, sizes in SIZES.items() for n in sizes]
OPS = ["fft", "ifft", "rfft", "irfft"]


def inputs(op, n, lines, seed):
    """(float32 / complex64 ndarray, kwargs, float64 reference) for op on `lines` lines"""
    gen = np.random.default_rng(seed)
    if op == "rfft":
        a = gen.standard_normal((lines, n)).astype(np.float32)
        return a, {}, np.fft.rfft(a.astype(np.float64))
    width = n // 2 + 1 if op == "irfft" else n
    a = (gen.standard_normal((lines, width)) + 1j * gen.standard_normal((lines, width)))
    a = a.astype(np.complex64)
    if op == "irfft":
        return a, {"n": n}, np.fft.irfft(a.astype(np.complex128), n=n)
    return a, {}, getattr(np.fft, op)(a.astype(np.complex128))


def rel_err(got, ref):
    return np.linalg.norm(got.astype(ref.dtype) - ref) / np.linalg.norm(ref)


@pytest.mark.parametrize("cls,n", CASES)
@pytest.mark.parametrize("lines", [1, 3, 16, 17])
@pytest.mark.parametrize("op", OPS)
def test_error_within_twice_torchs(cls, n, lines, op):
    a, kw, ref = inputs(op, n, lines, seed=n * 31 + lines)
    got = getattr(ptl.fft, op)(ptl.tensor(a), **kw).numpy()
    assert got.dtype == (np.float32 if op == "irfft" else np.complex64)
    err = rel_err(got, ref)
    assert err <= BOUND[cls], (err, BOUND[cls])
    if torch is not None:
        theirs = rel_err(getattr(torch.fft, op)(torch.tensor(a), **kw).numpy(), ref)
        assert err <= 2 * theirs + 2e-8, (err, theirs)   # 2e-8: a few ulps of slack at tiny n


@pytest.mark.parametrize("n", [16, 32, 64, 128, 256, 512, 768, 1280, 4096])
def test_a_line_alone(n):
    # n % 256 == 0: the four-step over 16 (768 = 256 * 3, 1280 = 256 * 5); below: the
    # double path, whose error is float64's rounded once
    for op in ("fft", "ifft"):
        a, kw, ref = inputs(op, n, 1, seed=n)
        for x in (ptl.tensor(a[0]), ptl.tensor(np.repeat(a[0], 2))[::2]):   # strided too
            err = rel_err(getattr(ptl.fft, op)(x, norm="ortho").numpy(),
                          ref[0] / np.sqrt(n) * (n if op == "ifft" else 1))
            assert err <= (BOUND["pow2"] if n % 256 == 0 else 1e-7), (op, err)


@pytest.mark.parametrize("n", [2, 4, 8, 16, 32, 64, 128, 256, 6, 24, 40, 45, 120, 250, 2048,
                               4096])
def test_blocks_give_the_same_bits_whatever_the_batch(n):
    # the float radices for 2^e: 2, 4, 8, 4 4, 8 4, 8 8, 8 4 4, 8 8 4 (then 3, 5); a line of
    # 19 (blocks of 8, 8 and 3), of the first 16 and of a batch of 2 (filled up with copies)
    # gives the same bits
    gen = np.random.default_rng(n)
    a = (gen.standard_normal((19, n)) + 1j * gen.standard_normal((19, n))).astype(np.complex64)
    r = gen.standard_normal((19, n)).astype(np.float32)
    for fn, x in [(ptl.fft.fft, a), (ptl.fft.ifft, a), (ptl.fft.rfft, r),
                  (lambda t: ptl.fft.irfft(t, n=n), a[:, : n // 2 + 1])]:
        whole = fn(ptl.tensor(x)).numpy()
        np.testing.assert_array_equal(whole[:16], fn(ptl.tensor(x[:16])).numpy())
        for i in range(0, 18, 2):
            np.testing.assert_array_equal(whole[i:i + 2], fn(ptl.tensor(x[i:i + 2])).numpy())


@pytest.mark.parametrize("lines", [2, 15, 16, 17, 255, 256, 257, 511, 512, 513, 1030])
def test_threads_across_the_split(lines):
    # n = 64: 256 lines a task, so 511 lines run on one thread and 512 on two; each task
    # runs blocks of 16 and fills up its last
    gen = np.random.default_rng(lines)
    a = (gen.standard_normal((lines, 64)) + 1j * gen.standard_normal((lines, 64)))
    a = a.astype(np.complex64)
    r = gen.standard_normal((64, lines)).astype(np.float32)
    got = []
    for threads in (1, 2):
        with num_threads(threads):
            got.append([ptl.fft.fft(ptl.tensor(a)).numpy(),
                        ptl.fft.rfft(ptl.tensor(r), dim=0).numpy(),
                        ptl.fft.irfft(ptl.tensor(a)).numpy(),
                        ptl.fft.fft2(ptl.tensor(a)).numpy()])
    refs = [np.fft.fft(a.astype(np.complex128)), np.fft.rfft(r.astype(np.float64), axis=0),
            np.fft.irfft(a.astype(np.complex128)), np.fft.fft2(a.astype(np.complex128))]
    for one, two, ref in zip(*got, refs):
        assert rel_err(one, ref) <= BOUND["pow2"]
        np.testing.assert_array_equal(one, two)


@pytest.mark.parametrize("shape", [(16, 24), (13, 40), (40, 16), (20, 20), (33, 64), (20, 8),
                                   (20, 9), (24, 16), (24, 17)])
def test_layouts_give_the_same_bits(shape):
    # contiguous lines move as 8x8 transposes of 8 points, lines 8 bytes apart (dim 0) a
    # 128-byte row per point in blocks of 16 (8, 9, 16, 17 of them: blocks of 8; 8 and 1;
    # 16; 16 and 1), other strides point by point: all give the same bits
    gen = np.random.default_rng(shape[0])
    a = (gen.standard_normal(shape) + 1j * gen.standard_normal(shape)).astype(np.complex64)
    r = gen.standard_normal(shape).astype(np.float32)
    wide = np.zeros((shape[0], 2 * shape[1]), np.complex64)
    wide[:, ::2] = a
    wide_r = np.zeros((shape[0], 2 * shape[1]), np.float32)
    wide_r[:, ::2] = r
    strided, strided_r = ptl.tensor(wide)[:, ::2], ptl.tensor(wide_r)[:, ::2]
    for dim in (0, 1):
        for fn, x, s in [(ptl.fft.fft, a, strided), (ptl.fft.rfft, r, strided_r),
                         (ptl.fft.ifft, a, strided)]:
            got = fn(ptl.tensor(x), dim=dim).numpy()
            np.testing.assert_array_equal(got, fn(s, dim=dim).numpy())
            ref = getattr(np.fft, fn.__name__)(x.astype(np.complex128 if x.dtype == np.complex64
                                                        else np.float64), axis=dim)
            assert rel_err(got, ref) <= BOUND["smooth"]
        m = shape[dim] // 2 + 1
        half = a[:m] if dim == 0 else a[:, :m]
        got = ptl.fft.irfft(ptl.tensor(half), n=shape[dim], dim=dim).numpy()
        np.testing.assert_array_equal(
            got, ptl.fft.irfft(ptl.tensor(np.ascontiguousarray(half.T)).T, n=shape[dim],
                               dim=dim).numpy())
        ref = np.fft.irfft(half.astype(np.complex128), n=shape[dim], axis=dim)
        assert rel_err(got, ref) <= BOUND["smooth"]


def test_two_sided_and_scaled():
    # fft of float32 lines is R2C with the conjugate half written too; norms scale in float
    gen = np.random.default_rng(5)
    r = gen.standard_normal((18, 48)).astype(np.float32)
    for norm in (None, "ortho", "forward"):
        got = ptl.fft.fft(ptl.tensor(r), norm=norm).numpy()
        assert rel_err(got, np.fft.fft(r.astype(np.float64), norm=norm)) <= BOUND["smooth"]
        got = ptl.fft.hfft(ptl.tensor(r[:, :25].astype(np.complex64)), n=48, norm=norm).numpy()
        ref = np.fft.hfft(r[:, :25].astype(np.complex128), n=48, norm=norm)
        assert rel_err(got, ref) <= BOUND["smooth"]


def test_special_values_stay_in_their_lines():
    # an inf or nan line spoils itself only, not the other lanes of its block
    a = np.ones((16, 64), np.complex64)
    a[3, 5] = np.inf
    a[9, 0] = np.nan
    got = ptl.fft.fft(ptl.tensor(a)).numpy()
    clean = [i for i in range(16) if i not in (3, 9)]
    np.testing.assert_array_equal(got[clean], np.fft.fft(a[clean]).astype(np.complex64))
    assert not np.isfinite(got[3]).all() and np.isnan(got[9]).all()


@pytest.mark.parametrize("n", [2, 4, 12, 14, 16, 18, 30, 32, 34, 48, 1024])
def test_one_sided_rows_match_the_two_sided_transform(n):
    # rfft's contiguous one-sided rows take the bins 8 at a time straight to the lines and
    # the last (n / 2 + 1) % 8 through the buffer; fft of the same float32 lines (two-sided)
    # and rfft along dim 0 take every bin through the buffer: the same bits.  n / 2 + 1 = 2,
    # 3, 7, 8, 9, 10, 16, 17, 18, 25, 513 (under, at and across a tile of 8)
    gen = np.random.default_rng(n)
    r = gen.standard_normal((11, n)).astype(np.float32)
    one = ptl.fft.rfft(ptl.tensor(r)).numpy()
    assert one.shape == (11, n // 2 + 1)
    np.testing.assert_array_equal(one, ptl.fft.fft(ptl.tensor(r)).numpy()[:, : n // 2 + 1])
    np.testing.assert_array_equal(one, ptl.fft.rfft(ptl.tensor(r.T.copy()), dim=0).numpy().T)
    assert rel_err(one, np.fft.rfft(r.astype(np.float64))) <= BOUND["pow2" if n & (n - 1) == 0
                                                                     else "smooth"]


CHILD = """
import sys, numpy as np, pytorchlite as ptl
gen = np.random.default_rng(3)
out = []
for n in (256, 512, 768, 1024, 4096):   # a line alone: the four-step over 16
    a = (gen.standard_normal(n) + 1j * gen.standard_normal(n)).astype(np.complex64)
    out += [ptl.fft.fft(ptl.tensor(a)).numpy(), ptl.fft.ifft(ptl.tensor(a)).numpy()]
for lines in (9, 16, 17, 33):   # lines 8 bytes apart: blocks of 16 on AVX-512 hosts
    a = gen.standard_normal((64, lines)) + 1j * gen.standard_normal((64, lines))
    out.append(ptl.fft.fft(ptl.tensor(a.astype(np.complex64)), dim=0).numpy())
    out.append(ptl.fft.rfft(ptl.tensor(a.real.astype(np.float32)), dim=0).numpy())
np.savez(sys.argv[1], *out)
"""


def test_hosts_give_the_same_bits(tmp_path):
    # Without AVX-512 (PTL_CPU_CAPABILITY=avx2 in a child on an AVX-512 host) the four-step
    # runs 8 columns at a time and lines 8 bytes apart run in blocks of 8: the same bits
    skip_native_capability("avx2")
    skip_native_capability("default")
    files = []
    for cap in (None, "avx2"):
        env = dict(os.environ)
        if cap is not None:
            env["PTL_CPU_CAPABILITY"] = cap
        files.append(str(tmp_path / f"{cap}.npz"))
        subprocess.run([sys.executable, "-c", CHILD, files[-1]], env=env, cwd=ROOT, check=True)
    native, avx2 = np.load(files[0]), np.load(files[1])
    assert len(native.files) == 18
    for k in native.files:
        np.testing.assert_array_equal(native[k], avx2[k])


@pytest.mark.parametrize("n", [16, 24, 40, 64, 128, 1024, 2048, 4096, 8192])
def test_last_stage_to_the_lines(n):
    # contiguous output rows take the last stage's outputs straight from it where that
    # stage's l (n over its radix) is a multiple of 8 and not of 512 (fft: n = 24, 40, 64,
    # 128, 1024; irfft, whose half transform has n / 2 points: n = 64, 128, 1024, 2048), and
    # through the buffer otherwise (fft: 16, 2048, 4096, 8192; irfft: 16, 24, 40, 4096, 8192)
    # and along dim 0 always: the same bits
    gen = np.random.default_rng(n)
    a = (gen.standard_normal((9, n)) + 1j * gen.standard_normal((9, n))).astype(np.complex64)
    got = ptl.fft.fft(ptl.tensor(a)).numpy()
    np.testing.assert_array_equal(got, ptl.fft.fft(ptl.tensor(a.T.copy()), dim=0).numpy().T)
    assert rel_err(got, np.fft.fft(a.astype(np.complex128))) <= BOUND["smooth"]
    half = a[:, : n // 2 + 1]
    got = ptl.fft.irfft(ptl.tensor(half), n=n).numpy()
    np.testing.assert_array_equal(
        got, ptl.fft.irfft(ptl.tensor(half.T.copy()), n=n, dim=0).numpy().T)
    assert rel_err(got, np.fft.irfft(half.astype(np.complex128), n=n)) <= BOUND["smooth"]
