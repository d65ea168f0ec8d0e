"""Random numbers: the Philox generator, reproducibility, the distributions' laws and the
errors (src/aten/generator.c, src/aten/native/random.c, src/python/generator.c).

The laws are checked statistically on 1e6 samples: moments within 5 sigma and a
Kolmogorov-Smirnov test for continuous distributions, a chi-square test for discrete ones,
each at a significance of 1e-6 so that a correct sampler fails about once in a million runs
(the seeds are fixed, so a run is repeatable anyway).  Error messages are checked against
the literal PyTorch text and, where torch is installed, against torch itself."""
import functools
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from scipy import special, stats

import pytorchlite as ptl
from pytorchlite import _C
from helpers import (FLOAT_DTYPES, INT_DTYPES, LAYOUTS, ROOT, SHAPES, assert_large_sample_law,
                     make, num_threads, torch, torch_ref)


N = 1_000_000
ALPHA = 1e-6


def f64(t):
    return t.double().numpy() if t.dtype != ptl.bfloat16 else t.float().double().numpy()


def check_moments(x, mean, var):
    """Sample mean and variance within 5 sigma of the law's (4th moment estimated)."""
    n = x.size
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / n), (x.mean(), mean)
    m4 = np.mean((x - x.mean()) ** 4)
    assert abs(x.var() - var) < 5 * np.sqrt((m4 - var ** 2) / n), (x.var(), var)


def check_ks(x, cdf):
    assert stats.kstest(x, cdf).pvalue > ALPHA


def check_chi2(values, probs):
    """values: integer samples; probs: dict value -> probability (the rest pooled)."""
    keys = sorted(probs)
    counts = np.array([np.count_nonzero(values == k) for k in keys], dtype=np.float64)
    expected = np.array([probs[k] for k in keys]) * values.size
    rest = values.size - counts.sum()
    rest_expected = values.size - expected.sum()
    if rest_expected > 5:
        counts = np.append(counts, rest)
        expected = np.append(expected, rest_expected)
    else:   # pool a thin tail into the last bin
        counts[-1] += rest
        expected[-1] += rest_expected
    keep = expected > 5
    chi2 = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi2, keep.sum() - 1) > ALPHA, (chi2, keep.sum())


# ---- the generator ----

def test_philox_known_answer():
    """Element 0 of seed 0 is Philox4x32-10 of counter 0 under key 0: Random123's known
    answer 6627e8d5 e169c58d bc57ac4c 9b00dbd8; random_ over all of int64 shows words 0-1."""
    g = ptl.Generator().manual_seed(0)
    x = ptl.empty(1, dtype=ptl.int64).random_(-2 ** 63, None, generator=g)
    assert int(x[0]) & (2 ** 64 - 1) == 0xE169C58D6627E8D5


def test_same_seed_same_values():
    for op in (lambda: ptl.rand(100), lambda: ptl.randn(3, 5), lambda: ptl.randperm(50),
               lambda: ptl.randint(0, 1000, (20,)), lambda: ptl.multinomial(ptl.ones(9), 4),
               lambda: ptl.poisson(ptl.full((30,), 4.0)),
               lambda: ptl.empty(40).exponential_()):
        ptl.manual_seed(1234)
        a = op()
        ptl.manual_seed(1234)
        b = op()
        np.testing.assert_array_equal(a.numpy(), b.numpy())
        c = op()
        assert not np.array_equal(a.numpy(), c.numpy())


def test_generator_object():
    g = ptl.Generator(device="cpu")
    assert g.initial_seed() == 67280421310721   # PyTorch's default_rng_seed_val
    if torch is not None:
        assert torch.Generator().initial_seed() == g.initial_seed()
    assert g.manual_seed(7) is g
    assert g.initial_seed() == 7
    assert g.device == ptl.device("cpu")
    a = ptl.rand(10, generator=g)
    ptl.manual_seed(7)   # the default generator is separate
    ptl.rand(10)
    g2 = ptl.Generator().manual_seed(7)
    np.testing.assert_array_equal(a.numpy(), ptl.rand(10, generator=g2).numpy())
    assert ptl.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1
    assert ptl.Generator().manual_seed(2 ** 64 - 1).initial_seed() == 2 ** 64 - 1
    s = g.seed()
    assert g.initial_seed() == s and 0 <= s < 2 ** 64


def test_state_round_trip():
    g = ptl.Generator().manual_seed(3)
    ptl.randn(17, generator=g)
    state = g.get_state()
    assert state.dtype == ptl.uint8 and state.shape == (16,)
    a = ptl.randn(100, generator=g)
    g.set_state(state)
    np.testing.assert_array_equal(a.numpy(), ptl.randn(100, generator=g).numpy())
    # the module-level functions act on the default generator
    ptl.manual_seed(5)
    assert ptl.initial_seed() == 5 and ptl.random.initial_seed() == 5
    st = ptl.get_rng_state()
    x = ptl.rand(5)
    ptl.set_rng_state(st)
    np.testing.assert_array_equal(x.numpy(), ptl.rand(5).numpy())
    with ptl.random.fork_rng():
        ptl.rand(100)
    np.testing.assert_array_equal(ptl.get_rng_state().numpy(), st.numpy() + np.array(
        [0] * 8 + [5] + [0] * 7, dtype=np.uint8))


def test_offset_advances_by_numel():
    """State = seed then offset (little-endian uint64); a draw of n reserves n counters."""
    g = ptl.Generator().manual_seed(11)

    def seed_offset():
        b = g.get_state().numpy().tobytes()
        return int.from_bytes(b[:8], "little"), int.from_bytes(b[8:], "little")

    assert seed_offset() == (11, 0)
    a = ptl.rand(1000, generator=g)
    assert seed_offset() == (11, 1000)
    b = ptl.randn(3, 5, generator=g)
    assert seed_offset() == (11, 1015)
    ptl.empty(0).uniform_(generator=g)
    assert seed_offset() == (11, 1015)
    assert not np.array_equal(a.numpy(), ptl.rand(1000, generator=g).numpy())
    assert b.shape == (3, 5)


@pytest.mark.parametrize("op", ["rand", "randn", "bernoulli_", "randint", "poisson",
                                "poisson_small", "_standard_gamma", "gamma_big",
                                "multinomial"])
