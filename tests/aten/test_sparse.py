"""Sparse COO tensors (src/aten/native/sparse.c, Note [Sparse tensors] in
src/c10/tensor_impl.h): construction, coalesce, layout conversions and products against NumPy
in float64 (and scipy.sparse), reprs against golden strings, and every path that would read
a sparse tensor's (absent) elements against PyTorch's errors.  Comparisons with live torch
carry the torch_ref mark."""
import copy
import io
import pickle
import warnings

import numpy as np
import pytest
from scipy import sparse as sp

import pytorchlite as ptl
from pytorchlite.autograd import gradcheck
from helpers import assert_close, assert_no_leak, assert_raises_like_torch, rng, torch, torch_ref


def random_coo(gen, sizes, sparse_dim, nnz, duplicates=False):
    """(indices, values) of a random COO tensor, as NumPy arrays; with duplicates some
    entries repeat an earlier index."""
    ind = np.stack([gen.integers(0, max(s, 1), size=nnz) for s in sizes[:sparse_dim]]) \
        if sparse_dim else np.zeros((0, nnz), dtype=np.int64)
    if duplicates and nnz > 1:
        ind[:, nnz - nnz // 2:] = ind[:, :nnz // 2]
    vals = gen.standard_normal((nnz,) + tuple(sizes[sparse_dim:]))
    return ind.astype(np.int64), vals


def np_dense(ind, vals, sizes):
    out = np.zeros(sizes, dtype=np.float64)
    if len(ind):
        np.add.at(out, tuple(ind), vals)
    else:   # no sparse dimension: the entries all land on the whole tensor
        out += np.sum(vals, axis=0)
    return out


def make_sparse(gen, sizes, sparse_dim, nnz, duplicates=False, dtype=ptl.float64):
    ind, vals = random_coo(gen, sizes, sparse_dim, nnz, duplicates)
    s = ptl.sparse_coo_tensor(ptl.tensor(ind), ptl.tensor(vals, dtype=dtype), sizes)
    return s, np_dense(ind, vals, sizes)


CASES = [((3, 4), 2, 5), ((3, 4), 1, 2), ((2, 3, 4), 2, 4), ((5,), 1, 3), ((0, 3), 2, 0),
         ((3, 0), 1, 0), ((4, 2), 2, 0), ((2, 3), 0, 1)]


# ---- construction ----

@pytest.mark.parametrize("sizes, sparse_dim, nnz", CASES)
def test_construction_matches_numpy(sizes, sparse_dim, nnz):
    gen = rng(1)
    s, expected = make_sparse(gen, sizes, sparse_dim, nnz, duplicates=True)
    assert s.is_sparse and s.layout == ptl.sparse_coo
    assert s.shape == sizes and s.dim() == len(sizes) and s.numel() == int(np.prod(sizes))
    assert (s.sparse_dim(), s.dense_dim(), s._nnz()) == (sparse_dim, len(sizes) - sparse_dim,
                                                        nnz)
    assert_close(s.to_dense(), expected, dtype=ptl.float64)


def test_size_is_inferred_as_torch_infers_it():
    s = ptl.sparse_coo_tensor(ptl.tensor([[0, 1, 1], [2, 0, 4]]), ptl.ones(3, 2))
    assert s.shape == (2, 5, 2)
    empty = ptl.sparse_coo_tensor(ptl.zeros(2, 0, dtype=ptl.int64), ptl.zeros(0))
    assert empty.shape == (0, 0)


def test_overloads_are_torchs():
    # .indices takes no size (a third positional argument is refused); .indices_size needs
    # one (torch.ops' RuntimeErrors, in its words); the Python function takes either form,
    # as PyTorch's
    i, v = ptl.tensor([[0, 1, 1], [2, 0, 2]]), ptl.tensor([1.0, 2.0, 3.0])
    aten = ptl.ops.aten
    assert aten.sparse_coo_tensor.indices(i, v).shape == (2, 3)
    assert aten.sparse_coo_tensor.indices_size(i, v, [4, 5]).shape == (4, 5)
    with pytest.raises(RuntimeError, match=r"takes 2 positional argument\(s\) but 3"):
        aten.sparse_coo_tensor.indices(i, v, [4, 5])
    with pytest.raises(RuntimeError, match="is missing value for argument 'size'"):
        aten.sparse_coo_tensor.indices_size(i, v)
    for s, shape in ((ptl.sparse_coo_tensor(i, v), (2, 3)),
                     (ptl.sparse_coo_tensor(i, v, (4, 5)), (4, 5)),
                     (ptl.sparse_coo_tensor(i, v, size=(4, 5), is_coalesced=False), (4, 5)),
                     (ptl.sparse_coo_tensor(i, v, [3, 3], dtype=ptl.float64,
                                            check_invariants=True), (3, 3))):
        assert s.shape == shape
        want = np.zeros(shape)
        np.add.at(want, (np.array([0, 1, 1]), np.array([2, 0, 2])), [1.0, 2.0, 3.0])
        np.testing.assert_array_equal(s.to_dense().double().numpy(), want)


def test_non_contiguous_inputs_and_dtype_conversions():
    ind = ptl.tensor([[0, 2], [1, 0], [2, 2]]).t()          # non-contiguous [2, 3]
    vals = ptl.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).t()[:, 0]   # strided
    s = ptl.sparse_coo_tensor(ind, vals, (3, 3), dtype=ptl.float64)
    assert s.dtype == ptl.float64
    assert_close(s.to_dense(), np_dense(np.array([[0, 1, 2], [2, 0, 2]]), [1.0, 2.0, 3.0],
                                        (3, 3)))
    f = ptl.sparse_coo_tensor(ptl.tensor([[0.0, 1.0]]), ptl.tensor([1, 2]), (2,))
    assert f._indices().dtype == ptl.int64 and f.dtype == ptl.int64
    assert f.double().dtype == ptl.float64 and f.to(ptl.float32).dtype == ptl.float32
    assert_close(f.double().to_dense(), [1.0, 2.0])


