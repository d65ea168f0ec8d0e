"""View and shape ops (squeeze, flatten, unflatten, narrow, movedim, unbind, split, chunk and
the core views) against NumPy on SHAPES x LAYOUTS, storage sharing, and basic indexing."""

import numpy as np
import pytest

import pytorchlite as ptl
from golden import golden
from helpers import (ALL_DTYPES, LAYOUTS, SHAPES, assert_close, assert_raises_like_torch, make,
                     torch)

F32 = ptl.float32


def np_chunk(a, chunks, dim):
    size = a.shape[dim]
    if size == 0:
        return [a] * chunks
    piece = -(-size // chunks)
    return np_split(a, piece, dim)


def np_split(a, piece, dim):
    size = a.shape[dim]
    if piece == 0:
        return [a]
    bounds = list(range(piece, size, piece))
    return np.split(a, bounds, axis=dim) if size else [a]


def np_flatten(a, start, end):
    if a.ndim == 0:
        return a.reshape(1)
    start %= a.ndim
    end %= a.ndim
    shape = a.shape[:start] + (int(np.prod(a.shape[start:end + 1])),) + a.shape[end + 1:]
    return a.reshape(shape)


# (name, pytorchlite fn, numpy fn, applies to shape?)
UNARY_VIEWS = [
    ("squeeze", lambda t: t.squeeze(), lambda a: a.squeeze(), lambda s: True),
    ("squeeze0", lambda t: ptl.squeeze(t, 0),
     lambda a: a.squeeze(0) if a.ndim and a.shape[0] == 1 else a, lambda s: True),
    ("squeeze_dims", lambda t: t.squeeze((0, -1)),
     lambda a: a.squeeze(tuple(sorted({d % a.ndim for d in (0, -1)
                                       if a.shape[d] == 1}))) if a.ndim else a,
     lambda s: len(s) != 1),
    ("flatten", lambda t: t.flatten(), lambda a: np_flatten(a, 0, -1), lambda s: True),
    ("flatten1", lambda t: ptl.flatten(t, 1), lambda a: np_flatten(a, 1, -1),
     lambda s: len(s) >= 2),
    ("flatten01", lambda t: t.flatten(0, 1), lambda a: np_flatten(a, 0, 1),
     lambda s: len(s) >= 2),
    ("unflatten", lambda t: t.unflatten(-1, (1, -1)),
     lambda a: a.reshape(a.shape[:-1] + (1, a.shape[-1])), lambda s: len(s) >= 1),
    ("unflatten_split", lambda t: t.unflatten(0, (-1, 1, 1)),
     lambda a: a.reshape((a.shape[0], 1, 1) + a.shape[1:]), lambda s: len(s) >= 1),
    ("narrow", lambda t: t.narrow(-1, 1, t.shape[-1] - 2),
     lambda a: a[..., 1:a.shape[-1] - 1], lambda s: len(s) >= 1 and s[-1] >= 2),
    ("narrow_neg", lambda t: ptl.narrow(t, 0, -1, 1), lambda a: a[-1:],
     lambda s: len(s) >= 1 and s[0] >= 1),
    ("movedim", lambda t: t.movedim(0, -1), lambda a: np.moveaxis(a, 0, -1),
     lambda s: len(s) >= 1),
    ("moveaxis", lambda t: ptl.moveaxis(t, -1, 0), lambda a: np.moveaxis(a, -1, 0),
     lambda s: len(s) >= 1),
    ("movedim_list", lambda t: ptl.movedim(t, (0, 1), (-1, 0)),
     lambda a: np.moveaxis(a, (0, 1), (-1, 0)), lambda s: len(s) >= 2),
    ("transpose", lambda t: t.transpose(0, -1), lambda a: np.swapaxes(a, 0, -1),
     lambda s: len(s) >= 1),
    ("permute", lambda t: t.permute(tuple(reversed(range(t.dim())))), lambda a: a.transpose(),
     lambda s: True),
    ("unsqueeze", lambda t: t.unsqueeze(-1), lambda a: a[..., None], lambda s: True),
    ("select", lambda t: t.select(0, -1), lambda a: a[-1], lambda s: len(s) >= 1 and s[0]),
    ("view", lambda t: t.reshape(-1), lambda a: a.reshape(-1), lambda s: True),
]

LIST_VIEWS = [
    ("unbind", lambda t: t.unbind(0), lambda a: list(a), lambda s: len(s) >= 1),
    ("unbind_last", lambda t: ptl.unbind(t, -1), lambda a: list(np.moveaxis(a, -1, 0)),
     lambda s: len(s) >= 1),
    ("split", lambda t: t.split(2), lambda a: np_split(a, 2, 0), lambda s: len(s) >= 1),
    ("split_last", lambda t: ptl.split(t, 3, -1), lambda a: np_split(a, 3, -1),
     lambda s: len(s) >= 1),
    ("split_sizes", lambda t: t.split([1, t.shape[0] - 1]),
     lambda a: [a[:1], a[1:]], lambda s: len(s) >= 1 and s[0] >= 1),
    ("split_with_sizes", lambda t: t.split_with_sizes([t.shape[-1]], -1),
     lambda a: [a], lambda s: len(s) >= 1),
    ("chunk", lambda t: t.chunk(3), lambda a: np_chunk(a, 3, 0), lambda s: len(s) >= 1),
    ("chunk_last", lambda t: ptl.chunk(t, 2, -1), lambda a: np_chunk(a, 2, -1),
     lambda s: len(s) >= 1),
]


def _cases(views):
    """(name, fn, ref, shape) for every shape of SHAPES the view applies to."""
    return [pytest.param(fn, ref, shape, id=f"{name}-{shape}")
            for name, fn, ref, ok in views for shape in SHAPES if ok(shape)]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn,ref,shape", _cases(UNARY_VIEWS))
def test_unary_view_vs_numpy(fn, ref, shape, layout):
    t, a = make(shape, F32, layout)
    assert_close(fn(t), ref(a), dtype=F32)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("fn,ref,shape", _cases(LIST_VIEWS))
def test_list_view_vs_numpy(fn, ref, shape, layout):
    t, a = make(shape, F32, layout)
    got, want = fn(t), ref(a)
    assert isinstance(got, tuple)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w, dtype=F32)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_views_every_dtype(dtype):
    t, a = make((2, 1, 6), dtype, "sliced")
    assert_close(t.squeeze(1), a.squeeze(1), dtype=dtype)
    assert_close(t.flatten(), a.reshape(-1), dtype=dtype)
    assert_close(t.unflatten(2, (3, 2)), a.reshape(2, 1, 3, 2), dtype=dtype)
    assert_close(t.narrow(2, 2, 3), a[:, :, 2:5], dtype=dtype)
    assert_close(t.movedim(2, 0), np.moveaxis(a, 2, 0), dtype=dtype)
    for g, w in zip(t.chunk(4, 2), np.split(a, [2, 4], axis=2)):
        assert_close(g, w, dtype=dtype)


