"""The index and join kernels (src/cuda/index.cu, entered from the CPU kernels of
scatter_gather.c, index.c and join.c on the CUDA key through device_index.h's hooks) against
the CPU kernels, bit for bit (the scatters combine each element's values in the CPU's
order): gather and every scatter form (src, value, reduce= add and multiply, scatter_add,
scatter_reduce with and without include_self), advanced indexing (x[i], x[mask], index_put_
with and without accumulate) and index_select / index_add / index_copy / index_fill, cat and
stack, where, masked_fill, the comparisons and logical ops and take, flip / roll / rot90 /
repeat / tril / triu, sort / argsort / msort / topk (NaN, +-inf and +-0.0 included), in
every dtype, on contiguous, transposed and sliced operands, int32 and int64 indices with
repeats and negatives, 0-dim and size-0 tensors; their gradients; the CPU kernels' errors
for bad indices. Each test skips, with the reason the device is missing, on a machine
without a GPU; tools/gpu_check.sh runs them on one, with PTL_REQUIRE_GPU=1 turning a skip
into a failure."""

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from device_required import bits, pytestmark, require_device, same  # noqa: F401


DTYPES = [ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64, ptl.float16,
          ptl.bfloat16, ptl.float32, ptl.float64]
INTS = {ptl.bool, ptl.uint8, ptl.int8, ptl.int16, ptl.int32, ptl.int64}


def values(rng, shape, dtype):
    if dtype == ptl.bool:
        return ptl.tensor(rng.integers(0, 2, size=shape).astype(bool))
    if dtype in INTS:
        return ptl.tensor(rng.integers(0 if dtype == ptl.uint8 else -4, 5, size=shape)).to(dtype)
    return ptl.tensor(rng.standard_normal(shape) * 2).to(dtype)


def views(t):
    """t as it is, transposed (a strided view of a copy) and as a slice of a larger tensor:
    (cpu, cuda) pairs of the same values"""
    out = [(t, t.cuda())]
    if t.dim() == 2:
        tr = t.t().contiguous()
        out.append((tr.t(), tr.cuda().t()))
    if t.dim() >= 1:
        big = ptl.cat([t, t], 0)
        out.append((big[t.shape[0]:], big.cuda()[t.shape[0]:]))
    return out


