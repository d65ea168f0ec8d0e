"""torch.binomial (src/aten/native/random.c, its sampler in random_binomial.c: Note [Binomial
sampling]): the first two moments and the whole distribution (a chi-square test against scipy's
pmf) on both sides of the inversion / BTRS switch at n q = 10 and of the p = 1/2 mirror, the
edge cases, float32 and float64, broadcasting, 0-dim, size-0 and strided inputs, generators and
threads, and every error with PyTorch's type and message; at huge counts (Stirling's form of
BTRS's test from BINOMIAL_STIRLING_COUNT = 2^24 on) the law of 2e5 draws up to 1e17 trials,
the draws below the threshold pinned to the lgamma form's values, and threads."""
import math

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import (assert_large_sample_law, assert_no_leak, assert_raises_like_torch, make,
                     num_threads)

N = 40000

# (count, prob): inversion below n q = 10, BTRS above, q = min(p, 1 - p)
MOMENT_CASES = [(1, 0.3), (5, 0.3), (30, 0.7), (100, 0.05), (19, 0.5), (21, 0.5),
                (100, 0.3), (1000, 0.9), (1e6, 0.5), (1e9, 1e-6), (50, 0.999)]


@pytest.mark.parametrize("count, prob", MOMENT_CASES)
@pytest.mark.parametrize("dtype", [ptl.float64, ptl.float32])
def test_mean_and_variance(count, prob, dtype):
    g = ptl.Generator().manual_seed(int(count * 7 + prob * 1000))
    x = ptl.binomial(ptl.full((N,), count, dtype=dtype), ptl.full((N,), prob, dtype=dtype),
                     generator=g)
    assert x.dtype == dtype
    a = x.double().numpy()
    assert np.all(a == np.floor(a)) and a.min() >= 0 and a.max() <= count
    q = 1 - prob
    mean, var = count * prob, count * prob * q
    mu4 = var * (1 + 3 * (count - 2) * prob * q)
    assert abs(a.mean() - mean) < 6 * math.sqrt(var / N) + 1e-12
    assert abs(a.var() - var) < 6 * math.sqrt(max(mu4 - var * var, 0) / N) + 1e-9 * var + 1e-12


@pytest.mark.parametrize("count, prob", [(10, 0.3), (200, 0.4), (60, 0.8), (12, 0.93),
                                         (1023, 0.5), (1024, 0.5), (1500, 0.3), (2100, 0.5),
                                         (10000, 0.3), (200000, 0.5)])
def test_distribution_chi_square(count, prob):
    """The draws' histogram against scipy's pmf; BTRS's exact test takes log k! and
    log (n - k)! from two direct-mapped tables of BINOMIAL_MEMO = 1024 slots (slot k mod
    1024): k and n - k below 1024 (1023 and 1024 trials), across it (1500 x 0.3: k near 450,
    n - k near 1050; 2100; 10000 x 0.3), and draws spread over more than 1024 values, so that
    k's share a slot (200000 x 0.5: standard deviation 224)"""
    stats = pytest.importorskip("scipy.stats", reason="scipy gives the reference pmf")
    g = ptl.Generator().manual_seed(count)
    a = ptl.binomial(ptl.full((N,), float(count)), ptl.full((N,), prob), generator=g).numpy()
    ks = np.arange(count + 1)
    expected = stats.binom.pmf(ks, count, prob) * N
    observed = np.bincount(a.astype(np.int64), minlength=count + 1).astype(np.float64)
    keep = expected >= 5          # pool the sparse tails
    obs = np.append(observed[keep], observed[~keep].sum())
    exp = np.append(expected[keep], expected[~keep].sum())
    if exp[-1] < 5:
        obs, exp = obs[:-1], exp[:-1]
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert stats.chi2.sf(chi2, len(obs) - 1) > 1e-4