def test_values_are_not_the_callers_tensor():
    v = ptl.tensor([1.0, 2.0], requires_grad=True)
    s = ptl.sparse_coo_tensor(ptl.tensor([[0, 1]]), v, (2,))
    assert s._values() is not v and s._values().grad_fn is not None
    assert v.grad_fn is None and v.is_leaf


def test_construction_errors():
    i = ptl.tensor([[0, 1, 1], [2, 0, 2]])
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[0, 1, 1], [2, 0, 2]]), t.ones(2), (2, 3)),
        RuntimeError, "indices and values must have same nnz, but got nnz from indices: 3, "
        "nnz from values: 2")
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[0, 1, 1], [2, 0, 2]]), t.ones(3), (2, 3, 4)),
        RuntimeError, "'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = 3, "
        "sparse_dim = 2, dense_dim = 0")
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[0, 5]]), t.ones(2), (3,),
                                      check_invariants=True),
        RuntimeError, "size is inconsistent with indices: for dim 0, size is 3 but found index 5")
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[0, -1]]), t.ones(2), (3,),
                                      check_invariants=True),
        RuntimeError, "found negative index -1 for dim 0")
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[0, 1]]), t.ones(2, 2), (3, 5)),
        RuntimeError, "values has incorrect size, expected [2, 5], got [2, 2]")
    with pytest.raises(RuntimeError, match=r"indices must be sparse_dim x nnz, but got: \[3\]"):
        ptl.sparse_coo_tensor(i[0], ptl.ones(3), (3,))
    # without check_invariants an index out of range is caught when it is used
    bad = ptl.sparse_coo_tensor(ptl.tensor([[0, 5]]), ptl.ones(2), (3,))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 0 with size 3"):
        bad.to_dense()


# ---- repr ----