def test_thread_count_does_not_change_values(op):
    make_op = {
        "rand": lambda g: ptl.rand(N, generator=g),
        "randn": lambda g: ptl.randn(N, generator=g, dtype=ptl.float64),
        "bernoulli_": lambda g: ptl.empty(N).bernoulli_(0.3, generator=g),
        "randint": lambda g: ptl.randint(-5, 2 ** 40, (N,), generator=g),
        "poisson": lambda g: ptl.poisson(ptl.full((N // 10,), 30.0), generator=g),
        "_standard_gamma": lambda g: ptl._standard_gamma(ptl.full((N // 10,), 0.7), generator=g),
        "poisson_small": lambda g: ptl.poisson(ptl.full((N // 10,), 4.0), generator=g),
        "gamma_big": lambda g: ptl._standard_gamma(ptl.full((N // 10,), 2.5), generator=g),
        "multinomial": lambda g: ptl.multinomial(ptl.rand(2000, 50, generator=g), 20, generator=g),
    }[op]
    old = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        one = make_op(ptl.Generator().manual_seed(99)).numpy()
        ptl.set_num_threads(2)
        two = make_op(ptl.Generator().manual_seed(99)).numpy()
    finally:
        ptl.set_num_threads(old)
    np.testing.assert_array_equal(one, two)


# float32 uniforms and normals with Note [Vector Philox]'s AVX2 path, the normals' AVX-512 path
# (Note [Vector Box-Muller]) and the scalar stream: every length across the groups of 32 (uniform)
# / 16 and 32 (normal) elements and the blocks, starts inside a block (odd offsets), generator
# objects, ranges and mean / std through the double transform, strided selves; float16 and bfloat16
# uniforms (through store_halves, 512 a chunk) and float64 ones (uniform_range_f8, 16 a group) the
# same way; random_ and randint of every dtype whose range fits 32 bits (Note [Integer draws in
# vectors]: ranges 2 and 3, up to 2^32, signed, and above 2^32 through the scalar path);
# exponential_, geometric_ and cauchy_ of every dtype (transform_range: 16 a group, 512 a chunk;
# p near 0 and 1, saturating integer stores, overflowing cauchy_); float16
# and bfloat16 normals (rounded from the float ones), float32, float16 and bfloat16 log_normal_ and
# normal with tensor mean and std (the vector z, then the finish, 512 values a chunk: lengths at
# and across it, and split over threads), with nan, infinities, values that overflow or underflow
# float16 and bfloat16 ties reaching the vector stores (store_halves, eight a group); float64
# normals (groups of 16 elements at either width) the same way, with mean -0, a tensor mean, and
# tensor mean and std (normal_finish_doubles, 512 a chunk), and float64 log_normal_ (the vector
# a + b z, then libm's exp: lengths around 16 and 512, odd starts, values that overflow and
# underflow, a strided self); poisson (Note [Poisson draws in vectors]: groups of eight, the
# blocks drawn ahead from the largest rate of a group, rates 0, tiny, around 10 and large,
# mixed rates, lengths around 8 and 512; below rate 10 Knuth's product in vectors); _standard_gamma
# and _sample_dirichlet (Note [Gamma draws in vectors]: the first try in vectors, groups of eight,
# alphas 0, 1e-3, below and at 1, 2.5, 1e6, 1e300, inf, nan and negative, mixed, every floating
# dtype) (the scalar formulas throughout)
FILL_SCRIPT = r"""
import sys, pytorchlite as ptl
out = sys.stdout.buffer
ptl.set_num_threads(int(sys.argv[1]))
for seed in (0, 1, 12345, 2 ** 40 + 7, 2 ** 62 - 5):
    ptl.manual_seed(seed)
    for n in list(range(70)) + [4095, 4096, 8193, 70001, 1 << 20]:
        out.write(ptl.rand(n).numpy().tobytes())
    g = ptl.Generator().manual_seed(seed + 3)
    for skip in (1, 2, 3, 5):
        ptl.rand(skip, generator=g)
        out.write(ptl.rand(3, 4099, generator=g).numpy().tobytes())
        for lo, hi in ((-3.7, 2.9), (1e-3, 0.1), (-1e30, 1e30), (5.0, 5.0)):
            out.write(ptl.empty(40003).uniform_(lo, hi, generator=g).numpy().tobytes())
    out.write(ptl.empty(1000, 7).t().uniform_(-2, 3).numpy().tobytes())
    out.write(ptl.rand_like(ptl.empty(9, 13)).numpy().tobytes())
    for dt in (ptl.float16, ptl.bfloat16, ptl.float64):
        view = ptl.int16 if dt != ptl.float64 else ptl.int64
        for n in list(range(40)) + [511, 512, 513, 543, 544, 545, 4099, 70001]:
            out.write(ptl.rand(n, dtype=dt).view(view).numpy().tobytes())
        for skip in (1, 2, 3):
            ptl.rand(skip, generator=g)
            for lo, hi in ((-3.7, 2.9), (-1e30, 1e30), (5.0, 5.0), (0.0, 1.0)):
                out.write(ptl.empty(40003, dtype=dt).uniform_(lo, hi, generator=g).view(view)
                          .numpy().tobytes())
        out.write(ptl.empty(1000, 7, dtype=dt).t().uniform_(-2, 3).view(view).numpy().tobytes())
    for n in list(range(80)) + [4097, 70001, 1 << 20]:
        out.write(ptl.randn(n).numpy().tobytes())
    for ncat in (1, 7, 8, 9, 15, 16, 17, 511, 512, 513, 520, 1031, 50257):
        p = ptl.rand(3, ncat, generator=g, dtype=ptl.float64)
        p[:, ::5] = 0.0
        p[:, 0] = 0.5
        for n in sorted({1, (ncat + 3) // 4, ncat}):
            out.write(ptl.multinomial(p, n, generator=g).numpy().tobytes())
    mean = ptl.linspace(-1, 1, 70001)
    mean[::3] = -0.0
    for dt in (ptl.float16, ptl.bfloat16):
        for n in (0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 70001):
            out.write(ptl.randn(n, dtype=dt).view(ptl.int16).numpy().tobytes())
        out.write(ptl.empty(3, 700, dtype=dt)[:, 1:].normal_(1.5, 0.3, generator=g)
                  .view(ptl.int16).numpy().tobytes())
        for n in (1, 17, 33, 511, 512, 513, 1025, 70001):
            out.write(ptl.empty(n, dtype=dt).log_normal_(0.3, 0.7, generator=g)
                      .view(ptl.int16).numpy().tobytes())
            out.write(ptl.normal(mean[:n].to(dt), ptl.linspace(0, 2, n, dtype=dt), generator=g)
                      .view(ptl.int16).numpy().tobytes())
    for n in (1, 17, 33, 511, 512, 513, 1025, 4099, 70001):
        out.write(ptl.empty(n).log_normal_(0.3, 0.7, generator=g).numpy().tobytes())
        out.write(ptl.normal(mean[:n], ptl.linspace(0, 2, n), generator=g).numpy().tobytes())
    for skip in (1, 2, 3):
        ptl.randn(skip, generator=g)
        out.write(ptl.randn(3, 4099, generator=g).numpy().tobytes())
        out.write(ptl.empty(40003).normal_(1.5, 0.3, generator=g).numpy().tobytes())
    out.write(ptl.empty(1000, 7).t().normal_(-2, 3).numpy().tobytes())
    out.write(ptl.randn_like(ptl.empty(9, 13)).numpy().tobytes())
    for n in list(range(80)) + [4097, 70001, 1 << 19]:
        out.write(ptl.randn(n, dtype=ptl.float64).numpy().tobytes())
    for skip in (1, 2, 3):
        ptl.randn(skip, generator=g, dtype=ptl.float64)
        out.write(ptl.randn(3, 4099, generator=g, dtype=ptl.float64).numpy().tobytes())
        out.write(ptl.empty(40003, dtype=ptl.float64).normal_(1.5, 0.3, generator=g)
                  .numpy().tobytes())
    out.write(ptl.empty(1000, 7, dtype=ptl.float64).t().normal_(-2, 3).numpy().tobytes())
    out.write(ptl.empty(4099, dtype=ptl.float64).normal_(-0.0, 1.0).numpy().tobytes())
    for n in (1, 2, 15, 16, 17, 33, 511, 512, 513, 527, 528, 529, 1025, 4099, 70001):
        out.write(ptl.empty(n, dtype=ptl.float64).log_normal_(0.3, 0.7, generator=g).numpy()
                  .tobytes())
    rates = ptl.linspace(0, 30, 4099, dtype=ptl.float64)
    rates[::7] = 0.0
    rates[::11] = 9.99
    for lam in (0.0, 1e-3, 0.5, 4.0, 9.99, 10.0, 50.0, 1e4):
        for n in (1, 7, 8, 9, 511, 512, 513, 4099):
            out.write(ptl.poisson(ptl.full((n,), lam, dtype=ptl.float64), generator=g).numpy()
                      .tobytes())
    for dt in (ptl.float16, ptl.float32, ptl.float64):
        out.write(ptl.poisson(rates.to(dt), generator=g).double().numpy().tobytes())
        out.write(ptl.poisson(rates.to(dt).flip(0)[::3], generator=g).double().numpy().tobytes())
    alphas = ptl.linspace(0, 12, 4099, dtype=ptl.float64)
    alphas[::5] = 0.5
    alphas[1::13] = 1e-3
    alphas[2::17] = 0.0
    alphas[3::19] = -1.0
    alphas[4::23] = float("nan")
    alphas[6::29] = 1e6
    alphas[7::31] = float("inf")
    alphas[8::37] = 1.0
    alphas[9::41] = -0.5
    for a in (1e-3, 0.5, 0.999, 1.0, 2.5, 1e6, 1e300):
        for n in (1, 7, 8, 9, 511, 512, 513, 4099):
            out.write(ptl._standard_gamma(ptl.full((n,), a, dtype=ptl.float64), generator=g)
                      .numpy().tobytes())
    for dt in (ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64):
        out.write(ptl._standard_gamma(alphas.to(dt), generator=g).double().numpy().tobytes())
        out.write(ptl._standard_gamma(alphas.to(dt).flip(0)[::3], generator=g).double().numpy()
                  .tobytes())
    out.write(ptl._sample_dirichlet(ptl.rand(1000, 7, generator=g, dtype=ptl.float64) + 0.2,
                                    generator=g).numpy().tobytes())
    for skip in (1, 2, 3):
        ptl.randn(skip, generator=g, dtype=ptl.float64)
        for mu, sd in ((0.0, 1.0), (-2.5, 0.1), (700.0, 10.0), (-740.0, 10.0)):
            out.write(ptl.empty(4099, dtype=ptl.float64).log_normal_(mu, sd, generator=g)
                      .numpy().tobytes())
    out.write(ptl.empty(1000, 7, dtype=ptl.float64).t().log_normal_(1.0, 2.0).numpy().tobytes())
    out.write(ptl.normal(mean[:1025].double(), 2.0, generator=g).numpy().tobytes())
    for n in (1, 2, 15, 16, 17, 18, 33, 511, 512, 513, 527, 528, 529, 1025, 4099, 70001):
        out.write(ptl.normal(mean[:n].double(), ptl.linspace(0, 2, n, dtype=ptl.float64),
                             generator=g).numpy().tobytes())
        out.write(ptl.normal(-0.0, ptl.linspace(0, 2, n, dtype=ptl.float64), generator=g)
                  .numpy().tobytes())
    for n in list(range(40)) + [511, 512, 513, 543, 544, 545, 4099, 70001]:
        out.write(ptl.randint(-7, 1000, (n,), generator=g).numpy().tobytes())
    for skip in (1, 2, 3):
        ptl.rand(skip, generator=g)
        for lo, hi in ((0, 2), (0, 3), (-7, 13), (0, 2 ** 32), (-2 ** 31, 2 ** 31 - 1),
                       (5, 2 ** 32 + 5), (0, 2 ** 32 + 1), (-2 ** 40, 2 ** 40)):
            out.write(ptl.empty(40003, dtype=ptl.int64).random_(lo, hi, generator=g).numpy()
                      .tobytes())
        for dt in (ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.float16,
                   ptl.bfloat16, ptl.float32, ptl.float64):
            out.write(ptl.empty(4099, dtype=dt).random_(generator=g).view(ptl.uint8).numpy()
                      .tobytes())
            out.write(ptl.empty(4099, dtype=dt).random_(0, 2, generator=g).view(ptl.uint8)
                      .numpy().tobytes())
        out.write(ptl.empty(1000, 7, dtype=ptl.int32).t().random_(-50, 50).numpy().tobytes())
    probs = ptl.rand(70001, generator=g, dtype=ptl.float64)
    probs[::7] = 0.0
    probs[3::7] = 1.0
    probs[5::7] = 2.0 ** -32
    for n in list(range(40)) + [511, 512, 513, 543, 544, 545, 4099, 70001]:
        for dt in (ptl.bool, ptl.int32, ptl.float16, ptl.float32, ptl.float64):
            for p in (0.0, 2.0 ** -32, 0.3, 0.5, 1.0 - 2.0 ** -33, 1.0):
                out.write(ptl.empty(n, dtype=dt).bernoulli_(p, generator=g).view(ptl.uint8)
                          .numpy().tobytes())
            out.write(ptl.bernoulli(probs[:n].to(dt) if dt.is_floating_point else probs[:n],
                                    generator=g).view(ptl.uint8).numpy().tobytes())
        out.write(ptl.nn.functional.dropout(ptl.ones(n), 0.1).numpy().tobytes())
    out.write(ptl.empty(1000, 7).t().bernoulli_(probs[:7000].view(1000, 7).t(), generator=g)
              .numpy().tobytes())
    for n in list(range(34)) + [511, 512, 513, 527, 528, 529, 4099, 70001]:
        out.write(ptl.empty(n, dtype=ptl.float64).exponential_(2.5, generator=g).numpy()
                  .tobytes())
        out.write(ptl.empty(n, dtype=ptl.float64).geometric_(0.3, generator=g).numpy()
                  .tobytes())
    for skip in (1, 2, 3):
        ptl.rand(skip, generator=g)
        for dt in (ptl.float16, ptl.bfloat16, ptl.float32):
            out.write(ptl.empty(4099, dtype=dt).exponential_(0.7, generator=g).view(ptl.uint8)
                      .numpy().tobytes())
        for dt in (ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float32):
            for p in (1e-300, 0.01, 0.5, 1.0 - 2 ** -52):
                out.write(ptl.empty(4099, dtype=dt).geometric_(p, generator=g).view(ptl.uint8)
                          .numpy().tobytes())
        out.write(ptl.empty(1000, 7).t().exponential_(3.0).numpy().tobytes())
        for dt in (ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64):
            for median, sigma in ((0.0, 1.0), (-2.5, 0.1), (1e300, 1e300)):
                out.write(ptl.empty(4099, dtype=dt).cauchy_(median, sigma, generator=g)
                          .view(ptl.uint8).numpy().tobytes())
    odd = ptl.tensor([float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 65519.0, 65520.0,
                      6e-8, -3e-8, 1e-40, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, -0.0, 0.0] * 40)
    odd[5::14] = ptl.tensor([0x7FD23456, -0x2DCBA9], dtype=ptl.int32).view(ptl.float32).repeat(20)
    for dt in (ptl.float16, ptl.bfloat16):
        for n in (8, 9, 16, 17, 40, 560):
            m = odd[:n] if dt == ptl.float16 else odd[:n].to(dt).float()
            out.write(ptl.normal(m, 0.0, generator=g).to(dt).view(ptl.int16).numpy().tobytes())
            out.write(ptl.normal(m.to(dt), 0.0, generator=g).view(ptl.int16).numpy().tobytes())
            out.write(ptl.normal(m.to(dt), 1e-3, generator=g).view(ptl.int16).numpy()
                      .tobytes())
"""


def _fill_bytes(cap, threads):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["PTL_CPU_CAPABILITY"] = cap
    r = subprocess.run([sys.executable, "-c", FILL_SCRIPT, str(threads)], env=env,
                       capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    return r.stdout


@pytest.mark.skipif(ptl.backends.cpu.get_cpu_capability() == "DEFAULT",
                    reason="this CPU runs the scalar stream only")
def test_vector_philox_equals_scalar_stream():
    """Note [Vector Philox] and Note [Vector Box-Muller]: the vector float32 uniforms and the
    normals (AVX2, and AVX-512 where the CPU has it) are the scalar stream's values, bit for
    bit, on 1 and 2 threads"""
    scalar = np.frombuffer(_fill_bytes("default", 1), np.uint16)
    caps = ["avx2"] + (["avx512"] if ptl.backends.cpu.get_cpu_capability() == "AVX512" else [])
    for cap in caps:
        for threads in (1, 2):
            vector = np.frombuffer(_fill_bytes(cap, threads), np.uint16)
            assert vector.size > 2 * 10 ** 6
            diff = np.nonzero(vector != scalar)[0]
            assert diff.size == 0, f"{cap}, {threads} threads: {diff.size} half-words " \
                                   f"differ, the first at {diff[:1]}"


def test_philox_fill_known_values():
    """float32 rand, uniform_ and randn values of one stream, fixed before the vector path
    (Note [Vector Philox]); element 32 (uniform) and 16 (normal) start the second group of
    eight blocks.  The normals changed with Note [Vector Box-Muller] (element 0, an angle
    near 3 pi / 2, by 22 ulps: libm's cosf of 2 pi u1 rounded to float first was that far
    off; now 1 ulp from float64 math)"""
    g = ptl.Generator().manual_seed(2026)
    ptl.rand(3, generator=g)
    x = ptl.rand(36, generator=g).numpy()
    assert [int(v) for v in (x * 2 ** 24).astype(np.int64)[[0, 1, 2, 31, 32, 35]]] == \
        [12309552, 15455765, 10910696, 7523128, 7950574, 8393895]
    y = ptl.empty(36).uniform_(-3.7, 2.9, generator=g).numpy()
    assert [float(v).hex() for v in y[[0, 33]]] == ["-0x1.d976780000000p-1",
                                                    "-0x1.25babe0000000p+1"]
    g = ptl.Generator().manual_seed(2026)
    ptl.randn(3, generator=g)
    z = ptl.randn(20, generator=g).numpy()
    assert [float(v).hex() for v in z[[0, 1, 15, 16, 19]]] == [
        "-0x1.2f697a0000000p-3", "-0x1.712ba00000000p+0", "0x1.73cb160000000p+0",
        "-0x1.5befa00000000p-1", "0x1.2eb5de0000000p-2"]


@pytest.mark.parametrize("layout", LAYOUTS[:3])
def test_layout_does_not_change_values(layout):
    """A strided self gets the values of the row-major element order."""
    t, _ = make((6, 5), ptl.float32, layout)
    ptl.manual_seed(8)
    t.normal_()
    ptl.manual_seed(8)
    ref = ptl.randn(6, 5)
    np.testing.assert_array_equal(t.numpy(), ref.numpy())


def test_default_generator_survives_fork():
    """A forked child keeps the parent's state (as PyTorch): it draws what the parent
    draws next."""
    ptl.manual_seed(21)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (child)
        os.close(r)
        os.write(w, ptl.rand(8).numpy().tobytes())
        os._exit(0)
    os.close(w)
    data = b""
    while len(data) < 32:
        chunk = os.read(r, 32)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    np.testing.assert_array_equal(np.frombuffer(data, np.float32), ptl.rand(8).numpy())


# ---- shapes and dtypes ----

@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_rand_randn_shapes_dtypes(shape, dtype):
    for fn in (ptl.rand, ptl.randn):
        t = fn(shape, dtype=dtype)
        assert t.shape == shape and t.dtype == dtype
    u = f64(ptl.rand(shape, dtype=dtype))
    assert np.all((u >= 0) & (u < 1))
    assert ptl.rand(3).dtype == ptl.get_default_dtype()


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_uniform_reduced_precision_in_range(dtype):
    u = f64(ptl.rand(100_000, dtype=dtype))
    assert u.min() >= 0 and u.max() < 1
    digits = {ptl.float16: 11, ptl.bfloat16: 8, ptl.float32: 24, ptl.float64: 53}[dtype]
    if digits <= 11:   # every multiple of 2^-digits shows up
        assert len(np.unique(u)) == 2 ** digits
    x = f64(ptl.empty(10_000, dtype=dtype).uniform_(-3, 5))
    assert x.min() >= -3 and x.max() <= 5 and x.min() < -2.9 and x.max() > 4.9


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS[:3])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_inplace_samplers_keep_self(shape, layout, dtype):
    t, _ = make(shape, dtype, layout)
    for name, args in (("uniform_", ()), ("normal_", ()), ("exponential_", ()),
                       ("geometric_", (0.5,)), ("log_normal_", ()), ("cauchy_", ()),
                       ("bernoulli_", (0.5,)), ("random_", ())):
        v = t._version
        assert getattr(t, name)(*args) is t
        assert t.shape == shape and t.dtype == dtype
        assert t._version > v or t.numel() == 0
    g = f64(t.geometric_(0.5))
    assert np.all(g >= 1) and np.all(g == np.round(g))
    assert np.all(f64(t.exponential_()) >= 0) and np.all(f64(t.log_normal_()) > 0)
    assert set(np.unique(f64(t.bernoulli_(0.5)))) <= {0.0, 1.0}


@pytest.mark.parametrize("dtype", [ptl.bool] + INT_DTYPES + FLOAT_DTYPES)
def test_random_ranges_per_dtype(dtype):
    t = ptl.empty(20_000, dtype=dtype)
    lo, hi = (0, 1) if dtype == ptl.bool else (
        (0, np.iinfo(np.dtype(str(dtype).split(".")[1])).max) if dtype in INT_DTYPES else
        (0, 2 ** {ptl.float16: 11, ptl.bfloat16: 8, ptl.float32: 24, ptl.float64: 53}[dtype]))
    x = f64(t.random_())
    assert x.min() >= lo and x.max() <= hi and np.all(x == np.round(x))
    x = f64(t.random_(2))
    assert set(np.unique(x)) == {0.0, 1.0}
    if dtype != ptl.bool:
        x = f64(t.random_(3, 10))
        assert set(np.unique(x)) == set(range(3, 10))
        assert set(np.unique(f64(ptl.randint_like(t, 5, 9)))) == {5.0, 6.0, 7.0, 8.0}
    assert set(np.unique(f64(t.bernoulli_(0.5)))) == {0.0, 1.0}
    if dtype != ptl.bool:
        assert f64(t.geometric_(0.9)).min() == 1.0


def test_randint_extremes():
    x = ptl.randint(-128, 128, (50_000,), dtype=ptl.int8).numpy()
    assert set(np.unique(x)) == set(range(-128, 128))
    x = ptl.randint(2 ** 63 - 1, (1000,)).numpy()
    assert x.min() >= 0 and x.max() > 2 ** 61
    x = ptl.empty(1000, dtype=ptl.int64).random_(-2 ** 63, None).numpy()
    assert x.min() < -2 ** 61 and x.max() > 2 ** 61
    x = ptl.empty(1000, dtype=ptl.int64).random_(2 ** 62, None).numpy()
    assert x.min() >= 2 ** 62
    assert ptl.randint(3, (2, 3)).dtype == ptl.int64
    assert ptl.randint(3, (2, 3), dtype=ptl.float32).dtype == ptl.float32
    assert ptl.randint_like(ptl.zeros(3, 2), 5).dtype == ptl.float32


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
@pytest.mark.parametrize("dtype", [ptl.int64, ptl.int32, ptl.int16, ptl.float32,
                                   ptl.float64, ptl.float16])
def test_randperm_is_permutation(n, dtype):
    p = ptl.randperm(n, dtype=dtype)
    assert p.dtype == dtype and p.shape == (n,)
    np.testing.assert_array_equal(np.sort(f64(p)), np.arange(n))


def philox_words64(seed, offset, counters):
    """Words 0-1 (word 1 high) of Philox4x32-10 blocks at the given counters, draw 0, in
    NumPy: the stream of src/aten/philox.h (Salmon et al., SC 2011)"""
    e = np.asarray(counters, dtype=np.uint64) + np.uint64(offset)
    c = [e & np.uint64(0xFFFFFFFF), e >> np.uint64(32), np.zeros_like(e), np.zeros_like(e)]
    k0, k1 = seed & 0xFFFFFFFF, seed >> 32
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & 0xFFFFFFFF, (k1 + 0xBB67AE85) & 0xFFFFFFFF
        p0, p1 = c[0] * np.uint64(0xD2511F53), c[2] * np.uint64(0xCD9E8D57)
        lo = np.uint64(0xFFFFFFFF)
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ np.uint64(k0), p1 & lo,
             (p0 >> np.uint64(32)) ^ c[3] ^ np.uint64(k1), p0 & lo]
    return c[1] << np.uint64(32) | c[0]


# n at and across every chunk (256 swaps) and vector (8 and 16 blocks) boundary, and a large
# n whose remainders reach i + 1 = 100003
RANDPERM_NS = [0, 1, 2, 7, 8, 9, 15, 16, 17, 24, 25, 255, 256, 257, 258, 511, 512, 513, 4099,
               100003]


@functools.lru_cache(maxsize=None)
def philox_fisher_yates(n):
    x = philox_words64(2 ** 40 + 11, 5, np.arange(n))
    p = np.arange(n)
    for i in range(n - 1, 0, -1):
        k = int(x[i] % np.uint64(i + 1))
        p[i], p[k] = p[k], p[i]
    return p


@pytest.mark.parametrize("cap", ["default", "avx2", "native"])
def test_randperm_is_the_philox_fisher_yates(cap):
    """randperm's swap i (n - 1 down to 1) swaps p[i] and p[x_i mod (i + 1)], x_i the
    stream's words 0-1 at counter i: drawn in chunks of 256 swaps, sixteen blocks a vector
    with AVX-512 and eight with AVX2 (ptl_philox_words64), at and across every chunk and
    vector boundary; the remainders without division (Note [Remainders without division])
    for every i + 1 up to 100003.  Every n in one child process a capability, each from a
    fresh generator."""
    script = ("import sys, pytorchlite as ptl\n"
              "for n in sys.argv[1:]:\n"
              "    g = ptl.Generator().manual_seed(2 ** 40 + 11)\n"
              "    ptl.rand(5, generator=g)\n"
              "    sys.stdout.buffer.write(ptl.randperm(int(n), generator=g).numpy().tobytes())\n")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if cap != "native":
        env["PTL_CPU_CAPABILITY"] = cap
    r = subprocess.run([sys.executable, "-c", script, *map(str, RANDPERM_NS)], env=env,
                       capture_output=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    got = np.frombuffer(r.stdout, np.int64)
    assert len(got) == sum(RANDPERM_NS)
    start = 0
    for n in RANDPERM_NS:
        np.testing.assert_array_equal(got[start:start + n], philox_fisher_yates(n),
                                      err_msg=f"n = {n}")
        start += n


def test_randperm_limits():
    np.testing.assert_array_equal(np.sort(ptl.randperm(128, dtype=ptl.int8).numpy()),
                                  np.arange(128))
    assert ptl.randperm(2049, dtype=ptl.float16).shape == (2049,)


def test_randperm_uniform_over_permutations():
    perms = np.stack([ptl.randperm(4).numpy() for _ in range(24 * 400)])
    codes = perms @ np.array([64, 16, 4, 1])
    probs = {int(c): 1 / 24 for c in np.unique(codes)}
    assert len(probs) == 24
    check_chi2(codes, probs)


def test_like_ops_follow_self():
    x = ptl.zeros(4, 3, dtype=ptl.float64).t()
    for fn in (ptl.rand_like, ptl.randn_like):
        y = fn(x)
        assert y.shape == (3, 4) and y.dtype == ptl.float64 and y.stride() == (1, 3)
        assert fn(x, dtype=ptl.float16).dtype == ptl.float16
    y = ptl.randint_like(x, 2, 5)
    assert y.dtype == ptl.float64 and set(np.unique(y.numpy())) <= {2.0, 3.0, 4.0}


@pytest.mark.parametrize("mshape,sshape", [((3, 4), (4,)), ((3, 1), (1, 4)), ((), (2, 3)),
                                           ((5,), ()), ((0, 3), (1, 3))])
def test_normal_tensor_broadcast(mshape, sshape):
    mean, _ = make(mshape, ptl.float32, seed=1)
    std = ptl.rand(sshape, dtype=ptl.float64)
    out = ptl.normal(mean, std)
    assert out.shape == np.broadcast_shapes(mshape, sshape) and out.dtype == ptl.float32
    assert ptl.normal(mean, 2.0).shape == mshape
    assert ptl.normal(1.0, std).dtype == ptl.float64
    assert ptl.normal(1.0, 2.0, (2, 3)).shape == (2, 3)


def test_normal_tensor_parameters_per_element():
    mean = ptl.tensor(np.tile([-100.0, 0.0, 100.0], 200_000))
    std = ptl.tensor(np.tile([1.0, 0.0, 10.0], 200_000))
    x = ptl.normal(mean, std).double().numpy().reshape(-1, 3)
    check_moments(x[:, 0], -100, 1)
    assert np.all(x[:, 1] == 0)
    check_moments(x[:, 2], 100, 100)


# ---- the laws ----

@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_uniform_law(dtype):
    x = ptl.empty(N, dtype=dtype).uniform_(-2, 3).double().numpy()
    check_moments(x, 0.5, 25 / 12)
    check_ks(x, stats.uniform(-2, 5).cdf)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_normal_law(dtype):
    x = ptl.empty(N, dtype=dtype).normal_(1.5, 2.0).double().numpy()
    check_moments(x, 1.5, 4.0)
    check_ks(x, stats.norm(1.5, 2.0).cdf)
    check_ks(ptl.randn(N, dtype=dtype).double().numpy(), stats.norm.cdf)


# ---- the float Box-Muller transform (Note [Vector Box-Muller] in random_fill.c, Note [Scalar
# twins of vector formulas] in scalar_math.h) ----

def _box_muller_uniforms(seed, pairs):
    """u1, u2 of the first `pairs` pairs of float normals from Generator().manual_seed(seed):
    words 0 and 2 of the same Philox blocks, which rand's float32 elements 4k and 4k + 2 hold
    as (w >> 8) 2^-24 (block k gives randn's elements 2k and 2k + 1)"""
    g = ptl.Generator().manual_seed(seed)
    u = ptl.rand(4 * pairs, generator=g).numpy().astype(np.float64)
    return u[0::4], 1.0 - u[2::4]


def _box_muller_f64(u1, u2):
    """(r cos, r sin) of the angle 2 pi u1 in float64, the angle reduced exactly (u1 = q / 4
    + t) so that the quadrants' zeros are zeros"""
    q = np.rint(4 * u1)
    t, k = u1 - q / 4, q.astype(np.int64) & 3
    s, c = np.sin(2 * np.pi * t), np.cos(2 * np.pi * t)
    sn, cs = np.where(k & 1, c, s), np.where(k & 1, s, c)
    sn, cs = np.where(k & 2, -sn, sn), np.where((k + 1) & 2, -cs, cs)
    r = np.sqrt(-2 * np.log(u2))
    return r * cs, r * sn


def _ulps32(got, ref):
    """|got - ref| in float32 ulps of ref (where ref is 0, got must be 0 too)"""
    err = np.abs(np.asarray(got, np.float64) - ref)
    nz = ref != 0
    err[nz] /= np.spacing(np.abs(ref[nz]).astype(np.float32)).astype(np.float64)
    return err


@pytest.mark.parametrize("threads", [1, 2])
def test_float_normals_against_the_float64_transform(threads):
    """randn's float32 values against the transform in float64 from the same uniforms, on
    2^20 values: within 3 ulps (log and sin/cos within 1 each, then sqrt and the product),
    0.6 on average; normal_(a, b) is a + z b in double, rounded; float16 and bfloat16 are
    the float values rounded"""
    pairs = 1 << 19
    u1, u2 = _box_muller_uniforms(11, pairs)
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        z = ptl.randn(2 * pairs, generator=ptl.Generator().manual_seed(11)).numpy()
        y = ptl.empty(2 * pairs).normal_(-0.75, 3.5, generator=ptl.Generator().manual_seed(11))
        halves = [ptl.randn(2 * pairs, dtype=dt, generator=ptl.Generator().manual_seed(11))
                  for dt in (ptl.float16, ptl.bfloat16)]
    finally:
        ptl.set_num_threads(old)
    c, s = _box_muller_f64(u1, u2)
    err = np.concatenate([_ulps32(z[0::2], c), _ulps32(z[1::2], s)])
    assert err.max() <= 3, (err.max(), int(err.argmax()))
    assert err.mean() < 0.6, err.mean()
    affine = (-0.75 + 3.5 * z.astype(np.float64)).astype(np.float32)
    np.testing.assert_array_equal(y.numpy(), affine)
    for h, dt in zip(halves, (ptl.float16, ptl.bfloat16)):
        np.testing.assert_array_equal(h.float().numpy(), ptl.tensor(z).to(dt).float().numpy())


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64], ids=str)
def test_float_normal_tails_depend_on_the_position_only(dtype):
    """Every length 0..80 (the scalar formula after the last vector group of 16 or 32
    elements) and every generator offset 0..40 (a fill at offset k draws blocks k, k + 1...,
    element i of it is element 2 k + i of a fill at offset 0): the values of the long fill,
    on 1 and 2 threads"""
    seed = 321
    long = ptl.randn(200, generator=ptl.Generator().manual_seed(seed), dtype=dtype).numpy()
    old = ptl.get_num_threads()
    try:
        for threads in (1, 2):
            ptl.set_num_threads(threads)
            for n in range(81):
                got = ptl.randn(n, generator=ptl.Generator().manual_seed(seed), dtype=dtype)
                np.testing.assert_array_equal(got.numpy(), long[:n])
            for skip in range(41):
                g = ptl.Generator().manual_seed(seed)
                ptl.randn(skip, generator=g, dtype=dtype)
                np.testing.assert_array_equal(ptl.randn(100, generator=g, dtype=dtype).numpy(),
                                              long[2 * skip:2 * skip + 100])
    finally:
        ptl.set_num_threads(old)


def test_float_log_of_every_box_muller_radius():
    """The float log of the Box-Muller radius over its whole domain, u2 = 1 - k 2^-24 for
    every k < 2^24: within 1 ulp of float64.  ptl.log's float32 vector loop is the formula
    (ptl_vm_log_##S; the scalar twin ptl_logf_normal gives its bits, as the vector-width
    and CUDA-emulation tests check through randn)"""
    x = (1.0 - np.arange(1 << 24, dtype=np.float64) * 2.0 ** -24).astype(np.float32)
    got = ptl.log(ptl.tensor(x)).numpy()
    err = _ulps32(got, np.log(x.astype(np.float64)))
    assert err.max() <= 1, (err.max(), x[err.argmax()])


def test_sincos2pi_constants_are_the_fit_tools():
    """The sin and cos polynomials of scalar_math.h are what tools/fit_sincos2pi.py fits, and
    in float32 they are within 1 ulp of float64 for every t = k 2^-24 in [-1/8, 1/8], so for
    every float uniform angle 2 pi u1"""
    import importlib.util
    spec = importlib.util.spec_from_file_location("fit", os.path.join(ROOT, "tools",
                                                                      "fit_sincos2pi.py"))
    fit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fit)
    src = open(os.path.join(ROOT, "src", "aten", "scalar_math.h")).read()

    def floats(name):
        body = re.search(r"#define %s ([^\n]*)" % name, src).group(1)
        return np.float32([float(c.strip().rstrip("f")) for c in body.split(",")])

    s, c = fit.fit()
    assert floats("PTL_SIN2PIF_S0")[0] == fit.S0
    np.testing.assert_allclose(floats("PTL_SIN2PIF_COEF"), s, rtol=1e-5)
    np.testing.assert_allclose(floats("PTL_COS2PIF_COEF"), c, rtol=1e-5)
    assert max(fit.max_ulp(floats("PTL_SIN2PIF_COEF"), floats("PTL_COS2PIF_COEF"))) < 1


# ---- the float64 Box-Muller transform: scalar_math.h's double log and sincos2pi, whose
# vector twins random_fill.c runs (the vector-width test above checks their bits) ----

LD_TWO_PI = np.longdouble("6.283185307179586476925286766559005768")


def _ulps64(got, ref):
    """|got - ref| in float64 ulps of the long double ref (where ref is 0, got must be 0)"""
    assert np.all(got[ref == 0] == 0)
    err = np.abs(got.astype(np.longdouble) - ref)
    nz = ref != 0
    err[nz] /= np.spacing(np.abs(ref[nz]).astype(np.float64)).astype(np.longdouble)
    return err.astype(np.float64)


def _sincos2pi_ld(u):
    """sin and cos of 2 pi u in long double (64-bit mantissas on x86-64), u reduced exactly
    to u = q / 4 + t first, so that the reference is good to far below a float64 ulp even
    where the result is near 0"""
    q = np.rint(4 * u)
    t, k = (u - q / 4).astype(np.longdouble), q.astype(np.int64) & 3
    s, c = np.sin(LD_TWO_PI * t), np.cos(LD_TWO_PI * t)
    sn, cs = np.where(k & 1, c, s), np.where(k & 1, s, c)
    return np.where(k & 2, -sn, sn), np.where((k + 1) & 2, -cs, cs)


def _box_muller_formulas(x):
    y = _C._box_muller_formulas_for_testing(np.ascontiguousarray(x, np.float64))
    return np.frombuffer(y, np.float64).reshape(3, -1)


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs x87 long double")
def test_double_box_muller_formulas_on_dense_grids():
    """The float64 log of u2 = 1 - k 2^-53 in (0, 1] and the sine and cosine of 2 pi u1,
    u1 = k 2^-53 in [0, 1), within 1 ulp of long double (measured: 0.86, 0.78, 0.78) on
    grids at the ends of the ranges (log near 1 and near 2^-53, angles near 0), around
    log's reduction edge sqrt(1/2), around every multiple of 1/8 (the quadrant switches and
    the zeros of sin and cos), and on 2^22 random points"""
    rng = np.random.default_rng(0)
    j = np.arange(1, 1 << 20, dtype=np.float64)
    k = rng.integers(1, 1 << 53, 1 << 22).astype(np.float64)
    u2 = np.concatenate([1 - j * 2.0 ** -53, j * 2.0 ** -53, 1 - k * 2.0 ** -53,
                         np.sqrt(0.5) * (1 + (j - 2 ** 19) * 2.0 ** -52)])
    err = _ulps64(_box_muller_formulas(u2)[0], np.log(u2.astype(np.longdouble)))
    assert err.max() < 1, (err.max(), u2[err.argmax()])
    eighths = np.arange(9)[:, None] / 8 + (j[:1 << 16] - 2 ** 15) * 2.0 ** -53
    u1 = np.concatenate([[0.0], j * 2.0 ** -53, k * 2.0 ** -53, eighths.ravel()])
    u1 = u1[(u1 >= 0) & (u1 < 1)]
    got = _box_muller_formulas(u1)
    for name, g, ref in zip(("sin", "cos"), got[1:], _sincos2pi_ld(u1)):
        err = _ulps64(g, ref)
        assert err.max() < 1, (name, err.max(), u1[err.argmax()])


@pytest.mark.skipif(np.finfo(np.longdouble).nmant < 63, reason="needs x87 long double")
@pytest.mark.parametrize("threads", [1, 2])
def test_double_normals_against_the_long_double_transform(threads):
    """randn's float64 values against the transform in long double from the same uniforms
    (rand's float64 elements 2k and 2k + 1 hold block k's u1 and 1 - u2), on 2^21 values:
    within 3 ulps (log and sin/cos within 1 each, then sqrt and the product; measured 2.4),
    0.5 on average; normal_(a, b) is a + z b"""
    pairs = 1 << 20
    u = ptl.rand(2 * pairs, dtype=ptl.float64, generator=ptl.Generator().manual_seed(11))
    u1, u2 = u.numpy()[0::2], 1.0 - u.numpy()[1::2]
    old = ptl.get_num_threads()
    ptl.set_num_threads(threads)
    try:
        z = ptl.randn(2 * pairs, dtype=ptl.float64,
                      generator=ptl.Generator().manual_seed(11)).numpy()
        y = ptl.empty(2 * pairs, dtype=ptl.float64).normal_(
            -0.75, 3.5, generator=ptl.Generator().manual_seed(11)).numpy()
    finally:
        ptl.set_num_threads(old)
    r = np.sqrt(-2 * np.log(u2.astype(np.longdouble)))
    s, c = _sincos2pi_ld(u1)
    err = np.concatenate([_ulps64(z[0::2], r * c), _ulps64(z[1::2], r * s)])
    assert err.max() <= 3, (err.max(), int(err.argmax()))
    assert err.mean() < 0.5, err.mean()
    np.testing.assert_array_equal(y, -0.75 + 3.5 * z)


def test_exponential_law():
    x = ptl.empty(N, dtype=ptl.float64).exponential_(2.5).numpy()
    check_moments(x, 0.4, 0.16)
    check_ks(x, stats.expon(scale=0.4).cdf)


def test_cauchy_law():
    x = ptl.empty(N, dtype=ptl.float64).cauchy_(1.0, 3.0).numpy()
    check_ks(x, stats.cauchy(1.0, 3.0).cdf)
    assert abs(np.median(x) - 1.0) < 5 * np.pi * 3.0 / 2 / np.sqrt(N)


def test_log_normal_law():
    x = ptl.empty(N, dtype=ptl.float64).log_normal_(0.5, 0.75).numpy()
    check_ks(x, stats.lognorm(0.75, scale=np.exp(0.5)).cdf)
    check_moments(np.log(x), 0.5, 0.75 ** 2)


def test_geometric_law():
    p = 0.2
    x = ptl.empty(N, dtype=ptl.float64).geometric_(p).numpy()
    check_moments(x, 1 / p, (1 - p) / p ** 2)
    check_chi2(x.astype(np.int64), {k: (1 - p) ** (k - 1) * p for k in range(1, 100)})


@pytest.mark.parametrize("low,high", [(0, 10), (-7, 3), (0, 2 ** 33 + 7)])
def test_randint_law(low, high):
    x = ptl.randint(low, high, (N,)).numpy()
    assert x.min() >= low and x.max() < high
    if high - low <= 10:
        check_chi2(x, {k: 1 / (high - low) for k in range(low, high)})
    else:
        check_ks(x, stats.randint(low, high).cdf)


@pytest.mark.parametrize("p", [0.0, 0.03, 0.5, 1.0])
def test_bernoulli_law(p):
    x = ptl.empty(N).bernoulli_(p).numpy()
    if p in (0.0, 1.0):
        assert np.all(x == p)
        return
    check_chi2(x.astype(np.int64), {0: 1 - p, 1: p})


def test_bernoulli_tensor_p():
    p = ptl.tensor(np.tile(np.float32([0.1, 0.5, 0.9]), N // 3))
    for x in (ptl.bernoulli(p), ptl.empty(N // 3 * 3, dtype=ptl.uint8).bernoulli_(p)):
        x = x.double().numpy().reshape(-1, 3)
        for j, pj in enumerate((0.1, 0.5, 0.9)):
            check_chi2(x[:, j].astype(np.int64), {0: 1 - pj, 1: pj})
    b = ptl.empty(4, 3).bernoulli_(ptl.tensor([0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(b.numpy(), np.tile([0.0, 1.0, 0.0], (4, 1)))
    assert ptl.bernoulli(ptl.zeros(3, dtype=ptl.int64), 0.5).dtype == ptl.int64
    assert ptl.zeros(3).bernoulli(0.3).shape == (3,)


@pytest.mark.parametrize("lam", [0.0, 0.7, 4.0, 9.9, 10.0, 37.5, 1000.0])
def test_poisson_law(lam):
    x = ptl.poisson(ptl.full((N // 4,), lam, dtype=ptl.float64)).numpy()
    assert np.all(x == np.round(x))
    if lam == 0:
        assert np.all(x == 0)
        return
    check_moments(x, lam, lam)
    lo, hi = int(max(0, lam - 8 * np.sqrt(lam))), int(lam + 8 * np.sqrt(lam) + 10)
    check_chi2(x.astype(np.int64), {k: stats.poisson.pmf(k, lam) for k in range(lo, hi)})


@pytest.mark.parametrize("lam", [2.0 ** 24 - 1, 2.0 ** 24, 1e12, 1e15, 1e16, 1e17])
def test_poisson_huge_rates(lam):
    """From rate 2^24 on PTRS's test writes log k! by Stirling (ptl_stirling_tail in
    distributions.h): mean, variance and (rate 1e8 and up) the normal shape of 2e5 draws; the
    lgamma form gave rate 1e16 1.43 times the variance and rate 1e17 1.66 times"""
    seed = int(math.log2(lam))
    x = ptl.poisson(ptl.full((200000,), lam, dtype=ptl.float64),
                    generator=ptl.Generator().manual_seed(seed)).numpy()
    assert x.min() >= 0
    assert_large_sample_law(x, lam, lam, lam * (1 + 3 * lam), seed)


def test_poisson_below_the_stirling_rate_is_unchanged():
    """Rates below 2^24 keep the lgamma form: the values it gave, seeded"""
    rates = ptl.tensor([2.0 ** 24 - 1, 2.0 ** 24 - 1, 1e6, 1e6, 5000.0, 12.5, 3.0,
                        2.0 ** 24 - 0.5], dtype=ptl.float64)
    got = ptl.poisson(rates, generator=ptl.Generator().manual_seed(2024)).numpy()
    want = [16774373, 16776475, 997711, 999950, 4988, 12, 4, 16781584]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float64))


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_poisson_dtypes(dtype):
    x = ptl.poisson(ptl.full((2, 3), 5.0, dtype=dtype))
    assert x.dtype == dtype and x.shape == (2, 3)


@pytest.mark.parametrize("alpha", [0.02, 0.3, 1.0, 2.5, 150.0, 1e6])
def test_standard_gamma_law(alpha):
    x = ptl._standard_gamma(ptl.full((N // 4,), alpha, dtype=ptl.float64)).numpy()
    assert np.all(x > 0)
    check_moments(x, alpha, alpha)
    check_ks(x, stats.gamma(alpha).cdf)


@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_standard_gamma_dtypes_and_floor(dtype):
    x = ptl._standard_gamma(ptl.tensor([[0.0, 1e-30], [2.0, 3.0]], dtype=dtype))
    assert x.dtype == dtype and x.shape == (2, 2)
    tiny = ptl.finfo(dtype).tiny
    assert f64(x)[0, 0] == tiny and f64(x)[0, 1] == tiny   # floored at the smallest normal
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        ptl._standard_gamma(ptl.tensor([1, 2]))


def test_standard_gamma_generator_and_shapes():
    a = ptl.rand(3, 4, dtype=ptl.float64) + 0.5
    one = ptl._standard_gamma(a, generator=ptl.Generator().manual_seed(5))
    two = ptl._standard_gamma(a, generator=ptl.Generator().manual_seed(5))
    assert ptl.equal(one, two) and not ptl.equal(one, ptl._standard_gamma(a))
    strided = ptl._standard_gamma(a.t(), generator=ptl.Generator().manual_seed(5))
    assert strided.shape == (4, 3)
    assert ptl._standard_gamma(ptl.empty(0, 3)).shape == (0, 3)
    assert ptl._standard_gamma(ptl.tensor(2.0)).shape == ()


def _gamma_quantile_grad(alpha, x):
    """d x / d alpha at a fixed CDF value, by central differences of scipy's gammainc."""
    h = 1e-6 * np.maximum(alpha, 1.0)
    dp = (special.gammainc(alpha + h, x) - special.gammainc(alpha - h, x)) / (2 * h)
    return -dp / stats.gamma(alpha).pdf(x)


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 4.0, 60.0, 2000.0])
def test_standard_gamma_grad_against_the_cdf(alpha):
    """_standard_gamma_grad(alpha, x) over the quantiles 1e-6 .. 1 - 1e-4 of Gamma(alpha)."""
    q = np.array([1e-6, 1e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-4])
    x = stats.gamma(alpha).ppf(q)
    got = ptl._standard_gamma_grad(ptl.full((q.size,), alpha, dtype=ptl.float64),
                                   ptl.tensor(x))
    np.testing.assert_allclose(got.numpy(), _gamma_quantile_grad(alpha, x), rtol=2e-5)


def test_standard_gamma_grad_edges_and_errors():
    got = ptl._standard_gamma_grad(ptl.tensor([1.0, 2.0, -1.0], dtype=ptl.float64),
                                   ptl.tensor([0.0, float("inf"), 1.0], dtype=ptl.float64))
    assert got[0].item() == 0.0 and got[1].item() == float("inf") and np.isnan(got[2].item())
    f32 = ptl._standard_gamma_grad(ptl.tensor([2.0]), ptl.tensor([1.5]))
    assert f32.dtype == ptl.float32
    assert abs(f32.item() - _gamma_quantile_grad(2.0, 1.5)) < 1e-5
    with pytest.raises(NotImplementedError, match="\"_standard_gamma_grad_cpu\" not "
                                                  "implemented for 'Long'"):
        ptl._standard_gamma_grad(ptl.tensor([1]), ptl.tensor([1]))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(2\\) must match"):
        ptl._standard_gamma_grad(ptl.ones(2), ptl.ones(3))
    x = ptl.ones(2, requires_grad=True)
    with pytest.raises(NotImplementedError, match="the derivative for "
                                                  "'aten::_standard_gamma_grad' is not"):
        ptl._standard_gamma_grad(x, ptl.ones(2)).sum().backward()



@pytest.mark.parametrize("c", [[0.05, 0.3], [0.5, 1.0, 2.0], [2.5, 40.0, 0.7, 1.0]])
def test_sample_dirichlet_law(c):
    """Each coordinate of a Dirichlet(c) sample is Beta(c_j, sum c - c_j); the moments and
    covariances are scipy.stats.dirichlet's."""
    c = np.asarray(c)
    x = ptl._sample_dirichlet(ptl.tensor(np.tile(c, (N // 8, 1)))).numpy()
    assert np.all(x > 0) and np.allclose(x.sum(-1), 1.0, rtol=0, atol=1e-14)
    law = stats.dirichlet(c)
    for j in range(c.size):
        check_moments(x[:, j], law.mean()[j], law.var()[j])
        # a coordinate near 1 rounds to 1.0, so a large one is tested through 1 - x_j, the
        # sum of the others, which is Beta(sum c - c_j, c_j)
        if c[j] > c.sum() / 2:
            check_ks(np.delete(x, j, 1).sum(1), stats.beta(c.sum() - c[j], c[j]).cdf)
        else:
            check_ks(x[:, j], stats.beta(c[j], c.sum() - c[j]).cdf)
    # the covariance of two coordinates, -c_0 c_1 / (c0^2 (c0 + 1)), within 5 sigma
    d = (x[:, 0] - law.mean()[0]) * (x[:, 1] - law.mean()[1])
    want = -c[0] * c[1] / (c.sum() ** 2 * (c.sum() + 1))
    assert abs(d.mean() - want) < 5 * d.std() / np.sqrt(d.size)


@pytest.mark.parametrize("dtype", [ptl.float32, ptl.float64])
def test_sample_dirichlet_dtypes_shapes_and_generator(dtype):
    a = (ptl.rand(3, 4, dtype=ptl.float64) + 0.5).to(dtype)
    one = ptl._sample_dirichlet(a, generator=ptl.Generator().manual_seed(5))
    two = ptl._sample_dirichlet(a, generator=ptl.Generator().manual_seed(5))
    assert one.dtype == dtype and one.shape == (3, 4)
    assert ptl.equal(one, two) and not ptl.equal(one, ptl._sample_dirichlet(a))
    np.testing.assert_allclose(f64(one).sum(-1), 1.0, rtol=1e-6)
    # the draws are _standard_gamma's from the same streams, normalised
    g = f64(ptl._standard_gamma(a, generator=ptl.Generator().manual_seed(5)))
    np.testing.assert_allclose(f64(one), g / g.sum(-1, keepdims=True), rtol=1e-6)
    strided = ptl._sample_dirichlet(a.t(), generator=ptl.Generator().manual_seed(5))
    assert strided.shape == (4, 3)
    np.testing.assert_allclose(f64(strided).sum(-1), 1.0, rtol=1e-6)
    assert ptl._sample_dirichlet(ptl.empty(0, 3, dtype=dtype)).shape == (0, 3)
    assert ptl._sample_dirichlet(ptl.empty(2, 0, dtype=dtype)).shape == (2, 0)
    assert ptl._sample_dirichlet(ptl.tensor(2.0, dtype=dtype)).item() == 1.0
    # concentrations at 0 draw the floor, which normalises to equal shares
    assert_zero = f64(ptl._sample_dirichlet(ptl.zeros(2, dtype=dtype)))
    np.testing.assert_array_equal(assert_zero, [0.5, 0.5])


@pytest.mark.parametrize("dtype, name", [(ptl.float16, "Half"), (ptl.bfloat16, "BFloat16"),
                                         (ptl.int64, "Long"), (ptl.bool, "Bool")])
def test_sample_dirichlet_dtype_errors(dtype, name):
    with pytest.raises(NotImplementedError,
                       match=f"^\"dirichlet\" not implemented for '{name}'$"):
        ptl._sample_dirichlet(ptl.ones(3, dtype=dtype))


def _beta_quantile_grad(x, a, b):
    """-(dI_x(a, b)/da) / density / (1 - x), dI/da by central differences of betainc."""
    h = 1e-6 * max(a, 1.0)
    di = (special.betainc(a + h, b, x) - special.betainc(a - h, b, x)) / (2 * h)
    return -di / stats.beta(a, b).pdf(x) / (1 - x)


@pytest.mark.parametrize("a", [0.05, 0.3, 1.0, 2.5, 10.0, 150.0, 3000.0])
@pytest.mark.parametrize("b", [0.05, 0.4, 1.0, 3.0, 20.0, 500.0])
def test_dirichlet_grad_against_the_beta_cdf(a, b):
    """_dirichlet_grad(x, a, a + b) over the quantiles 1e-6 .. 1 - 1e-5 of Beta(a, b)."""
    q = np.array([1e-6, 1e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-5])
    x = stats.beta(a, b).ppf(q)
    x = x[(x > 0) & (x < 1)]
    got = ptl._dirichlet_grad(ptl.tensor(x), ptl.full(x.shape, a, dtype=ptl.float64),
                              ptl.full(x.shape, a + b, dtype=ptl.float64))
    want = np.array([_beta_quantile_grad(v, a, b) for v in x])
    np.testing.assert_allclose(got.numpy(), want, rtol=5e-5)


def test_dirichlet_grad_edges_and_errors():
    x = ptl.tensor([0.0, 1.0, 0.3, 1.5, 0.5, 0.5], dtype=ptl.float64)
    a = ptl.tensor([2.0, 2.0, 2.0, 2.0, -1.0, 3.0], dtype=ptl.float64)
    total = ptl.tensor([5.0, 5.0, 5.0, 5.0, 5.0, 2.0], dtype=ptl.float64)
    got = ptl._dirichlet_grad(x, a, total).numpy()
    assert got[0] == 0.0
    # at x = 1: (psi(a + b) - psi(a)) / b
    assert abs(got[1] - (special.digamma(5.0) - special.digamma(2.0)) / 3.0) < 1e-14
    assert abs(got[2] - _beta_quantile_grad(0.3, 2.0, 3.0)) < 1e-6
    assert np.all(np.isnan(got[3:]))
    f32 = ptl._dirichlet_grad(ptl.tensor([0.3]), ptl.tensor([2.0]), ptl.tensor([5.0]))
    assert f32.dtype == ptl.float32 and abs(f32.item() - got[2]) < 1e-6
    bc = ptl._dirichlet_grad(ptl.full((2, 3), 0.3), ptl.tensor([2.0]), ptl.tensor(5.0))
    assert bc.shape == (2, 3)
    assert ptl._dirichlet_grad(ptl.ones(0), ptl.ones(0), ptl.ones(0)).shape == (0,)
    with pytest.raises(RuntimeError, match="^Found dtype Double but expected Float$"):
        ptl._dirichlet_grad(ptl.ones(2), ptl.ones(2, dtype=ptl.float64), ptl.ones(2))
    with pytest.raises(RuntimeError, match="^Found dtype Float but expected Double$"):
        ptl._dirichlet_grad(ptl.ones(2, dtype=ptl.float64), ptl.ones(2, dtype=ptl.float64),
                            ptl.ones(2))
    with pytest.raises(NotImplementedError,
                       match="^\"_dirichlet_grad_cpu\" not implemented for 'Long'$"):
        ptl._dirichlet_grad(ptl.tensor([1]), ptl.tensor([1]), ptl.tensor([1]))
    with pytest.raises(RuntimeError, match="The size of tensor a \\(3\\) must match"):
        ptl._dirichlet_grad(ptl.ones(3), ptl.ones(3), ptl.ones(2))
    for op, args in ((ptl._sample_dirichlet, (ptl.ones(2, requires_grad=True),)),
                     (ptl._dirichlet_grad, (ptl.full((2,), 0.5, requires_grad=True),
                                            ptl.ones(2), ptl.full((2,), 3.0)))):
        name = op.__name__
        with pytest.raises(NotImplementedError,
                           match=f"the derivative for 'aten::{name}' is not implemented"):
            op(*args).sum().backward()


@torch_ref
def test_dirichlet_ops_match_torch():
    """torch's _dirichlet_grad approximates the same quantity piecewise (to about 2e-3);
    its errors match exactly."""
    g = np.random.default_rng(3)
    a, b = g.uniform(0.1, 20, 64), g.uniform(0.1, 20, 64)
    x = stats.beta(a, b).ppf(g.uniform(0.01, 0.99, 64))
    args = [x, a, a + b]
    mine = ptl._dirichlet_grad(*[ptl.tensor(v) for v in args]).numpy()
    ref = torch._dirichlet_grad(*[torch.tensor(v) for v in args]).numpy()
    np.testing.assert_allclose(mine, ref, rtol=5e-3)
    for L in (ptl, torch):
        assert abs(L._sample_dirichlet(L.tensor(3.0)).item() - 1.0) < 1e-6
    cases = [lambda L: L._sample_dirichlet(L.ones(3, dtype=L.int64)),
             lambda L: L._sample_dirichlet(L.ones(3, dtype=L.float16)),
             lambda L: L._dirichlet_grad(L.ones(2), L.ones(2, dtype=L.float64), L.ones(2)),
             lambda L: L._dirichlet_grad(L.ones(2, dtype=L.int64), L.ones(2, dtype=L.int64),
                                         L.ones(2, dtype=L.int64))]
    for case in cases:
        with pytest.raises(Exception) as want:
            case(torch)
        with pytest.raises(type(want.value), match="^" + re.escape(str(want.value)) + "$"):
            case(ptl)


def test_multinomial_with_replacement_law():
    p = np.array([0.1, 0.0, 0.4, 0.2, 0.3])
    x = ptl.multinomial(ptl.tensor(p * 7), N, replacement=True).numpy()
    assert x.shape == (N,) and x.dtype == np.int64
    check_chi2(x, {k: p[k] for k in range(5) if p[k] > 0})


def test_multinomial_without_replacement():
    p = np.array([0.5, 0.25, 0.125, 0.125, 0.0, 0.0])
    rows = ptl.tensor(np.tile(p, (N // 4, 1)), dtype=ptl.float32)
    x = ptl.multinomial(rows, 4).numpy()
    assert x.shape == (N // 4, 4)
    assert np.all(np.sort(x, axis=1) == np.array([0, 1, 2, 3]))   # distinct, p > 0 first
    check_chi2(x[:, 0], {k: p[k] for k in range(4)})   # the first draw follows p
    # the second draw follows p renormalised without the first
    second = {k: sum(p[f] * p[k] / (1 - p[f]) for f in range(4) if f != k) for k in range(4)}
    check_chi2(x[:, 1], second)
    y = ptl.multinomial(ptl.tensor([1.0, 0.0, 0.0]), 3).numpy()
    assert sorted(y) == [0, 1, 2] and y[0] == 0
    z = ptl.multinomial(ptl.rand(3, 1000, dtype=ptl.float64), 1000).numpy()
    assert np.all(np.sort(z, axis=1) == np.arange(1000))
    assert ptl.multinomial(ptl.ones(0, 3), 2, True).shape == (0, 2)
    assert ptl.ones(3, dtype=ptl.float16).multinomial(2).shape == (2,)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("ncat,counts", [(40, [1, 9, 10, 11, 39, 40]),
                                         (50257, [1, 2, 100, 12563, 12564, 12565])])
def test_multinomial_is_the_philox_exponential_race(ncat, counts, threads):
    """Without replacement, category c of row r gets the key p / E, E = -log(u) from the words
    0-1 of counter r * ncat + c (drawn 512 counters a vector), and the n largest keys win,
    ties (zero probabilities) by index: a heap of the n best when 4 n < ncat (best_keys),
    else a sort of all, at and across that threshold and every chunk of 512 draws.  With
    replacement, sample k of row r is the first category whose CDF exceeds u acc (u from
    counter r * n + k; the search halves without a branch), moved down past zero
    probabilities, as NumPy's searchsorted finds it."""
    rng = np.random.default_rng(ncat)
    p = rng.random((3, ncat))
    p[0, ::3] = 0.0
    p[1, : ncat // 2] = 0.0
    seed = 2 ** 40 + 13
    with num_threads(threads):
        for n in counts:
            g = ptl.Generator().manual_seed(seed)
            ptl.rand(5, generator=g)
            got = ptl.multinomial(ptl.tensor(p), n, generator=g).numpy()
            w = philox_words64(seed, 5, np.arange(3 * ncat)).reshape(3, ncat)
            u = 1.0 - (w >> np.uint64(11)).astype(np.float64) * 2.0 ** -53
            keys = np.where(p > 0, p / -np.log(u), 0.0)
            want = np.lexsort((np.arange(ncat)[None].repeat(3, 0), -keys), axis=1)[:, :n]
            np.testing.assert_array_equal(got, want)
            g = ptl.Generator().manual_seed(seed)
            ptl.rand(5, generator=g)
            got = ptl.multinomial(ptl.tensor(p), n, replacement=True, generator=g).numpy()
            w = philox_words64(seed, 5, np.arange(3 * n)).reshape(3, n)
            cdf = np.cumsum(p, axis=1)
            for r in range(3):
                x = (w[r] >> np.uint64(11)).astype(np.float64) * 2.0 ** -53 * cdf[r, -1]
                want = np.minimum(np.searchsorted(cdf[r], x, side="right"), ncat - 1)
                for k in range(n):
                    while want[k] > 0 and p[r, want[k]] == 0.0:
                        want[k] -= 1
                np.testing.assert_array_equal(got[r], want)


# ---- errors ----

def _msg(text):
    return "^" + re.escape(text) + "$"


ERRORS = [
    # (call, exception type, PyTorch's message)
    (lambda m: m.rand(3, dtype=m.int64), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.rand(3, dtype=m.bool), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Bool'"),
    (lambda m: m.randn(3, dtype=m.int32), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Int'"),
    (lambda m: m.rand(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda m: m.rand_like(m.zeros(3, dtype=m.int64)), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.randn_like(m.zeros(3, dtype=m.uint8)), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Byte'"),
    (lambda m: m.randint(5, 5, (3,)), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda m: m.randint(-1, (3,), dtype=m.uint8), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=0 >= to=-1"),
    (lambda m: m.randint(3, (3,), dtype=m.bool), RuntimeError,
     "to - 1 is out of bounds for bool"),
    (lambda m: m.randint(300, (3,), dtype=m.uint8), RuntimeError,
     "to - 1 is out of bounds for unsigned char"),
    (lambda m: m.randint(-200, 3, (3,), dtype=m.int8), RuntimeError,
     "from is out of bounds for signed char"),
    (lambda m: m.randint(0, 10 ** 6, (3,), dtype=m.int16), RuntimeError,
     "to - 1 is out of bounds for short int"),
    (lambda m: m.randint_like(m.zeros(3), 5, 5), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda m: m.zeros(3).random_(5, 5), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=5 >= to=5"),
    (lambda m: m.zeros(3).random_(0), RuntimeError,
     "random_ expects 'from' to be less than 'to', but got from=0 >= to=0"),
    (lambda m: m.zeros(3, dtype=m.int32).random_(0, 2 ** 40), RuntimeError,
     "to - 1 is out of bounds for int"),
    (lambda m: m.zeros(3).random_(2 ** 60, None), RuntimeError,
     "random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted "
     "to dtype, but got from=1152921504606846976 > to_inc=16777216"),
    (lambda m: m.zeros(3, dtype=m.bool).random_(3, None), RuntimeError,
     "from is out of bounds for bool"),
    (lambda m: m.zeros(3).uniform_(2, 1), RuntimeError,
     "uniform_ expects to return a [from, to) range, but found from=2 > to=1"),
    (lambda m: m.zeros(3, dtype=m.int64).uniform_(2, 1), NotImplementedError,
     "\"check_uniform_bounds\" not implemented for 'Long'"),
    (lambda m: m.zeros(3).normal_(0, -1), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda m: m.zeros(3, dtype=m.int64).normal_(), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda m: m.normal(0.0, -1.5, (3,)), RuntimeError,
     "normal expects std >= 0.0, but found std -1.5"),
    (lambda m: m.normal(1.0, 2.0, (2,), dtype=m.int64), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda m: m.normal(m.zeros(3), -1.0), RuntimeError,
     "normal expects std >= 0.0, but found std -1"),
    (lambda m: m.normal(m.zeros(3), -m.ones(3)), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(0.0, -m.ones(3)), RuntimeError,
     "normal expects all elements of std >= 0.0"),
    (lambda m: m.normal(m.zeros(3), m.ones(4)), RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton "
     "dimension 0"),
    (lambda m: m.normal(m.zeros(3, dtype=m.int64), 1.0), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda m: m.normal(0.0, m.ones(3, dtype=m.int64)), NotImplementedError,
     "\"normal_kernel_cpu\" not implemented for 'Long'"),
    (lambda m: m.zeros(3).exponential_(-1), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=-1"),
    (lambda m: m.zeros(3).exponential_(0), RuntimeError,
     "exponential_ expects lambda > 0.0, but found lambda=0"),
    (lambda m: m.zeros(3, dtype=m.int64).exponential_(), RuntimeError,
     "Exponential distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified Long"),
    (lambda m: m.zeros(3).geometric_(0), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=0"),
    (lambda m: m.zeros(3).geometric_(1.5), RuntimeError,
     "geometric_ expects p to be in (0, 1), but got p=1.5"),
    (lambda m: m.zeros(3, dtype=m.bool).geometric_(0.5), NotImplementedError,
     "\"geometric_cpu\" not implemented for 'Bool'"),
    (lambda m: m.zeros(3).log_normal_(0, 0), RuntimeError,
     "log_normal_ expects std > 0.0, but found std=0"),
    (lambda m: m.zeros(3, dtype=m.int16).log_normal_(), NotImplementedError,
     "\"log_normal_cpu\" not implemented for 'Short'"),
    (lambda m: m.zeros(3).cauchy_(0, -1), RuntimeError,
     "cauchy_ expects sigma > 0.0, but found sigma=-1"),
    (lambda m: m.zeros(3, dtype=m.int64).cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified long int"),
    (lambda m: m.zeros(3, dtype=m.uint8).cauchy_(), RuntimeError,
     "Cauchy distribution is a continuous probability distribution. dtype must be a "
     "floating point but you specified unsigned char"),
    (lambda m: m.zeros(3).bernoulli_(1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda m: m.zeros(3).bernoulli_(-0.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=-0.5"),
    (lambda m: m.zeros(3).bernoulli_(m.full((3,), 1.5)), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
     "be improved?  If so, please report an enhancement request to PyTorch.)"),
    (lambda m: m.zeros(3).bernoulli_(m.full((4,), 0.5)), RuntimeError,
     "The expanded size of the tensor (3) must match the existing size (4) at non-singleton "
     "dimension 0.  Target sizes: [3].  Tensor sizes: [4]"),
    (lambda m: m.zeros(3).bernoulli_(m.full((3,), 1)), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda m: m.bernoulli(m.full((3,), float("nan"))), RuntimeError,
     "Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message "
     "be improved?  If so, please report an enhancement request to PyTorch.)"),
    (lambda m: m.bernoulli(m.zeros(3, dtype=m.int64)), NotImplementedError,
     "\"bernoulli_tensor_cpu_p_\" not implemented for 'Long'"),
    (lambda m: m.bernoulli(m.zeros(3), 1.5), RuntimeError,
     "bernoulli_ expects p to be in [0, 1], but got p=1.5"),
    (lambda m: m.multinomial(m.zeros(3), 1), RuntimeError,
     "invalid multinomial distribution (sum of probabilities <= 0)"),
    (lambda m: m.multinomial(m.tensor([1.0, -1, 1]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda m: m.multinomial(m.tensor([1.0, float("nan"), 1]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda m: m.multinomial(m.tensor([1.0, float("inf"), 1]), 1), RuntimeError,
     "probability tensor contains either `inf`, `nan` or element < 0"),
    (lambda m: m.multinomial(m.ones(3), 4), RuntimeError,
     "cannot sample n_sample > prob_dist.size(-1) samples without replacement"),
    (lambda m: m.multinomial(m.ones(3), 0), RuntimeError,
     "cannot sample n_sample <= 0 samples"),
    (lambda m: m.multinomial(m.ones(2, 2, 2), 1), RuntimeError,
     "prob_dist must be 1 or 2 dim"),
    (lambda m: m.multinomial(m.ones(()), 1), RuntimeError, "prob_dist must be 1 or 2 dim"),
    (lambda m: m.multinomial(m.ones(3, dtype=m.int64), 1), RuntimeError,
     "multinomial only supports floating-point dtypes for input, got: Long"),
    (lambda m: m.poisson(m.tensor([-1.0])), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    (lambda m: m.poisson(m.tensor([float("nan")])), RuntimeError,
     "invalid Poisson rate, expected rate to be non-negative"),
    (lambda m: m.poisson(m.tensor([1], dtype=m.int64)), NotImplementedError,
     "\"poisson_cpu\" not implemented for 'Long'"),
    (lambda m: m.randperm(-1), RuntimeError,
     "Trying to create tensor with negative dimension -1: [-1]"),
    (lambda m: m.randperm(5, dtype=m.bool), NotImplementedError,
     "\"randperm\" not implemented for 'Bool'"),
    (lambda m: m.randperm(129, dtype=m.int8), RuntimeError,
     "value cannot be converted to type int8_t without overflow"),
    (lambda m: m.randperm(300, dtype=m.uint8), RuntimeError,
     "value cannot be converted to type uint8_t without overflow"),
    (lambda m: m.randperm(2050, dtype=m.float16), RuntimeError,
     "n cannot be greater than 2049 for Half type."),
    (lambda m: m.Generator().set_state(m.zeros(3)), TypeError,
     "RNG state must be a torch.ByteTensor"),
    (lambda m: m.Generator().manual_seed(1.5), RuntimeError,
     "manual_seed expected a long, but got float"),
    (lambda m: m.Generator().manual_seed("a"), RuntimeError,
     "manual_seed expected a long, but got str"),
    (lambda m: m.Generator().manual_seed(2 ** 64), ValueError,
     "Overflow when unpacking long long"),
    (lambda m: m.Generator().manual_seed(-2 ** 63 - 1), ValueError,
     "Overflow when unpacking long long"),
]


@pytest.mark.parametrize("call,exc,msg", ERRORS)
def test_errors(call, exc, msg):
    with pytest.raises(exc, match=_msg(msg)):
        call(ptl)
    if torch is not None:
        with pytest.raises(exc, match=_msg(msg)):
            call(torch)


@pytest.mark.parametrize("at", [0, 1, 4094, 4095, 4096, 4097, 8191, 8192, 9999])
@pytest.mark.parametrize("bad", [-1e-300, -float("inf"), float("nan")])
def test_tensor_std_and_p_checked_everywhere(at, bad):
    """normal's tensor std and bernoulli's tensor p are checked 4096 values a block
    (doubles_in_range): one bad value at and across the block boundaries, and in the last
    block, is found; the limits themselves (std 0 and inf, p 0 and 1) pass"""
    std = ptl.ones(10000, dtype=ptl.float64)
    std[::7] = 0.0
    std[5::11] = float("inf")
    assert ptl.normal(ptl.zeros(10000), std.float()).shape == (10000,)
    std[at] = bad
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        ptl.normal(ptl.zeros(10000), std)
    p = ptl.full((10000,), 0.5, dtype=ptl.float64)
    p[::3] = 1.0
    p[1::5] = 0.0
    assert ptl.bernoulli(p).shape == (10000,)
    for value in (bad, 1.0 + 2 ** -52):
        p[at] = value
        with pytest.raises(RuntimeError, match="Expected p_in >= 0 && p_in <= 1"):
            ptl.bernoulli(p)


def test_errors_of_our_own():
    """Messages that cannot be PyTorch's: our state is 16 bytes.  (A CUDA generator without
    a device: tests/python/test_cuda_random.py.)"""
    with pytest.raises(RuntimeError, match=_msg(
            "Expected a PhiloxGeneratorState of size 16 but found the input RNG state size "
            "to be 3")):
        ptl.Generator().set_state(ptl.zeros(3, dtype=ptl.uint8))
    with pytest.raises(TypeError):
        ptl.rand(3, generator=5)


def test_float_random_bounds_warn():
    with pytest.warns(UserWarning, match=re.escape(
            "to - 1 is out of bounds [-(2^24), 2^24]. Due to precision limitations float can "
            "support discrete uniform distribution only within this range.")):
        ptl.randint(0, 2 ** 25, (3,), dtype=ptl.float32)


def test_no_leaks():
    ptl.rand(3)
    before = _C._live_counts()
    g = ptl.Generator().manual_seed(1)
    for _ in range(20):
        ptl.rand(5, 4, generator=g)
        ptl.randn(3).t().contiguous()
        ptl.randperm(10, dtype=ptl.int32)
        ptl.normal(ptl.zeros(3, 1), ptl.ones(4))
        ptl.multinomial(ptl.ones(2, 5), 3)
        ptl.multinomial(ptl.ones(2, 5), 3, True)
        ptl.poisson(ptl.ones(5))
        ptl.bernoulli(ptl.full((4,), 0.5))
        ptl.zeros(4, 3).t().bernoulli_(ptl.full((3, 1), 0.5))
        g.get_state()
        for call, exc, _ in ERRORS[:40]:
            with pytest.raises(exc):
                call(ptl)
    assert _C._live_counts() == before


# ---- autograd: samplers pass zero gradients (derivatives.yaml's zeros_like) ----

AUTOGRAD_CASES = [
    # (name, fn(module, x) where x requires grad through one op, PyTorch's node name)
    ("uniform_", lambda m, x: (x * 1).uniform_(), "UniformBackward0"),
    ("normal_", lambda m, x: (x * 1).normal_(), "NormalBackward0"),
    ("normal.Tensor_float", lambda m, x: m.normal(x, 1.0), "NormalBackward1"),
    ("normal.float_Tensor", lambda m, x: m.normal(1.0, x), "NormalBackward2"),
    ("normal.Tensor_Tensor", lambda m, x: m.normal(x, x), "NormalBackward3"),
    ("random_.from", lambda m, x: (x * 1).random_(1, 3), "RandomBackward0"),
    ("random_.to", lambda m, x: (x * 1).random_(3), "RandomBackward1"),
    ("random_", lambda m, x: (x * 1).random_(), "RandomBackward2"),
    ("exponential_", lambda m, x: (x * 1).exponential_(), "ExponentialBackward0"),
    ("geometric_", lambda m, x: (x * 1).geometric_(0.5), "GeometricBackward0"),
    ("log_normal_", lambda m, x: (x * 1).log_normal_(), "LogNormalBackward0"),
    ("cauchy_", lambda m, x: (x * 1).cauchy_(), "CauchyBackward0"),
    ("bernoulli", lambda m, x: m.bernoulli(x.sigmoid()), "BernoulliBackward0"),
    ("bernoulli_.Tensor", lambda m, x: m.zeros(2, 3).bernoulli_(x.sigmoid()),
     "BernoulliBackward1"),
    ("bernoulli_.float", lambda m, x: (x * 1).bernoulli_(0.5), "BernoulliBackward2"),
    ("poisson", lambda m, x: m.poisson(x.exp()), "PoissonBackward0"),
]


@pytest.mark.parametrize("name,fn,node", AUTOGRAD_CASES, ids=[c[0] for c in AUTOGRAD_CASES])
def test_sampler_gradients_are_zero(name, fn, node):
    libs = [ptl] + ([torch] if torch is not None else [])
    for m in libs:
        x = m.ones(3, dtype=m.float64, requires_grad=True)
        y = fn(m, x)
        assert type(y.grad_fn).__name__ == node
        (y * 3).sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.zeros(3))


def test_sampler_autograd_errors():
    for m in [ptl] + ([torch] if torch is not None else []):
        leaf = m.zeros(3, requires_grad=True)
        with pytest.raises(RuntimeError, match=_msg(
                "a leaf Variable that requires grad is being used in an in-place operation.")):
            leaf.uniform_()
        with m.no_grad():
            leaf.normal_()
        assert leaf.requires_grad and leaf.is_leaf
        assert m.multinomial(leaf.sigmoid(), 2).grad_fn is None
        assert m.rand_like(leaf).grad_fn is None and not m.rand_like(leaf).requires_grad
    y = ptl.bernoulli(ptl.ones(3, requires_grad=True) * 0.5, 0.5)
    with pytest.raises(NotImplementedError, match=_msg(
            "the derivative for 'aten::bernoulli.p' is not implemented.")):
        y.sum().backward()