def test_edges():
    count = ptl.tensor([0.0, 5.0, 5.0, 3.7, 4.0, -3.0, 6.0, 3.5, math.nan, 4.0, math.inf])
    prob = ptl.tensor([0.5, 0.0, 1.0, 1.0, 1.5, 0.5, -0.2, 1.0, 0.5, math.nan, 0.0])
    got = ptl.binomial(count, prob).numpy()
    want = [0, 0, 5, 3.7, 4, 0, 0, 3.5, math.nan, math.nan, 0]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float32))
    # a fractional count with 0 < p < 1 draws from floor(count) trials
    a = ptl.binomial(ptl.full((2000,), 3.9), ptl.full((2000,), 0.999)).numpy()
    assert a.max() == 3.0


def test_shapes_layouts_and_broadcast():
    out = ptl.binomial(ptl.full((2, 1, 3), 10.0), ptl.full((4, 1), 0.5))
    assert tuple(out.shape) == (2, 4, 3) and out.is_contiguous()
    assert tuple(ptl.binomial(ptl.tensor(3.0), ptl.tensor(0.5)).shape) == ()
    assert tuple(ptl.binomial(ptl.ones(0, 3), ptl.full((0, 3), 0.5)).shape) == (0, 3)
    # a strided count gives what its contiguous copy gives from the same seed
    x, a = make((6, 5), ptl.float64, "transposed", low=0, high=40)
    p = ptl.full((6, 5), 0.3, dtype=ptl.float64)
    ptl.manual_seed(3)
    y1 = ptl.binomial(x, p)
    ptl.manual_seed(3)
    y2 = ptl.binomial(ptl.tensor(np.ascontiguousarray(a)), p)
    assert np.array_equal(y1.numpy(), y2.numpy())


@pytest.mark.parametrize("n", [100, 4096, 4097, 20000])
def test_threads_and_generators_agree(n):
    """Element i draws from its own stream: 1 or 2 threads (chunks of 4096 elements), the
    default generator or a given one seeded alike, give the same values"""
    count, prob = ptl.full((n,), 50.0), ptl.full((n,), 0.4)
    res = []
    for threads in (1, 2):
        with num_threads(threads):
            res.append(ptl.binomial(count, prob, generator=ptl.Generator().manual_seed(9)))
            ptl.manual_seed(9)
            res.append(ptl.binomial(count, prob))
    for r in res[1:]:
        assert np.array_equal(res[0].numpy(), r.numpy())
    g = ptl.Generator().manual_seed(9)
    first = ptl.binomial(count, prob, generator=g)
    assert not np.array_equal(first.numpy(), ptl.binomial(count, prob, generator=g).numpy())


def test_each_element_draws_alone():
    """Element i's value depends on its parameters and its stream only: the constants a run
    of equal parameters shares are set up again where they change (inversion and BTRS
    alternating here)"""
    counts = np.array([10.0, 200.0, 10.0, 200.0, 7.0, 7.0, 1e6, 3.0, 1030.0, 600.0] * 50)
    probs = np.array([0.3, 0.3, 0.6, 0.6, 0.5, 0.5, 0.2, 0.9, 0.5, 0.45] * 50)
    mixed = ptl.binomial(ptl.tensor(counts), ptl.tensor(probs),
                         generator=ptl.Generator().manual_seed(4)).numpy()
    for c, p in set(zip(counts, probs)):
        alone = ptl.binomial(ptl.full((len(counts),), c, dtype=ptl.float64),
                             ptl.full((len(counts),), p, dtype=ptl.float64),
                             generator=ptl.Generator().manual_seed(4)).numpy()
        at = (counts == c) & (probs == p)
        assert np.array_equal(mixed[at], alone[at])


def test_no_leaks():
    def calls():
        ptl.binomial(ptl.full((3, 1), 20.0), ptl.full((4,), 0.3))
        for c, p in ((ptl.ones(2), ptl.ones(3)), (ptl.ones(2, dtype=ptl.float64), ptl.ones(2))):
            with pytest.raises(RuntimeError):
                ptl.binomial(c, p)
    assert_no_leak(calls)


def test_autograd_node_is_not_implemented():
    c = ptl.tensor([3.0, 4.0], requires_grad=True)
    y = ptl.binomial(c, ptl.tensor([0.5, 0.2]))
    assert y.requires_grad and type(y.grad_fn).__name__ == "NotImplemented"
    assert_raises_like_torch(
        lambda lib: lib.binomial(lib.tensor([3.0, 4.0], requires_grad=True),
                                 lib.tensor([0.5, 0.2])).sum().backward(),
        RuntimeError, "derivative for aten::binomial is not implemented")