# (self shape, index shape, dim)
SHAPES = [((), (), 0), ((7,), (9,), 0), ((4, 6), (3, 5), 0), ((4, 6), (3, 5), -1),
          ((50, 3), (400, 3), 0), ((3, 2000), (3, 5000), 1), ((2, 3, 4), (2, 2, 4), 1),
          ((3, 0), (3, 0), 1), ((5,), (0,), 0)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_gather_matches_the_cpu(dtype):
    rng = np.random.default_rng(0)
    for sshape, ishape, dim in SHAPES:
        size = sshape[dim] if sshape else 1
        for itype in (ptl.int64, ptl.int32):
            idx = ptl.tensor(rng.integers(0, max(size, 1), size=ishape)).to(itype)
            for xc, xd in views(values(rng, sshape, dtype)):
                for ic, id_ in views(idx):
                    same(xd.gather(dim, id_), xc.gather(dim, ic))


def scatters(x, dim, idx, src, inplace):
    v = 1 if x.dtype in INTS else 1.5
    yield (x.scatter_ if inplace else x.scatter)(dim, idx, src)
    yield (x.scatter_ if inplace else x.scatter)(dim, idx, v)
    yield (x.scatter_add_ if inplace else x.scatter_add)(dim, idx, src)
    if x.dtype != ptl.bool:
        for r in ("add", "multiply"):
            yield (x.scatter_ if inplace else x.scatter)(dim, idx, src, reduce=r)
    for r in ("sum", "prod", "mean", "amax", "amin"):
        if r == "mean" and x.dtype == ptl.bool:
            continue
        for inc in (True, False):
            fn = x.scatter_reduce_ if inplace else x.scatter_reduce
            yield fn(dim, idx, src, r, include_self=inc)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scatter_family_matches_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(1)
    for sshape, ishape, dim in SHAPES:
        size = sshape[dim] if sshape else 1
        for itype in (ptl.int64, ptl.int32):
            # few rows: many values per element
            idx = ptl.tensor(rng.integers(0, max(min(size, 3), 1), size=ishape)).to(itype)
            srcs = views(values(rng, ishape, dtype))
            for xc, xd in views(values(rng, sshape, dtype)):
                for sc, sd in srcs:
                    for inplace in (False, True):
                        got = list(scatters(xd.clone(), dim, idx.cuda(), sd, inplace))
                        want = list(scatters(xc.clone(), dim, idx, sc, inplace))
                        for g, w in zip(got, want):
                            same(g, w)


def test_gradients_match_the_cpu():
    """Each term's gradients, then their sum (a failure names the op whose bits differ)."""
    rng = np.random.default_rng(2)
    xv = ptl.tensor(rng.standard_normal((50, 70)))
    sv = ptl.tensor(rng.standard_normal((90, 70)))
    idx = ptl.tensor(rng.integers(0, 50, size=(90, 70)))
    terms = {"gather": lambda x, s, i: x.gather(0, i).sum(),
             "scatter_add": lambda x, s, i: (x.scatter_add(0, i, s) * x).sum(),
             "scatter": lambda x, s, i: (x.scatter(0, i[:50], s[:50]) ** 2).sum()}

    def grads(dev, names):
        x = xv.to(dev).requires_grad_(True)
        s = sv.to(dev).requires_grad_(True)
        i = idx.to(dev)
        sum(terms[n](x, s, i) for n in names).backward()
        return x.grad, s.grad

    for names in [[n] for n in terms] + [list(terms)]:
        for g, w in zip(grads("cuda", names), grads("cpu", names)):
            assert (g is None) == (w is None), names
            if g is not None:
                assert bits(g) == bits(w), names


def test_bad_indices_raise_the_cpu_kernels_error():
    x = ptl.arange(9.0).reshape(3, 3)
    src = ptl.ones(2, 3)
    for bad in ([[0, 3, 1], [2, 0, 1]], [[0, 1, -1], [2, 0, 1]], [[0, 1, 2], [7, -2, 9]]):
        for itype in (ptl.int64, ptl.int32):
            idx = ptl.tensor(bad).to(itype)
            for fn in (lambda t, i, s: t.gather(0, i), lambda t, i, s: t.scatter(0, i, s),
                       lambda t, i, s: t.scatter_add(0, i, s),
                       lambda t, i, s: t.scatter_reduce(0, i, s, "mean")):
                with pytest.raises(RuntimeError) as want:
                    fn(x, idx, src)
                with pytest.raises(RuntimeError) as got:
                    fn(x.cuda(), idx.cuda(), src.cuda())
                assert str(got.value) == str(want.value)
    # the device is usable after the error
    same(x.cuda().gather(0, ptl.tensor([[2, 1, 0]]).cuda()), x.gather(0, ptl.tensor([[2, 1, 0]])))


def test_operands_on_the_cpu_raise_pytorchs_device_error():
    x = ptl.zeros(3, 3).cuda()
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.gather(0, ptl.tensor([[0, 1, 2]]))
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        x.scatter_add(0, ptl.tensor([[0, 1, 2]]).cuda(), ptl.ones(1, 3))


def index_ops(rng, dtype):
    """(name, fn(x, on_device) -> tensor) over a [40, 7, 9] x: advanced indexing and the
    index_* family, with repeated and negative indices"""
    i = ptl.tensor(rng.integers(-40, 40, size=300))
    j = ptl.tensor([8, 0, 8, 3])
    mask = ptl.tensor(rng.integers(0, 2, size=(40, 7)).astype(bool))
    v = values(rng, (300, 7, 9), dtype)
    row = values(rng, (9,), dtype)
    src = values(rng, (40, 4, 9), dtype)
    one = True if dtype == ptl.bool else 3

    def dev(t, on):
        return t.cuda() if on else t
    ops = [
        ("x[i]", lambda x, d: x[dev(i, d)]),
        ("x[:, :, j]", lambda x, d: x[:, :, dev(j, d)]),
        ("x[i, :, i % 9]", lambda x, d: x[dev(i, d), :, dev(i % 9, d)]),
        ("x[mask]", lambda x, d: x[dev(mask, d)]),
        ("index_select", lambda x, d: x.index_select(1, dev(j % 7, d))),
        ("put", lambda x, d: x.index_put((dev(i, d),), dev(v, d))),
        ("put acc", lambda x, d: x.index_put((dev(i, d),), dev(v, d), accumulate=True)),
        ("put mask row", lambda x, d: x.index_put((dev(mask, d),), dev(row, d))),
        ("setitem", lambda x, d: x.__setitem__((slice(None), dev(j % 7, d)), one) or x),
        ("index_copy", lambda x, d: x.index_copy(1, dev(ptl.tensor([6, 0, 2, 1]), d),
                                                 dev(src, d))),
        ("index_fill", lambda x, d: x.index_fill(2, dev(j, d), one)),
    ]
    if dtype != ptl.bool:
        ops.append(("index_add", lambda x, d: x.index_add(1, dev(j % 7, d), dev(src, d),
                                                          alpha=2)))
    return ops


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_advanced_indexing_matches_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(3)
    x = values(rng, (40, 7, 9), dtype)
    for name, fn in index_ops(rng, dtype):
        for xc, xd in views(x):
            same(fn(xd.clone(), True), fn(xc.clone(), False))


def test_index_errors_match_the_cpu():
    x = ptl.zeros(4, 5)
    for fn in (lambda t, d: t[ptl.tensor([4]).to(d)],
               lambda t, d: t.index_select(1, ptl.tensor([5]).to(d)),
               lambda t, d: t.index_add(0, ptl.tensor([-1]).to(d), ptl.ones(1, 5).to(d))):
        with pytest.raises(Exception) as want:
            fn(x, "cpu")
        with pytest.raises(Exception) as got:
            fn(x.cuda(), "cuda")
        assert (type(got.value), str(got.value)) == (type(want.value), str(want.value))


def test_indexing_gradients_match_the_cpu():
    """index's and index_select's gradients alone, then accumulated into one grad."""
    rng = np.random.default_rng(4)
    xv = ptl.tensor(rng.standard_normal((64, 33)))
    i = ptl.tensor(rng.integers(-64, 64, size=500))
    terms = {"index": lambda x, d: (x[i.to(d)] ** 2).sum(),
             "index_select": lambda x, d: (x.index_select(1, (i % 33).to(d)) * 3).sum()}

    def grads(d, names):
        x = xv.to(d).requires_grad_(True)
        for n in names:
            terms[n](x, d).backward()
        return x.grad

    for names in [[n] for n in terms] + [list(terms)]:
        assert bits(grads("cuda", names)) == bits(grads("cpu", names)), names


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_cat_and_stack_match_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(5)
    for dim in (0, 1, -1):
        for n in (1, 3, 64):
            ts = []
            for k in range(n):
                s = [6, 5, 7]
                s[dim] = int(rng.integers(0, 9))
                t = values(rng, tuple(s), dtype)
                ts.append(t if k % 2 else t.transpose(0, 2).contiguous().transpose(0, 2))
            same(ptl.cat([t.cuda() for t in ts], dim), ptl.cat(ts, dim))
    a, b = values(rng, (4, 3), dtype), values(rng, (4, 3), dtype)
    same(ptl.stack([a.cuda(), b.cuda().t().contiguous().t()], 1), ptl.stack([a, b], 1))
    same(ptl.cat([a.cuda(), ptl.empty(0, dtype=dtype).cuda(), b.cuda()]), ptl.cat([a, b]))


def test_cat_of_mixed_dtypes_and_its_gradient_match_the_cpu():
    a = ptl.arange(6, dtype=ptl.int32).reshape(2, 3)
    b = ptl.randn(4, 3)
    same(ptl.cat([a.cuda(), b.cuda()]), ptl.cat([a, b]))
    xc = ptl.randn(3, 5, dtype=ptl.float64).requires_grad_(True)
    xd = xc.detach().cuda().requires_grad_(True)
    g = ptl.randn(3, 15, dtype=ptl.float64)
    (ptl.cat([xc, xc * 2, xc], 1) * g).sum().backward()
    (ptl.cat([xd, xd * 2, xd], 1) * g.cuda()).sum().backward()
    same(xd.grad, xc.grad)


# ---- sort, argsort, msort, topk (sort.cu; Note [CUDA sort] in src/cuda/sort_plan.h) ----

def sort_values(rng, shape, dtype):
    """values with many repeats (stability) and, for floats, NaN, +-inf and +-0.0"""
    t = values(rng, shape, dtype)
    if dtype in INTS or t.numel() == 0:
        return t
    special = ptl.tensor([float("nan"), float("inf"), -float("inf"), -0.0, 0.0]).to(dtype)
    flat = t.reshape(-1)
    pick = ptl.tensor(rng.integers(0, flat.numel(), size=max(flat.numel() // 5, 1)))
    flat[pick] = special[ptl.tensor(rng.integers(0, 5, size=pick.numel()))]
    return flat.reshape(shape)


# (shape, dim): lane lengths 0 to 4097 and 2^20, many lanes, every dim, 0-dim
SORT_SHAPES = [((), 0), ((1,), 0), ((2,), 0), ((33,), 0), ((4097,), 0), ((1 << 20,), 0),
               ((300, 7), 0), ((300, 7), 1), ((3, 5, 4), 1), ((3, 5, 4), -1), ((4, 0, 3), 1),
               ((2, 1000), 1)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_sort_and_argsort_match_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(7)
    for shape, dim in SORT_SHAPES:
        for cpu, cuda in views(sort_values(rng, shape, dtype)):
            for descending in (False, True):
                got = ptl.sort(cuda, dim=dim, descending=descending, stable=True)
                want = ptl.sort(cpu, dim=dim, descending=descending, stable=True)
                same(got[0], want[0])
                same(got[1], want[1])
                same(ptl.argsort(cuda, dim=dim, descending=descending), want[1])
    x = sort_values(rng, (6, 5), dtype)
    same(ptl.msort(x.cuda()), ptl.msort(x))


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != ptl.bool], ids=str)
def test_topk_matches_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(8)
    for shape, dim in [((), 0), ((33,), 0), ((4, 1000), 1), ((40, 6), 0), ((3, 5, 4), 1)]:
        for cpu, cuda in views(sort_values(rng, shape, dtype)):
            n = cpu.shape[dim] if cpu.dim() else 1
            for k in sorted({0, 1, n // 2, n}):
                for largest in (True, False):
                    got, want = ptl.topk(cuda, k, dim, largest), ptl.topk(cpu, k, dim, largest)
                    same(got[0], want[0])
                    same(got[1], want[1])


def test_sort_and_topk_gradients_match_the_cpu():
    rng = np.random.default_rng(9)
    xv = ptl.tensor(rng.integers(-3, 4, size=(6, 40)).astype(np.float64))
    g = ptl.tensor(rng.standard_normal((6, 40)))

    def grads(device):
        x = xv.to(device).requires_grad_(True)
        (ptl.sort(x, 1, descending=True)[0] * g.to(device)).sum().backward()
        (ptl.topk(x, 4, 0)[0] * g[:4].to(device)).sum().backward()
        return x.grad

    same(grads("cuda"), grads("cpu"))


def broadcasts_to(shape, target):
    """Whether a tensor of `shape` broadcasts to `target` (the in-place ops' condition)."""
    try:
        return np.broadcast_shapes(tuple(shape), tuple(target)) == tuple(target)
    except ValueError:
        return False


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_where_masked_fill_and_take_match_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(30)
    x = values(rng, (6, 7, 5), dtype)
    v = True if dtype == ptl.bool else 3
    masks = [ptl.tensor(rng.integers(0, 2, size=s).astype(bool)) for s in ((6, 7, 5), (7, 1))]
    idx = ptl.tensor(rng.integers(-210, 210, (9, 11)))
    for self in (x, x.transpose(0, 2)[:, ::2], x[0, 0, 0]):
        for m in masks + [ptl.tensor(True)]:
            if not broadcasts_to(m.shape, self.shape):
                continue
            want = self.masked_fill(m, v)
            assert bits(self.cuda().masked_fill(m.cuda(), v)) == bits(want)
            assert bits(self.cuda().masked_fill(m.cuda(), ptl.tensor(v).cuda())) == bits(want)
            y = self.cuda().clone()
            y.masked_fill_(m.cuda(), v)
            assert bits(y) == bits(self.clone().masked_fill_(m, v))
        i = idx % self.numel()
        for ix in (i, i.t(), i[:, ::3], i[0, 0]):
            assert bits(self.cuda().take(ix.cuda())) == bits(self.take(ix))
        c = self.to(ptl.float64) > 1
        other = values(rng, (1,) * self.dim(), dtype)
        for a, b in ((self, other), (self, v), (v, self), (self, ptl.tensor(v))):
            dev = [t.cuda() if isinstance(t, ptl.Tensor) and t.dim() else t for t in (a, b)]
            assert bits(ptl.where(c.cuda(), *dev)) == bits(ptl.where(c, a, b))


def test_masked_fill_and_take_errors_match_pytorch():
    x = ptl.arange(12.0).reshape(3, 4)
    with pytest.raises(IndexError, match=r"^out of range: tried to access index -13 on a tensor "
                                         r"of 12 elements\.$"):
        x.cuda().take(ptl.tensor([[0, 1], [-13, 20]]).cuda())
    with pytest.raises(RuntimeError, match=r"^expected self and mask to be on the same device, "
                                           r"but got mask on cpu and self on cuda:0$"):
        x.cuda().masked_fill(ptl.tensor(True), 1.0)
    with pytest.raises(RuntimeError, match="same device"):
        x.cuda().take(ptl.tensor([0, 1]))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_flip_roll_rot90_repeat_tril_triu_match_the_cpu_bit_for_bit(dtype):
    rng = np.random.default_rng(31)
    x = values(rng, (5, 6, 7), dtype)
    movers = [lambda t: t.flip((0, 2)), lambda t: t.roll((3, -1), (1, 2)),
              lambda t: t.roll(11), lambda t: t.rot90(1, (1, 2)),
              lambda t: t.repeat(2, 1, 3, 1), lambda t: t.tril(-1), lambda t: t.triu(2),
              lambda t: t.clone().mT.tril_(1).mT]
    for self in (x, x.transpose(0, 2), x[:, ::2], x[:, :0]):
        for fn in movers:
            assert bits(fn(self.cuda())) == bits(fn(self))


def test_a_causal_mask_built_on_the_device():
    """tril(ones) on the device, as attention code builds its mask"""
    mask = ptl.tril(ptl.ones(64, 64, device="cuda")).bool()
    np.testing.assert_array_equal(mask.cpu().numpy(), np.tril(np.ones((64, 64), bool)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_comparisons_and_logical_ops_match_the_cpu(dtype):
    rng = np.random.default_rng(32)
    x, y = values(rng, (6, 7, 5), dtype), values(rng, (7, 1), dtype)
    if dtype.is_floating_point:
        x[0, 0, :2] = float("nan")
    for name in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or",
                 "logical_xor"):
        fn = getattr(ptl, name)
        for a, b in ((x, y), (x.transpose(0, 2), x.transpose(0, 2)), (x, ptl.tensor(1))):
            got = fn(a.cuda(), b.cuda() if b.dim() else b)
            assert got.device.type == "cuda" and bits(got) == bits(fn(a, b)), name
    assert bits((x.cuda() > 0.5)) == bits(x > 0.5)



def test_one_hot_and_bincount_match_the_cpu():
    """Note [Device one_hot and bincount]: the extremes read back, then the device's scatter_
    and index_add_; the counts exactly, weighted bins to rounding, the CPU's errors."""
    rng = np.random.default_rng(21)
    F = ptl.nn.functional
    v = ptl.tensor(rng.integers(0, 50, 5000))
    for k in (-1, 50, 64):
        got = F.one_hot(v.cuda(), k)
        assert got.device.type == "cuda"
        np.testing.assert_array_equal(got.cpu().numpy(), F.one_hot(v, k).numpy())
    w64 = ptl.tensor(rng.standard_normal(5000))
    for t in (v, v.to(ptl.int32), v[::7]):
        np.testing.assert_array_equal(ptl.bincount(t.cuda(), minlength=70).cpu().numpy(),
                                      ptl.bincount(t, minlength=70).numpy())
    np.testing.assert_allclose(ptl.bincount(v.cuda(), w64.cuda()).cpu().numpy(),
                               ptl.bincount(v, w64).numpy(), rtol=1e-12, atol=1e-12)
    w32 = w64.to(ptl.float32)
    np.testing.assert_allclose(ptl.bincount(v.cuda(), w32.cuda()).cpu().numpy(),
                               ptl.bincount(v, w32).numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(ptl.tensor([1, -1]).cuda())
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative"):
        ptl.bincount(ptl.tensor([1, -1]).cuda())


def test_repeat_interleave_matches_the_cpu():
    rng = np.random.default_rng(22)
    for r in ([3, 0, 2, 0], [0, 0], list(rng.integers(0, 7, 4000))):
        for dt in (ptl.int64, ptl.int32):
            t = ptl.tensor(r, dtype=dt)
            got = ptl.repeat_interleave(t.cuda())
            assert got.device.type == "cuda" and got.dtype == dt
            np.testing.assert_array_equal(got.cpu().numpy(), ptl.repeat_interleave(t).numpy())
    x = ptl.tensor(rng.standard_normal((5, 3)))
    reps = ptl.tensor([1, 0, 3, 2, 1])
    np.testing.assert_array_equal(ptl.repeat_interleave(x.cuda(), reps.cuda(), 0).cpu().numpy(),
                                  ptl.repeat_interleave(x, reps, 0).numpy())
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        ptl.repeat_interleave(ptl.tensor([1, -1]).cuda())


def test_nonzero_and_unique_match_the_cpu():
    """Note [Host walks for data-dependent sizes]: the CPU kernels' results on the device."""
    rng = np.random.default_rng(23)
    x = ptl.tensor(rng.integers(-1, 2, (30, 17)).astype(np.float32))
    for t in (x, x[:, ::3], x.t(), x[0, 0]):
        got = ptl.nonzero(t.cuda())
        assert got.device.type == "cuda"
        np.testing.assert_array_equal(got.cpu().numpy(), ptl.nonzero(t).numpy())
    np.testing.assert_array_equal(x.cuda()[x.cuda() > 0].cpu().numpy(), x[x > 0].numpy())
    v = ptl.tensor(rng.integers(0, 9, 500))
    for d, c in zip(ptl.unique(v.cuda(), return_inverse=True, return_counts=True),
                    ptl.unique(v, return_inverse=True, return_counts=True)):
        assert d.device.type == "cuda"
        np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())
