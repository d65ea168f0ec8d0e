"""kthvalue, median and nanmedian of 32-bit-key dtypes by partition (Note [Selection by
partition] in src/aten/native/sort.c): the element at a position of the lane's stable order,
checked against NumPy's stable argsort on lanes on both sides of the insertion-sort cutoff
(32) with ties and NaN, strided lanes, and an input that defeats the median-of-three pivots
(McIlroy's adversary run against the same partition), which takes the heap fallback."""
import numpy as np
import pytest

import pytorchlite as ptl

SMALL_LANE = 32
LENGTHS = [1, 2, 31, 32, 33, 34, 65, 200, 1000]
DTYPES = [(ptl.float32, np.float32), (ptl.float16, np.float16), (ptl.int32, np.int32),
          (ptl.int16, np.int16), (ptl.uint8, np.uint8), (ptl.float64, np.float64)]


def lane_values(rng, n, np_dtype, nan):
    """n values with many ties; about a tenth NaN for floating dtypes when nan"""
    a = rng.integers(0, max(2, n // 4), n).astype(np_dtype)
    if nan and np.issubdtype(np_dtype, np.floating):
        a[rng.random(n) < 0.1] = np.nan
    return a


def stable_pick(a, pos):
    """(value, index) at position pos of a's stable ascending order, NaN last"""
    order = np.argsort(a.astype(np.float64), kind="stable")
    return a[order[pos]], order[pos]


def median_pos(a, ignore_nan):
    nnan = int(np.isnan(a.astype(np.float64)).sum())
    n = len(a)
    if ignore_nan:
        return 0 if nnan == n else (n - nnan - 1) // 2
    return n - nnan if nnan else (n - 1) // 2


def check(got, a, pos):
    value, index = stable_pick(a, pos)
    np.testing.assert_array_equal(got.values.numpy(), value)
    assert int(got.indices) == index


@pytest.mark.parametrize("dtype,np_dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_kthvalue_every_k_stable_index(dtype, np_dtype, n):
    rng = np.random.default_rng(n)
    for nan in (False, True):
        a = lane_values(rng, n, np_dtype, nan)
        t = ptl.tensor(a)
        ks = range(1, n + 1) if n <= 2 * SMALL_LANE + 1 else sorted({1, 2, n // 2, n - 1, n})
        for k in ks:
            check(ptl.kthvalue(t, k), a, k - 1)


@pytest.mark.parametrize("dtype,np_dtype", DTYPES)
@pytest.mark.parametrize("n", LENGTHS)
def test_median_nanmedian_with_nan(dtype, np_dtype, n):
    rng = np.random.default_rng(100 + n)
    for nan in (False, True):
        a = lane_values(rng, n, np_dtype, nan)
        t = ptl.tensor(a)
        check(ptl.median(t, 0), a, median_pos(a, False))
        check(ptl.nanmedian(t, 0), a, median_pos(a, True))
    if np.issubdtype(np_dtype, np.floating):   # an all-NaN lane: its first NaN
        a = np.full(n, np.nan, np_dtype)
        check(ptl.nanmedian(ptl.tensor(a), 0), a, 0)
        check(ptl.median(ptl.tensor(a), 0), a, 0)


def test_strided_lanes_keepdim_and_size0():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((70, 40)).astype(np.float32)
    a[rng.random(a.shape) < 0.05] = np.nan
    t = ptl.tensor(a).t()   # lanes along dim 1 of the transpose: stride 40
    for k in (1, 35, 70):
        got = ptl.kthvalue(t, k, 1, keepdim=True)
        assert got.values.shape == (40, 1)
        for r in range(40):
            value, index = stable_pick(a[:, r], k - 1)
            np.testing.assert_array_equal(got.values.numpy()[r, 0], value)
            assert got.indices.numpy()[r, 0] == index
    got = ptl.nanmedian(t, 1)
    for r in range(40):
        value, index = stable_pick(a[:, r], median_pos(a[:, r], True))
        np.testing.assert_array_equal(got.values.numpy()[r], value)
        assert got.indices.numpy()[r] == index
    e = ptl.zeros(0, 50)
    assert ptl.kthvalue(e, 3, 1).values.shape == (0,)
    assert ptl.median(ptl.tensor(np.float32(2.5)), 0).values.item() == 2.5


def adversarial(n, pos):
    """Values on which select_packed's median-of-three pivots peel a few elements a round
    (McIlroy's "killer adversary": values frozen only as the partition compares them), and
    whether its 2 log2(n) + 8 rounds ran out"""
    val, solid, cand = [None] * n, [0], [None]

    def freeze(i):
        val[i] = solid[0]
        solid[0] += 1

    def lt(i, j):
        if val[i] is None and val[j] is None:
            freeze(i if i == cand[0] else j)
        if val[i] is None:
            return False
        return val[j] is None or val[i] < val[j]

    a, lo, hi, rounds = list(range(n)), 0, n - 1, 8 + 2 * (n.bit_length() - 1)
    ran_out = False
    while hi - lo > SMALL_LANE:
        if rounds == 0:
            ran_out = True
            break
        rounds -= 1
        x, y, z = a[lo], a[lo + (hi - lo) // 2], a[hi]
        if lt(x, y):
            pv = y if lt(y, z) else (z if lt(x, z) else x)
        else:
            pv = x if lt(x, z) else (z if lt(y, z) else y)
        if val[pv] is None:
            freeze(pv)
        cand[0] = pv
        i, j = lo, hi
        while i <= j:
            while lt(a[i], pv):
                i += 1
            while lt(pv, a[j]):
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i, j = i + 1, j - 1
        if pos <= j:
            hi = j
        elif pos >= i:
            lo = i
        else:
            break
    for i in range(n):   # the rest (gas) above every frozen value
        if val[i] is None:
            freeze(i)
    return np.array(val, np.float32), ran_out


@pytest.mark.parametrize("n,pos,ran_out", [(1000, 500, True), (1000, 999, True),
                                           (300, 150, True), (1000, 0, False)])
def test_pivots_defeated_take_the_heap(n, pos, ran_out):
    a, out = adversarial(n, pos)
    assert out == ran_out
    for k in sorted({pos + 1, 1, n}):
        check(ptl.kthvalue(ptl.tensor(a), k), a, k - 1)
    check(ptl.kthvalue(ptl.tensor(a.astype(np.int32)), pos + 1), a, pos)