ERRORS = [
    (lambda lib: (lib.tensor([3, 4]), lib.tensor([0.5, 0.3])), ValueError,
     "binomial only supports floating-point dtypes for count, got: Long"),
    (lambda lib: (lib.tensor([3.0, 4.0]), lib.tensor([1, 0])), ValueError,
     "binomial only supports floating-point dtypes for prob, got: Long"),
    (lambda lib: (lib.tensor([3.0, 4.0]), lib.tensor([True, False])), ValueError,
     "binomial only supports floating-point dtypes for prob, got: Bool"),
    (lambda lib: (lib.tensor([3.0, 4.0], dtype=lib.float64), lib.tensor([0.5, 0.3])),
     RuntimeError, "Found dtype Float but expected Double"),
    (lambda lib: (lib.tensor([3.0, 4.0], dtype=lib.float16), lib.tensor([0.5, 0.3])),
     RuntimeError, "Found dtype Float but expected Half"),
    (lambda lib: (lib.tensor([3.0, 4.0], dtype=lib.float16),
                  lib.tensor([0.5, 0.3], dtype=lib.float16)), NotImplementedError,
     "\"binomial_cpu\" not implemented for 'Half'"),
    (lambda lib: (lib.tensor([3.0, 4.0], dtype=lib.bfloat16),
                  lib.tensor([0.5, 0.3], dtype=lib.bfloat16)), NotImplementedError,
     "\"binomial_cpu\" not implemented for 'BFloat16'"),
    (lambda lib: (lib.tensor([3.0, 4.0]), lib.tensor([0.5, 0.2, 0.3])), RuntimeError,
     "The size of tensor a (2) must match the size of tensor b (3) at non-singleton "
     "dimension 0"),
]


@pytest.mark.parametrize("args, exc, msg", ERRORS)
def test_errors(args, exc, msg):
    assert_raises_like_torch(lambda lib: lib.binomial(*args(lib)), exc, msg)


# Note [Binomial sampling], huge counts
HUGE_N = 200000
STIRLING_COUNT = 2.0 ** 24


@pytest.mark.parametrize("count", [1e6, 1e12, 1e15, 2.0 ** 53, 1e17])
@pytest.mark.parametrize("prob", [1e-9, 0.3, 0.5, 0.9])
def test_huge_counts(count, prob):
    """Mean, variance and (standard deviation 1e4 and up) the normal shape of 2e5 draws; the
    lgamma form of the test gave Binomial(1e15, 0.3) 0.84 times the variance n p q and
    Binomial(1e17, 0.5) 3.3 times.  Above 2^53 a draw is a double on its grid, within [0, n]"""
    pytest.importorskip("scipy.stats", reason="scipy gives the normal's quantiles")
    seed = int(math.log2(count) * 1000 + prob * 100)
    g = ptl.Generator().manual_seed(seed)
    a = ptl.binomial(ptl.full((HUGE_N,), count, dtype=ptl.float64),
                     ptl.full((HUGE_N,), prob, dtype=ptl.float64), generator=g).numpy()
    assert a.min() >= 0 and a.max() <= count
    if count < 2.0 ** 53:
        assert np.all(a == np.floor(a))
    var = count * prob * (1 - prob)
    mu4 = var * (1 + 3 * (count - 2) * prob * (1 - prob))
    assert_large_sample_law(a, count * prob, var, mu4, seed)


@pytest.mark.parametrize("count, prob", [(1e15, 1e-15), (1e17, 1e-17), (1e17, 3e-17),
                                         (STIRLING_COUNT, 1e-7)])