REPRS = [
    (lambda t: t.sparse_coo_tensor(t.tensor([[0, 1, 1], [2, 0, 2]]), t.tensor([3., 4., 5.]),
                                   (2, 3)),
     "tensor(indices=tensor([[0, 1, 1],\n                       [2, 0, 2]]),\n"
     "       values=tensor([3., 4., 5.]),\n       size=(2, 3), nnz=3, layout=torch.sparse_coo)"),
    (lambda t: t.sparse_coo_tensor(t.zeros(2, 0, dtype=t.int64), t.zeros(0), (2, 3)),
     "tensor(indices=tensor([], size=(2, 0)),\n       values=tensor([], size=(0,)),\n"
     "       size=(2, 3), nnz=0, layout=torch.sparse_coo)"),
    (lambda t: t.sparse_coo_tensor(t.tensor([[0, 1]]), t.ones(2, 2), (3, 2)).double(),
     "tensor(indices=tensor([[0, 1]]),\n       values=tensor([[1., 1.],\n"
     "                      [1., 1.]]),\n"
     "       size=(3, 2), nnz=2, dtype=torch.float64, layout=torch.sparse_coo)"),
    (lambda t: t.sparse_coo_tensor(t.tensor([[0]]), t.ones(1), (2,), requires_grad=True),
     "tensor(indices=tensor([[0]]),\n       values=tensor([1.]),\n"
     "       size=(2,), nnz=1, layout=torch.sparse_coo, requires_grad=True)"),
]


@pytest.mark.parametrize("k", range(len(REPRS)))
def test_repr(k):
    make, text = REPRS[k]
    assert repr(make(ptl)) == text
    assert str(make(ptl)) == text


@torch_ref
@pytest.mark.parametrize("k", range(len(REPRS)))
def test_repr_like_torch(k):
    make, _ = REPRS[k]
    assert repr(make(ptl)) == repr(make(torch))


# ---- coalesce ----

@pytest.mark.parametrize("sizes, sparse_dim, nnz", CASES)
def test_coalesce_sorts_and_sums_duplicates(sizes, sparse_dim, nnz):
    gen = rng(2)
    s, expected = make_sparse(gen, sizes, sparse_dim, nnz, duplicates=True)
    c = s.coalesce()
    assert c.is_coalesced() and c.coalesce().is_coalesced()
    ind = c.indices().numpy()
    if sparse_dim:
        keys = np.ravel_multi_index(tuple(ind), sizes[:sparse_dim]) if ind.size else ind[0]
        assert np.all(np.diff(keys) > 0), "indices sorted and unique"
    assert_close(c.to_dense(), expected)
    assert_close(c.values(), c._values().numpy())


def test_coalesce_like_scipy():
    gen = rng(3)
    ind, vals = random_coo(gen, (6, 5), 2, 12, duplicates=True)
    c = ptl.sparse_coo_tensor(ptl.tensor(ind), ptl.tensor(vals), (6, 5)).coalesce()
    ref = sp.coo_matrix((vals, (ind[0], ind[1])), shape=(6, 5)).tocsr().tocoo()
    order = np.lexsort((ref.col, ref.row))
    assert_close(c.indices(), np.stack([ref.row[order], ref.col[order]]).astype(np.int64))
    assert_close(c.values(), ref.data[order])


def test_indices_and_values_need_a_coalesced_tensor():
    s = ptl.sparse_coo_tensor(ptl.tensor([[1, 0]]), ptl.ones(2), (2,))
    assert not s.is_coalesced()
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[1, 0]]), t.ones(2), (2,)).indices(),
        RuntimeError, "Cannot get indices on an uncoalesced tensor, please call .coalesce() "
        "first")
    assert_raises_like_torch(
        lambda t: t.sparse_coo_tensor(t.tensor([[1, 0]]), t.ones(2), (2,)).values(),
        RuntimeError, "Cannot get values on an uncoalesced tensor, please call .coalesce() first")
    assert_raises_like_torch(lambda t: t.ones(2).coalesce(), RuntimeError,
                             "coalesce expected sparse coordinate tensor layout but got Strided")
    assert_raises_like_torch(lambda t: t.ones(2).is_coalesced(), RuntimeError,
                             "is_coalesced expected sparse coordinate tensor layout but got "
                             "Strided")


# ---- layout conversions ----

@pytest.mark.parametrize("shape", [(), (0,), (4,), (3, 4), (2, 0, 3), (2, 3, 4)])
def test_to_sparse_round_trip(shape):
    gen = rng(4)
    a = gen.standard_normal(shape) * (gen.random(shape) > 0.5)
    x = ptl.tensor(a)
    for k in range(1 if shape else 0, len(shape) + 1):   # 0 only for a 0-dim tensor
        s = x.to_sparse(k)
        assert (s.sparse_dim(), s.dense_dim()) == (k, len(shape) - k) and s.is_coalesced()
        assert_close(s.to_dense(), a)
    assert x.to_sparse().sparse_dim() == len(shape)
    assert_close(x.to_dense(), a)