# ---- PyTorch's own results: sizes, strides, storage offsets, chunk counts ----

TORCH_CASES = [
    lambda m, x: x.squeeze(),
    lambda m, x: x.squeeze(1),
    lambda m, x: x.squeeze((0, 1)),
    lambda m, x: x.flatten(1, 2),
    lambda m, x: x.unflatten(2, (2, -1, 2)),
    lambda m, x: x.narrow(2, 1, 2),
    lambda m, x: m.narrow(x, -1, -3, 3),
    lambda m, x: x.movedim((0, 2), (2, 0)),
    lambda m, x: x.moveaxis(1, 2),
    lambda m, x: x.unbind(2),
    lambda m, x: x.split(3, 2),
    lambda m, x: x.split([1, 2, 5], -1),
    lambda m, x: x.chunk(3, 2),
    lambda m, x: x.chunk(5, -1),
    lambda m, x: x.chunk(8, 2),
    lambda m, x: x[1, :, ::3],
    lambda m, x: x[..., None, 1:-1:2],
]


def view_layouts(m, fn):
    """For each tensor fn(m, x) returns (one, or a sequence of them): shape, stride, storage
    offset, data_ptr offset from x's, values."""
    x = m.arange(2 * 1 * 8, dtype=m.float32).reshape(2, 1, 8)
    got = fn(m, x)
    return [(tuple(g.shape), g.stride(), g.storage_offset(), g.data_ptr() - x.data_ptr(),
             g.tolist()) for g in ([got] if isinstance(got, m.Tensor) else got)]


