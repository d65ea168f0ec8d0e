"""The view-copy functions (t_copy, select_copy, split_copy, ...), the view-scatter functions
(select_scatter, slice_scatter, diagonal_scatter, as_strided_scatter), put / put_ and
index_reduce: against NumPy in float64 (exact for integers) on several layouts, contiguous
results that share no memory, out=, gradcheck, PyTorch's errors and, with torch installed,
the same calls in both libraries."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import LAYOUTS, assert_close, assert_raises_like_torch, make, to_numpy, torch, \
    torch_ref

# name -> (shape, args, NumPy view of the array)
COPIES = {
    "view_copy": ((3, 4), ([2, 6],), lambda a: a.reshape(2, 6)),
    "permute_copy": ((2, 3, 4), ([2, 0, 1],), lambda a: a.transpose(2, 0, 1)),
    "transpose_copy": ((2, 3, 4), (0, 2), lambda a: a.swapaxes(0, 2)),
    "t_copy": ((3, 4), (), lambda a: a.T),
    "expand_copy": ((1, 4), ([3, 4],), lambda a: np.broadcast_to(a, (3, 4))),
    "select_copy": ((3, 4), (1, -1), lambda a: a[:, -1]),
    "slice_copy": ((5, 4), (0, 1, None, 2), lambda a: a[1::2]),
    "diagonal_copy": ((3, 4), (1,), lambda a: np.diagonal(a, 1)),
    "squeeze_copy": ((1, 4, 1), (), lambda a: a.squeeze()),
    "unsqueeze_copy": ((3, 4), (1,), lambda a: a[:, None]),
    "unfold_copy": ((7,), (0, 3, 2), lambda a: np.stack([a[i:i + 3] for i in (0, 2, 4)])),
    "alias_copy": ((3, 4), (), lambda a: a),
    "detach_copy": ((0, 4), (), lambda a: a),
    "as_strided_copy": ((3, 4), ([2, 2], [1, 2], 1),
                        lambda a: np.lib.stride_tricks.as_strided(
                            np.ascontiguousarray(a).reshape(-1)[1:], (2, 2), (8, 16))),
}
LISTS = {
    "unbind_copy": ((3, 4), (1,), lambda a: [a[:, i] for i in range(4)]),
    "split_copy": ((5, 2), (2,), lambda a: [a[0:2], a[2:4], a[4:]]),
    "split_with_sizes_copy": ((2, 5), ([1, 4], 1), lambda a: [a[:, :1], a[:, 1:]]),
}


def _shares_memory(a, b):
    return a.numel() > 0 and b.numel() > 0 and \
        a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


@pytest.mark.parametrize("name", list(COPIES))
@pytest.mark.parametrize("layout", ["contiguous", "sliced"])
def test_copies_against_numpy(name, layout):
    shape, args, view = COPIES[name]
    if name in ("view_copy", "as_strided_copy") and layout != "contiguous":
        x, a = make(shape, ptl.float64)
        x = x.contiguous()
    else:
        x, a = make(shape, ptl.float64, layout)
    got = getattr(ptl, name)(x, *args)
    assert_close(got, view(a))
    assert got.is_contiguous() and not _shares_memory(got, x)
    out = ptl.empty(0, dtype=ptl.float64)
    assert getattr(ptl, name)(x, *args, out=out) is out
    assert_close(out, view(a))


@pytest.mark.parametrize("name", list(LISTS))
def test_list_copies_against_numpy(name):
    shape, args, view = LISTS[name]
    x, a = make(shape, ptl.int64, "transposed")
    got = getattr(ptl, name)(x, *args)
    assert isinstance(got, tuple)
    for g, w in zip(got, view(a), strict=True):
        assert_close(g, w)
        assert g.is_contiguous() and not _shares_memory(g, x)
    outs = [ptl.empty(0, dtype=ptl.int64) for _ in got]
    assert getattr(ptl, name)(x, *args, out=outs) is None
    for o, w in zip(outs, view(a)):
        assert_close(o, w)


def test_other_copy_overloads():
    x = ptl.arange(6.0).reshape(2, 3)
    assert_close(ptl.view_copy(x, ptl.int32), x.numpy().view(np.int32))
    assert_close(ptl.squeeze_copy(x[:1], 0), x.numpy()[0])
    assert_close(ptl.squeeze_copy(x[:1, :1], [0, 1]), x.numpy()[0, 0])
    z = ptl.tensor([1 + 2j, -3j])
    assert_close(ptl.view_as_real_copy(z), np.array([[1.0, 2.0], [0.0, -3.0]]))
    assert_close(ptl.view_as_complex_copy(ptl.tensor([[1.0, 2.0]])), np.array([1 + 2j]))
    s = ptl.sparse_coo_tensor(ptl.tensor([[0, 2]]), ptl.tensor([1.0, 5.0]), (3,)).coalesce()
    assert_close(ptl.indices_copy(s), np.array([[0, 2]]))
    assert_close(ptl.values_copy(s), np.array([1.0, 5.0], dtype=np.float32))
    assert ptl.detach_copy(ptl.ones(2, requires_grad=True)).requires_grad is False


def test_copy_gradients():
    for name, (shape, args, _) in COPIES.items():
        if name == "detach_copy":
            continue
        x = ptl.tensor(np.random.default_rng(0).standard_normal(shape), requires_grad=True)
        assert gradcheck(lambda t: getattr(ptl, name)(t, *args), (x,)), name
    x = ptl.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    assert gradcheck(lambda t: ptl.split_copy(t, 2, 1), (x,))
    assert gradcheck(lambda t: ptl.unbind_copy(t), (x,))


def _np_scatter(a, src, index):
    out = a.copy()
    out[index] = src
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_scatters_against_numpy(layout):
    x, a = make((4, 5), ptl.float64, layout)
    s1, b1 = make((4,), ptl.float64, seed=1)
    assert_close(ptl.select_scatter(x, s1, 1, -2), _np_scatter(a, b1, (slice(None), -2)))
    s2, b2 = make((2, 5), ptl.float64, layout, seed=2)
    assert_close(ptl.slice_scatter(x, s2, 0, 1, None, 2), _np_scatter(a, b2, slice(1, None, 2)))
    assert_close(ptl.slice_scatter(x, ptl.zeros(0, 5, dtype=ptl.float64), 0, 4), a)
    s3, b3 = make((3,), ptl.float64, seed=3)
    want = a.copy()
    want[np.arange(3) + 1, np.arange(3)] = b3
    assert_close(ptl.diagonal_scatter(x, s3, -1), want)
    assert_close(x.diagonal_scatter(s3, -1), want)
    s4, b4 = make((2, 2), ptl.float64, seed=4)
    want = np.ascontiguousarray(a).reshape(-1).copy()
    want[[1, 2, 3, 4]] = b4.reshape(-1)
    assert_close(ptl.as_strided_scatter(x.contiguous(), s4, [2, 2], [2, 1], 1),
                 want.reshape(4, 5))
    y = x.clone()
    ptl.select_scatter(x, s1, 1, 0)
    assert_close(x, to_numpy(y))   # the input is not modified


def test_scatter_gradients_and_errors():
    x = ptl.tensor(np.random.default_rng(0).standard_normal((3, 4)), requires_grad=True)
    src = ptl.tensor(np.random.default_rng(1).standard_normal(4), requires_grad=True)
    assert gradcheck(lambda t, s: ptl.select_scatter(t, s, 0, 1), (x, src))
    assert gradcheck(lambda t, s: ptl.slice_scatter(t, s.expand(2, 4), 0, 0, 3, 2), (x, src))
    assert gradcheck(lambda t, s: ptl.diagonal_scatter(t, s[:3]), (x, src))
    assert gradcheck(lambda t, s: ptl.as_strided_scatter(t, s, [4], [3], 0), (x, src))
    assert_raises_like_torch(lambda lib: lib.select_scatter(lib.zeros(3, 4), lib.ones(3), 0, 0),
                             RuntimeError, "expected src to have a size equal to the slice of "
                             "self. src size = [3], slice size = [4]")
    assert_raises_like_torch(
        lambda lib: lib.slice_scatter(lib.zeros(3, 4), lib.ones(3, 2), 1, 0, 1), RuntimeError,
        "expected src to have a size equal to the slice of self. src size = [3, 2], slice "
        "size = [3, 1]")
    assert_raises_like_torch(lambda lib: lib.diagonal_scatter(lib.zeros(3, 4), lib.ones(2)),
                             RuntimeError, "src size = [2], slice size = [3]")


def _np_put(a, index, source, accumulate):
    flat = a.reshape(-1).copy()
    if accumulate:
        np.add.at(flat, index, source)
    else:
        flat[index] = source
    return flat.reshape(a.shape)


@pytest.mark.parametrize("layout", LAYOUTS[:3])
def test_put_against_numpy(layout):
    x, a = make((3, 4), ptl.int64, layout)
    index = np.array([0, 5, -1, 11])
    source = np.array([7, 8, 9, 10])
    got = ptl.put(x, ptl.tensor(index), ptl.tensor(source))
    assert_close(got, _np_put(np.ascontiguousarray(a), index, source, False))
    index = np.array([[1, 1], [-12, 3]])
    got = x.put(ptl.tensor(index), ptl.tensor(source).reshape(2, 2), accumulate=True)
    assert_close(got, _np_put(np.ascontiguousarray(a), index.reshape(-1), source, True))
    y = x.clone()
    assert y.put_(ptl.tensor([2]), ptl.tensor([-5])) is y
    assert_close(y, _np_put(np.ascontiguousarray(a), [2], [-5], False))
    assert_close(ptl.put(ptl.tensor(3.0), ptl.tensor([0]), ptl.tensor([4.0])), np.array(4.0))


def test_put_gradients_and_errors():
    x = ptl.tensor(np.random.default_rng(0).standard_normal((2, 3)), requires_grad=True)
    s = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64, requires_grad=True)
    idx = ptl.tensor([4, 0, 1])
    assert gradcheck(lambda t, u: ptl.put(t, idx, u), (x, s))
    assert gradcheck(lambda t, u: ptl.put(t, ptl.tensor([1, 1, 5]), u, True), (x, s))
    assert_raises_like_torch(lambda lib: lib.put(lib.zeros(3, 4), lib.tensor([1, 2]),
                                                 lib.ones(3)), IndexError,
                             "put_(): Expected source and index to have the same number of "
                             "elements, but got source.numel() = 3, index.numel() = 2")
    assert_raises_like_torch(lambda lib: lib.put(lib.zeros(3, 4), lib.tensor([1], dtype=lib.int32),
                                                 lib.ones(1)), RuntimeError,
                             "put_(): Expected a long tensor for index, but got Int")
    assert_raises_like_torch(lambda lib: lib.put(lib.zeros(3, 4), lib.tensor([3, 12]),
                                                 lib.ones(2)), IndexError,
                             "out of range: tried to access index 12 on a tensor of 12 elements.")
    assert_raises_like_torch(lambda lib: lib.zeros(2).put_(lib.tensor([1]),
                                                          lib.ones(1, dtype=lib.float64)),
                             RuntimeError, "put_(): self and source expected to have the same "
                             "dtype, but got self.dtype = Float and source.dtype = Double")


def _np_index_reduce(a, dim, index, src, reduce, include_self):
    out = np.moveaxis(a.copy(), dim, 0)
    src = np.moveaxis(src, dim, 0)
    fn = {"prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    for row in set(index.tolist()):
        parts = [src[k] for k in range(len(index)) if index[k] == row]
        if include_self:
            parts.append(out[row])
        out[row] = fn(np.stack(parts), 0)
    return np.moveaxis(out, 0, dim)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_reduce_against_numpy(reduce, include_self, dim):
    x, a = make((4, 3), ptl.float64, "transposed")
    n = 5
    src_shape = (n, 3) if dim == 0 else (4, n)
    s, b = make(src_shape, ptl.float64, "sliced", seed=1)
    index = np.array([0, 2, 0, 2, 1])[:n] if dim == 0 else np.array([2, 0, 2, 1, 2])
    got = ptl.index_reduce(x, dim, ptl.tensor(index), s, reduce, include_self=include_self)
    assert_close(got, _np_index_reduce(a, dim, index, b, reduce, include_self))
    y = x.clone()
    assert y.index_reduce_(dim, ptl.tensor(index, dtype=ptl.int32), s, reduce,
                           include_self=include_self) is y
    assert_close(y, to_numpy(got))


@pytest.mark.filterwarnings("ignore:index_reduce")   # PyTorch's beta warning
def test_index_reduce_integers_gradients_and_errors():
    x, a = make((3, 2), ptl.int64)
    s, b = make((2, 2), ptl.int64, seed=1)
    assert_close(ptl.index_reduce(x, 0, ptl.tensor([1, 1]), s, "amax"),
                 _np_index_reduce(a, 0, np.array([1, 1]), b, "amax", True))
    x = ptl.tensor(np.random.default_rng(0).uniform(1, 2, (3, 2)), requires_grad=True)
    s = ptl.tensor(np.random.default_rng(1).uniform(1, 2, (4, 2)), requires_grad=True)
    idx = ptl.tensor([0, 2, 0, 1])
    for reduce in ("prod", "mean", "amax", "amin"):
        assert gradcheck(lambda t, u: ptl.index_reduce(t, 0, idx, u, reduce), (x, s))
    z, o = (lambda lib: lib.zeros(3, 4)), (lambda lib, *s: lib.ones(*s))
    assert_raises_like_torch(lambda lib: lib.index_reduce(z(lib), 0, lib.tensor([0]),
                                                          o(lib, 1, 4), "sum"), RuntimeError,
                             "index_reduce(): Expected reduce to be one of prod, mean, amax or "
                             "amin but got sum.")
    assert_raises_like_torch(lambda lib: lib.index_reduce(z(lib), 0, lib.tensor([0, 1]),
                                                          o(lib, 1, 4), "prod"), RuntimeError,
                             "index_reduce_(): Number of indices (2) should be equal to "
                             "source.size(dim): (1), for dim: 0")
    assert_raises_like_torch(lambda lib: lib.index_reduce(z(lib), 0, lib.tensor([[0]]),
                                                          o(lib, 1, 4), "prod"), IndexError,
                             "index_reduce_(): Index is supposed to be a vector, but got dim: 2 "
                             "with type: Long and size: [1, 1]")
    assert_raises_like_torch(lambda lib: lib.index_reduce(z(lib), 0, lib.tensor([0.0]),
                                                          o(lib, 1, 4), "prod"), RuntimeError,
                             "index_reduce_(): Expected dtype int32/int64 for index but got: "
                             "Float")
    assert_raises_like_torch(lambda lib: lib.index_reduce(z(lib), 0, lib.tensor([5]),
                                                          o(lib, 1, 4), "prod"), IndexError,
                             "index out of range in self")
    assert_raises_like_torch(lambda lib: lib.index_reduce(z(lib), 0, lib.tensor([0]),
                                                          o(lib, 1, 3), "prod"), RuntimeError,
                             "source tensor shape must match self tensor shape, excluding the "
                             "specified dimension. Got self.shape = [3, 4] source.shape = [1, 3]")
    assert_raises_like_torch(lambda lib: lib.index_reduce(
        z(lib), 0, lib.tensor([0]), lib.ones(1, 4, dtype=lib.float64), "prod"), RuntimeError,
        "index_reduce_(): self (Float) and source (Double) must have the same scalar type")


@torch_ref
@pytest.mark.filterwarnings("ignore:index_reduce")
def test_matches_torch():
    a = np.random.default_rng(0).standard_normal((4, 5))
    src4, src2 = np.random.default_rng(1).standard_normal(4), np.ones((2, 5))
    calls = [("view_copy", ([5, 4],)), ("permute_copy", ([1, 0],)), ("transpose_copy", (0, 1)),
             ("t_copy", ()), ("expand_copy", ([2, 4, 5],)), ("select_copy", (1, -2)),
             ("slice_copy", (1, 1, None, 2)), ("diagonal_copy", (-1,)),
             ("squeeze_copy", ()), ("unsqueeze_copy", (2,)), ("unfold_copy", (1, 2, 2)),
             ("alias_copy", ()), ("detach_copy", ()), ("as_strided_copy", ([3, 2], [1, 3], 2)),
             ("unbind_copy", (1,)), ("split_copy", (3,)), ("split_with_sizes_copy", ([1, 4], 1))]
    for name, args in calls:
        got = getattr(ptl, name)(ptl.tensor(a), *args)
        want = getattr(torch, name)(torch.tensor(a), *args)
        for g, w in zip(got if isinstance(got, tuple) else [got],
                        want if isinstance(want, tuple) else [want], strict=True):
            assert_close(g, w.numpy())
            assert g.stride() == w.stride(), name
    for lib_args in [("select_scatter", lambda lib: (lib.tensor(src4), 1, 2)),
                     ("slice_scatter", lambda lib: (lib.tensor(src2), 0, 1, 4, 2)),
                     ("diagonal_scatter", lambda lib: (lib.tensor(src4), 0)),
                     ("as_strided_scatter", lambda lib: (lib.tensor(src4), [4], [5], 0)),
                     ("put", lambda lib: (lib.tensor([1, -2, 1]), lib.tensor(src4[:3]), True)),
                     ("index_reduce", lambda lib: (1, lib.tensor([0, 4, 0, 1]),
                                                   lib.tensor(np.ones((4, 4)) * 2), "prod"))]:
        name, build = lib_args
        got = getattr(ptl, name)(ptl.tensor(a), *build(ptl))
        want = getattr(torch, name)(torch.tensor(a), *build(torch))
        assert_close(got, want.numpy())