def test_to_sparse_of_a_non_contiguous_tensor():
    a = np.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]])
    x = ptl.tensor(a.T.copy()).t()
    s = x.to_sparse()
    assert_close(s.indices(), np.array(np.nonzero(a)))
    assert_close(s.values(), a[np.nonzero(a)])
    assert s.to_sparse() is not s and s.to_sparse(2).to_dense().shape == (2, 3)


def test_to_sparse_errors():
    assert_raises_like_torch(lambda t: t.ones(2, 3).to_sparse(3), RuntimeError,
                             "dense_to_sparse: sparse_dim argument must be in [0,2] range, but 3 "
                             "is given")
    assert_raises_like_torch(lambda t: t.ones(2, 3).to_sparse(-1), RuntimeError,
                             "dense_to_sparse: sparse_dim argument must be in [0,2] range, but -1 "
                             "is given")
    assert_raises_like_torch(lambda t: t.ones(2, 3).to_sparse(0), RuntimeError,
                             "dense_to_sparse: sparse_dim argument must be in >0 when "
                             "self.dim()>0")
    assert_raises_like_torch(lambda t: t.ones(2, 3).to_sparse().to_sparse(1), RuntimeError,
                             "to_sparse: conversion from Sparse to Sparse with sparse_dim "
                             "argument !=self.sparse_dim() is not supported")


def test_sparse_mask():
    gen = rng(5)
    s, d = make_sparse(gen, (4, 3), 2, 6, duplicates=True)
    x = gen.standard_normal((4, 3))
    m = ptl.tensor(x).sparse_mask(s)
    pattern = np.zeros((4, 3), dtype=bool)
    pattern[tuple(s._indices().numpy())] = True
    assert m.is_coalesced()
    assert_close(m.to_dense(), np.where(pattern, x, 0.0))
    assert_raises_like_torch(lambda t: t.ones(2, 3).sparse_mask(t.ones(3, 3).to_sparse()),
                             RuntimeError, "sparse_mask(): operands have incompatible sizes; "
                             "self has size [2, 3] but mask has size [3, 3]")


# ---- products ----

MM_SHAPES = [(3, 4, 2), (5, 3, 1), (1, 1, 1), (0, 3, 2), (3, 0, 2), (3, 4, 0)]


@pytest.mark.parametrize("m, k, n", MM_SHAPES)
def test_sparse_times_dense(m, k, n):
    gen = rng(6)
    s, a = make_sparse(gen, (m, k), 2, 7 if m and k else 0, duplicates=True)
    b = gen.standard_normal((n, k)).T   # non-contiguous dense side
    d = ptl.tensor(b.T.copy()).t()
    for out in (ptl.mm(s, d), ptl.sparse.mm(s, d), ptl.spmm(s, d), s @ d, s.mm(d),
                ptl.matmul(s, d)):
        assert not out.is_sparse
        assert_close(out, a @ b, dtype=ptl.float64)
    ref = sp.coo_matrix(a) @ b
    assert_close(ptl.sparse.mm(s, d), ref)
    # sparse @ vector (mv), dense @ sparse
    assert_close(s @ ptl.tensor(b[:, 0].copy()) if n else s.mv(ptl.ones(k, dtype=ptl.float64)),
                 a @ b[:, 0] if n else a @ np.ones(k))
    c = gen.standard_normal((2, m))
    assert_close(ptl.mm(ptl.tensor(c), s), c @ a)