def test_huge_counts_by_inversion(count, prob):
    """n q below 10 at huge n: (1 - q)^n as exp(n log1p(-q)); 1 - q rounded to 1 made every
    draw of Binomial(1e17, 1e-17) 0.  Against Poisson(n q), the limit (O(q) apart)"""
    stats = pytest.importorskip("scipy.stats", reason="scipy gives the reference pmf")
    g = ptl.Generator().manual_seed(17)
    a = ptl.binomial(ptl.full((N,), count, dtype=ptl.float64),
                     ptl.full((N,), prob, dtype=ptl.float64), generator=g).numpy()
    ks = np.arange(40)
    expected = stats.poisson.pmf(ks, count * prob) * N
    observed = np.bincount(a.astype(np.int64), minlength=40)[:40].astype(np.float64)
    keep = expected >= 5
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4, chi2


def test_below_the_stirling_threshold_draws_are_unchanged():
    """Counts below 2^24 keep the lgamma form and its memo: these seeded draws are the values
    the sampler gave before the Stirling form (BTRS at 2^24 - 1 for q = 0.3, 0.5 and its
    mirror 0.9, inversion at 2^24 - 1 for q = 1e-7, and usual counts)"""
    cases = [(STIRLING_COUNT - 1, 0.3), (STIRLING_COUNT - 1, 0.5), (STIRLING_COUNT - 1, 0.9),
             (STIRLING_COUNT - 1, 1e-7), (1e6, 0.3), (1000.0, 0.4), (30.0, 0.2)]
    c = ptl.tensor([cc for cc, _ in cases for _ in range(4)], dtype=ptl.float64)
    p = ptl.tensor([pp for _, pp in cases for _ in range(4)], dtype=ptl.float64)
    got = ptl.binomial(c, p, generator=ptl.Generator().manual_seed(2024)).numpy()
    want = [5031862, 5032825, 5028871, 5033070, 8388274, 8388578, 8388052, 8390791,
            15101247, 15099171, 15098879, 15098694, 1, 0, 1, 3, 300252, 300187, 299772, 299840,
            400, 381, 394, 399, 8, 2, 8, 3]
    np.testing.assert_array_equal(got, np.array(want, dtype=np.float64))


@pytest.mark.parametrize("count", [STIRLING_COUNT - 1, STIRLING_COUNT, STIRLING_COUNT + 1])
@pytest.mark.parametrize("prob", [0.3, 0.5, 0.9])
def test_across_the_stirling_threshold(count, prob):
    """Below, at and above 2^24 the draws follow scipy's cdf (a chi-square over cells of 8
    values within 6 standard deviations, the tails pooled)"""
    stats = pytest.importorskip("scipy.stats", reason="scipy gives the reference cdf")
    g = ptl.Generator().manual_seed(int(count) % 1000 + int(prob * 10))
    a = ptl.binomial(ptl.full((HUGE_N,), count, dtype=ptl.float64),
                     ptl.full((HUGE_N,), prob, dtype=ptl.float64), generator=g).numpy()
    sd = math.sqrt(count * prob * (1 - prob))
    edges = np.arange(int(count * prob - 6 * sd), int(count * prob + 6 * sd), 8)
    cdf = stats.binom.cdf(edges - 1, count, prob)
    expected = np.diff(np.concatenate([[0.0], cdf, [1.0]])) * HUGE_N
    observed = np.bincount(np.searchsorted(edges, a, side="right"),
                           minlength=len(edges) + 1).astype(np.float64)
    keep = expected >= 5
    chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
    assert stats.chi2.sf(chi2, keep.sum() - 1) > 1e-4, chi2


@pytest.mark.parametrize("n", [4097, 20000])
def test_huge_counts_threads_agree(n):
    """1 and 2 threads give the same values for counts on both sides of 2^24 and above 2^53,
    mixed (each element its own Philox stream and plan)"""
    counts = np.resize([1e17, 50.0, STIRLING_COUNT, 1e15, STIRLING_COUNT - 1, 3e16], n)
    probs = np.resize([0.3, 0.4, 0.5, 1e-9, 0.7, 1e-17], n)
    res = []
    for threads in (1, 2):
        with num_threads(threads):
            res.append(ptl.binomial(ptl.tensor(counts), ptl.tensor(probs),
                                    generator=ptl.Generator().manual_seed(5)).numpy())
    np.testing.assert_array_equal(res[0], res[1])
