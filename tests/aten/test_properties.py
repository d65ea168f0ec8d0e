"""Property tests (hypothesis): broadcasting and chains of views agree with NumPy on random
shapes, layouts and dtypes."""
import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="property tests need hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import pytorchlite as ptl  # noqa: E402
from helpers import ALL_DTYPES, NP_DTYPE, assert_close, random_array, rng  # noqa: E402

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True)
shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)


@SETTINGS
@given(a=shapes, b=shapes, dtype=st.sampled_from([ptl.float32, ptl.int64, ptl.uint8, ptl.bool]))
def test_broadcasting_matches_numpy(a, b, dtype):
    x = random_array(a, dtype, rng(1))
    y = random_array(b, dtype, rng(2))
    try:
        expected = np.logical_or(x, y) if dtype == ptl.bool else np.add(x, y, dtype=np.float64)
    except ValueError:
        with pytest.raises(RuntimeError, match="must match the size of tensor b"):
            ptl.tensor(x, dtype=dtype) + ptl.tensor(y, dtype=dtype)
        return
    got = ptl.tensor(x, dtype=dtype) + ptl.tensor(y, dtype=dtype)
    if dtype == ptl.uint8:
        expected = expected.astype(np.uint8)   # wraps like PyTorch
    assert_close(got, expected)


VIEW_STEPS = st.lists(st.sampled_from(["t", "flip_dims", "slice", "unsqueeze", "expand", "select",
                                       "flatten", "reshape"]), min_size=1, max_size=5)


def apply(step, t, a, draw):
    """Applies one view step to the pytorchlite tensor t and the ndarray a alike."""
    nd = a.ndim
    if step == "t" and nd == 2:
        return t.t(), a.T
    if step == "flip_dims" and nd >= 2:
        perm = list(range(nd))[::-1]
        return t.permute(*perm), a.transpose(perm)
    if step == "slice" and nd >= 1 and a.shape[0] > 0:
        start = draw(st.integers(-a.shape[0], a.shape[0]))
        stop = draw(st.integers(-a.shape[0], a.shape[0] + 2))
        stepn = draw(st.integers(1, 3))
        return t[start:stop:stepn], a[start:stop:stepn]
    if step == "unsqueeze" and nd < 4:
        d = draw(st.integers(-nd - 1, nd))
        return t.unsqueeze(d), np.expand_dims(a, d)
    if step == "expand" and nd >= 1 and 1 in a.shape:
        shape = tuple(3 if s == 1 else s for s in a.shape)
        return t.expand(*shape), np.broadcast_to(a, shape)
    if step == "select" and nd >= 1 and a.shape[0] > 0:
        i = draw(st.integers(-a.shape[0], a.shape[0] - 1))
        return t[i], a[i]
    if step == "flatten":
        return t.flatten(), a.reshape(-1)
    if step == "reshape" and a.size > 0:
        return t.reshape(-1, 1), a.reshape(-1, 1)
    return t, a


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
       dtype=st.sampled_from(ALL_DTYPES), steps=VIEW_STEPS, data=st.data())
def test_view_chains_match_numpy(shape, dtype, steps, data):
    a = random_array(shape, dtype, rng(3))
    t = ptl.tensor(a, dtype=dtype)
    for step in steps:
        t, a = apply(step, t, a, data.draw)
        assert tuple(t.shape) == a.shape
    expected = a.astype(np.float64) if NP_DTYPE[dtype] is not np.bool_ else a
    assert_close(t, expected, rtol=0, atol=0)
    assert_close(t.contiguous(), expected, rtol=0, atol=0)
    assert t.contiguous().is_contiguous()


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple), steps=VIEW_STEPS,
       data=st.data())
def test_views_share_storage_with_their_base(shape, steps, data):
    """Filling a view writes exactly the base elements the same NumPy view refers to."""
    base = ptl.zeros(*shape)
    idx = np.arange(int(np.prod(shape))).reshape(shape)   # element numbers of the base
    t, a = base, idx
    for step in steps:
        if step == "expand":
            continue
        if step in ("flatten", "reshape") and not t.is_contiguous():
            continue   # may copy, as in PyTorch
        t, a = apply(step, t, a, data.draw)
    if t.numel() == 0:
        return
    v0 = base._version
    t.fill_(7.0)
    assert base._version == v0 + 1
    written = np.zeros(idx.size, dtype=bool)
    written[np.unique(a)] = True
    assert base.flatten().tolist() == [7.0 if w else 0.0 for w in written]