@pytest.mark.parametrize("beta, alpha", [(1.0, 1.0), (0.5, -2.0), (0.0, 3.0)])
def test_addmm(beta, alpha):
    gen = rng(7)
    s, a = make_sparse(gen, (3, 4), 2, 5)
    b, c = gen.standard_normal((4, 2)), gen.standard_normal((3, 2))
    want = beta * c + alpha * (a @ b)
    got = ptl.addmm(ptl.tensor(c), s, ptl.tensor(b), beta=beta, alpha=alpha)
    assert_close(got, want)
    assert_close(ptl.sparse.addmm(ptl.tensor(c), s, ptl.tensor(b), beta=beta, alpha=alpha),
                 want)
    # a broadcast bias
    assert_close(ptl.addmm(ptl.tensor(c[0]), s, ptl.tensor(b)), c[0] + a @ b)


def test_product_errors():
    s = ptl.ones(2, 3).to_sparse()
    assert_raises_like_torch(lambda t: t.sparse.mm(t.ones(2, 3).to_sparse(), t.ones(4, 2)),
                             RuntimeError,
                             "addmm: Argument #3 (dense): Expected dim 0 size 3, got 4")
    assert_raises_like_torch(lambda t: t.sparse.mm(t.ones(2, 3).to_sparse(),
                                                   t.ones(3, 2, dtype=t.float64)),
                             RuntimeError, "expected scalar type Float but found Double")
    with pytest.raises(RuntimeError, match="matrices expected, got 1D tensor"):
        ptl.mm(s, ptl.ones(3))


# ---- ops that keep the layout ----

def test_pointwise_ops():
    gen = rng(8)
    s, a = make_sparse(gen, (3, 4), 2, 5, duplicates=True)
    t, b = make_sparse(gen, (3, 4), 2, 4)
    r = s + t
    assert r.is_sparse and r.is_coalesced()
    assert_close(r.to_dense(), a + b)
    assert_close(ptl.add(s, t, alpha=2.5).to_dense(), a + 2.5 * b)
    assert_close((s + (-t)).to_dense(), a - b)
    assert_close((s * 2).to_dense(), 2 * a)
    assert_close((2 * s).to_dense(), 2 * a)
    assert_close((s * ptl.tensor(0.5, dtype=ptl.float64)).to_dense(), 0.5 * a)
    assert_close((s / 4).to_dense(), a / 4)
    assert_close((-s).to_dense(), -a)
    d = gen.standard_normal((3, 4))
    prod = s * ptl.tensor(d)
    assert prod.is_sparse
    assert_close(prod.to_dense(), a * d)
    assert_close(ptl.tensor(d) + s, d + a)
    assert_raises_like_torch(lambda t: t.ones(2, 3).to_sparse() + t.ones(2, 3), RuntimeError,
                             "add(sparse, dense) is not supported. Use add(dense, sparse) "
                             "instead.")
    with pytest.raises(RuntimeError, match="expected 'self' and 'other' to have same size"):
        s + ptl.ones(3, 3).double().to_sparse()


def test_in_place_add():
    gen = rng(9)
    s, a = make_sparse(gen, (3, 4), 2, 5)
    t, b = make_sparse(gen, (3, 4), 2, 4)
    v = s._version
    assert s.add_(t) is s and s._version == v + 1
    assert_close(s.to_dense(), a + b)
    d = ptl.tensor(np.ones((3, 4)))
    d.add_(t, alpha=2)
    assert_close(d, 1 + 2 * b)


def test_clone_detach_transpose_sum():
    gen = rng(10)
    s, a = make_sparse(gen, (3, 4), 2, 5, duplicates=True)
    c = s.clone()
    assert c.is_sparse and c._values() is not s._values()
    c._values().mul_(0)
    assert_close(s.to_dense(), a)
    assert_close(s.detach().to_dense(), a)
    assert_close(s.t().to_dense(), a.T)
    assert_close(s.transpose(0, 1).to_dense(), a.T)
    h, ha = make_sparse(gen, (2, 3, 4), 1, 2)
    assert_close(h.transpose(1, 2).to_dense(), ha.transpose(0, 2, 1))
    with pytest.raises(RuntimeError, match="can't transpose a sparse dimension"):
        h.transpose(0, 1)
    assert_close(s.sum(), a.sum())
    assert_close(ptl.sparse.sum(s), a.sum())
    r = ptl.sparse.sum(s, 0)
    assert r.is_sparse and r.sparse_dim() == 1
    assert_close(r.to_dense(), a.sum(0))
    assert_close(ptl.sparse.sum(s, (0, 1)), a.sum())
    assert_close(ptl.sparse.sum(h, 1).to_dense(), ha.sum(1))