def test_slice_and_split_with_huge_steps():
    # (end - start + step - 1) / step wrapped for a step near 2**63: the slice came back with
    # size -1 (PyTorch 2.13 raises "Storage size calculation overflowed" there); the answer
    # is the one element at start, as NumPy gives
    a = np.arange(15.0).reshape(5, 3)
    x = ptl.tensor(a)
    for step in (2**63 - 1, 2**62, 7, 3):
        assert_close(x[1:4:step], a[1:4:step])
        assert_close(x[:, 1:3:step], a[:, 1:3:step])
        assert_close(x[4:4:step], a[4:4:step])
    assert [tuple(p.shape) for p in ptl.split(x, 2**63 - 1)] == [(5, 3)]
    assert [tuple(p.shape) for p in ptl.split(x, 2, 0)] == [(2, 3), (2, 3), (1, 3)]


def test_chunk_with_huge_chunks():
    # ceil(size / chunks) used to compute size + chunks - 1, which wrapped for chunks near
    # 2**63 and divided by zero (a fuzzer finding); PyTorch 2.13 raises a misleading error there
    a = np.arange(4.0).reshape(4, 1)
    for chunks in (2**63 - 1, 2**62, 5, 4):
        got = ptl.chunk(ptl.tensor(a), chunks)
        assert len(got) == 4
        for g, w in zip(got, np.split(a, 4)):
            assert_close(g, w)
    for chunks in (2**63 - 1, 2**61 + 1):   # as many empty pieces: more than memory holds
        with pytest.raises(MemoryError, match="out of memory allocating a tensor list"):
            ptl.chunk(ptl.zeros(0, 3), chunks)


@pytest.mark.parametrize("case", range(len(TORCH_CASES)))
def test_strides_match_torch(case):
    fn = TORCH_CASES[case]
    assert view_layouts(ptl, fn) == golden(lambda: view_layouts(torch, fn))


def test_flatten_of_noncontiguous_copies_like_torch():
    def flatten(m):
        x = m.arange(6.).reshape(2, 3).t()
        f = x.flatten()
        return f.stride(), f.data_ptr() == x.data_ptr(), f.tolist()
    assert flatten(ptl) == golden(lambda: flatten(torch))


@pytest.mark.parametrize("fn", [
    lambda x: x.squeeze(1), lambda x: x.flatten(1), lambda x: x.unflatten(0, (2, 1)),
    lambda x: x.narrow(2, 1, 2), lambda x: x.movedim(0, 2), lambda x: x.unbind(2)[1],
    lambda x: x.split(2, 2)[1], lambda x: x.split([1, 3], 2)[1], lambda x: x.chunk(2, 2)[1],
    lambda x: x[1], lambda x: x[:, :, 1::2],
])
def test_views_share_storage_and_version(fn):
    x = ptl.zeros(2, 1, 4)
    v = fn(x)
    assert v._version == x._version == 0
    v.fill_(5)
    assert x._version == v._version == 1
    assert float(x.numpy().sum()) == 5.0 * v.numel()
    x.zero_()
    assert float(v.numpy().sum()) == 0.0
    assert v._version == 2


def test_write_through_view_changes_base():
    x = ptl.zeros(2, 3)
    v = x.view(6)
    v[0] = 5
    assert x[0, 0].item() == 5
    x.t()[2, 1] = 7
    assert x[1, 2].item() == 7
    x.squeeze().unflatten(1, (3, 1))[0, 1, 0] = 9
    assert x[0, 1].item() == 9


# ---- errors: exact type and message, as torch ----