# ---- every path that would read a sparse tensor's elements ----

def _s(t):
    return t.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()


def test_paths_without_elements_raise_like_torch():
    msg = "Cannot access data pointer of Tensor that doesn't have storage"
    assert_raises_like_torch(lambda t: _s(t).data_ptr(), RuntimeError, msg)
    assert_raises_like_torch(lambda t: _s(t).tolist(), RuntimeError, msg)
    assert_raises_like_torch(lambda t: _s(t).item(), RuntimeError,
                             "a Tensor with 4 elements cannot be converted to Scalar")
    assert_raises_like_torch(lambda t: _s(t).untyped_storage(), NotImplementedError,
                             "Cannot access storage of SparseTensorImpl")
    with warnings.catch_warnings():   # torch warns that TypedStorage is deprecated first
        warnings.simplefilter("ignore")
        assert_raises_like_torch(lambda t: _s(t).storage(), NotImplementedError,
                                 "Cannot access storage of SparseTensorImpl")
    assert_raises_like_torch(lambda t: _s(t).numpy(), TypeError,
                             "can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                             "first.")
    assert_raises_like_torch(lambda t: _s(t).__dlpack__(), BufferError,
                             "Can't export tensors with layout other than torch.strided")
    assert_raises_like_torch(lambda t: _s(t).share_memory_(), NotImplementedError,
                             "Cannot access storage of SparseTensorImpl")
    one = ptl.sparse_coo_tensor(ptl.zeros(0, 1, dtype=ptl.int64), ptl.tensor([5.0]), ())
    for f in (float, int, bool, lambda x: x.item(), lambda x: memoryview(x)):
        with pytest.raises(RuntimeError, match=msg):
            f(one)
    s = _s(ptl)
    assert s.stride() == (0, 0) and s.storage_offset() == 0 and not s.is_contiguous()
    with pytest.raises(NotImplementedError, match="'aten::view' with arguments from the "
                                                  "'SparseCPU' backend"):
        s.view(4)
    with pytest.raises(NotImplementedError, match="'SparseCPU' backend"):
        s[0]
    with pytest.raises(NotImplementedError, match="'SparseCPU' backend"):
        ptl.stack([s, s])
    with pytest.raises(RuntimeError, match="incompatible tensor type"):
        ptl.ones(2, 2).data = s


@pytest.mark.parametrize("name", ["exp", "sin", "abs", "relu", "contiguous", "flatten"])
def test_other_ops_raise_not_implemented(name):
    with pytest.raises(NotImplementedError, match="with arguments from the 'SparseCPU' backend"):
        getattr(_s(ptl), name)()


@torch_ref
def test_not_implemented_message_like_torch():
    for lib in (torch, ptl):
        with pytest.raises(NotImplementedError,
                           match="Could not run 'aten::exp' with arguments from the 'SparseCPU' "
                                 "backend"):
            _s(lib).exp()


def test_pickle_save_load_and_collate():
    s = ptl.sparse_coo_tensor(ptl.tensor([[0, 1, 0], [1, 0, 1]]), ptl.tensor([1.0, 2.0, 3.0]),
                              (2, 2))
    for back in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s)):
        assert back.is_sparse and back.shape == (2, 2)
        assert_close(back.to_dense(), [[0.0, 4.0], [2.0, 0.0]])
    f = io.BytesIO()
    ptl.save({"s": s}, f)
    f.seek(0)
    loaded = ptl.load(f)["s"]
    assert loaded.is_sparse and not loaded.is_coalesced()
    assert_close(loaded.to_dense(), [[0.0, 4.0], [2.0, 0.0]])
    from pytorchlite.utils.data import default_collate
    with pytest.raises(RuntimeError, match="Batches of sparse tensors are not currently "
                                           "supported by the default collate_fn"):
        default_collate([s, s])