ERRORS = [
    (lambda m: m.zeros(1, 6, 1).squeeze((0, 0)), RuntimeError,
     "dim 0 appears multiple times in the list of dims"),
    (lambda m: m.zeros(1, 6, 1).squeeze(3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda m: m.zeros(2, 3, 4).flatten(2, 1), RuntimeError,
     "flatten() has invalid args: start_dim cannot come after end_dim"),
    (lambda m: m.zeros(2, 3, 4).flatten(0, 3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda m: m.zeros(2, 6).unflatten(1, (2, 2)), RuntimeError,
     "unflatten: Provided sizes [2, 2] don't multiply up to the size of dim 1 (6) in the "
     "input tensor"),
    (lambda m: m.zeros(2, 6).unflatten(1, (-1, 4)), RuntimeError,
     "unflatten: Provided sizes [-1, 4] don't multiply up to the size of dim 1 (6) in the "
     "input tensor"),
    (lambda m: m.zeros(2, 6).unflatten(1, ()), RuntimeError,
     "unflatten: sizes must be non-empty"),
    (lambda m: m.zeros(2, 6).narrow(1, 5, 2), RuntimeError,
     "start (5) + length (2) exceeds dimension size (6)."),
    (lambda m: m.zeros(2, 6).narrow(1, -7, 1), IndexError,
     "start out of range (expected to be in range of [-6, 6], but got -7)"),
    (lambda m: m.zeros(2, 6).narrow(1, 0, -1), RuntimeError,
     "narrow(): length must be non-negative."),
    (lambda m: m.zeros(()).narrow(0, 0, 1), RuntimeError,
     "narrow() cannot be applied to a 0-dim tensor."),
    (lambda m: m.zeros(2, 3, 4).movedim((0, 1), (0,)), RuntimeError,
     "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the "
     "same number of dims as destination ([0] dims)"),
    (lambda m: m.zeros(2, 3, 4).movedim((0, 0), (1, 2)), RuntimeError,
     "movedim: repeated dim in `source` ([0, 0])"),
    (lambda m: m.zeros(2, 3, 4).movedim((0, 1), (2, 2)), RuntimeError,
     "movedim: repeated dim in `destination` ([2, 2])"),
    (lambda m: m.zeros(2, 3, 4).movedim(0, 3), IndexError,
     "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda m: m.zeros(()).unbind(), IndexError,
     "Dimension specified as 0 but tensor has no dimensions"),
    (lambda m: m.zeros(6, 2).split_with_sizes([2, 3]), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 6 (input tensor's size at "
     "dimension 0), but got split_sizes=[2, 3]"),
    (lambda m: m.zeros(2, 6).split([2, 3], 1), RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 6 (input tensor's size at "
     "dimension 1), but got split_sizes=[2, 3]"),
    (lambda m: m.zeros(6, 2).split_with_sizes([-1, 7]), RuntimeError,
     "split_with_sizes expects split_sizes have only non-negative entries, but got "
     "split_sizes=[-1, 7]"),
    (lambda m: m.zeros(6, 2).split(0), RuntimeError,
     "split_size can only be 0 if dimension size is 0, but got dimension size of 6"),
    (lambda m: m.zeros(6, 2).split(-1), RuntimeError,
     "split expects split_size be non-negative, but got split_size=-1"),
    (lambda m: m.zeros(()).split(1), RuntimeError,
     "split expects at least a 1-dimensional tensor"),
    (lambda m: m.zeros(6, 2).chunk(0), RuntimeError,
     "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda m: m.zeros(()).chunk(2), RuntimeError,
     "chunk expects at least a 1-dimensional tensor"),
    (lambda m: m.zeros(3)[5], IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(3)[-4], IndexError,
     "index -4 is out of bounds for dimension 0 with size 3"),
    (lambda m: m.zeros(2, 3)[0, 0, 0], IndexError, "too many indices for tensor of dimension 2"),
    (lambda m: m.zeros(2, 3)[1, 3], IndexError,
     "index 3 is out of bounds for dimension 1 with size 3"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    assert_raises_like_torch(*ERRORS[case])


def test_empty_and_zero_size_edges_match_torch():
    for fn in [lambda m: m.zeros(0, 2).split(0), lambda m: m.zeros(0, 2).chunk(4),
               lambda m: m.zeros(3, 0).unbind(1), lambda m: m.zeros(6, 2).chunk(4),
               lambda m: m.zeros(5).chunk(3), lambda m: m.zeros(0, 2).split(2)]:
        assert [tuple(t.shape) for t in fn(ptl)] == \
            golden(lambda: [tuple(t.shape) for t in fn(torch)])
    for fn in [lambda m: m.zeros(()).squeeze(0), lambda m: m.zeros(()).flatten(),
               lambda m: m.zeros(()).movedim(0, 0), lambda m: m.zeros(()).squeeze((0,)),
               lambda m: m.zeros(2, 0).narrow(1, 0, 0)]:
        assert tuple(fn(ptl).shape) == golden(lambda: tuple(fn(torch).shape))


# ---- basic indexing vs NumPy ----

INDICES = [
    1, -1, slice(None), slice(1, None), slice(None, None, 2), slice(-3, -1),
    slice(-100, 100, 3), slice(5, 1), (0, 1), (-1, slice(None, None, 2)), (Ellipsis, 1),
    (1, Ellipsis), (None, 1), (slice(None), None, -1), Ellipsis, (), None, True, False,
    (Ellipsis, None), (0, slice(1, None, 2), -2),
]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_getitem_vs_numpy(index, layout):
    t, a = make((3, 4, 5), F32, layout)
    v = t[index]
    assert_close(v, a[index], dtype=F32)
    if v.numel():
        assert v._version == t._version


@pytest.mark.parametrize("index", [0, 2, -1])
def test_getitem_zero_dim_integer_tensor(index):
    t, a = make((3, 4), F32)
    for dt in (ptl.int64, ptl.int32, ptl.uint8 if index >= 0 else ptl.int8):
        assert_close(t[ptl.tensor(index, dtype=dt)], a[index], dtype=F32)
        assert_close(t[1, ptl.tensor(index, dtype=dt)], a[1, index], dtype=F32)


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_setitem_number_vs_numpy(index):
    t, a = make((3, 4, 5), F32)
    a = a.copy()
    t[index] = 2.5
    a[index] = 2.5
    assert_close(t, a, dtype=F32)


@pytest.mark.parametrize("index,value_shape", [
    ((slice(None), 0), (5,)), ((0,), (4, 1)), ((Ellipsis, slice(1, 3)), (2,)),
    ((1, slice(None, None, 2), None), (1, 5)), ((), (5,)),
])
def test_setitem_tensor_broadcasts(index, value_shape):
    t, a = make((3, 4, 5), F32)
    a = a.copy()
    v, va = make(value_shape, ptl.int32, seed=3)
    t[index] = v
    a[index] = va
    assert_close(t, a, dtype=F32)
    t[0, 0] = ptl.tensor([1, 2, 3, 4, 5])
    a[0, 0] = [1, 2, 3, 4, 5]
    assert_close(t, a, dtype=F32)


def test_setitem_bumps_version_and_writes_through_views():
    x = ptl.zeros(3, 4)
    row = x[1]
    x[1, 2] = 3
    assert row[2].item() == 3
    assert row._version == x._version == 1
    row[:] = ptl.tensor([1., 2., 3., 4.])
    np.testing.assert_array_equal(x.numpy()[1], [1, 2, 3, 4])


def test_as_other_views_and_aliases():
    x, a = make((2, 3), ptl.float32, "transposed")
    other = ptl.zeros(3, 2)
    assert_close(x.reshape_as(other), a.reshape(3, 2))
    assert_close(ptl.tensor([[1.0], [2.0]]).expand_as(ptl.zeros(2, 4)),
                 np.broadcast_to(np.array([[1.0], [2.0]]), (2, 4)))
    assert_close(ptl.swapdims(x, 0, 1), np.swapaxes(a, 0, 1))
    assert_close(x.swapdims(1, 0), np.swapaxes(a, 1, 0))
    base = ptl.tensor(np.arange(10.0))
    v = ptl.as_strided(base, (3, 2), (2, 1), 1)
    assert_close(v, np.lib.stride_tricks.as_strided(np.arange(10.0)[1:], (3, 2), (16, 8)))
    assert v.storage_offset() == 1 and v.stride() == (2, 1)
    with pytest.raises(RuntimeError, match="mismatch in length of strides and shape"):
        base.as_strided((2,), (1, 1))
    with pytest.raises(RuntimeError, match="out of bounds of a storage"):
        base.as_strided((4, 4), (4, 1))
    with pytest.raises(RuntimeError, match="Negative strides are not supported"):
        base.as_strided((2,), (-1,))


# ---- view(dtype) ----

# bfloat16 has no NumPy dtype: its bits are viewed as uint16
VIEW_NP = {ptl.bool: np.bool_, ptl.uint8: np.uint8, ptl.int8: np.int8, ptl.int16: np.int16,
           ptl.int32: np.int32, ptl.int64: np.int64, ptl.float16: np.float16,
           ptl.bfloat16: np.uint16, ptl.float32: np.float32, ptl.float64: np.float64,
           ptl.complex64: np.complex64, ptl.complex128: np.complex128}


def bits_of(t):
    """The tensor's elements as a NumPy array of its own dtype (bfloat16 as uint16 bits)."""
    if t.dtype == ptl.bfloat16:
        return np.array(t.view(ptl.int16).numpy()).view(np.uint16)
    return np.array(t.numpy())


@pytest.mark.parametrize("src", list(VIEW_NP), ids=str)
@pytest.mark.parametrize("dst", list(VIEW_NP), ids=str)
def test_view_dtype_reads_the_same_bytes(src, dst):
    """Against NumPy's view of the same bytes: contiguous, a slice of whole elements off the
    front of the last dim, a size-0 last dim and size-0 rows."""
    raw = np.random.default_rng(3).integers(0, 256, size=(3, 2, 32), dtype=np.uint8)
    if src == ptl.bool or dst == ptl.bool:
        raw = raw & 1
    base = ptl.tensor(raw).view(src)   # a uint8 tensor's bytes as src
    step = max(ptl.tensor([], dtype=dst).element_size() // base.element_size(), 1)
    for t in (base, base[1:, :, 2 * step:], base[:, :, :0], base[:0]):
        v = t.view(dst)
        assert v.dtype == dst
        expect = np.ascontiguousarray(bits_of(t)).view(VIEW_NP[dst])
        np.testing.assert_array_equal(bits_of(v), expect)
        assert v.data_ptr() == t.data_ptr()


def test_view_dtype_shares_storage_and_version_without_being_a_view():
    x = ptl.zeros(2, 4)
    v = x.view(ptl.int32)
    before = x._version
    v[0, 1] = 0x3F800000          # the bits of 1.0f
    assert x[0, 1].item() == 1.0 and x._version > before
    assert v._base is None and not v._is_view()   # as in PyTorch
    w = x.view(ptl.int16)
    assert tuple(w.shape) == (2, 8) and w.stride() == (8, 1)
    d = ptl.zeros(4, 8, dtype=ptl.int16)[1:, 4:].view(ptl.int64)
    assert tuple(d.shape) == (3, 1) and d.stride() == (2, 1) and d.storage_offset() == 3


def test_view_dtype_is_not_differentiable():
    x = ptl.randn(3, 4, requires_grad=True)
    for dt in (ptl.int32, ptl.float32, ptl.int16):
        v = x.view(dt)
        assert not v.requires_grad and v.grad_fn is None


def test_view_dtype_on_meta_and_zero_dim():
    m = ptl.empty(5, 8, device="meta").view(ptl.float64)
    assert m.device.type == "meta" and tuple(m.shape) == (5, 4)
    s = ptl.tensor(1.0).view(ptl.int32)
    assert s.item() == 0x3F800000 and s.dim() == 0


VIEW_DTYPE_ERRORS = [
    (lambda m: m.arange(12, dtype=m.float32).reshape(3, 4).t().view(m.int16),
     "self.stride(-1) must be 1 to view Float as Short (different element sizes), but got 4"),
    (lambda m: m.arange(12, dtype=m.float32).reshape(3, 4)[:, 1:].view(m.float64),
     "self.size(-1) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 3"),
    (lambda m: m.arange(18, dtype=m.int16).reshape(6, 3)[:4].t().view(m.float32),
     "self.stride(-1) must be 1 to view Short as Float (different element sizes), but got 3"),
    (lambda m: m.arange(8, dtype=m.int16)[1:5].view(m.float32),
     "self.storage_offset() must be divisible by 2 to view Short as Float (different element "
     "sizes), but got 1"),
    (lambda m: m.zeros(2, 0).view(m.float64),
     "self.stride(0) must be divisible by 2 to view Float as Double (different element sizes), "
     "but got 1"),
    (lambda m: m.tensor(1.0).view(m.int16),
     "self.dim() cannot be 0 to view Float as Short (different element sizes)"),
]


@pytest.mark.parametrize("fn, msg", VIEW_DTYPE_ERRORS)
def test_view_dtype_errors(fn, msg):
    assert_raises_like_torch(fn, RuntimeError, msg)