@torch_ref
def test_save_load_with_torch(tmp_path):
    p, q = str(tmp_path / "ptl.pt"), str(tmp_path / "torch.pt")
    ptl.save({"s": ptl.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()}, p)
    np.testing.assert_array_equal(torch.load(p)["s"].to_dense().numpy(), [[0, 1], [2, 0]])
    torch.save({"s": torch.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()}, q)
    assert_close(ptl.load(q)["s"].to_dense(), [[0.0, 1.0], [2.0, 0.0]])


@torch_ref
@pytest.mark.parametrize("sizes, sparse_dim, nnz", CASES)
def test_ops_like_torch(sizes, sparse_dim, nnz):
    gen = rng(11)
    ind, vals = random_coo(gen, sizes, sparse_dim, nnz, duplicates=True)
    outs = []
    for lib in (ptl, torch):
        s = lib.sparse_coo_tensor(lib.tensor(ind), lib.tensor(vals), sizes)
        c = s.coalesce()
        outs.append([c._indices().numpy(), c._values().numpy(), s.to_dense().numpy(),
                     (s + s).to_dense().numpy(), (s * 3).to_dense().numpy()])
        if len(sizes) == 2 and sparse_dim == 2:
            outs[-1].append(lib.sparse.mm(s, lib.ones(sizes[1], 2, dtype=lib.float64)).numpy())
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---- complex values (their sparse calls skip the Complex key: argument_keys in
# dispatcher.c; the values' dense ops take it) ----

CDTYPES = [ptl.complex64, ptl.complex128]
CTOL = {ptl.complex64: 1e-5, ptl.complex128: 1e-12}


def random_complex_coo(gen, sizes, sparse_dim, nnz):
    ind, re = random_coo(gen, sizes, sparse_dim, nnz, duplicates=True)
    return ind, re + 1j * gen.standard_normal(re.shape)


def np_dense_complex(ind, vals, sizes):
    return np_dense(ind, vals.real, sizes) + 1j * np_dense(ind, vals.imag, sizes)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
@pytest.mark.parametrize("sizes, sparse_dim, nnz", CASES)
def test_complex_construction_and_round_trips_match_numpy(sizes, sparse_dim, nnz, dtype):
    gen = rng(21)
    ind, vals = random_complex_coo(gen, sizes, sparse_dim, nnz)
    want = np_dense_complex(ind, vals, sizes)
    tol = CTOL[dtype]
    # values laid out non-contiguously: a transposed copy, transposed back
    vt = ptl.tensor(np.ascontiguousarray(vals.T), dtype=dtype)
    vt = vt.permute(*reversed(range(vals.ndim)))
    for v in (ptl.tensor(vals, dtype=dtype), vt):
        s = ptl.sparse_coo_tensor(ptl.tensor(ind), v, sizes)
        assert s.dtype == dtype and s.is_sparse and s.shape == sizes
        np.testing.assert_allclose(s.to_dense().numpy(), want, rtol=tol, atol=tol)
    c = s.coalesce()
    assert c.is_coalesced() and c.values().dtype == dtype
    np.testing.assert_allclose(np_dense_complex(c.indices().numpy(), c.values().numpy(), sizes),
                               want, rtol=tol, atol=tol)
    np.testing.assert_allclose((s + s).to_dense().numpy(), 2 * want, rtol=tol, atol=tol)
    np.testing.assert_allclose((s * (2 - 1j)).to_dense().numpy(), (2 - 1j) * want, rtol=tol,
                               atol=tol)
    np.testing.assert_allclose((-s).to_dense().numpy(), -want, rtol=tol, atol=tol)
    np.testing.assert_allclose(s.sum().numpy(), want.sum(), rtol=tol, atol=tol)
    for k in range(1 if sizes else 0, len(sizes) + 1):   # dense -> sparse -> dense
        d = ptl.tensor(want, dtype=dtype).to_sparse(k)
        assert d.dtype == dtype and d.sparse_dim() == k
        np.testing.assert_allclose(d.to_dense().numpy(), want, rtol=tol, atol=tol)
    if len(sizes) == 2 and sparse_dim == 2:
        m = crand_matrix(gen, sizes[1], 3)
        np.testing.assert_allclose(ptl.sparse.mm(s, ptl.tensor(m, dtype=dtype)).numpy(),
                                   want @ m, rtol=10 * tol, atol=10 * tol)


def crand_matrix(gen, *shape):
    return gen.standard_normal(shape) + 1j * gen.standard_normal(shape)


@pytest.mark.parametrize("dtype", CDTYPES, ids=str)
def test_complex_to_sparse_keeps_entries_with_either_part_nonzero(dtype):
    a = np.array([[0, 1j, 0], [2, 0, -0.0 - 0j], [0, 0, complex(0, np.nan)]])
    s = ptl.tensor(a, dtype=dtype).to_sparse()
    assert s.indices().numpy().tolist() == [[0, 1, 2], [1, 0, 2]]
    np.testing.assert_array_equal(s.values().numpy(), a[[0, 1, 2], [1, 0, 2]])
    rows = ptl.tensor(a, dtype=dtype).t().to_sparse(1)   # non-contiguous, by rows
    assert rows.indices().numpy().tolist() == [[0, 1, 2]]


def test_complex_values_gradcheck():
    gen = rng(22)
    ind, vals = random_complex_coo(gen, (3, 4), 2, 5)
    v = ptl.tensor(vals, dtype=ptl.complex128, requires_grad=True)
    i = ptl.tensor(ind)
    assert gradcheck(lambda v: ptl.sparse_coo_tensor(i, v, (3, 4)).to_dense(), (v,))
    assert gradcheck(lambda v: (ptl.sparse_coo_tensor(i, v, (3, 4)) * (1 + 2j)).to_dense(), (v,))


@torch_ref
@pytest.mark.parametrize("sizes, sparse_dim, nnz", CASES)
def test_complex_ops_like_torch(sizes, sparse_dim, nnz):
    gen = rng(23)
    ind, vals = random_complex_coo(gen, sizes, sparse_dim, nnz)
    outs = []
    for lib in (ptl, torch):
        s = lib.sparse_coo_tensor(lib.tensor(ind), lib.tensor(vals, dtype=lib.complex128), sizes)
        c = s.coalesce()
        outs.append([c._indices().numpy(), c._values().numpy(), s.to_dense().numpy(),
                     (s + s).to_dense().numpy(), (s * 3j).to_dense().numpy(),
                     s.to_dense().to_sparse()._values().numpy()])
    for a, b in zip(*outs):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


@torch_ref
def test_complex_values_gradient_matches_torch():
    gen = rng(24)
    ind, vals = random_complex_coo(gen, (3, 4), 2, 5)
    g = crand_matrix(gen, 3, 4)
    grads = []
    for lib in (ptl, torch):
        v = lib.tensor(vals, dtype=lib.complex128, requires_grad=True)
        d = lib.sparse_coo_tensor(lib.tensor(ind), v, (3, 4)).to_dense()
        grads.append(lib.autograd.grad(d, v, lib.tensor(g, dtype=lib.complex128))[0].numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def test_complex_errors_like_torch():
    def sparse(t):
        return t.sparse_coo_tensor(t.tensor([[0, 1]]), t.ones(2, dtype=t.complex64), (3,))
    assert_raises_like_torch(lambda t: sparse(t) + t.ones(3, dtype=t.complex64), RuntimeError,
                             "add(sparse, dense) is not supported. Use add(dense, sparse) "
                             "instead.")
    assert_raises_like_torch(lambda t: sparse(t).values(), RuntimeError,
                             "Cannot get values on an uncoalesced tensor, please call "
                             ".coalesce() first")
    assert_raises_like_torch(lambda t: t.ones(2, 3, dtype=t.complex64).to_sparse(0),
                             RuntimeError, "dense_to_sparse: sparse_dim argument must be in >0 "
                             "when self.dim()>0")
    assert_raises_like_torch(lambda t: t.ones(2, dtype=t.complex64).coalesce(), RuntimeError,
                             "coalesce expected sparse coordinate tensor layout but got Strided")


def test_no_leak():
    i, v, d = ptl.tensor([[0, 1, 1], [2, 0, 2]]), ptl.ones(3), ptl.ones(3, 2)

    def run():
        s = ptl.sparse_coo_tensor(i, v, (2, 3))
        s.coalesce().to_dense()
        ptl.sparse.mm(s, d)
        (s + s).to_dense()
        repr(s)
    assert_no_leak(run)
