"""The operator table of the tests (PyTorch's OpInfo idea, written for pytorchlite).

One OpInfo per operator of src/aten/ops.def, named by its schema name with the overload
("add.Tensor", "sum", "sort.stable").  An entry holds:

  samples     a few SampleInputs (args, kwargs) whose tensors are specs (T; I, M and C for
              indices, masks and constants) made in the dtype under test: 0-dim, size-0,
              broadcast and non-contiguous inputs where the op takes them
  ref         a NumPy reference over the same values, called like the op, where one is natural
  dtypes      the dtypes the op supports (its samples run in each)
  errors      (SampleInput, exception type) pairs the op must refuse
  gradgrad    True, or the reason PyTorch has no second derivative (or the samples are not
              smooth enough for finite differences of the first one)
  grad        "check" (gradcheck), "zeros" (random ops: derivatives.yaml gives zeros_like),
              "ref" (the gradient of the outputs' sum against grad_ref(*inputs, output) in
              NumPy: reparameterised samplers), "error" (a NotImplemented row: backward
              raises) or "none" (not differentiable)
  grad_call   how gradcheck calls the op when the sample alone cannot (grad_call(op, *args,
              **kwargs)); grad_outputs picks the outputs gradcheck compares (grad_outputs(outs))
  note        why an entry checks less than a plain gradcheck
  out_of      for an out= op, the functional op whose results it must reproduce

The boring part is generated from the schemas (`_C._schemas()`): a pointwise op gets the
standard shapes, its in-place and out= variants reuse the functional op's samples.  ENTRIES
holds what an op needs beyond that (indices, positive values, shapes that must agree, a
reference), ERRORS the classic mistakes.  Ops are called through
`pytorchlite.ops.aten.<name>.<overload>`.

The tests that drive the table: tests/autograd/test_derivatives_table.py (gradcheck and
gradgradcheck of every derivatives.def row) and tests/aten/test_ops_table.py (every ops.def
row runs, matches its reference and refuses its error samples)."""
import math

import numpy as np
from scipy import special

import pytorchlite as ptl
from pytorchlite import _C
from helpers import ALL_DTYPES, FLOAT_DTYPES, make
from tools.fuzz.op_fuzzer import parse_args

aten = ptl.ops.aten

FLOATS = (ptl.float32, ptl.float64)
NUMERIC = (ptl.int64, ptl.float32, ptl.float64)
WITH_BOOL = (ptl.bool, ptl.int64, ptl.float32, ptl.float64)
INTS = (ptl.uint8, ptl.int32, ptl.int64)


# ---- tensor specs: what a sample's tensor is, made later in the dtype under test ----

class T:
    """A random tensor of `shape` in the sample's dtype (or `dtype`), laid out as `layout`
    (helpers.make: contiguous, transposed, sliced, expanded), values in [low, high) (the op's
    domain when not given) or exactly `values`.  `grad`: gradcheck differentiates it."""

    def __init__(self, *shape, layout="contiguous", low=None, high=None, values=None,
                 dtype=None, grad=True, seed=None):
        self.shape = tuple(np.shape(values)) if values is not None else shape
        self.layout, self.low, self.high = layout, low, high
        self.values, self.dtype, self.grad, self.seed = values, dtype, grad, seed

    def make(self, dtype, domain, seed):
        dtype = self.dtype or dtype
        if self.values is not None:
            a = np.array(self.values, dtype=np.float64 if dtype in FLOAT_DTYPES else None)
            t = ptl.tensor(a, dtype=dtype)
            return t, t.numpy().astype(np.float64) if dtype in FLOAT_DTYPES else t.numpy()
        low = self.low if self.low is not None else domain[0]
        high = self.high if self.high is not None else domain[1]
        if dtype not in FLOAT_DTYPES:   # a positive domain stays positive
            low = math.ceil(low) if low > 0 else math.floor(low)
            high = max(math.ceil(high), low + 1)
        t, a = make(self.shape, dtype, self.layout, self.seed if self.seed is not None else seed,
                    low, high)
        return t, np.asarray(a, dtype=np.float64) if dtype in FLOAT_DTYPES else np.asarray(a)

    def __repr__(self):
        return f"T{self.shape}" + ("" if self.layout == "contiguous" else f"[{self.layout}]")


def I(values):  # noqa: E743  (an int64 index tensor)
    return T(values=values, dtype=ptl.int64, grad=False)


def M(values):
    """A bool mask tensor."""
    return T(values=values, dtype=ptl.bool, grad=False)


def C(*shape, **kw):
    """A float tensor that gradcheck leaves alone (a target, a saved statistic)."""
    return T(*shape, grad=False, **kw)


class Sp(T):
    """A sparse COO tensor (Note [Sparse tensors] in src/c10/tensor_impl.h): a random T of
    `shape` whose rows 1, 4, 7, ... (over the first sparse_dim dimensions, flattened) are
    zero, converted with to_sparse(sparse_dim); `uncoalesced` lists every entry twice, the
    second time with value 0.  Its NumPy twin is the dense array.  gradcheck leaves it alone:
    the entries that differentiate through sparse tensors build them in grad_call."""

    def __init__(self, *shape, sparse_dim=None, uncoalesced=False, seed=None):
        super().__init__(*shape, grad=False, seed=seed)
        self.sparse_dim = len(shape) if sparse_dim is None else sparse_dim
        self.uncoalesced = uncoalesced

    def make(self, dtype, domain, seed):
        t, a = super().make(dtype, domain, seed)
        rows = int(np.prod(self.shape[:self.sparse_dim]))
        flat = a.reshape(rows, int(np.prod(self.shape[self.sparse_dim:]))).copy()
        flat[1::3] = 0
        a = flat.reshape(self.shape)
        s = ptl.tensor(a, dtype=t.dtype).to_sparse(self.sparse_dim)
        if self.uncoalesced:
            i, v = s._indices(), s._values()
            s = ptl.sparse_coo_tensor(ptl.cat([i, i], 1), ptl.cat([v, ptl.zeros_like(v)]),
                                      self.shape)
        return s, a

    def __repr__(self):
        return f"Sp{self.shape}" + ("[uncoalesced]" if self.uncoalesced else "")


def _np_coo(indices, values, size=None):
    """The dense array of a COO (indices, values), duplicates summed."""
    indices = np.asarray(indices)
    if size is None:
        size = tuple(int(r.max()) + 1 if r.size else 0 for r in indices) + values.shape[1:]
    out = np.zeros(size, dtype=values.dtype)
    np.add.at(out, tuple(indices), values)
    return out


def _dense(op):
    """grad_call for ops with a sparse result: gradcheck compares its dense form."""
    return lambda f, *a, **k: op(f, *a, **k).to_dense()


# Sample arguments made with the sample: the dtype under test (factories), and a freshly
# seeded Generator.
DTYPE = type("DTYPE", (), {"__repr__": lambda self: "DTYPE"})()
GENERATOR = type("GENERATOR", (), {"__repr__": lambda self: "GENERATOR"})()


class SampleInput:
    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs

    def __repr__(self):
        kw = "".join(f", {k}={v!r}" for k, v in self.kwargs.items())
        return f"({', '.join(map(repr, self.args))}{kw})"

    def specs(self):
        """Every T in args and kwargs, in order (lists of tensors included)."""
        out = []

        def walk(x):
            if isinstance(x, T):
                out.append(x)
            elif isinstance(x, (list, tuple)):
                for y in x:
                    walk(y)
        for v in list(self.args) + list(self.kwargs.values()):
            walk(v)
        return out

    def make(self, dtype, domain=(-2.0, 2.0), requires_grad=False):
        """(args, kwargs, np_args, np_kwargs, leaves): the pytorchlite call, its NumPy twin,
        and the tensors made to require grad (floating specs with grad=True)."""
        leaves, counter = [], [0]

        def build(x):
            if isinstance(x, T):
                counter[0] += 1
                t, a = x.make(dtype, domain, counter[0])
                if requires_grad and x.grad and t.dtype in FLOAT_DTYPES:
                    t.requires_grad_(True)
                    leaves.append(t)
                return t, a
            if x is DTYPE:
                return dtype, dtype
            if x is GENERATOR:
                g = ptl.Generator().manual_seed(0)
                return g, g
            if isinstance(x, (list, tuple)):
                pairs = [build(y) for y in x]
                return type(x)(p[0] for p in pairs), type(x)(p[1] for p in pairs)
            return x, x
        pa = [build(x) for x in self.args]
        pk = {k: build(v) for k, v in self.kwargs.items()}
        return ([p[0] for p in pa], {k: p[0] for k, p in pk.items()},
                [p[1] for p in pa], {k: p[1] for k, p in pk.items()}, leaves)


S = SampleInput


class OpInfo:
    def __init__(self, name, samples=None, ref=None, dtypes=FLOATS, domain=(-2.0, 2.0),
                 errors=(), grad="check", gradgrad=True, grad_samples=None, note=None,
                 grad_call=None, grad_outputs=None, out_of=None, rtol=1e-9,
                 atol=1e-12, grad_ref=None):
        self.name = name
        self.samples = None if samples is None else list(samples)
        self.ref, self.dtypes, self.domain = ref, tuple(dtypes), domain
        self.errors = list(errors)
        self.grad, self.gradgrad, self.note = grad, gradgrad, note
        self.grad_samples = grad_samples
        self.grad_call, self.grad_outputs = grad_call, grad_outputs
        self.out_of = out_of
        self.grad_ref = grad_ref
        self.rtol, self.atol = rtol, atol

    @property
    def op(self):
        base, _, overload = self.name.partition(".")
        return getattr(getattr(aten, base), overload or "default")

    @property
    def inplace(self):
        return self.name.split(".")[0].endswith("_") and not self.name.startswith("_")

    def gradcheck_samples(self):
        """The samples gradcheck runs on: non-empty ones with a differentiable float tensor,
        at most three (finite differences cost one call per element)."""
        if self.grad_samples is not None:
            return self.grad_samples
        keep = [s for s in self.samples
                if any(t.grad and t.dtype in (None, ptl.float64) and t.layout != "expanded"
                       and 0 not in t.shape for t in s.specs())
                and all(0 not in t.shape for t in s.specs())]
        return keep[:3]

    def __repr__(self):
        return f"OpInfo({self.name})"


class PinnedOpInfo(OpInfo):
    """_pin_memory: each call pins through the fake device's host allocator (in
    cudaHostAlloc's place, as tests/python/test_cuda_streams.py does), since this machine may
    have no device to pin for."""
    _host = None

    @property
    def op(self):
        pin = super().op

        def call(*args, **kwargs):
            if PinnedOpInfo._host is None:   # kept for the process: pinned tensors outlive calls
                PinnedOpInfo._host = _C._FakeHostAllocator(64 << 20)
            _C._cuda_set_host_allocator_for_testing(PinnedOpInfo._host)
            try:
                return pin(*args, **kwargs)
            finally:
                _C._cuda_set_host_allocator_for_testing(None)
        return call


# ---- sample generators for the families of ops ----

def unary_samples():
    return [S(T()), S(T(0)), S(T(2, 3)), S(T(3, 2, layout="transposed")),
            S(T(4, layout="sliced")), S(T(2, 3, layout="expanded"))]


def binary_samples():
    return [S(T(2, 3), T(2, 3)), S(T(2, 3), T(3)), S(T(), T(2, 2)), S(T(0, 3), T(1, 3)),
            S(T(3, 2, layout="transposed"), T(3, 1)), S(T(4, layout="sliced"), T(4)),
            S(T(2, 3, layout="expanded"), T(2, 3))]


def ternary_samples():
    return [S(T(2, 3), T(2, 3), T(2, 3)), S(T(2, 3), T(3), T(2, 1)), S(T(), T(), T()),
            S(T(0, 2), T(2), T(0, 1)), S(T(3, 2, layout="transposed"), T(3, 2), T(2))]


def reduce_samples(dim=False):
    """A whole-tensor reduction's samples, or with dim a reduction over (dim, keepdim)'s."""
    if not dim:
        return [S(T(2, 3)), S(T()), S(T(3, 4, layout="transposed")), S(T(5, layout="sliced"))]
    return [S(T(2, 3), 1), S(T(3, 4, layout="transposed"), 0), S(T(2, 3, 2), -1),
            S(T(2, 3), 1, True)]


def _schema_table():
    rows = {}
    for r in _C._schemas():
        s = r["schema"]
        name = s.split("(")[0]
        if name.startswith("aten::"):
            rows[name[len("aten::"):]] = r
    return rows


SCHEMAS = _schema_table()


def _args_of(schema):
    """[(type, name, default or None)] of a schema string's arguments (the fuzzer's parser,
    tools/fuzz/op_fuzzer.py, without its keyword-only flag)."""
    return [arg[:3] for arg in parse_args(schema)]


def generated_samples(name):
    """The standard samples of an op whose schema takes one to three tensors and defaults
    for everything else (a pointwise op and its like)."""
    args = [a for a in _args_of(SCHEMAS[name]["schema"]) if a[1] != "out"]
    tensors = [a for a in args if a[0] in ("Tensor", "Tensor(a!)", "Tensor(a)")]
    if len(tensors) not in (1, 2, 3) or any(a[2] is None for a in args if a not in tensors):
        raise ValueError(f"{name}: the schema does not give the standard samples; "
                         "write them in the entry")
    return {1: unary_samples, 2: binary_samples, 3: ternary_samples}[len(tensors)]()


# ---- the entries: what an op needs beyond its schema ----

POS = (0.5, 2.0)
UNIT = (-0.9, 0.9)


def unary(name, ref=None, domain=(-2.0, 2.0), dtypes=FLOATS, **kw):
    """A one-tensor pointwise op: the samples come from its schema."""
    return OpInfo(name, None, ref=ref, domain=domain, dtypes=dtypes, **kw)


def binary(name, ref=None, domain=(-2.0, 2.0), dtypes=NUMERIC, **kw):
    """A two-tensor pointwise op: the samples come from its schema."""
    return OpInfo(name, None, ref=ref, domain=domain, dtypes=dtypes, **kw)


def _np_sigmoid(a):
    return 1 / (1 + np.exp(-a))


def _np_log_sigmoid_forward(a):
    """log_sigmoid_forward's (output, buffer): log(sigmoid(a)) and the e^-|a| its CPU
    backward reads"""
    return -np.log1p(np.exp(-a)), np.exp(-np.abs(a))


_np_erf = np.vectorize(math.erf, otypes=[np.float64])


# ---- NumPy references of the nn, indexing and backward ops ----

def _np_moved(a, dim):
    """(copy of a, the copy viewed with dim first)."""
    out = a.copy()
    return out, np.moveaxis(out, dim, 0)


def _np_index_copy(a, dim, index, src):
    out, view = _np_moved(a, dim)
    view[index] = np.moveaxis(src, dim, 0)
    return out


def _np_index_fill(a, dim, index, value):
    out, view = _np_moved(a, dim)
    view[index] = value
    return out


def _np_index_put(a, indices, values, accumulate=False):
    out = a.copy()
    idx = tuple(slice(None) if i is None else i for i in indices)
    if accumulate:
        np.add.at(out, idx, values)
    else:
        out[idx] = values
    return out


def _np_scatter_index(index, dim):
    idx = list(np.indices(index.shape))
    idx[dim] = index
    return tuple(idx)


def _np_scatter(a, dim, index, src):
    out = a.copy()
    out[_np_scatter_index(index, dim)] = \
        src[tuple(slice(0, s) for s in index.shape)] if np.ndim(src) else src
    return out


def _np_scatter_add(a, dim, index, src):
    out = a.copy()
    np.add.at(out, _np_scatter_index(index, dim), src[tuple(slice(0, s) for s in index.shape)])
    return out


def _np_masked_scatter(a, mask, source):
    out = a.copy()
    m = np.broadcast_to(mask, a.shape)
    out[m] = source.ravel()[:m.sum()]
    return out


def _np_nll_loss(x, t, w=None, reduction=1, ignore_index=-100):
    x = np.moveaxis(x, 1, -1)
    w = np.ones(x.shape[-1]) if w is None else w
    keep = t != ignore_index
    tt = np.where(keep, t, 0)
    picked = np.take_along_axis(x, tt[..., None], -1)[..., 0]
    ww = w[tt] * keep
    loss = -picked * ww
    return {0: loss, 1: loss.sum() / ww.sum(), 2: loss.sum()}[reduction]


def _np_nll_loss_backward(go, x, t, w, reduction, ignore_index):
    w = np.ones(x.shape[1]) if w is None else w
    keep = t != ignore_index
    tt = np.where(keep, t, 0)
    ww = w[tt] * keep
    scale = go / ww.sum() if reduction == 1 else go
    out = np.zeros_like(x)
    out[np.arange(len(t)), tt] = -ww * scale
    return out


def _np_gelu(a, approximate=0):
    if approximate in (1, "tanh"):
        return 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
    return 0.5 * a * (1 + _np_erf(a / np.sqrt(2)))


def _np_gelu_backward(go, a, approximate="none"):
    cdf = 0.5 * (1 + _np_erf(a / np.sqrt(2)))
    return go * (cdf + a * np.exp(-a * a / 2) / np.sqrt(2 * np.pi))


def _np_mode(a, dim=-1, keepdim=False):
    def one(row):
        vals, counts = np.unique(row, return_counts=True)
        return vals[np.argmax(counts)]
    return (np.apply_along_axis(one, dim, a),)


def _np_renorm(a, p, dim, maxnorm):
    axes = tuple(d for d in range(a.ndim) if d != dim)
    norm = (np.abs(a) ** p).sum(axis=axes, keepdims=True) ** (1 / p)
    return a * np.where(norm > maxnorm, maxnorm / (norm + 1e-7), 1.0)


def _np_unfold(a, dim, size, step):
    windows = np.lib.stride_tricks.sliding_window_view(a, size, axis=dim)
    return np.take(windows, range(0, windows.shape[dim], step), axis=dim)


def _np_softmax_backward(go, out, dim, dtype):
    return out * (go - (go * out).sum(axis=dim, keepdims=True))


def _np_log_softmax_backward(go, out, dim, dtype):
    return go - np.exp(out) * go.sum(axis=dim, keepdims=True)


def _np_elu_backward(go, alpha, scale, input_scale, is_result, x):
    return np.where(x > 0, go * scale, go * input_scale * alpha * scale * np.exp(x * input_scale))


def _np_bce_backward(go, a, t, w=None, reduction=1):
    g = go * (a - t) / (a * (1 - a)) * (1 if w is None else w)
    return g / a.size if reduction == 1 else g


def _np_embedding_bag(w, idx, offsets, scale, num_bags, mean=False):
    # bag b: offsets[b] up to offsets[b + 1], the last up to len(idx)
    bag = np.searchsorted(offsets[:num_bags], np.arange(len(idx)), side="right") - 1
    out = np.zeros((num_bags, w.shape[1]))
    np.add.at(out, bag, w[idx] * (1.0 if scale is None else scale[:, None]))
    return out / np.maximum(np.bincount(bag, minlength=num_bags), 1)[:, None] if mean else out


def _np_bags_of_offsets(offsets, n, include_last_offset=False):
    nbags = max(len(offsets) - 1, 0) if include_last_offset else len(offsets)
    end = (offsets[-1] if include_last_offset else n) if nbags else 0
    return np.searchsorted(offsets[:nbags], np.arange(end), side="right") - 1


def _np_embedding_backward(go, idx, num_weights, padding_idx, scale_grad_by_freq):
    out = np.zeros((num_weights,) + go.shape[idx.ndim:])
    np.add.at(out, idx, go)
    if scale_grad_by_freq:
        out /= np.maximum(np.bincount(idx.ravel(), minlength=num_weights), 1)[:, None]
    if padding_idx >= 0:
        out[padding_idx] = 0
    return out


def _np_layer_norm(x, shape, w, b, eps):
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(x.var(axis=axes, keepdims=True) + eps)
    y = (x - mean) * rstd
    return (y * (1 if w is None else w) + (0 if b is None else b), mean, rstd)


def _np_group_norm(x, w, b, n, c, hw, group, eps):
    """(out, mean [N, group], rstd [N, group]) over the groups of C / group channels"""
    xg = x.reshape(n, group, -1)
    mean, var = xg.mean(axis=2), xg.var(axis=2)
    rstd = 1 / np.sqrt(var + eps)
    y = ((xg - mean[..., None]) * rstd[..., None]).reshape(n, c, -1)
    y = y * (1 if w is None else w[:, None]) + (0 if b is None else b[:, None])
    return y.reshape(x.shape), mean, rstd


def _np_batch_norm(x, w, b, rm, rv, training, momentum, eps):
    """(out, save_mean, save_invstd): batch statistics in training, the running ones (and
    empty saved statistics, as PyTorch's CPU kernel) in eval."""
    axes = (0,) + tuple(range(2, x.ndim))
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    mean, var = (x.mean(axis=axes), x.var(axis=axes)) if training else (rm, rv)
    invstd = 1 / np.sqrt(var + eps)
    y = (x - mean.reshape(shape)) * invstd.reshape(shape)
    if w is not None:
        y = y * w.reshape(shape)
    if b is not None:
        y = y + b.reshape(shape)
    return (y, mean, invstd) if training else (y, np.zeros(0), np.zeros(0))

def _np_sdpa_flash(q, k, v, dropout_p=0.0, is_causal=False, attn_mask=None, scale=None):
    """(softmax(q k^T scale + mask) v, logsumexp of the scores); a row whose every key is
    masked gives zeros and a logsumexp of +inf (Note [Flash attention on the CPU])."""
    s = q @ np.swapaxes(k, -1, -2) * (1 / math.sqrt(q.shape[-1]) if scale is None else scale)
    if is_causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if attn_mask is not None:
        s = s + attn_mask
    m = s.max(-1, keepdims=True) if s.shape[-1] else np.full(s.shape[:-1] + (1,), -np.inf)
    live = np.isfinite(m)
    e = np.exp(s - np.where(live, m, 0))
    total = e.sum(-1, keepdims=True)
    out = np.where(live, e / np.where(live, total, 1), 0) @ v
    lse = np.where(live, np.where(live, m, 0) + np.log(np.where(live, total, 1)), np.inf)
    return out, lse[..., 0]


def _np_upsample_nearest(a, size, *scales):
    """Nearest upsampling of a's last len(size) dims: source index floor(i * in / out), or
    floor(i / scale) when the scale is given."""
    for k, n in enumerate(size):
        axis = a.ndim - len(size) + k
        step = 1 / scales[k] if len(scales) > k and scales[k] else a.shape[axis] / n
        src = np.minimum(np.floor(np.arange(n) * step).astype(np.int64), a.shape[axis] - 1)
        a = np.take(a, src, axis=axis)
    return a


def _np_adaptive_avg_pool2d(a, size):
    h, w = a.shape[-2:]
    out = np.empty(a.shape[:-2] + tuple(size))
    for i in range(size[0]):
        for j in range(size[1]):
            rows = slice(i * h // size[0], -(-(i + 1) * h // size[0]))
            cols = slice(j * w // size[1], -(-(j + 1) * w // size[1]))
            out[..., i, j] = a[..., rows, cols].mean(axis=(-2, -1))
    return out


IGAMMA_NOTE = ("derivatives.yaml: not_implemented for self (the shape parameter); "
               "gradcheck differentiates other")


def _constant_first(samples):
    """The samples with their first tensor left out of gradcheck."""
    return [S(T(*a.shape, layout=a.layout, grad=False), b)
            for a, b in (sample.specs() for sample in samples)]


class PairOutOpInfo(OpInfo):
    """An op with two out= tensors named out_names (frexp.Tensor_out: mantissa, exponent),
    called as the Python function is, with out=(first, second)."""

    def __init__(self, name, samples=None, out_names=("mantissa", "exponent"), **kw):
        super().__init__(name, samples, **kw)
        self.out_names = out_names

    @property
    def op(self):
        base = super().op
        first, second = self.out_names

        def call(*args, out, **kwargs):
            return base(*args, **{first: out[0], second: out[1]}, **kwargs)
        return call


ENTRIES = [
    # unary pointwise
    unary("neg", np.negative, dtypes=NUMERIC),
    unary("abs", np.abs, domain=POS, dtypes=NUMERIC),
    unary("sign", np.sign, dtypes=NUMERIC),
    unary("exp", np.exp),
    unary("exp2", np.exp2),
    unary("expm1", np.expm1),
    unary("log", np.log, domain=POS),
    unary("log2", np.log2, domain=POS),
    unary("log10", np.log10, domain=POS),
    unary("log1p", np.log1p, domain=POS),
    unary("sqrt", np.sqrt, domain=POS),
    unary("rsqrt", lambda a: 1 / np.sqrt(a), domain=POS),
    unary("sin", np.sin), unary("cos", np.cos), unary("tan", np.tan, domain=(-1.2, 1.2)),
    unary("asin", np.arcsin, domain=UNIT), unary("acos", np.arccos, domain=UNIT),
    unary("atan", np.arctan), unary("sinh", np.sinh), unary("cosh", np.cosh),
    unary("tanh", np.tanh), unary("sigmoid", _np_sigmoid),
    unary("relu", lambda a: np.maximum(a, 0), dtypes=NUMERIC),
    unary("erf", _np_erf),
    unary("erfinv", None, domain=UNIT),
    unary("floor", np.floor, dtypes=NUMERIC), unary("ceil", np.ceil, dtypes=NUMERIC),
    unary("trunc", np.trunc, dtypes=NUMERIC), unary("round", np.round, dtypes=NUMERIC),
    unary("frac", lambda a: a - np.trunc(a)),
    unary("reciprocal", np.reciprocal, domain=POS),
    unary("square", np.square, dtypes=NUMERIC),
    unary("nan_to_num", np.nan_to_num),
    unary("lgamma", special.gammaln, domain=(0.1, 4.0)),
    unary("digamma", special.digamma, domain=(0.1, 4.0)),
    OpInfo("polygamma", [S(1, T(2, 3)), S(2, T()), S(0, T(0)), S(3, T(3, 2, layout="transposed")),
                         S(1, T(4, layout="sliced")), S(2, T(2, 3, layout="expanded"))],
           ref=special.polygamma, domain=(0.5, 3.0), errors=[(S(-1, T(2)), RuntimeError)]),
    OpInfo("polygamma_", [S(T(2, 3), 1), S(T(), 2), S(T(0), 0)],
           ref=lambda a, n: special.polygamma(n, a), domain=(0.5, 3.0)),
    OpInfo("round.decimals", [S(T(2, 3), decimals=1), S(T(), decimals=2), S(T(0), decimals=1)],
           ref=lambda a, decimals: np.round(a, decimals), domain=(0.01, 0.04)),
    unary("acosh", np.arccosh, domain=(1.1, 3.0)), unary("asinh", np.arcsinh),
    unary("atanh", np.arctanh, domain=UNIT), unary("erfc", special.erfc),
    unary("i0", special.i0), unary("special_i0e", special.i0e),
    unary("special_i1", special.i1), unary("special_i1e", special.i1e),
    OpInfo("frexp.Tensor", None, ref=np.frexp, grad_outputs=lambda o: o[:1],
           note="the exponent is an integer output"),
    PairOutOpInfo("frexp.Tensor_out", unary_samples(), ref=np.frexp, grad="none",
                  out_of="frexp.Tensor"),
    unary("logical_not", np.logical_not, dtypes=WITH_BOOL, grad="none"),
    unary("bitwise_not", np.invert, dtypes=(ptl.bool, ptl.int64, ptl.uint8), grad="none"),
    unary("isnan", np.isnan, dtypes=NUMERIC, grad="none"),
    unary("isinf", np.isinf, dtypes=NUMERIC, grad="none"),
    unary("isfinite", np.isfinite, dtypes=NUMERIC, grad="none"),
    # binary pointwise
    binary("add.Tensor", np.add),
    OpInfo("rsub.Tensor", binary_samples() + [S(T(2, 3), T(3), alpha=2)],
           ref=lambda a, b, alpha=1: b - alpha * a, dtypes=NUMERIC),
    binary("sub.Tensor", np.subtract),
    binary("mul.Tensor", np.multiply),
    binary("div.Tensor", np.true_divide, domain=POS, dtypes=FLOATS),
    OpInfo("div.Tensor_mode",
           [S(T(2, 3), T(2, 3), rounding_mode="trunc"), S(T(2, 3), T(3), rounding_mode="floor"),
            S(T(2, 3), T(3), rounding_mode=None)],
           ref=lambda a, b, rounding_mode: {"trunc": np.trunc, "floor": np.floor,
                                            None: lambda x: x}[rounding_mode](a / b),
           domain=POS),
    binary("floor_divide", np.floor_divide, domain=POS, grad="error",
           note="derivatives.yaml: floor_divide is not differentiable"),
    binary("remainder.Tensor", np.remainder, domain=POS),
    binary("fmod.Tensor", np.fmod, domain=POS),
    binary("pow.Tensor_Tensor", np.power, domain=POS, dtypes=FLOATS),
    OpInfo("pow.Tensor_Scalar", [S(T(2, 3), 2), S(T(), 0.5), S(T(0), 3), S(T(2, 3), 0),
                                 S(T(3, 2, layout="transposed"), -1.5),
                                 S(T(4, layout="sliced"), 2.5), S(T(2, 3, layout="expanded"), 3)],
           ref=np.power, domain=POS),
    OpInfo("pow_.Scalar", [S(T(2, 3), 2), S(T(), 0.5), S(T(0), 3), S(T(2, 3), 0),
                           S(T(3, 2, layout="transposed"), -1.5)],
           ref=np.power, domain=POS),
    OpInfo("pow.Scalar", [S(2.0, T(2, 3)), S(0.5, T()), S(3, T(0)), S(0.0, T(2, 3)),
                          S(2.5, T(3, 2, layout="transposed")), S(1.5, T(4, layout="sliced"))],
           ref=lambda a, b: np.power(float(a), b), domain=POS),
    binary("atan2", np.arctan2, dtypes=FLOATS),
    binary("hypot", np.hypot, dtypes=FLOATS),
    binary("nextafter", np.nextafter, dtypes=FLOATS, grad="zeros",
           note="derivatives.yaml: zeros for both arguments (nextafter is piecewise constant)"),
    OpInfo("igamma", _constant_first(binary_samples()),
           ref=special.gammainc, domain=POS, note=IGAMMA_NOTE),
    OpInfo("igammac", _constant_first(binary_samples()),
           ref=special.gammaincc, domain=POS, note=IGAMMA_NOTE),
    OpInfo("_ptl_igamma_density", binary_samples(),
           ref=lambda a, x: np.exp((a - 1) * np.log(x) - x - special.gammaln(a)), domain=POS,
           note="igamma's derivative in x (the Gamma(a) density), differentiable in both"),
    binary("gcd", np.gcd, domain=(-30.0, 30.0), dtypes=INTS + (ptl.int8, ptl.int16),
           grad="none"),
    binary("lcm", np.lcm, domain=(-30.0, 30.0), dtypes=INTS + (ptl.int8, ptl.int16),
           grad="none"),
    binary("maximum", np.maximum), binary("minimum", np.minimum),
    binary("fmax", np.fmax), binary("fmin", np.fmin),
    binary("max.other", np.maximum), binary("min.other", np.minimum),
]


def _np_var(a, dim=None, unbiased=True, keepdim=False, correction=None):
    ddof = (1 if unbiased else 0) if correction is None else correction
    return np.var(a, axis=_axis(dim), ddof=ddof, keepdims=keepdim)


def _np_std(a, dim=None, unbiased=True, keepdim=False, correction=None):
    return np.sqrt(_np_var(a, dim, unbiased, keepdim, correction))


def _axis(dim):
    return tuple(dim) if isinstance(dim, (list, tuple)) else dim


ENTRIES += [
    # ternary pointwise
    OpInfo("where.self", [S(M([[True, False, True], [False, False, True]]), T(2, 3), T(3)),
                          S(M(True), T(), T(2)), S(M([[True], [False]]), T(2, 3), T(2, 3)),
                          S(M([]), T(0), T(0))],
           ref=np.where, dtypes=NUMERIC),
    OpInfo("clamp", [S(T(2, 3), -1, 1), S(T(2, 3), min=0), S(T(), max=1),
                     S(T(3, 2, layout="transposed"), -1, 0), S(T(0), 0, 1)],
           ref=lambda a, min=None, max=None: np.clip(a, min, max), dtypes=NUMERIC),
    OpInfo("clamp.Tensor", [S(T(2, 3), T(3, low=-2, high=-0.5), T(2, 1, low=0.5, high=2)),
                            S(T(2, 3), T(3)), S(T(2, 3), None, T(2, 3))],
           ref=lambda a, min=None, max=None: np.minimum(np.maximum(a, min), max)
           if min is not None and max is not None else np.clip(a, min, max)),
    OpInfo("clip", [S(T(2, 3), -1, 1), S(T(2, 3), max=1)],
           ref=lambda a, min=None, max=None: np.clip(a, min, max)),
    OpInfo("clip.Tensor", [S(T(2, 3), T(3, low=-2, high=-0.5), T(2, 1, low=0.5, high=2)),
                           S(T(2, 3), None, T(2, 1))],
           ref=lambda a, min=None, max=None: np.clip(a, min, max)),
    OpInfo("clamp_min", [S(T(2, 3), 1), S(T(), 0)], ref=np.maximum, dtypes=NUMERIC),
    OpInfo("clamp_max", [S(T(2, 3), 1), S(T(), 0)], ref=np.minimum, dtypes=NUMERIC),
    OpInfo("clamp_min.Tensor", [S(T(2, 3), T(3, low=-2, high=2)), S(T(), T()),
                                S(T(3, 2, layout="transposed"), T(3, 1)), S(T(0), T(0))],
           ref=np.maximum, dtypes=NUMERIC),
    OpInfo("clamp_max.Tensor", [S(T(2, 3), T(3, low=-2, high=2)), S(T(), T()),
                                S(T(3, 2, layout="transposed"), T(3, 1)), S(T(0), T(0))],
           ref=np.minimum, dtypes=NUMERIC),
    OpInfo("lerp.Scalar", [S(T(2, 3), T(3), 0.3), S(T(), T(), 0.7), S(T(0), T(0), 0.5)],
           ref=lambda a, b, w: a + w * (b - a)),
    OpInfo("lerp.Tensor", [S(T(2, 3), T(3), T(2, 1)), S(T(), T(), T())],
           ref=lambda a, b, w: a + w * (b - a)),
    OpInfo("addcmul", ternary_samples() + [S(T(2, 3), T(3), T(2, 1), value=2)],
           ref=lambda a, b, c, value=1: a + value * b * c, dtypes=NUMERIC),
    OpInfo("addcdiv", ternary_samples() + [S(T(2, 3), T(3), T(2, 1), value=0.5)],
           ref=lambda a, b, c, value=1: a + value * b / c, domain=POS),
    # reductions
    OpInfo("sum", reduce_samples() + [S(T(0))], ref=np.sum, dtypes=NUMERIC),
    OpInfo("sum.dim_IntList", reduce_samples(True) + [S(T(2, 3, 2), [0, 2]), S(T(0, 3), 0)],
           ref=lambda a, dim, keepdim=False: np.sum(a, axis=_axis(dim), keepdims=keepdim),
           dtypes=NUMERIC),
    OpInfo("nansum", [S(T(2, 3)), S(T(2, 3), 1, True), S(T(3, 2, layout="transposed"), [0])],
           ref=lambda a, dim=None, keepdim=False: np.nansum(a, axis=_axis(dim), keepdims=keepdim)),
    OpInfo("mean", reduce_samples(), ref=np.mean),
    OpInfo("mean.dim", reduce_samples(True) + [S(T(2, 3, 2), [0, 2])],
           ref=lambda a, dim, keepdim=False: np.mean(a, axis=_axis(dim), keepdims=keepdim)),
    OpInfo("prod", reduce_samples(), ref=np.prod, domain=POS, dtypes=NUMERIC),
    OpInfo("prod.dim_int", reduce_samples(True),
           ref=lambda a, dim, keepdim=False: np.prod(a, axis=dim, keepdims=keepdim)),
    OpInfo("amax", [S(T(2, 3, 2), 1), S(T(2, 3)), S(T(2, 3, 2), [0, 2], True)],
           ref=lambda a, dim=(), keepdim=False: np.amax(a, axis=_axis(dim) or None,
                                                        keepdims=keepdim), dtypes=NUMERIC),
    OpInfo("amin", [S(T(2, 3, 2), 1), S(T(2, 3)), S(T(2, 3, 2), [0, 2], True)],
           ref=lambda a, dim=(), keepdim=False: np.amin(a, axis=_axis(dim) or None,
                                                        keepdims=keepdim), dtypes=NUMERIC),
    OpInfo("max", reduce_samples(), ref=np.max, dtypes=NUMERIC),
    OpInfo("min", reduce_samples(), ref=np.min, dtypes=NUMERIC),
    OpInfo("max.dim", reduce_samples(True),
           ref=lambda a, dim, keepdim=False: (np.max(a, axis=dim, keepdims=keepdim),),
           dtypes=NUMERIC),
    OpInfo("min.dim", reduce_samples(True),
           ref=lambda a, dim, keepdim=False: (np.min(a, axis=dim, keepdims=keepdim),),
           dtypes=NUMERIC),
    OpInfo("aminmax", [S(T(2, 3)), S(T(2, 3), dim=1), S(T(2, 3), dim=0, keepdim=True)],
           ref=lambda a, dim=None, keepdim=False: (
               np.amin(a, axis=dim, keepdims=keepdim), np.amax(a, axis=dim, keepdims=keepdim)),
           dtypes=NUMERIC),
    OpInfo("var", [S(T(2, 3)), S(T(2, 3), False)],
           ref=lambda a, unbiased=True: _np_var(a, None, unbiased)),
    OpInfo("var.dim", [S(T(2, 3), [1]), S(T(3, 2, layout="transposed"), [0], True, True)],
           ref=_np_var),
    OpInfo("var.correction", [S(T(2, 3, 2), [0, 2], correction=0), S(T(2, 3)),
                              S(T(4, 3), [0], correction=2, keepdim=True)],
           ref=lambda a, dim=None, correction=None, keepdim=False: _np_var(
               a, dim, True, keepdim, correction)),
    OpInfo("std", [S(T(2, 3)), S(T(2, 3), False)],
           ref=lambda a, unbiased=True: _np_std(a, None, unbiased)),
    OpInfo("std.dim", [S(T(2, 3), [1]), S(T(3, 2, layout="transposed"), [0], True, True)],
           ref=_np_std),
    OpInfo("std.correction", [S(T(2, 3, 2), [0, 2], correction=0), S(T(2, 3)),
                              S(T(4, 3), [0], correction=2, keepdim=True)],
           ref=lambda a, dim=None, correction=None, keepdim=False: _np_std(
               a, dim, True, keepdim, correction)),
    OpInfo("var_mean", [S(T(2, 3)), S(T(2, 3), False)],
           ref=lambda a, unbiased=True: (_np_var(a, None, unbiased), np.mean(a))),
    OpInfo("var_mean.dim", [S(T(2, 3), [1]), S(T(2, 3), [1], True, True)],
           ref=lambda a, dim, unbiased=True, keepdim=False: (
               _np_var(a, dim, unbiased, keepdim), np.mean(a, axis=_axis(dim), keepdims=keepdim))),
    OpInfo("var_mean.correction", [S(T(2, 3), [0], correction=0), S(T(2, 3))],
           ref=lambda a, dim=None, correction=None, keepdim=False: (
               _np_var(a, dim, True, keepdim, correction),
               np.mean(a, axis=_axis(dim), keepdims=keepdim))),
    OpInfo("std_mean", [S(T(2, 3)), S(T(2, 3), False)],
           ref=lambda a, unbiased=True: (_np_std(a, None, unbiased), np.mean(a))),
    OpInfo("std_mean.dim", [S(T(2, 3), [1]), S(T(2, 3), [1], True, True)],
           ref=lambda a, dim, unbiased=True, keepdim=False: (
               _np_std(a, dim, unbiased, keepdim), np.mean(a, axis=_axis(dim), keepdims=keepdim))),
    OpInfo("std_mean.correction", [S(T(2, 3), [0], correction=0), S(T(2, 3))],
           ref=lambda a, dim=None, correction=None, keepdim=False: (
               _np_std(a, dim, True, keepdim, correction),
               np.mean(a, axis=_axis(dim), keepdims=keepdim))),
    OpInfo("norm.Scalar", [S(T(2, 3)), S(T(2, 3), 1), S(T(2, 3), 3), S(T(2, 3), float("inf")),
                           S(T(2, 3, low=0.5), 0.5)],
           ref=lambda a, p=2: np.linalg.norm(a.ravel(), p)),
    OpInfo("norm.ScalarOpt_dim", [S(T(2, 3), 2, [1]), S(T(2, 3), 3, [0], True),
                                  S(T(2, 3), float("-inf"), [1])],
           ref=lambda a, p, dim, keepdim=False: np.linalg.norm(a, p, axis=dim[0],
                                                               keepdims=keepdim)),
    OpInfo("logsumexp", [S(T(2, 3), [1]), S(T(2, 3), [0, 1], True),
                         S(T(3, 2, layout="transposed"), [0])],
           ref=lambda a, dim, keepdim=False: np.log(np.sum(np.exp(a), axis=_axis(dim),
                                                           keepdims=keepdim))),
    OpInfo("cumsum", [S(T(2, 3), 1), S(T(3, 2, layout="transposed"), 0), S(T(), 0), S(T(0), 0)],
           ref=lambda a, dim: np.cumsum(a, axis=dim) if a.ndim else a, dtypes=NUMERIC),
    OpInfo("cumprod", [S(T(2, 3), 1), S(T(3, 2, layout="transposed"), 0), S(T(), 0)],
           ref=lambda a, dim: np.cumprod(a, axis=dim) if a.ndim else a, dtypes=NUMERIC),
    OpInfo("logcumsumexp", [S(T(2, 3), 1), S(T(3, 2, layout="transposed"), 0)],
           ref=lambda a, dim: np.log(np.cumsum(np.exp(a), axis=dim))),
    OpInfo("cummax", [S(T(2, 3), 1), S(T(4, layout="sliced"), 0)],
           ref=lambda a, dim: np.maximum.accumulate(a, axis=dim), dtypes=NUMERIC),
    OpInfo("cummin", [S(T(2, 3), 1), S(T(4, layout="sliced"), 0)],
           ref=lambda a, dim: np.minimum.accumulate(a, axis=dim), dtypes=NUMERIC),
    OpInfo("linalg_vector_norm", [S(T(2, 3)), S(T(2, 3), 1, [1]), S(T(2, 3), 3, [0], True),
                                  S(T(2, 3), float("inf"))],
           ref=lambda a, ord=2, dim=None, keepdim=False: np.linalg.norm(
               a.ravel() if dim is None else a, ord, axis=None if dim is None else dim[0],
               keepdims=keepdim and dim is not None)),
    OpInfo("renorm", [S(T(3, 2), 2, 0, 1.0), S(T(2, 3), 1, 1, 0.5)], ref=_np_renorm),
    OpInfo("_cdist_forward", [S(T(3, 2), T(2, 2), 2.0, None), S(T(3, 2), T(4, 2), 1.0, None),
                              S(T(3, 3), T(4, 3), math.inf, None), S(T(2, 3), T(4, 3), 3.0, None)],
           ref=lambda a, b, p, mode: np.linalg.norm(a[:, None] - b[None], p, axis=-1),
           gradgrad="PyTorch's _cdist_backward has no derivative"),
    OpInfo("_pdist_forward", [S(T(4, 3), 2.0), S(T(3, 2), 1.0), S(T(4, 3), math.inf),
                              S(T(3, 3), 3.0), S(T(1, 2), 2.0)],
           ref=lambda a, p=2.0: np.linalg.norm(
               (a[:, None] - a[None])[np.triu_indices(a.shape[0], 1)], p, axis=-1),
           gradgrad="PyTorch's _pdist_backward has no derivative"),
]


def _np_slice(a, dim=0, start=None, end=None, step=1):
    idx = [slice(None)] * a.ndim
    idx[dim] = slice(start, end, step)
    return a[tuple(idx)]


def _np_split(a, split_size, dim=0):
    n = a.shape[dim]
    if isinstance(split_size, int):
        cuts = list(range(split_size, n, split_size))
    else:
        cuts = list(np.cumsum(split_size)[:-1])
    return tuple(np.split(a, cuts, axis=dim))


ENTRIES += [
    # views and shapes
    OpInfo("view", [S(T(2, 3), [3, 2]), S(T(2, 3), [-1]), S(T(), [1]), S(T(0, 2), [2, 0])],
           ref=lambda a, size: a.reshape(size), dtypes=ALL_DTYPES),
    OpInfo("view.dtype", [S(T(2, 4), ptl.int16), S(T(3, 2), ptl.float32),
                          S(T(2, 3, layout="transposed"), ptl.int32), S(T(2, 3), ptl.uint8),
                          S(T(0, 2), ptl.int64), S(T(2, 4), ptl.int64)],
           ref=lambda a, dt: np.ascontiguousarray(a).view(
               {ptl.int16: np.int16, ptl.float32: np.float32, ptl.int32: np.int32,
                ptl.uint8: np.uint8, ptl.int64: np.int64}[dt]), dtypes=[ptl.int32],
           errors=[(S(T(2, 3), ptl.float64), RuntimeError),
                   (S(T(3, 2, layout="transposed"), ptl.int16), RuntimeError)]),
    OpInfo("view_as", [S(T(2, 3), C(3, 2))], ref=lambda a, b: a.reshape(b.shape)),
    OpInfo("reshape", [S(T(2, 3), [3, 2]), S(T(3, 2, layout="transposed"), [-1]),
                       S(T(), [1, 1]), S(T(0, 3), [3, 0])],
           ref=lambda a, shape: a.reshape(shape), dtypes=ALL_DTYPES),
    OpInfo("reshape_as", [S(T(3, 2, layout="transposed"), C(6))],
           ref=lambda a, b: a.reshape(b.shape)),
    OpInfo("as_strided", [S(T(3, 4), [2, 2], [1, 3], 1), S(T(5), [3, 3], [1, 1])],
           ref=lambda a, size, stride, off=0: np.lib.stride_tricks.as_strided(
               a.ravel()[off:], size, [s * 8 for s in stride])),
    OpInfo("transpose.int", [S(T(2, 3), 0, 1), S(T(2, 3, 4), -1, 0), S(T(), 0, -1)],
           ref=lambda a, d0, d1: np.swapaxes(a, d0, d1) if a.ndim else a, dtypes=ALL_DTYPES),
    OpInfo("swapaxes", [S(T(2, 3, 2), 0, 2)], ref=np.swapaxes),
    OpInfo("swapdims", [S(T(2, 3, 2), 1, -1)], ref=np.swapaxes),
    OpInfo("t", [S(T(2, 3)), S(T(3)), S(T())], ref=np.transpose, dtypes=ALL_DTYPES),
    OpInfo("permute", [S(T(2, 3, 4), [2, 0, 1]), S(T(), []), S(T(0, 2), [1, 0])],
           ref=np.transpose, dtypes=ALL_DTYPES),
    OpInfo("movedim.int", [S(T(2, 3, 2), 0, -1)], ref=np.moveaxis),
    OpInfo("movedim.intlist", [S(T(2, 3, 2), [0, 1], [2, 0])], ref=np.moveaxis),
    OpInfo("moveaxis.int", [S(T(2, 3, 2), 2, 0)], ref=np.moveaxis),
    OpInfo("expand", [S(T(3, 1), [2, 3, 4]), S(T(), [2]), S(T(3), [-1])],
           ref=lambda a, size: np.broadcast_to(
               a, [a.shape[i - len(size) + a.ndim] if s == -1 else s
                   for i, s in enumerate(size)]), dtypes=ALL_DTYPES),
    OpInfo("expand_as", [S(T(3, 1), C(2, 3, 4))], ref=lambda a, b: np.broadcast_to(a, b.shape)),
    OpInfo("broadcast_to", [S(T(3), [2, 3])], ref=np.broadcast_to),
    OpInfo("squeeze", [S(T(2, 1, 3)), S(T())], ref=np.squeeze),
    OpInfo("squeeze.dim", [S(T(2, 1, 3), 1), S(T(2, 3), 0)],
           ref=lambda a, d: np.squeeze(a, d) if a.shape[d] == 1 else a),
    OpInfo("squeeze.dims", [S(T(1, 1, 3), [0, 1])], ref=lambda a, d: np.squeeze(a, tuple(d))),
    OpInfo("unsqueeze", [S(T(2, 3), 1), S(T(), 0), S(T(2, 3), -1)], ref=np.expand_dims,
           dtypes=ALL_DTYPES),
    OpInfo("flatten.using_ints", [S(T(3, 2, layout="transposed")), S(T(2, 3, 2), 1, 2),
                                  S(T())],
           ref=lambda a, s=0, e=-1: a.reshape(-1) if a.ndim <= 1 or (s, e) == (0, -1)
           else a.reshape(a.shape[:s] + (-1,) + a.shape[e + 1:])),
    OpInfo("unflatten.int", [S(T(3, 4), 1, [2, 2])],
           ref=lambda a, d, sizes: a.reshape(a.shape[:d] + tuple(sizes) + a.shape[d + 1:])),
    OpInfo("narrow", [S(T(2, 4), 1, 1, 2), S(T(4, layout="sliced"), 0, 0, 3)],
           ref=lambda a, d, s, n: _np_slice(a, d, s, s + n)),
    OpInfo("select.int", [S(T(2, 3), 1, 2), S(T(3), 0, -1), S(T(2, 3, 2), 0, 0)],
           ref=lambda a, d, i: np.take(a, i, axis=d), dtypes=ALL_DTYPES),
    OpInfo("slice.Tensor", [S(T(5, 2), 0, 1, 4, 2), S(T(2, 5), 1, None, None, 1),
                            S(T(3), 0, 0, 0, 1)],
           ref=_np_slice, dtypes=ALL_DTYPES),
    OpInfo("unbind.int", [S(T(2, 3), 1), S(T(3, 2), 0)],
           ref=lambda a, d=0: tuple(np.moveaxis(a, d, 0))),
    OpInfo("split.Tensor", [S(T(2, 5), 2, 1), S(T(4, 2), 3)], ref=_np_split),
    OpInfo("split.sizes", [S(T(2, 4), [1, 3], 1)], ref=_np_split),
    OpInfo("split_with_sizes", [S(T(3, 2), [2, 1], 0)], ref=_np_split),
    OpInfo("chunk", [S(T(2, 5), 2, 1), S(T(4), 2)],
           ref=lambda a, n, dim=0: _np_split(a, -(-a.shape[dim] // n), dim)),
    OpInfo("contiguous", [S(T(3, 2, layout="transposed")), S(T())], ref=np.copy,
           grad_samples=[S(T(3, 2, layout="transposed"))]),
    OpInfo("clone", [S(T(3, 2, layout="transposed")), S(T()), S(T(0))], ref=np.copy,
           dtypes=ALL_DTYPES),
    OpInfo("alias", [S(T(2, 3))], ref=lambda a: a),
    OpInfo("detach", [S(T(2, 3))], ref=lambda a: a, grad="none"),
    OpInfo("_to_copy", [S(T(2, 3)), S(T(3, 2, layout="transposed"), dtype=ptl.float32)],
           ref=lambda a, dtype=None: a.astype(np.float32).astype(np.float64)
           if dtype == ptl.float32 else a,
           grad_samples=[S(T(2, 3)), S(T(3, 2, layout="transposed"), dtype=ptl.float64)]),
    PinnedOpInfo("_pin_memory", [S(T(2, 3)), S(T(3, 2, layout="transposed")), S(T()), S(T(0))],
                 ref=np.copy, dtypes=ALL_DTYPES),
    OpInfo("copy_", [S(T(2, 3), T(2, 3)), S(T(2, 3), T(3)), S(T(), T())],
           ref=lambda a, b: np.broadcast_to(b, a.shape).copy(), dtypes=NUMERIC),
    OpInfo("fill_.Scalar", [S(T(2, 3), 1.5), S(T(), -1)],
           ref=lambda a, v: np.full_like(a, v), dtypes=NUMERIC),
    OpInfo("fill_.Tensor", [S(T(2, 3), T()), S(T(3), T())],
           ref=lambda a, v: np.full_like(a, v)),
    OpInfo("zero_", [S(T(2, 3)), S(T())], ref=np.zeros_like, dtypes=NUMERIC),
    OpInfo("set_.source_Tensor", [S(T(2, 3), T(4)), S(T(), T(3, 2, layout="transposed"))],
           ref=lambda a, b: b, dtypes=ALL_DTYPES, grad="error",
           errors=[(S(T(2), T(2, dtype=ptl.int64)), RuntimeError)]),
    # shrinking and same-numel sizes only: elements past the old ones are uninitialised
    OpInfo("resize_", [S(T(2, 3), [3, 2]), S(T(2, 3), [4]), S(T(2, 3), []), S(T(0), [0, 3])],
           ref=lambda a, size: a.reshape(-1)[:math.prod(size)].reshape(size), dtypes=ALL_DTYPES,
           grad="none"),
    OpInfo("resize_as_", [S(T(2, 3), T(3, 2)), S(T(2, 3), T(5))],
           ref=lambda a, b: a.reshape(-1)[:b.size].reshape(b.shape), dtypes=NUMERIC,
           grad="none"),
    OpInfo("flip", [S(T(2, 3), [0]), S(T(2, 3, 2), [0, 2])],
           ref=lambda a, dims: np.flip(a, tuple(dims)), dtypes=NUMERIC),
    OpInfo("roll", [S(T(2, 3), [1], [1]), S(T(2, 3), [2]), S(T(2, 3), [1, -1], [0, 1])],
           ref=lambda a, shifts, dims=(): np.roll(a, tuple(shifts), tuple(dims) or None)),
    OpInfo("rot90", [S(T(2, 3)), S(T(2, 3), 2), S(T(2, 3, 2), -1, [1, 2])],
           ref=lambda a, k=1, dims=(0, 1): np.rot90(a, k, tuple(dims))),
    OpInfo("repeat", [S(T(2, 3), [2, 1]), S(T(3), [2, 1, 2]), S(T(), [3])],
           ref=lambda a, r: np.tile(a, r)),
    OpInfo("tril", [S(T(3, 3)), S(T(2, 3, 4), 1), S(T(3, 4), -1)], ref=np.tril, dtypes=NUMERIC),
    OpInfo("triu", [S(T(3, 3)), S(T(2, 3, 4), 1), S(T(3, 4), -1)], ref=np.triu, dtypes=NUMERIC),
    OpInfo("diag_embed", [S(T(2, 3)), S(T(3), 1), S(T(2, 2), -1, 0, 2)]),
    OpInfo("diagonal", [S(T(3, 4)), S(T(3, 4), 1), S(T(2, 3, 3), 0, 1, 2)],
           ref=lambda a, o=0, d1=0, d2=1: np.diagonal(a, o, d1, d2)),
    OpInfo("trace", [S(T(3, 4)), S(T(3, 3))], ref=np.trace),
    OpInfo("unfold", [S(T(2, 5), 1, 2, 1), S(T(6), 0, 3, 2)], ref=_np_unfold),
    OpInfo("unfold_backward", [S(T(2, 4, 2), [2, 5], 1, 2, 1), S(T(2, 3), [6], 0, 3, 2)]),
    OpInfo("linalg_cross", [S(T(2, 3), T(2, 3)), S(T(3, 2), T(3, 2), dim=0), S(T(2, 3), T(1, 3))],
           ref=lambda a, b, dim=-1: np.cross(a, b, axis=dim)),
    OpInfo("cat", [S([T(2, 3), T(1, 3)]), S([T(2, 3), T(2, 2, layout="transposed")], 1),
                   S([T(2, 3), T(0)], 0)],
           ref=lambda ts, dim=0: np.concatenate([t for t in ts if t.shape != (0,)], dim),
           dtypes=NUMERIC),
    OpInfo("concat", [S([T(2, 3), T(1, 3)], -2)], ref=lambda ts, dim=0: np.concatenate(ts, dim)),
    OpInfo("stack", [S([T(2, 3), T(2, 3)], 1), S([T(), T()])],
           ref=lambda ts, dim=0: np.stack(ts, dim)),
    OpInfo("hstack", [S([T(2, 3), T(2, 1)]), S([T(3), T()])],
           ref=lambda ts: np.hstack(ts)),
    OpInfo("vstack", [S([T(3), T(2, 3)])], ref=lambda ts: np.vstack(ts)),
]


def _np_index_add(a, dim, index, src, alpha=1):
    out = a.copy()
    for k, i in enumerate(index):
        sl = [slice(None)] * a.ndim
        sl[dim] = i
        sk = [slice(None)] * a.ndim
        sk[dim] = k
        out[tuple(sl)] += alpha * src[tuple(sk)]
    return out


def _np_gather(a, dim, index):
    return np.take_along_axis(a, index, dim)


def _f64(*shape, seed):
    """The float64 tensor T(*shape, seed=seed) makes, for outputs a sample needs (indices,
    statistics, workspaces) computed once here."""
    return T(*shape, seed=seed).make(ptl.float64, (-2.0, 2.0), seed)[0]


def _values_of(t):
    """A constant spec holding t's values (in the sample's dtype when t is floating)."""
    return T(values=t.tolist(), dtype=None if t.is_floating_point() else t.dtype, grad=False)


def _maxpool_indices(shape, kernel, seed):
    """The indices max_pool*_with_indices gives for T(*shape, seed=seed)."""
    f = aten.max_pool2d_with_indices if len(kernel) == 2 else aten.max_pool3d_with_indices
    return f(_f64(*shape, seed=seed), kernel)[1]


ENTRIES += [
    # linear algebra
    OpInfo("mm", [S(T(2, 3), T(3, 4)), S(T(2, 3, layout="transposed"), T(3, 2)),
                  S(T(0, 3), T(3, 2))], ref=np.matmul, dtypes=NUMERIC),
    OpInfo("bmm", [S(T(2, 2, 3), T(2, 3, 2)), S(T(2, 1, 3), T(2, 3, 0))], ref=np.matmul),
    OpInfo("matmul", [S(T(3), T(3)), S(T(2, 3), T(3)), S(T(3), T(2, 3, 2)),
                      S(T(2, 1, 2, 3), T(3, 3, 2)), S(T(2, 3), T(2, 3, 2))], ref=np.matmul),
    OpInfo("dot", [S(T(3), T(3)), S(T(0), T(0))], ref=np.dot, dtypes=NUMERIC),
    OpInfo("vdot", [S(T(3), T(3)), S(T(3, layout="sliced"), T(3))], ref=np.vdot),
    OpInfo("mv", [S(T(2, 3, layout="transposed"), T(3)), S(T(2, 3), T(3))], ref=np.matmul),
    OpInfo("outer", [S(T(2), T(3))], ref=np.outer),
    OpInfo("addmm", [S(T(3), T(2, 4), T(4, 3), beta=0.5, alpha=2), S(T(2, 3), T(2, 4), T(4, 3))],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("addmv", [S(T(1), T(2, 3, layout="transposed"), T(3), alpha=-1),
                     S(T(2), T(2, 3), T(3))],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("baddbmm", [S(T(2, 1), T(2, 2, 3), T(2, 3, 1), beta=2),
                       S(T(2, 2, 1), T(2, 2, 3), T(2, 3, 1))],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    # the in-place products: self already has the product's shape (it does not broadcast)
    OpInfo("addmm_", [S(T(2, 3), T(2, 4), T(4, 3), beta=0.5, alpha=2),
                      S(T(3, 2, layout="transposed"), T(3, 4, layout="transposed"), T(4, 2)),
                      S(T(2, 3), T(2, 0), T(0, 3), beta=2)],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("addmv_", [S(T(2), T(2, 3, layout="transposed"), T(3), alpha=-1),
                      S(T(4, layout="sliced"), T(4, 3), T(3), beta=0.5)],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("baddbmm_", [S(T(2, 2, 1), T(2, 2, 3), T(2, 3, 1), beta=2),
                        S(T(2, 3, 2), T(2, 3, 4), T(2, 4, 2), alpha=-0.5)],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("addbmm", [S(T(3), T(2, 2, 4), T(2, 4, 3), beta=0.5, alpha=2),
                      S(T(2, 3), T(2, 2, 4), T(2, 4, 3)), S(T(2, 3), T(0, 2, 4), T(0, 4, 3))],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b).sum(0)),
    OpInfo("addbmm_", [S(T(2, 3), T(2, 2, 4), T(2, 4, 3), beta=0.5, alpha=2),
                       S(T(2, 3), T(0, 2, 4), T(0, 4, 3), beta=2)],
           ref=lambda s, a, b, beta=1, alpha=1: beta * s + alpha * (a @ b).sum(0)),
    # out_dtype overloads (the input's dtype here; float16 -> float32: test_linalg_out_dtype)
    OpInfo("mm.dtype", [S(T(2, 3), T(3, 4), DTYPE), S(T(0, 3), T(3, 2), DTYPE)],
           ref=lambda a, b, dt: a @ b, dtypes=NUMERIC),
    OpInfo("bmm.dtype", [S(T(2, 2, 3), T(2, 3, 2), DTYPE)], ref=lambda a, b, dt: a @ b),
    OpInfo("addmm.dtype", [S(T(3), T(2, 4), T(4, 3), DTYPE, beta=0.5, alpha=2)],
           ref=lambda s, a, b, dt, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("baddbmm.dtype", [S(T(2, 1), T(2, 2, 3), T(2, 3, 1), DTYPE, beta=2)],
           ref=lambda s, a, b, dt, beta=1, alpha=1: beta * s + alpha * (a @ b)),
    OpInfo("_linalg_svd", [S(T(3, 2)), S(T(2, 3), full_matrices=False)]),
    # sorting and selection (distinct random values: no ties)
    OpInfo("sort", [S(T(2, 3)), S(T(2, 3), 0, True), S(T(4, layout="sliced"))],
           ref=lambda a, dim=-1, descending=False: (
               -np.sort(-a, axis=dim) if descending else np.sort(a, axis=dim),),
           dtypes=NUMERIC),
    OpInfo("sort.stable", [S(T(2, 3), stable=True), S(T(2, 3), stable=False, dim=0,
                                                       descending=True)],
           ref=lambda a, stable, dim=-1, descending=False: (
               -np.sort(-a, axis=dim) if descending else np.sort(a, axis=dim),)),
    OpInfo("topk", [S(T(2, 4), 2), S(T(2, 4), 1, 0, False)],
           ref=lambda a, k, dim=-1, largest=True, sorted=True: (
               (-np.sort(-a, axis=dim) if largest else np.sort(a, axis=dim)).take(
                   range(k), axis=dim),)),
    OpInfo("kthvalue", [S(T(2, 4), 2), S(T(3, 2), 1, 0, True)],
           ref=lambda a, k, dim=-1, keepdim=False: (
               np.take(np.sort(a, axis=dim), [k - 1] if keepdim else k - 1, axis=dim),)),
    OpInfo("median", [S(T(2, 3)), S(T(4))], ref=lambda a: np.sort(a.ravel())[(a.size - 1) // 2]),
    OpInfo("median.dim", [S(T(2, 3), 1), S(T(3, 2), 0, True)],
           ref=lambda a, dim, keepdim=False: (np.take(
               np.sort(a, axis=dim), [(a.shape[dim] - 1) // 2] if keepdim
               else (a.shape[dim] - 1) // 2, axis=dim),)),
    OpInfo("nanmedian", [S(T(2, 3))], ref=lambda a: np.sort(a.ravel())[(a.size - 1) // 2]),
    OpInfo("nanmedian.dim", [S(T(2, 3), 1)],
           ref=lambda a, dim, keepdim=False: (np.sort(a, axis=dim).take(
               (a.shape[dim] - 1) // 2, axis=dim),)),
    OpInfo("mode", [S(T(values=[[1.0, 2.0, 2.0], [3.0, 3.0, 0.5]])),
                    S(T(values=[[1.0, 2.0], [1.0, 3.0]]), 0)],
           ref=_np_mode,
           grad_samples=[S(T(2, 3)), S(T(3, 2), 0)],
           note="with ties the mode jumps under any perturbation: gradcheck runs on distinct "
                "values (whose mode is the smallest)"),
    # indexing
    OpInfo("index.Tensor", [S(T(3, 4), [I([0, 2, 0])]), S(T(3, 4), [None, I([1, 3])]),
                            S(T(3, 4), [M([True, False, True])]),
                            S(T(3, 4), [I([0, 1]), I([2, 3])])],
           ref=lambda a, idx: a[tuple(slice(None) if i is None else i for i in idx)]),
    OpInfo("index_put", [S(T(3, 4), [I([0, 2])], T(2, 4)),
                         S(T(3, 4), [I([0, 0])], T(4), True),
                         S(T(3, 4), [M([True, False, True])], T(1))],
           ref=_np_index_put),
    OpInfo("index_select", [S(T(3, 4), 0, I([0, 2, 0])), S(T(3, 4), 1, I([3])),
                            S(T(3, 4, layout="transposed"), 1, I([]))],
           ref=lambda a, dim, index: np.take(a, index, axis=dim), dtypes=NUMERIC),
    OpInfo("index_add", [S(T(3, 4), 0, I([0, 2, 0]), T(3, 4)),
                         S(T(3, 4), 1, I([1, 3]), T(3, 2), alpha=2)],
           ref=_np_index_add),
    OpInfo("index_copy", [S(T(3, 4), 0, I([2, 0]), T(2, 4)), S(T(3, 4), 1, I([3]), T(3, 1))],
           ref=_np_index_copy),
    OpInfo("index_fill.int_Scalar", [S(T(3, 4), 0, I([0, 2]), 1.5), S(T(3, 4), 1, I([3]), -1)],
           ref=_np_index_fill),
    OpInfo("index_fill.int_Tensor", [S(T(3, 4), 0, I([0, 2]), T()), S(T(3, 4), 1, I([3]), T())],
           ref=_np_index_fill),
    OpInfo("gather", [S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]])), S(T(3, 4), 0, I([[2, 1, 0, 0]]))],
           ref=_np_gather, dtypes=NUMERIC),
    OpInfo("scatter.src", [S(T(3, 4), 1, I([[0, 1], [3, 2], [2, 0]]), T(3, 2)),
                           S(T(3, 4), 0, I([[2, 1, 0, 1]]), T(1, 4))], ref=_np_scatter),
    OpInfo("scatter.value", [S(T(3, 4), 1, I([[0, 1], [3, 2], [2, 0]]), 1.5)], ref=_np_scatter),
    OpInfo("scatter.reduce", [S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), reduce="add"),
                              S(T(3, 4), 0, I([[2, 1, 0, 1]]), T(1, 4), reduce="multiply")],
           grad="error", note="derivatives.yaml: scatter with reduce= has no derivative"),
    OpInfo("scatter.value_reduce", [S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), 1.5,
                                      reduce="add")],
           grad="error", note="derivatives.yaml: scatter with reduce= has no derivative"),
    OpInfo("scatter_add", [S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2)),
                           S(T(3, 4), 0, I([[2, 1, 0, 1], [2, 0, 0, 1]]), T(2, 4))],
           ref=_np_scatter_add),
    OpInfo("scatter_reduce.two",
           [S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "sum"),
            S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "prod", include_self=False),
            S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "mean"),
            S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "amax"),
            S(T(3, 4), 0, I([[2, 1, 0, 1]]), T(1, 4), "amin", include_self=False)],
           grad_samples=[
               S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "sum"),
               S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "prod", include_self=False),
               S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "mean"),
               S(T(3, 4), 1, I([[0, 1], [3, 3], [2, 0]]), T(3, 2), "amax")]),
    OpInfo("masked_fill.Scalar", [S(T(2, 3), M([[True, False, True], [False, False, True]]), 2),
                                  S(T(2, 3), M([True, False, False]), -1)],
           ref=lambda a, m, v: np.where(m, v, a), dtypes=NUMERIC),
    OpInfo("masked_fill.Tensor", [S(T(2, 3), M([[True, False, True], [False, False, True]]),
                                    T())],
           ref=lambda a, m, v: np.where(m, v, a)),
    OpInfo("masked_scatter", [S(T(2, 3), M([[True, False, True], [False, False, True]]), T(2, 3)),
                              S(T(2, 3), M([True, False, True]), T(5))],
           ref=_np_masked_scatter),
    OpInfo("take", [S(T(3, 4), I([0, 11, 5])), S(T(3, 4, layout="transposed"), I([[1, 2]]))],
           ref=lambda a, i: np.take(a, i)),
    OpInfo("embedding", [S(T(4, 3), I([0, 2, 0])), S(T(4, 3), I([[1, 3], [3, 0]]), 0)],
           ref=lambda w, i, padding_idx=-1: w[i],
           grad_samples=[S(T(4, 3), I([0, 2, 0]))],
           note="padding_idx's row gets no gradient (PyTorch's rule), so finite differences "
                "disagree there by design: gradcheck runs without padding_idx"),
    OpInfo("_ptl_embedding_bag", [S(T(5, 3), I([0, 2, 0, 4]), I([0, 2, 4]), None, 3),
                                  S(T(5, 3, layout="transposed"), I([1, 3, 3]), I([0, 0, 1, 3]),
                                    T(3), 3),
                                  S(T(5, 3), I([]), I([0, 0]), None, 2),
                                  S(T(5, 3), I([]), I([]), None, 0),
                                  S(T(5, 3), I([4, 0, 4, 1]), I([0, 0, 2, 4]), None, 4, True)],
           ref=_np_embedding_bag,
           errors=[(S(T(5, 3), I([0, 1]), I([0, 1]), None, 3), RuntimeError),
                   (S(T(5, 3), I([0, 1]), I([0, 1, 1]), None, 2), RuntimeError),
                   (S(T(5, 3), I([0, 1]), I([]), None, 0), RuntimeError),
                   (S(T(5, 3), I([0, 1]), I([1, 1]), None, 2), RuntimeError),
                   (S(T(5, 3), I([0, 1]), I([0, 2, 1]), None, 3), RuntimeError),
                   (S(T(5, 3), I([0, 5]), I([0, 1]), None, 2), IndexError)]),
    OpInfo("_ptl_embedding_bag_offsets", [S(I([0, 2, 2, 5]), 7), S(I([0, 3, 6]), 6, True),
                                          S(I([]), 4), S(I([0]), 3, True)],
           ref=_np_bags_of_offsets, grad="none",
           errors=[(S(I([1, 3]), 4), RuntimeError), (S(I([0, 5]), 4), RuntimeError),
                   (S(I([0, 3, 2]), 4), RuntimeError)]),
    OpInfo("embedding_dense_backward", [S(T(3, 2), I([0, 2, 0]), 4, -1, False),
                                        S(T(3, 2), I([0, 2, 0]), 4, 0, True)],
           ref=_np_embedding_backward),
]


def _np_softmax(a, dim):
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _np_binary_cross_entropy(a, t, w=None, reduction=1):
    loss = -(w if w is not None else 1) * (t * np.log(a) + (1 - t) * np.log(1 - a))
    return {0: loss, 1: loss.mean(), 2: loss.sum()}[reduction]


def _np_reg_loss(kind):
    """mse_loss / smooth_l1_loss / huber_loss(a, t, reduction=1, p=1.0) and their backward
    ops (go, a, t, reduction, p) in NumPy (p is beta / delta)."""
    def loss(d, p):
        z = np.abs(d)
        return {"mse": d * d, "smooth_l1": np.where(z < p, 0.5 * z * z / p, z - 0.5 * p),
                "huber": np.where(z < p, 0.5 * z * z, p * (z - 0.5 * p))}[kind]

    def grad(d, p):
        return {"mse": 2 * d, "smooth_l1": np.clip(d / p, -1, 1),
                "huber": np.clip(d, -p, p)}[kind]

    def forward(a, t, reduction=1, p=1.0):
        out = loss(a - t, p)
        mean = out.sum() / out.size if out.size else np.nan   # torch: the mean of none is nan
        return {0: out, 1: mean, 2: out.sum()}[reduction]

    def backward(go, a, t, reduction, p=1.0):
        d = a - np.broadcast_to(t, np.broadcast_shapes(a.shape, t.shape))
        return grad(d, p) * go / (d.size if reduction == 1 else 1)
    return forward, backward


def _reg_loss_entries(kind, p=None):
    """The OpInfos of a regression loss and its backward: every reduction, a target that
    broadcasts, non-contiguous, 0-dim and size-0 operands."""
    forward, backward = _np_reg_loss(kind)
    extra = () if p is None else (p,)
    return [
        OpInfo(f"{kind}_loss", [S(T(2, 3), T(2, 3)),
                                S(T(3, 2, layout="transposed"), C(3, 2), 0, *extra),
                                S(T(2, 3), T(3), 2, *extra), S(T(0, 3), T(0, 3), 1, *extra),
                                S(T(), T(), 1, *extra)],
               ref=forward),
        OpInfo(f"{kind}_loss_backward",
               [S(T(), T(2, 3), T(2, 3), 1, *extra),
                S(T(2, 3), T(2, 3, layout="transposed"), C(2, 3), 0, *extra),
                S(T(), T(2, 3), T(3), 2, *extra), S(T(), T(0, 3), T(0, 3), 1, *extra)],
               ref=backward),
    ]


def _grad_and_self(name, ref=None, domain=(-2.0, 2.0), extra=(), **kw):
    """An activation's backward op: (grad_output, self, *extra) on equal shapes."""
    return OpInfo(name, [S(T(2, 3), T(2, 3), *extra),
                         S(T(3, 2, layout="transposed"), T(3, 2), *extra)],
                  ref=ref, domain=domain, **kw)


ENTRIES += [
    # activations
    OpInfo("_gelu", [S(T(2, 3)), S(T(2, 3), 1)], ref=_np_gelu),
    OpInfo("gelu", [S(T(2, 3)), S(T(2, 3), approximate="tanh")], ref=_np_gelu, grad="none"),
    unary("silu", lambda a: a * _np_sigmoid(a)),
    unary("mish", lambda a: a * np.tanh(np.log1p(np.exp(a)))),
    OpInfo("elu", [S(T(2, 3)), S(T(2, 3), 0.5, 2.0, 1.5)],
           ref=lambda a, alpha=1, scale=1, input_scale=1: scale * np.where(
               a > 0, a, alpha * (np.exp(a * input_scale) - 1))),
    OpInfo("celu", [S(T(2, 3)), S(T(2, 3), 0.5)],
           ref=lambda a, alpha=1: np.maximum(a, 0) + np.minimum(
               0, alpha * (np.exp(a / alpha) - 1))),
    OpInfo("leaky_relu", [S(T(2, 3)), S(T(2, 3), 0.2)],
           ref=lambda a, s=0.01: np.where(a > 0, a, s * a)),
    OpInfo("hardtanh", [S(T(2, 3)), S(T(2, 3), -0.5, 0.5)],
           ref=lambda a, lo=-1, hi=1: np.clip(a, lo, hi)),
    OpInfo("softplus", [S(T(2, 3)), S(T(2, 3), 2, 1)],
           ref=lambda a, beta=1, th=20: np.where(a * beta > th, a,
                                                 np.log1p(np.exp(a * beta)) / beta)),
    unary("hardswish", lambda a: a * np.clip(a + 3, 0, 6) / 6, domain=(-4.0, 4.0)),
    unary("hardsigmoid", lambda a: np.clip(a + 3, 0, 6) / 6, domain=(-4.0, 4.0),
          gradgrad="hardsigmoid_backward has no derivative in PyTorch (NotImplemented)"),
    unary("log_sigmoid", lambda a: -np.log1p(np.exp(-a))),
    unary("log_sigmoid_forward", _np_log_sigmoid_forward, grad_outputs=lambda o: o[:1]),
    PairOutOpInfo("log_sigmoid_forward.output", unary_samples(), ref=_np_log_sigmoid_forward,
                  grad="none", out_of="log_sigmoid_forward", out_names=("output", "buffer")),
    OpInfo("softshrink", [S(T(2, 3)), S(T(2, 3), 1.0)],
           ref=lambda a, l=0.5: np.where(a > l, a - l, np.where(a < -l, a + l, 0))),
    OpInfo("hardshrink", [S(T(2, 3)), S(T(2, 3), 1.0)],
           ref=lambda a, l=0.5: np.where(np.abs(a) > l, a, 0)),
    OpInfo("threshold", [S(T(2, 3), 0.5, -1.0), S(T(2, 3), 0.0, 0.0)],
           ref=lambda a, th, v: np.where(a > th, a, v), dtypes=NUMERIC),
    OpInfo("_softmax", [S(T(2, 3), 1, False), S(T(3, 2, layout="transposed"), 0, False)],
           ref=lambda a, dim, h: _np_softmax(a, dim)),
    OpInfo("_log_softmax", [S(T(2, 3), 1, False), S(T(3, 2, layout="transposed"), 0, False)],
           ref=lambda a, dim, h: np.log(_np_softmax(a, dim))),
    OpInfo("softmax.int", [S(T(2, 3), 1), S(T(), 0)],
           ref=lambda a, dim, dtype=None: _np_softmax(a, dim)),
    OpInfo("log_softmax.int", [S(T(2, 3), 1)],
           ref=lambda a, dim, dtype=None: np.log(_np_softmax(a, dim))),
    _grad_and_self("gelu_backward", _np_gelu_backward),
    _grad_and_self("silu_backward", lambda go, a: go * _np_sigmoid(a) * (
        1 + a * (1 - _np_sigmoid(a)))),
    _grad_and_self("mish_backward", lambda go, a: go * (
        np.tanh(np.log1p(np.exp(a))) + a * _np_sigmoid(a) / np.cosh(np.log1p(np.exp(a))) ** 2)),
    OpInfo("elu_backward", [S(T(2, 3), 1.0, 1.0, 1.0, False, T(2, 3)),
                            S(T(2, 3), 0.5, 2.0, 1.0, False, T(2, 3))],
           ref=_np_elu_backward),
    _grad_and_self("leaky_relu_backward", lambda go, a, s, r: go * np.where(a > 0, 1, s),
                   extra=(0.2, False)),
    _grad_and_self("hardtanh_backward", lambda go, a, lo, hi: go * ((a > lo) & (a < hi)),
                   extra=(-1.0, 1.0)),
    _grad_and_self("softplus_backward", lambda go, a, beta, th: go * np.where(
        a * beta > th, 1, _np_sigmoid(a * beta)), extra=(1.0, 20.0)),
    _grad_and_self("hardswish_backward", lambda go, a: go * np.where(
        a < -3, 0, np.where(a <= 3, a / 3 + 0.5, 1)), domain=(-4.0, 4.0)),
    _grad_and_self("hardsigmoid_backward", lambda go, a: go * ((a > -3) & (a < 3)) / 6,
                   domain=(-4.0, 4.0), grad="error",
                   note="derivatives.yaml: hardsigmoid_backward is not differentiable"),
    OpInfo("log_sigmoid_backward",
           [S(T(2, 3), T(2, 3), C(2, 3, low=0.05, high=1)),
            S(T(3, 2, layout="transposed"), T(3, 2), C(3, 2, low=0.05, high=1)),
            S(T(2, 3), T(2, 3), C(3, low=0.05, high=1)), S(T(0, 3), T(0, 3), C(0, 3))],
           ref=lambda go, a, b: go * np.where(a < 0, 1, b) / (1 + b),
           grad_samples=[S(T(2, 3), T(2, 3, grad=False), C(2, 3, low=0.05, high=1))],
           note="self's derivative (log_sigmoid'', PyTorch's formula) holds for the forward's "
                "own buffer e^-|self| only: gradcheck differentiates grad_output, and "
                "tests/aten/test_log_sigmoid.py the composite twice"),
    _grad_and_self("softshrink_backward", lambda go, a, lambd: go * (np.abs(a) > lambd),
                   extra=(0.5,)),
    _grad_and_self("hardshrink_backward", lambda go, a, lambd: go * (np.abs(a) > lambd),
                   extra=(0.5,)),
    _grad_and_self("threshold_backward", lambda go, a, th: np.where(a > th, go, 0),
                   extra=(0.5,)),
    OpInfo("_softmax_backward_data", [S(T(2, 3), T(2, 3, low=0.1, high=0.9), 1, ptl.float64)],
           ref=_np_softmax_backward),
    OpInfo("_log_softmax_backward_data", [S(T(2, 3), T(2, 3, low=-2, high=-0.1), 1,
                                            ptl.float64)],
           ref=_np_log_softmax_backward),
    # losses
    OpInfo("nll_loss_nd", [S(T(3, 4), I([0, 3, 1])), S(T(3, 4), I([0, 3, 1]), C(4, low=0.5), 2),
                           S(T(3, 4), I([0, 3, 1]), None, 0, 3),
                           S(T(2, 3, 2), I([[0, 1], [2, 2]]))],
           ref=_np_nll_loss),
    OpInfo("nll_loss_nd_backward", [S(T(), T(3, 4), I([0, 3, 1]), None, 1, -100),
                                    S(T(3), T(3, 4), I([0, 3, 1]), C(4, low=0.5), 0, 1)],
           ref=_np_nll_loss_backward),
    OpInfo("binary_cross_entropy", [S(T(2, 3, low=0.1, high=0.9), C(2, 3, low=0, high=1)),
                                    S(T(3, low=0.1, high=0.9), C(3, low=0, high=1),
                                      C(3, low=0.5), 0)],
           ref=_np_binary_cross_entropy),
    OpInfo("binary_cross_entropy_backward",
           [S(T(), T(2, 3, low=0.1, high=0.9), C(2, 3, low=0, high=1)),
            S(T(3), T(3, low=0.1, high=0.9), C(3, low=0, high=1), C(3, low=0.5), 0)],
           ref=_np_bce_backward),
    *_reg_loss_entries("mse"),
    *_reg_loss_entries("smooth_l1", 0.5),
    *_reg_loss_entries("huber", 0.7),
]


def _np_constant_pad(a, pad, value):
    out = a
    for d in range(len(pad) // 2):
        axis = a.ndim - 1 - d
        lo, hi = pad[2 * d], pad[2 * d + 1]
        if lo < 0:
            out = np.take(out, range(-lo, out.shape[axis]), axis=axis)
            lo = 0
        if hi < 0:
            out = np.take(out, range(0, out.shape[axis] + hi), axis=axis)
            hi = 0
        width = [(0, 0)] * a.ndim
        width[axis] = (lo, hi)
        out = np.pad(out, width, constant_values=value)
    return out


def _np_standard_gamma_grad(alpha, x):
    """dx/dalpha of a Gamma(alpha, 1) sample at a fixed quantile: -(dP/dalpha) / (dP/dx) with
    dP/dalpha by central differences of the regularised incomplete gamma function P."""
    h = 1e-6 * np.maximum(alpha, 1.0)
    dp_da = (special.gammainc(alpha + h, x) - special.gammainc(alpha - h, x)) / (2 * h)
    log_pdf = (alpha - 1) * np.log(x) - x - special.gammaln(alpha)
    return -dp_da / np.exp(log_pdf)


def _np_dirichlet_grad(x, alpha, total):
    """dx/dalpha of a Beta(alpha, total - alpha) sample at a fixed quantile (beta held fixed)
    over 1 - x: -(dI/dalpha) / density / (1 - x), dI/dalpha by central differences of the
    regularised incomplete beta function I."""
    x, alpha, total = np.broadcast_arrays(x, alpha, total)
    beta = total - alpha
    h = 1e-6 * np.maximum(alpha, 1.0)
    di_da = (special.betainc(alpha + h, beta, x) - special.betainc(alpha - h, beta, x)) / (2 * h)
    log_pdf = ((alpha - 1) * np.log(x) + (beta - 1) * np.log1p(-x)
               - special.betaln(alpha, beta))
    return -di_da / np.exp(log_pdf) / (1 - x)


GRID_GG = ("its derivative, _grid_sampler_backward_backward, has no derivative (a third "
           "derivative of grid_sampler)")
RANDOM = ("a random op: derivatives.yaml gives zeros_like for every input, so the check is "
          "that the gradient is zeros and the node is the row's")
IN_PLACE_RANDOM = RANDOM + " (an in-place write: the old values' history is cut)"
_MP2 = _maxpool_indices((1, 2, 4, 4), [2, 2], 7)
_MP3 = _maxpool_indices((1, 1, 2, 4, 4), [2, 2, 2], 7)
_AMP = aten.adaptive_max_pool2d(_f64(1, 2, 4, 4, seed=7), [2, 2])[1]
_AMP3 = aten.adaptive_max_pool3d(_f64(1, 1, 3, 4, 4, seed=7), [2, 2, 2])[1]
_FMP2 = aten.fractional_max_pool2d(_f64(1, 2, 5, 5, seed=7), [2, 2], [3, 3],
                                   ptl.tensor([[[0.3, 0.8], [0.6, 0.1]]], dtype=ptl.float64))[1]
_FMP3 = aten.fractional_max_pool3d(_f64(1, 1, 4, 5, 5, seed=7), [2, 2, 2], [2, 3, 3],
                                   ptl.tensor([[[0.3, 0.3, 0.8]]], dtype=ptl.float64))[1]
_LN = aten.native_layer_norm(_f64(2, 3, seed=2), [3], None, None, 1e-5)
_GN = aten.native_group_norm(_f64(2, 4, 3, seed=2), None, None, 2, 4, 3, 2, 1e-5)
_BN = aten.native_batch_norm(_f64(4, 3, 5, seed=2), None, None, None, None, True, 0.1, 1e-5)

_SDPA = aten._scaled_dot_product_flash_attention_for_cpu(
    _f64(1, 2, 3, 4, seed=1), _f64(1, 2, 5, 4, seed=2), _f64(1, 2, 5, 4, seed=3), 0.0, True)


ENTRIES += [
    # random numbers
    OpInfo("uniform_", [S(T(2, 3)), S(T(4), -1.0, 1.0)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("normal_", [S(T(2, 3)), S(T(4), 1.0, 2.0)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("normal.Tensor_float", [S(T(2, 3)), S(T(3), 2.0)], grad="zeros", note=RANDOM),
    OpInfo("normal.float_Tensor", [S(1.0, T(2, 3, low=0.5))], grad="zeros", note=RANDOM),
    OpInfo("normal.Tensor_Tensor", [S(T(2, 3), T(2, 3, low=0.5))], grad="zeros", note=RANDOM),
    OpInfo("random_.from", [S(T(2, 3), 0, 5)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("random_.to", [S(T(2, 3), 5)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("random_", [S(T(2, 3))], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("exponential_", [S(T(2, 3)), S(T(3), 2.0)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("geometric_", [S(T(2, 3), 0.3)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("log_normal_", [S(T(2, 3))], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("cauchy_", [S(T(2, 3))], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("bernoulli", [S(T(2, 3, low=0.1, high=0.9))], grad="zeros", note=RANDOM),
    OpInfo("bernoulli_.Tensor", [S(T(2, 3), T(2, 3, low=0.1, high=0.9))], grad="zeros",
           note=IN_PLACE_RANDOM),
    OpInfo("bernoulli_.float", [S(T(2, 3)), S(T(3), 0.3)], grad="zeros", note=IN_PLACE_RANDOM),
    OpInfo("poisson", [S(T(2, 3, low=0.5, high=3))], grad="zeros", note=RANDOM),
    OpInfo("binomial", [S(T(2, 3, low=1.0, high=30.0), T(2, 3, low=0.1, high=0.9)),
                        S(T(2, 1, low=0.0, high=5.0), C(3, low=0.0, high=1.0))],
           grad="error", note="derivatives.yaml: binomial is not_implemented"),
    OpInfo("_standard_gamma", [S(T(2, 3, low=0.5, high=3)), S(T(4, low=0.05, high=0.5))],
           grad="ref", grad_call=lambda op, a: op(a, generator=ptl.Generator().manual_seed(0)),
           grad_ref=_np_standard_gamma_grad,
           note="a reparameterised sampler: its gradient (the quantile held fixed) is compared "
                "with finite differences of the CDF, since the sampler's own are not it"),
    OpInfo("native_dropout", [S(T(2, 3), 0.0, True), S(T(3, 2, layout="transposed"), 1.0, True),
                              S(T(4), 0.5, False), S(T(0, 2), 0.5, True)],
           ref=lambda x, p, train: (x if train is False else x * (p < 1),
                                    np.full(x.shape, train is False or p < 1)),
           note="the deterministic samples: p = 0 keeps every element (scale 1), p = 1 none "
                "(scale 0), train=False copies; tests/nn/test_dropout.py checks the draws"),
    OpInfo("native_dropout_backward",
           [S(T(2, 3), M([[True, False, True], [False, False, True]]), 2.0),
            S(T(3), T(3, grad=False), 0.5)],
           ref=lambda g, m, scale: g * m * scale),
    OpInfo("_standard_gamma_grad", [S(T(2, 3), T(2, 3)), S(T(3), T(2, 3)), S(T(), T(0))],
           ref=_np_standard_gamma_grad, domain=(0.2, 5.0), grad="error",
           note="derivatives.yaml: not_implemented(\"_standard_gamma_grad\")"),
    OpInfo("_sample_dirichlet", [S(T(2, 3, low=0.5, high=3)), S(T(4, low=0.05, high=0.5)),
                                 S(T(3, 2, low=0.5, high=3, layout="transposed")), S(T()),
                                 S(T(0, 3)), S(T(2, 0))],
           grad="error", note="derivatives.yaml: not_implemented(\"_sample_dirichlet\"); "
                              "Dirichlet.rsample differentiates it with _dirichlet_grad"),
    OpInfo("_dirichlet_grad", [S(T(2, 3, low=0.05, high=0.95), T(2, 3, low=0.5, high=3),
                                 T(2, 3, low=3.5, high=6)),
                               S(T(3, low=0.05, high=0.95), T(2, 3, low=0.5, high=3),
                                 T(1, low=4, high=5)),
                               S(T(low=0.1, high=0.9), T(low=1, high=2), T(low=2.5, high=3)),
                               S(T(0, 3, low=0.1, high=0.9), T(3, low=1, high=2),
                                 T(3, low=3, high=4))],
           ref=_np_dirichlet_grad, grad="error", rtol=1e-5, atol=1e-8,
           note="derivatives.yaml: not_implemented(\"_dirichlet_grad\")"),
    # convolution and pooling (batch 1, a few channels: finite differences stay cheap)
    OpInfo("convolution", [S(T(1, 2, 3, 3), T(2, 2, 2, 2), T(2), [1, 1], [0, 0], [1, 1], False,
                             [0, 0], 1),
                           S(T(1, 2, 3, 3), T(2, 1, 2, 2), None, [2, 1], [1, 0], [1, 1], False,
                             [0, 0], 2),
                           S(T(1, 2, 2, 2), T(2, 1, 2, 2), T(1), [1, 1], [0, 0], [1, 1], True,
                             [0, 0], 1)]),
    OpInfo("convolution_backward",
           [S(T(1, 2, 2, 2), T(1, 2, 3, 3), T(2, 2, 2, 2), [2], [1, 1], [0, 0], [1, 1], False,
              [0, 0], 1, [1, 1, 1])]),
    OpInfo("im2col", [S(T(1, 2, 3, 3), [2, 2], [1, 1], [0, 0], [1, 1])]),
    OpInfo("col2im", [S(T(1, 8, 4), [3, 3], [2, 2], [1, 1], [0, 0], [1, 1])]),
    OpInfo("max_pool2d_with_indices", [S(T(1, 2, 4, 4, seed=7), [2, 2]),
                                       S(T(1, 2, 4, 4), [3, 3], [1, 1], [1, 1])]),
    OpInfo("max_pool3d_with_indices", [S(T(1, 1, 2, 4, 4, seed=7), [2, 2, 2])]),
    OpInfo("max_pool2d_with_indices_backward",
           [S(T(1, 2, 2, 2), T(1, 2, 4, 4, seed=7), [2, 2], [2, 2], [0, 0], [1, 1], False,
              _values_of(_MP2))]),
    OpInfo("max_pool3d_with_indices_backward",
           [S(T(1, 1, 1, 2, 2), T(1, 1, 2, 4, 4, seed=7), [2, 2, 2], [2, 2, 2], [0, 0, 0],
              [1, 1, 1], False, _values_of(_MP3))]),
    OpInfo("adaptive_max_pool2d", [S(T(1, 2, 4, 4, seed=7), [2, 2]), S(T(1, 1, 3, 5), [2, 3])]),
    OpInfo("adaptive_max_pool2d_backward",
           [S(T(1, 2, 2, 2), T(1, 2, 4, 4, seed=7), _values_of(_AMP))]),
    OpInfo("adaptive_max_pool3d", [S(T(1, 1, 3, 4, 4, seed=7), [2, 2, 2]),
                                   S(T(2, 2, 3, 5), [1, 2, 3])]),
    OpInfo("adaptive_max_pool3d_backward",
           [S(T(1, 1, 2, 2, 2), T(1, 1, 3, 4, 4, seed=7), _values_of(_AMP3))]),
    OpInfo("fractional_max_pool2d",
           [S(T(1, 2, 5, 5, seed=7), [2, 2], [3, 3], C(values=[[[0.3, 0.8], [0.6, 0.1]]])),
            S(T(2, 4, 3), [2, 1], [2, 3], C(values=[[[0.5, 0.2], [0.9, 0.4]]]))]),
    OpInfo("fractional_max_pool3d",
           [S(T(1, 1, 4, 5, 5, seed=7), [2, 2, 2], [2, 3, 3], C(values=[[[0.3, 0.3, 0.8]]]))]),
    OpInfo("fractional_max_pool2d_backward",
           [S(T(1, 2, 3, 3), C(1, 2, 5, 5), [2, 2], [3, 3], _values_of(_FMP2))]),
    OpInfo("fractional_max_pool3d_backward",
           [S(T(1, 1, 2, 3, 3), C(1, 1, 4, 5, 5), [2, 2, 2], [2, 3, 3], _values_of(_FMP3))]),
    OpInfo("avg_pool2d", [S(T(1, 2, 4, 4), [2, 2]),
                          S(T(1, 1, 3, 3), [2, 2], [1, 1], [1, 1], True, False),
                          S(T(1, 1, 4, 4), [3, 3], [2, 2], [1, 1], False, True, 2)]),
    OpInfo("avg_pool3d", [S(T(1, 1, 2, 4, 4), [2, 2, 2]),
                          S(T(1, 1, 3, 3, 3), [2, 2, 2], [1, 1, 1], [1, 1, 1], True, False)]),
    OpInfo("avg_pool2d_backward", [S(T(1, 2, 2, 2), C(1, 2, 4, 4), [2, 2], [2, 2], [0, 0], False,
                                     True, None)]),
    OpInfo("avg_pool3d_backward", [S(T(1, 1, 1, 2, 2), C(1, 1, 2, 4, 4), [2, 2, 2], [2, 2, 2],
                                     [0, 0, 0], False, True, None)]),
    OpInfo("_adaptive_avg_pool2d", [S(T(1, 2, 4, 4), [2, 2]), S(T(1, 1, 3, 5), [2, 3])],
           ref=_np_adaptive_avg_pool2d),
    OpInfo("_adaptive_avg_pool2d_backward", [S(T(1, 2, 2, 2), C(1, 2, 4, 4))]),
    OpInfo("max_unpool2d", [S(T(1, 2, 2, 2), _values_of(_MP2), [4, 4])]),
    OpInfo("max_unpool2d_backward",
           [S(T(1, 2, 4, 4), C(1, 2, 2, 2), _values_of(_MP2), [4, 4])]),
    # padding
    OpInfo("constant_pad_nd", [S(T(2, 3), [1, 2]), S(T(2, 3), [1, 0, 0, 2], 1.5),
                               S(T(2, 4), [-1, 1])],
           ref=lambda a, pad, value=0: _np_constant_pad(a, pad, value), dtypes=NUMERIC),
    OpInfo("reflection_pad1d", [S(T(1, 2, 4), [2, 1])],
           ref=lambda a, p: np.pad(a, [(0, 0), (0, 0), (p[0], p[1])], mode="reflect")),
    OpInfo("reflection_pad2d", [S(T(1, 1, 3, 4), [1, 2, 2, 1])],
           ref=lambda a, p: np.pad(a, [(0, 0), (0, 0), (p[2], p[3]), (p[0], p[1])], "reflect")),
    OpInfo("reflection_pad3d", [S(T(1, 1, 2, 3, 3), [1, 1, 1, 0, 0, 1])]),
    OpInfo("replication_pad1d", [S(T(1, 2, 4), [2, 1])],
           ref=lambda a, p: np.pad(a, [(0, 0), (0, 0), (p[0], p[1])], mode="edge")),
    OpInfo("replication_pad2d", [S(T(1, 1, 3, 4), [1, 2, 2, 1])],
           ref=lambda a, p: np.pad(a, [(0, 0), (0, 0), (p[2], p[3]), (p[0], p[1])], "edge")),
    OpInfo("replication_pad3d", [S(T(1, 1, 2, 3, 3), [1, 1, 1, 0, 0, 1])]),
    OpInfo("_pad_circular", [S(T(1, 1, 3, 4), [1, 2, 2, 1])],
           ref=lambda a, p: np.pad(a, [(0, 0), (0, 0), (p[2], p[3]), (p[0], p[1])], "wrap")),
    OpInfo("reflection_pad1d_backward", [S(T(1, 2, 7), C(1, 2, 4), [2, 1])]),
    OpInfo("reflection_pad2d_backward", [S(T(1, 1, 6, 7), C(1, 1, 3, 4), [1, 2, 2, 1])]),
    OpInfo("reflection_pad3d_backward", [S(T(1, 1, 3, 4, 5), C(1, 1, 2, 3, 3),
                                           [1, 1, 1, 0, 0, 1])]),
    OpInfo("replication_pad1d_backward", [S(T(1, 2, 7), C(1, 2, 4), [2, 1])]),
    OpInfo("replication_pad2d_backward", [S(T(1, 1, 6, 7), C(1, 1, 3, 4), [1, 2, 2, 1])]),
    OpInfo("replication_pad3d_backward", [S(T(1, 1, 3, 4, 5), C(1, 1, 2, 3, 3),
                                            [1, 1, 1, 0, 0, 1])]),
    OpInfo("_pad_circular_backward", [S(T(1, 1, 6, 7), C(1, 1, 3, 4), [1, 2, 2, 1])]),
    # upsampling
    OpInfo("upsample_nearest1d", [S(T(1, 2, 3), [5]), S(T(1, 1, 4), [2], 0.5)],
           ref=_np_upsample_nearest),
    OpInfo("upsample_nearest2d", [S(T(1, 1, 2, 3), [3, 5])], ref=_np_upsample_nearest),
    OpInfo("upsample_nearest3d", [S(T(1, 1, 2, 2, 3), [3, 3, 4])], ref=_np_upsample_nearest),
    OpInfo("upsample_linear1d", [S(T(1, 2, 3), [5], False), S(T(1, 1, 3), [4], True)]),
    OpInfo("upsample_bilinear2d", [S(T(1, 1, 2, 3), [3, 4], False),
                                   S(T(1, 1, 2, 2), [3, 3], True)]),
    OpInfo("upsample_trilinear3d", [S(T(1, 1, 2, 2, 2), [3, 2, 3], False)]),
    OpInfo("upsample_bicubic2d", [S(T(1, 1, 3, 3), [4, 5], False), S(T(1, 1, 2, 3), [3, 4], True)]),
    OpInfo("upsample_nearest1d_backward", [S(T(1, 2, 5), [5], [1, 2, 3])]),
    OpInfo("upsample_nearest2d_backward", [S(T(1, 1, 3, 5), [3, 5], [1, 1, 2, 3])]),
    OpInfo("upsample_nearest3d_backward", [S(T(1, 1, 3, 3, 4), [3, 3, 4], [1, 1, 2, 2, 3])]),
    OpInfo("upsample_linear1d_backward", [S(T(1, 2, 5), [5], [1, 2, 3], False)]),
    OpInfo("upsample_bilinear2d_backward", [S(T(1, 1, 3, 4), [3, 4], [1, 1, 2, 3], False)]),
    OpInfo("upsample_trilinear3d_backward", [S(T(1, 1, 3, 2, 3), [3, 2, 3], [1, 1, 2, 2, 2],
                                               False)]),
    OpInfo("upsample_bicubic2d_backward", [S(T(1, 1, 4, 5), [4, 5], [1, 1, 3, 3], False)]),
    # grid sampling
    OpInfo("grid_sampler_2d", [S(T(1, 2, 3, 3), T(1, 2, 2, 2, low=-0.9, high=0.9), 0, 0, False),
                               S(T(1, 1, 3, 3), T(1, 2, 2, 2, low=-0.9, high=0.9), 0, 1, True)]),
    OpInfo("grid_sampler_2d_backward",
           [S(T(1, 2, 2, 2), T(1, 2, 3, 3), T(1, 2, 2, 2, low=-0.9, high=0.9), 0, 0, False,
              [1, 1])],
           gradgrad=GRID_GG),
    OpInfo("grid_sampler_3d", [S(T(1, 1, 2, 3, 3), T(1, 2, 2, 1, 3, low=-0.9, high=0.9), 0, 0,
                                 False)]),
    OpInfo("grid_sampler_3d_backward",
           [S(T(1, 1, 2, 2, 1), T(1, 1, 2, 3, 3), T(1, 2, 2, 1, 3, low=-0.9, high=0.9), 0, 0,
              False, [1, 1])],
           gradgrad=GRID_GG),
    OpInfo("affine_grid_generator", [S(T(1, 2, 3), [1, 1, 2, 3], False),
                                     S(T(1, 3, 4), [1, 1, 2, 2, 2], True)]),
    OpInfo("affine_grid_generator_backward", [S(T(1, 2, 3, 2), [1, 1, 2, 3], False)]),
    # recurrent cells and normalization
    OpInfo("_thnn_fused_lstm_cell", [S(T(2, 8), T(2, 8), T(2, 2)),
                                     S(T(2, 8), T(2, 8), T(2, 2), T(8), T(8))],
           grad_outputs=lambda o: o[:2],
           note="the third output is the backward's workspace, not differentiable"),
    OpInfo("_thnn_fused_gru_cell", [S(T(2, 6), T(2, 6), T(2, 2)),
                                    S(T(2, 6), T(2, 6), T(2, 2), T(6), T(6))],
           grad_outputs=lambda o: o[:1],
           note="the second output is the backward's workspace, not differentiable"),
    OpInfo("_ptl_rnn_layer", [S(T(3, 2, 8), T(2, 2), T(2, 2), T(8, 2), T(8), T(8), None, 2,
                                  False),
                                S(T(2, 2, 12), T(2, 3), T(2, 3), T(12, 3), None, None, T(3, 3),
                                  2, True, I([2, 1])),
                                S(T(3, 2, 6), T(2, 2), None, T(6, 2), T(6), T(6), None, 3, True),
                                S(T(2, 3, 2), T(3, 2), None, T(2, 2), None, None, None, 0, False,
                                  I([3, 1])),
                                S(T(0, 2, 2), T(2, 2), None, T(2, 2), None, None, None, 1, False)],
           grad_outputs=lambda o: (o[0],) + tuple(o[2:]),
           gradgrad="its backward, _ptl_rnn_layer_backward, has no derivative (as PyTorch's "
                    "_cudnn_rnn_backward)",
           note="the second output is the backward's workspace, not differentiable"),
    OpInfo("_scaled_dot_product_flash_attention_for_cpu",
           [S(T(1, 2, 3, 4), T(1, 2, 5, 4), T(1, 2, 5, 4)),
            S(T(2, 1, 4, 3), T(2, 1, 2, 3), T(2, 1, 2, 3), 0.0, True, scale=0.5),
            S(T(1, 2, 3, 2), T(1, 2, 4, 2), T(1, 2, 4, 2), attn_mask=T(3, 4, grad=False)),
            S(T(1, 1, 0, 2), T(1, 1, 3, 2), T(1, 1, 3, 2))],
           ref=_np_sdpa_flash, grad_outputs=lambda o: o[:1],
           note="logsumexp is compared by the reference; gradcheck follows the output"),
    OpInfo("native_layer_norm", [S(T(2, 3), [3], T(3), T(3), 1e-5),
                                 S(T(2, 2, 3), [2, 3], None, None, 1e-5)],
           ref=_np_layer_norm),
    OpInfo("native_layer_norm_backward",
           [S(T(2, 3), T(2, 3, seed=2), [3], _values_of(_LN[1]), _values_of(_LN[2]), T(3),
              T(3), [1, 1, 1])],
           grad_call=lambda op, go, x, shape, mean, rstd, w, b, mask: op(
               go, x, shape, *aten.native_layer_norm(x, shape, w, b, 1e-5)[1:], w, b, mask),
           note="mean and rstd are the statistics of the input: gradcheck recomputes them "
                "from the moved input (the formula differentiates through them)"),
    OpInfo("native_group_norm", [S(T(2, 4, 3), T(4), T(4), 2, 4, 3, 2, 1e-5),
                                 S(T(3, 6), None, None, 3, 6, 1, 3, 1e-5),
                                 S(T(2, 4, 2, 2, layout="transposed"), None, T(4), 2, 4, 4, 1,
                                   1e-3)],
           ref=_np_group_norm),
    OpInfo("native_group_norm_backward",
           [S(T(2, 4, 3), T(2, 4, 3, seed=2), _values_of(_GN[1]), _values_of(_GN[2]), T(4), 2,
              4, 3, 2, [1, 1, 1])],
           grad_call=lambda op, go, x, mean, rstd, w, n, c, hw, g, mask: op(
               go, x, *aten.native_group_norm(x, w, None, n, c, hw, g, 1e-5)[1:], w, n, c, hw,
               g, mask),
           note="mean and rstd are the statistics of the input: gradcheck recomputes them "
                "from the moved input (the formula differentiates through them)"),
    OpInfo("native_batch_norm", [S(T(4, 3, 5), T(3), T(3), C(3), C(3, low=0.5), True, 0.1, 1e-5),
                                 S(T(3, 2), None, None, None, None, True, 0.1, 1e-3),
                                 S(T(2, 3, 2, 2, layout="transposed"), T(3), None, C(3),
                                   C(3, low=0.5), False, 0.1, 1e-5)],
           ref=_np_batch_norm),
    OpInfo("native_batch_norm_backward",
           [S(T(4, 3, 5), T(4, 3, 5, seed=2), T(3), None, None, _values_of(_BN[1]),
              _values_of(_BN[2]), True, 1e-5, [1, 1, 1]),
            S(T(4, 3, 5), T(4, 3, 5, seed=2), T(3), C(3), C(3, low=0.5), None, None, False,
              1e-5, [1, 1, 0])],
           grad_call=lambda op, go, x, w, rm, rv, mean, invstd, train, eps, mask: op(
               go, x, w, rm, rv, *(aten.native_batch_norm(x, w, None, None, None, True, 0.1,
                                                          eps)[1:] if train else (None, None)),
               train, eps, mask),
           note="save_mean and save_invstd are the statistics of the input: gradcheck "
                "recomputes them from the moved input (the formula differentiates through "
                "them)"),
]



def _np_unique_consecutive(a, return_inverse=False, return_counts=False, dim=None):
    flat = a.ravel()
    keep = np.ones(flat.shape, dtype=bool)
    keep[1:] = flat[1:] != flat[:-1]
    return (flat[keep],)


def _np_repeat_interleave(a, repeats, dim=None, output_size=None):
    return np.repeat(a if dim is not None else a.ravel(), repeats, axis=dim)


def _np_diff(a, n=1, dim=-1, prepend=None, append=None):
    parts = [p for p in (prepend, a, append) if p is not None]
    return np.diff(np.concatenate(parts, axis=dim), n, axis=dim)


def _np_quantile(a, q, dim=None, keepdim=False, interpolation="linear"):
    return np.quantile(a, q, axis=dim, keepdims=keepdim, method=interpolation)


def _np_nanquantile(a, q, dim=None, keepdim=False, interpolation="linear"):
    return np.nanquantile(a, q, axis=dim, keepdims=keepdim, method=interpolation)


def _np_split_sections(a, sections, dim=0):
    return tuple(np.array_split(a, sections, axis=dim))


def _np_histc(a, bins=100, min=0, max=0):
    lo, hi = (a.min(), a.max()) if min == max else (min, max)
    return np.histogram(a, bins, range=(lo, hi))[0]


_LSTM = aten._thnn_fused_lstm_cell(_f64(2, 8, seed=1), _f64(2, 8, seed=2), _f64(2, 2, seed=3))
_GRU = aten._thnn_fused_gru_cell(_f64(2, 6, seed=1), _f64(2, 6, seed=2), _f64(2, 2, seed=3))
_RNN_LAYER = aten._ptl_rnn_layer(_f64(2, 2, 8, seed=1), _f64(2, 2, seed=2), _f64(2, 2, seed=3),
                                 _f64(8, 2, seed=4), None, None, None, 2, False)
_CD_X = (_f64(3, 2, seed=1), _f64(2, 2, seed=2))
_CD = _CD_X + (aten._cdist_forward(*_CD_X, 2.0, None),)
_PD_X = _f64(4, 3, seed=1)
_PD = (_PD_X, aten._pdist_forward(_PD_X, 2.0))
SORTED = [-1.5, -0.5, 0.0, 1.0, 2.5]


ENTRIES += [
    # factories (DTYPE: the dtype under test)
    OpInfo("empty.memory_format", [S([2, 3], dtype=DTYPE), S([0], dtype=DTYPE)], dtypes=NUMERIC,
           grad="none"),
    OpInfo("empty_strided", [S([2, 3], [1, 2], dtype=DTYPE)], dtypes=NUMERIC, grad="none"),
    OpInfo("zeros", [S([2, 3], dtype=DTYPE), S([], dtype=DTYPE)], ref=lambda s, dtype: np.zeros(s),
           dtypes=WITH_BOOL, grad="none"),
    OpInfo("ones", [S([2, 3], dtype=DTYPE), S([0], dtype=DTYPE)], ref=lambda s, dtype: np.ones(s),
           dtypes=WITH_BOOL, grad="none"),
    OpInfo("full", [S([2, 3], 2, dtype=DTYPE)], ref=lambda s, v, dtype: np.full(s, v),
           dtypes=NUMERIC, grad="none"),
    OpInfo("empty_like", [S(T(2, 3))], dtypes=NUMERIC, grad="none"),
    OpInfo("zeros_like", [S(T(2, 3)), S(T(3, 2, layout="transposed"))], ref=np.zeros_like,
           dtypes=NUMERIC, grad="none"),
    OpInfo("ones_like", [S(T(2, 3)), S(T())], ref=np.ones_like, dtypes=NUMERIC, grad="none"),
    OpInfo("full_like", [S(T(2, 3), 3)], ref=np.full_like, dtypes=NUMERIC, grad="none"),
    OpInfo("arange", [S(5, dtype=DTYPE), S(0, dtype=DTYPE)], ref=lambda e, dtype: np.arange(e),
           dtypes=NUMERIC, grad="none"),
    OpInfo("arange.start", [S(2, 7, dtype=DTYPE)], ref=lambda s, e, dtype: np.arange(s, e),
           dtypes=NUMERIC, grad="none"),
    OpInfo("arange.start_step", [S(1, 9, 3, dtype=DTYPE), S(5, 0, -2, dtype=DTYPE)],
           ref=lambda s, e, st, dtype: np.arange(s, e, st), dtypes=NUMERIC, grad="none"),
    OpInfo("linspace", [S(0, 1, 5, dtype=DTYPE), S(-2, 2, 1, dtype=DTYPE)],
           ref=lambda s, e, n, dtype: np.linspace(s, e, n), grad="none"),
    OpInfo("logspace", [S(0, 2, 3, dtype=DTYPE), S(0, 3, 4, 2.0, dtype=DTYPE)],
           ref=lambda s, e, n, base=10, dtype=None: np.logspace(s, e, n, base=base),
           grad="none"),
    OpInfo("eye", [S(3, dtype=DTYPE), S(0, dtype=DTYPE)], ref=lambda n, dtype: np.eye(n),
           dtypes=WITH_BOOL, grad="none"),
    OpInfo("eye.m", [S(2, 4, dtype=DTYPE)], ref=lambda n, m, dtype: np.eye(n, m),
           dtypes=WITH_BOOL, grad="none"),
    OpInfo("scalar_tensor", [S(1.5, dtype=DTYPE)], ref=lambda s, dtype: np.array(s),
           grad="none"),
    OpInfo("tril_indices", [S(3, 4, dtype=DTYPE), S(4, 3, -1, dtype=DTYPE), S(0, 2, dtype=DTYPE)],
           ref=lambda r, c, o=0, dtype=None: np.array(np.tril_indices(r, o, c)),
           dtypes=(ptl.int32, ptl.int64), grad="none"),
    OpInfo("triu_indices", [S(3, 4, dtype=DTYPE), S(4, 3, 2, dtype=DTYPE), S(2, 0, dtype=DTYPE)],
           ref=lambda r, c, o=0, dtype=None: np.array(np.triu_indices(r, o, c)),
           dtypes=(ptl.int32, ptl.int64), grad="none"),
    # logical, comparison and bitwise
    binary("logical_and", np.logical_and, dtypes=WITH_BOOL, grad="none"),
    binary("logical_or", np.logical_or, dtypes=WITH_BOOL, grad="none"),
    binary("logical_xor", np.logical_xor, dtypes=WITH_BOOL, grad="none"),
    binary("eq.Tensor", np.equal, dtypes=WITH_BOOL, grad="none"),
    binary("ne.Tensor", np.not_equal, dtypes=WITH_BOOL, grad="none"),
    binary("lt.Tensor", np.less, grad="none"),
    binary("le.Tensor", np.less_equal, grad="none"),
    binary("gt.Tensor", np.greater, grad="none"),
    binary("ge.Tensor", np.greater_equal, grad="none"),
    binary("bitwise_and.Tensor", np.bitwise_and, dtypes=(ptl.bool,) + INTS, grad="none"),
    binary("bitwise_or.Tensor", np.bitwise_or, dtypes=(ptl.bool,) + INTS, grad="none"),
    binary("bitwise_xor.Tensor", np.bitwise_xor, dtypes=(ptl.bool,) + INTS, grad="none"),
    binary("bitwise_left_shift.Tensor", np.left_shift, domain=(0, 3), dtypes=INTS,
           grad="none"),
    binary("bitwise_right_shift.Tensor", np.right_shift, domain=(0, 3), dtypes=INTS,
           grad="none"),
    OpInfo("isclose", [S(T(2, 3), T(2, 3)), S(T(2, 3), T(3), 0.5, 0.5)], ref=np.isclose,
           dtypes=NUMERIC, grad="none"),
    OpInfo("allclose", [S(T(2, 3), T(2, 3)), S(T(2, 3), T(3), 2.0, 2.0)], ref=np.allclose,
           dtypes=NUMERIC, grad="none"),
    OpInfo("equal", [S(T(2, 3), T(2, 3)), S(T(2, 3, seed=1), T(2, 3, seed=1))],
           ref=np.array_equal, dtypes=NUMERIC, grad="none"),
    # a one-element tensor's value as a Scalar (item()'s op)
    OpInfo("_local_scalar_dense", [S(T()), S(T(1)), S(T(1, 1))], ref=lambda a: a.item(),
           dtypes=WITH_BOOL, grad="none"),
    # reductions to indices and bools
    OpInfo("argmax", [S(T(2, 3)), S(T(2, 3), 1), S(T(2, 3), 0, True)],
           ref=lambda a, dim=None, keepdim=False: np.argmax(a, axis=dim, keepdims=keepdim),
           grad="none"),
    OpInfo("argmin", [S(T(2, 3)), S(T(2, 3), 1), S(T(2, 3), 0, True)],
           ref=lambda a, dim=None, keepdim=False: np.argmin(a, axis=dim, keepdims=keepdim),
           grad="none"),
    OpInfo("all", [S(T(2, 3)), S(T(0))], ref=np.all, dtypes=WITH_BOOL, grad="none"),
    OpInfo("all.dim", [S(T(2, 3), 1), S(T(2, 3), 0, True)],
           ref=lambda a, d, keepdim=False: np.all(a, axis=d, keepdims=keepdim), dtypes=WITH_BOOL,
           grad="none"),
    OpInfo("all.dims", [S(T(2, 3), [0, 1]), S(T(2, 3)), S(T(2, 3), [1], True)],
           ref=lambda a, d=None, keepdim=False: np.all(a, axis=_axis(d), keepdims=keepdim),
           dtypes=WITH_BOOL, grad="none"),
    OpInfo("any", [S(T(2, 3)), S(T(0))], ref=np.any, dtypes=WITH_BOOL, grad="none"),
    OpInfo("any.dim", [S(T(2, 3), 1), S(T(2, 3), 0, True)],
           ref=lambda a, d, keepdim=False: np.any(a, axis=d, keepdims=keepdim), dtypes=WITH_BOOL,
           grad="none"),
    OpInfo("any.dims", [S(T(2, 3), [0, 1]), S(T(2, 3)), S(T(2, 3), [1], True)],
           ref=lambda a, d=None, keepdim=False: np.any(a, axis=_axis(d), keepdims=keepdim),
           dtypes=WITH_BOOL, grad="none"),
    OpInfo("count_nonzero.dim_IntList", [S(T(2, 3), [1]), S(T(2, 3), [0, 1])],
           ref=lambda a, d: np.count_nonzero(a, axis=tuple(d)), dtypes=WITH_BOOL, grad="none"),
    OpInfo("count_nonzero", [S(T(2, 3)), S(T(2, 3), 0)],
           ref=lambda a, d=None: np.count_nonzero(a, axis=d), dtypes=WITH_BOOL, grad="none"),
    # random numbers without a derivative
    OpInfo("rand.generator", [S([2, 3], generator=GENERATOR, dtype=DTYPE)], grad="none"),
    OpInfo("rand", [S([2, 3], dtype=DTYPE), S([0], dtype=DTYPE)], grad="none"),
    OpInfo("randn.generator", [S([2, 3], generator=GENERATOR, dtype=DTYPE)], grad="none"),
    OpInfo("randn", [S([2, 3], dtype=DTYPE)], grad="none"),
    OpInfo("randint.low_generator", [S(-3, 3, [2, 3], generator=GENERATOR, dtype=DTYPE)],
           dtypes=NUMERIC, grad="none"),
    OpInfo("randint.low", [S(-3, 3, [2, 3], dtype=DTYPE)], dtypes=NUMERIC, grad="none"),
    OpInfo("randint.generator", [S(3, [2, 3], generator=GENERATOR, dtype=DTYPE)],
           dtypes=NUMERIC, grad="none"),
    OpInfo("randint", [S(3, [2, 3], dtype=DTYPE)], dtypes=NUMERIC, grad="none"),
    OpInfo("randperm.generator", [S(5, generator=GENERATOR, dtype=DTYPE)], dtypes=NUMERIC,
           grad="none"),
    OpInfo("randperm", [S(5, dtype=DTYPE), S(0, dtype=DTYPE)], dtypes=NUMERIC, grad="none"),
    OpInfo("rand_like", [S(T(2, 3))], grad="none"),
    OpInfo("randn_like", [S(T(2, 3))], grad="none"),
    OpInfo("randint_like.low_dtype", [S(T(2, 3), -2, 2)], dtypes=NUMERIC, grad="none"),
    OpInfo("randint_like", [S(T(2, 3), 4)], dtypes=NUMERIC, grad="none"),
    OpInfo("rand_like.generator", [S(T(2, 3), generator=GENERATOR)], grad="none"),
    OpInfo("randn_like.generator", [S(T(2, 3), generator=GENERATOR)], grad="none"),
    OpInfo("randint_like.low_generator_dtype", [S(T(2, 3), -2, 2, generator=GENERATOR)],
           dtypes=NUMERIC, grad="none"),
    OpInfo("randint_like.generator", [S(T(2, 3), 4, generator=GENERATOR)], dtypes=NUMERIC,
           grad="none"),
    OpInfo("randint_like.Tensor", [S(T(2, 3), T(values=4.5, dtype=ptl.float64, grad=False)),
                                   S(T(2, 3), I(4))], dtypes=NUMERIC, grad="none"),
    OpInfo("randint_like.Tensor_generator",
           [S(T(2, 3), I(4), generator=GENERATOR),
            S(T(2, 3), T(values=True, dtype=ptl.bool, grad=False), generator=GENERATOR)],
           dtypes=NUMERIC, grad="none"),
    OpInfo("normal.float_float", [S(0.5, 2.0, [2, 3], dtype=DTYPE)], grad="none"),
    OpInfo("bernoulli.p", [S(T(2, 3), 0.3)], grad="none"),
    OpInfo("multinomial", [S(T(2, 4, low=0.1, high=1.0), 2), S(T(4, low=0.1, high=1.0), 6, True)],
           grad="none"),
    # selection and searching
    OpInfo("masked_select", [S(T(2, 3), M([[True, False, True], [False, False, True]])),
                             S(T(2, 3), M([True, False, True]))],
           ref=lambda a, m: a[np.broadcast_to(m, a.shape)], dtypes=NUMERIC),
    OpInfo("take_along_dim", [S(T(3, 4), I([[0, 1], [3, 3], [2, 0]]), 1),
                              S(T(3, 4), I([0, 5]))],
           ref=lambda a, i, dim=None: np.take_along_axis(a if dim is not None else a.ravel(),
                                                         i, axis=dim if dim is not None else 0),
           dtypes=NUMERIC),
    OpInfo("nonzero", [S(T(values=[[0, 1, 2], [3, 0, 0]])), S(T(values=[]))],
           ref=np.argwhere, dtypes=WITH_BOOL, grad="none"),
    OpInfo("argwhere", [S(T(values=[[0, 1, 2], [3, 0, 0]]))], ref=np.argwhere, dtypes=WITH_BOOL,
           grad="none"),
    OpInfo("where", [S(T(values=[[0, 1, 2], [3, 0, 0]]))], ref=np.nonzero, dtypes=WITH_BOOL,
           grad="none"),
    OpInfo("_unique2", [S(T(values=[3, 1, 3, 2, 1])), S(T(values=[3, 1, 3]), True, True, True)],
           ref=lambda a, *r: (np.unique(a),), dtypes=NUMERIC, grad="none"),
    OpInfo("unique_dim", [S(T(values=[[1, 2], [0, 1], [1, 2]]), 0)],
           ref=lambda a, dim, *r: (np.unique(a, axis=dim),), dtypes=NUMERIC, grad="none"),
    OpInfo("unique_consecutive", [S(T(values=[1, 1, 2, 2, 3, 1, 1]))],
           ref=_np_unique_consecutive, dtypes=NUMERIC, grad="none"),
    OpInfo("bincount", [S(I([0, 1, 1, 3])), S(I([0, 1, 1, 3]), T(4), 6), S(I([]))],
           ref=lambda i, w=None, minlength=0: np.bincount(i, w, minlength), grad="none"),
    OpInfo("histc", [S(T(10), 4), S(T(10), 5, -1, 1)], ref=_np_histc, grad="none"),
    OpInfo("searchsorted.Tensor", [S(T(values=SORTED), T(2, 3)),
                                   S(T(values=SORTED), T(values=[0.0, 1.0]), right=True)],
           ref=lambda s, v, right=False: np.searchsorted(s, v, "right" if right else "left"),
           grad="none"),
    OpInfo("searchsorted.Scalar", [S(T(values=SORTED), 0.5), S(T(values=SORTED), 1.0, right=True)],
           ref=lambda s, v, right=False: np.searchsorted(s, v, "right" if right else "left"),
           grad="none"),
    OpInfo("bucketize.Tensor", [S(T(2, 3), T(values=SORTED)),
                                S(T(values=[0.0, 1.0]), T(values=SORTED), right=True)],
           ref=lambda v, s, right=False: np.searchsorted(s, v, "right" if right else "left"),
           grad="none"),
    OpInfo("bucketize.Scalar", [S(0.5, T(values=SORTED))],
           ref=lambda v, s, right=False: np.searchsorted(s, v, "right" if right else "left"),
           grad="none"),
    OpInfo("one_hot", [S(I([0, 2, 1]), 4), S(I([[0, 2], [1, 1]]))],
           ref=lambda i, n=-1: np.eye(n if n > 0 else i.max() + 1, dtype=np.int64)[i],
           grad="none"),
    OpInfo("embedding_renorm_", [S(T(4, 3), I([0, 2]), 1.0, 2.0)], grad="none"),
    # shapes and composites
    OpInfo("fliplr", [S(T(2, 3))], ref=np.fliplr, dtypes=NUMERIC),
    OpInfo("flipud", [S(T(2, 3))], ref=np.flipud, dtypes=NUMERIC),
    OpInfo("tile", [S(T(2, 3), [2, 1]), S(T(3), [2, 2])], ref=np.tile, dtypes=NUMERIC),
    OpInfo("repeat_interleave.self_Tensor", [S(T(3), I([1, 0, 2])), S(T(2, 3), I([2, 1]), 0)],
           ref=_np_repeat_interleave),
    OpInfo("repeat_interleave.self_int", [S(T(3), 2), S(T(2, 3), 2, 1)],
           ref=_np_repeat_interleave),
    OpInfo("repeat_interleave.Tensor", [S(I([1, 0, 2]))],
           ref=lambda r: np.repeat(np.arange(len(r)), r), grad="none"),
    OpInfo("diag", [S(T(3)), S(T(3, 4)), S(T(3, 4), 1), S(T(3), -1)], ref=np.diag,
           dtypes=NUMERIC),
    OpInfo("cross", [S(T(2, 3), T(2, 3)), S(T(3, 2), T(3, 2), 0)],
           ref=lambda a, b, dim=None: np.cross(a, b, axis=-1 if dim is None else dim)),
    OpInfo("kron", [S(T(2, 2), T(2, 3)), S(T(2), T(3))], ref=np.kron, dtypes=NUMERIC),
    OpInfo("diff", [S(T(2, 4)), S(T(2, 4), 2, 0), S(T(4), 1, 0, T(1), T(2))], ref=_np_diff,
           dtypes=NUMERIC),
    OpInfo("broadcast_tensors", [S([T(2, 1), T(3)])],
           ref=lambda ts: tuple(np.broadcast_arrays(*ts))),
    OpInfo("meshgrid.indexing", [S([T(2), T(3)], indexing="xy"), S([T(2), T(3)], indexing="ij")],
           ref=lambda ts, indexing: tuple(np.meshgrid(*ts, indexing=indexing))),
    OpInfo("meshgrid", [S([T(2), T(3)])], ref=lambda ts: tuple(np.meshgrid(*ts, indexing="ij"))),
    OpInfo("tensor_split.tensor_indices_or_sections", [S(T(5, 2), I([1, 3])), S(T(7), I(3))],
           ref=lambda a, i, dim=0: tuple(np.array_split(a, i if np.ndim(i) else int(i), dim))),
    OpInfo("tensor_split.sections", [S(T(7), 3), S(T(2, 5), 2, 1)], ref=_np_split_sections),
    OpInfo("tensor_split.indices", [S(T(5, 2), [1, 3]), S(T(2, 5), [2], 1)],
           ref=lambda a, i, dim=0: tuple(np.split(a, i, dim))),
    OpInfo("argsort", [S(T(2, 3)), S(T(2, 3), 0, True)],
           ref=lambda a, dim=-1, descending=False: np.argsort(-a if descending else a, dim),
           grad="none"),
    OpInfo("argsort.stable", [S(T(values=[3, 1, 3, 1]), stable=True)],
           ref=lambda a, stable, dim=-1, descending=False: np.argsort(a, dim, kind="stable"),
           dtypes=NUMERIC, grad="none"),
    OpInfo("msort", [S(T(3, 2))], ref=lambda a: np.sort(a, 0), dtypes=NUMERIC),
    OpInfo("quantile", [S(T(2, 5), T(values=[0.25, 0.5])), S(T(2, 5), T(values=0.3), 1, True)],
           ref=_np_quantile),
    OpInfo("quantile.scalar", [S(T(7), 0.4), S(T(2, 5), 0.5, 1, False, interpolation="lower")],
           ref=_np_quantile),
    OpInfo("nanquantile", [S(T(values=[1.0, np.nan, 3.0, 0.5]), T(values=[0.25, 0.5]))],
           ref=_np_nanquantile),
    OpInfo("nanquantile.scalar", [S(T(values=[1.0, np.nan, 3.0, 0.5]), 0.4)],
           ref=_np_nanquantile),
    OpInfo("einsum", [S("ij,jk->ik", [T(2, 3), T(3, 2)]), S("ii->i", [T(3, 3)]),
                      S("bij->bji", [T(2, 2, 3)])],
           ref=lambda eq, ts, path=None: np.einsum(eq, *ts)),
    OpInfo("tensordot", [S(T(2, 3), T(3, 4), [1], [0]), S(T(2, 3, 2), T(3, 2), [1, 2], [0, 1])],
           ref=lambda a, b, da, db: np.tensordot(a, b, (da, db)), dtypes=NUMERIC),
    OpInfo("cdist", [S(T(3, 2), T(2, 2)), S(T(3, 2), T(4, 2), 1.0)],
           ref=lambda a, b, p=2.0, mode=None: np.linalg.norm(a[:, None] - b[None], p, axis=-1)),
    OpInfo("_cdist_backward",
           [S(T(3, 2), _values_of(_CD[0]), _values_of(_CD[1]), 2.0, _values_of(_CD[2]))],
           grad="none"),
    OpInfo("_pdist_backward", [S(T(6), _values_of(_PD[0]), 2.0, _values_of(_PD[1]))],
           grad="none"),
    OpInfo("linalg_svd", [S(T(3, 2), False), S(T(2, 3))]),
    OpInfo("linalg_svdvals", [S(T(3, 2))],
           ref=lambda a, driver=None: np.linalg.svd(a, compute_uv=False)),
    OpInfo("svd", [S(T(3, 2)), S(T(2, 3), False)]),
    OpInfo("_grid_sampler_backward_backward",
           [S(T(1, 1, 3, 3), T(1, 2, 2, 2), T(1, 1, 2, 2), T(1, 1, 3, 3),
              T(1, 2, 2, 2, low=-0.9, high=0.9), 0, 0, False, [1, 1, 1])], grad="none"),
    # fused optimizer steps and recurrent cells' backward kernels
    OpInfo("_fused_sgd_step_", [S(T(2, 3), T(2, 3), None, 0.1, 0.0, 0.0, 0.01, False, False,
                                  True),
                                S(T(4), T(4), None, 0.1, 0.0, 0.0, 0.0, False, True, True)],
           ref=lambda p, g, buf, lr, mom, damp, wd, nesterov, maximize, first: p - lr * (
               (-g if maximize else g) + wd * p),
           grad="none"),
    OpInfo("_fused_adam_step_", [S(T(2, 3), T(2, 3), T(2, 3), T(2, 3, low=0.1), None, 1.0,
                                   0.01, 0.9, 0.999, 0.0, 1e-8, False, False)], grad="none"),
    OpInfo("_thnn_fused_lstm_cell_backward_impl",
           [S(T(2, 2), T(2, 2), T(2, 2, seed=3), _values_of(_LSTM[1]), _values_of(_LSTM[2]),
              False)], grad="none"),
    OpInfo("_thnn_fused_gru_cell_backward", [S(T(2, 2), _values_of(_GRU[1]), False)],
           grad="none"),
    OpInfo("_scaled_dot_product_flash_attention_for_cpu_backward",
           [S(T(1, 2, 3, 4), T(1, 2, 3, 4, seed=1), T(1, 2, 5, 4, seed=2),
              T(1, 2, 5, 4, seed=3), _values_of(_SDPA[0]), _values_of(_SDPA[1]), 0.0, True)],
           grad="none"),
    OpInfo("_ptl_rnn_layer_backward",
           [S(T(2, 2, 2), T(2, 2), T(2, 2), T(2, 2, seed=2), T(2, 2, seed=3), T(8, 2, seed=4),
              None, _values_of(_RNN_LAYER[0]), _values_of(_RNN_LAYER[1]), 2, False, None, True),
            S(None, T(2, 2), None, T(2, 2, seed=2), T(2, 2, seed=3), T(8, 2, seed=4), None,
              _values_of(_RNN_LAYER[0]), _values_of(_RNN_LAYER[1]), 2, True, I([2, 1]), False)],
           grad="none"),
]


def _spd(*shape, seed):
    """Values of a symmetric positive-definite matrix (or a batch of them) of `shape`."""
    x = np.random.default_rng(seed).uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def _sym(op, a, *args, **kwargs):
    """op on the symmetric part of a, so that gradcheck's perturbations stay symmetric (the
    kernels read one triangle)."""
    return op((a + a.mT) / 2, *args, **kwargs)


def _np_mT(a):
    return np.swapaxes(a, -1, -2)


def _np_ldl(a):
    """ldl_factor_ex's (LD, pivots, info) by LAPACK's dsytrf (lower), matrix by matrix."""
    from scipy.linalg import lapack
    a = np.asarray(a, np.float64)
    ld, piv = np.zeros(a.shape), np.zeros(a.shape[:-1], np.int32)
    for idx in np.ndindex(*a.shape[:-2]):
        if a.shape[-1]:
            f, p, _ = lapack.dsytrf(a[idx], lower=1)
            ld[idx], piv[idx] = np.tril(f), p
    return ld, piv, np.zeros(a.shape[:-2], np.int32)


# a symmetric indefinite matrix whose LDL^T has a 2 x 2 block with an interchange, its LD
# and pivots (exact in float32 too)
_LDL_A = np.array([[0.0, 1, 2], [1, 0, 0.5], [2, 0.5, 1]])
_LDL_LD = [[0.0, 0, 0], [2, 1, 0], [0, 0.5, -0.25]]
_LDL_PIV = [-3, -3, 3]


def _np_solve(a, b, left=True, check_errors=False):
    """linalg.solve: a vector b when it is 1-D or a's shape without the last dim."""
    if not left:
        return _np_mT(np.linalg.solve(_np_mT(a), _np_mT(b)))
    if b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1]):
        return np.linalg.solve(a, b[..., None])[..., 0]
    return np.linalg.solve(a, b)


def _np_solve_triangular(a, b, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = (np.triu(a, 1) if upper else np.tril(a, -1)) + np.eye(a.shape[-1])
    return np.linalg.solve(t, b) if left else _np_mT(np.linalg.solve(_np_mT(t), _np_mT(b)))


def _np_cholesky(a, upper=False, check_errors=False):
    low = np.linalg.cholesky(a)
    return _np_mT(low) if upper else low


def _np_qr(a, mode="reduced"):
    if mode == "r":
        return np.empty(0), np.linalg.qr(a, "r")
    return tuple(np.linalg.qr(a, mode))


def _np_lstsq_solution(a, b, rcond=None):
    """_linalg_lstsq_qr's solution (the first output) per matrix, batch dims broadcast."""
    vec = b.ndim == 1 or (b.ndim == a.ndim - 1 and b.shape == a.shape[:-1])
    bm = b[..., None] if vec else b
    batch = np.broadcast_shapes(a.shape[:-2], bm.shape[:-2])
    n, k = a.shape[-1], bm.shape[-1]
    aa = np.broadcast_to(a, batch + a.shape[-2:]).reshape((-1,) + a.shape[-2:]) \
        if a.shape[-2] else np.zeros((int(np.prod(batch)),) + a.shape[-2:])
    bb = np.broadcast_to(bm, batch + bm.shape[-2:]).reshape((len(aa),) + bm.shape[-2:])
    x = np.array([np.linalg.lstsq(p, q, rcond=None)[0] if p.size else np.zeros((n, k))
                  for p, q in zip(aa, bb)]).reshape(batch + (n, k))
    return (x[..., 0] if vec else x,)


def _np_eig_values(a, compute_v=True):
    w = np.linalg.eigvals(a) if a.size else np.zeros(a.shape[:-1], dtype=complex)
    return w.real, w.imag


def _eig_phase_free(op, a, compute_v=True):
    """_linalg_eig_split's eigenvalues and the moduli of its eigenvectors' entries: the
    eigenvectors' phases are a free choice, and a loss that depends on them is refused
    (tests/autograd/test_complex_autograd.py)."""
    wr, wi, vr, vi = op(a, compute_v)
    return wr, wi, ptl.complex(vr, vi).abs()


def _abs_vectors(out):
    """eigh's outputs with the eigenvectors' signs (a free choice) taken out."""
    return out[0], out[1].abs()


ENTRIES += [
    # the LU family (linalg_solve.c): random matrices from [-2, 2) are far from singular
    OpInfo("linalg_lu_factor_ex", [S(T(3, 3)), S(T(2, 4, 4, layout="transposed")), S(T(1, 1)),
                                   S(T(4, 2)), S(T(2, 3, 5)), S(T(0, 3, 3)), S(T(0, 0))],
           grad_outputs=lambda o: o[:1], errors=[(S(T(3)), RuntimeError)],
           note="pivots and info are not differentiable"),
    OpInfo("linalg_lu_factor", [S(T(3, 3)), S(T(2, 2, 3)), S(T(4, 2, layout="transposed"))],
           grad_outputs=lambda o: o[:1]),
    OpInfo("_linalg_solve_ex",
           [S(T(3, 3), T(3, 2)), S(T(2, 3, 3), T(2, 3)), S(T(3, 3), T(3)),
            S(T(2, 3, 3, layout="transposed"), T(1, 3, 2)), S(T(3, 3), T(2, 3), left=False),
            S(T(0, 2, 2), T(2, 1)), S(T(0, 0), T(0, 2))],
           ref=lambda a, b, left=True, check_errors=False: (_np_solve(a, b, left),),
           grad_outputs=lambda o: o[:1], rtol=1e-7, atol=1e-10,
           note="LU, pivots and info are not differentiable"),
    OpInfo("linalg_solve_ex", [S(T(3, 3), T(3, 2)), S(T(2, 3, 3), T(2, 3))],
           ref=lambda a, b, left=True, check_errors=False: (_np_solve(a, b, left),),
           rtol=1e-7, atol=1e-10),
    OpInfo("linalg_solve", [S(T(3, 3), T(3)), S(T(2, 3, 3), T(3, 2)),
                            S(T(3, 3, layout="transposed"), T(2, 3), left=False)],
           ref=_np_solve, rtol=1e-7, atol=1e-10,
           errors=[(S(T(2, 3), T(2)), RuntimeError), (S(T(3, 3), T(4)), RuntimeError),
                   (S(T(2, 3, 3), T(3, 3, 2)), RuntimeError), (S(T(3), T(3)), RuntimeError)]),
    OpInfo("linalg_inv_ex", [S(T(3, 3)), S(T(2, 4, 4, layout="transposed")), S(T(0, 0)),
                             S(T(0, 2, 2))],
           ref=lambda a, check_errors=False: (np.linalg.inv(a),), rtol=1e-7, atol=1e-10),
    OpInfo("linalg_inv", [S(T(3, 3)), S(T(2, 2, 2))], ref=np.linalg.inv, rtol=1e-7, atol=1e-10,
           errors=[(S(T(2, 3)), RuntimeError), (S(T(3)), RuntimeError)]),
    OpInfo("inverse", [S(T(3, 3))], ref=np.linalg.inv, rtol=1e-7, atol=1e-10),
    OpInfo("_linalg_det", [S(T(3, 3)), S(T(2, 4, 4, layout="transposed")), S(T(1, 1)), S(T(0, 0)),
                           S(T(0, 3, 3))],
           ref=lambda a: (np.linalg.det(a),), grad_outputs=lambda o: o[:1],
           note="LU and pivots are not differentiable"),
    OpInfo("linalg_det", [S(T(3, 3)), S(T(2, 2, 2))], ref=np.linalg.det,
           errors=[(S(T(2, 3)), RuntimeError)]),
    OpInfo("det", [S(T(3, 3))], ref=np.linalg.det),
    OpInfo("_linalg_slogdet", [S(T(3, 3)), S(T(2, 4, 4, layout="transposed")), S(T(0, 0))],
           ref=lambda a: tuple(np.linalg.slogdet(a)), grad_outputs=lambda o: o[:2],
           note="LU and pivots are not differentiable"),
    OpInfo("linalg_slogdet", [S(T(3, 3)), S(T(2, 2, 2))],
           ref=lambda a: tuple(np.linalg.slogdet(a)), errors=[(S(T(2, 3)), RuntimeError)]),
    OpInfo("slogdet", [S(T(3, 3))], ref=lambda a: tuple(np.linalg.slogdet(a))),
    OpInfo("linalg_solve_triangular",
           [S(T(3, 3, low=0.5), T(3, 2), upper=True), S(T(2, 3, 3, low=0.5), T(3, 1), upper=False),
            S(T(3, 3, low=0.5, layout="transposed"), T(2, 3), upper=True, left=False,
              unitriangular=True),
            S(T(0, 2, 2), T(2, 0), upper=False)],
           ref=_np_solve_triangular, rtol=1e-7, atol=1e-10,
           errors=[(S(T(3, 3), T(3), upper=True), RuntimeError),
                   (S(T(3, 3), T(4, 1), upper=True), RuntimeError)]),
    # the factorisations (linalg_decomp.c)
    OpInfo("linalg_cholesky_ex",
           [S(T(values=_spd(3, 3, seed=1))), S(T(values=_spd(2, 4, 4, seed=2)), upper=True),
            S(T(0, 0)), S(T(0, 2, 2))],
           ref=lambda a, upper=False, check_errors=False: (_np_cholesky(a, upper),),
           grad_call=_sym, grad_outputs=lambda o: o[:1], rtol=1e-7, atol=1e-10),
    OpInfo("linalg_cholesky", [S(T(values=_spd(3, 3, seed=3)))], ref=_np_cholesky,
           grad_call=_sym, errors=[(S(T(2, 3)), RuntimeError)]),
    OpInfo("linalg_qr", [S(T(4, 3)), S(T(3, 4)), S(T(2, 3, 3, layout="transposed"), "complete"),
                         S(T(4, 2), "r"), S(T(2, 4), "complete"), S(T(0, 3)), S(T(2, 0, 2))],
           ref=_np_qr, rtol=1e-7, atol=1e-10, errors=[(S(T(3)), RuntimeError)]),
    OpInfo("_linalg_eigh", [S(T(3, 3)), S(T(2, 4, 4), "U"), S(T(3, 3, layout="transposed")),
                            S(T(0, 0)), S(T(2, 2), compute_v=False)],
           ref=lambda a, UPLO="L", compute_v=True: (np.linalg.eigvalsh(a, UPLO),),
           grad_call=_sym, grad_outputs=_abs_vectors, rtol=1e-7, atol=1e-10,
           note="the eigenvectors' signs are a free choice: gradcheck compares their absolute "
                "values"),
    OpInfo("linalg_eigh", [S(T(3, 3)), S(T(2, 3, 3), "U")],
           ref=lambda a, UPLO="L": (np.linalg.eigvalsh(a, UPLO),), grad_call=_sym,
           grad_outputs=_abs_vectors, rtol=1e-7, atol=1e-10,
           errors=[(S(T(2, 3)), RuntimeError), (S(T(3, 3), "X"), RuntimeError)]),
    OpInfo("linalg_eigvalsh", [S(T(3, 3)), S(T(2, 3, 3), UPLO="U")],
           ref=lambda a, UPLO="L": np.linalg.eigvalsh(a, UPLO), grad_call=_sym, rtol=1e-7,
           atol=1e-10),
    # linalg_eig.c: linalg.eig's eigenvalues as real and imaginary parts, in LAPACK's order
    # (the eigenvectors' signs are a free choice: tests/aten/test_linalg_eig.py checks them)
    OpInfo("_linalg_eig_split", [S(T(3, 3)), S(T(2, 4, 4)), S(T(3, 3, layout="transposed")),
                                 S(T(0, 0)), S(T(0, 2, 2)), S(T(2, 2), compute_v=False)],
           ref=_np_eig_values, rtol=1e-7, atol=1e-10, grad_call=_eig_phase_free,
           errors=[(S(T(2, 3)), RuntimeError), (S(T(3)), RuntimeError)]),
    # linalg_ldl.c: LAPACK's sytrf / sytrs (tests/aten/test_linalg_ldl.py has the complex and
    # hermitian cases); derivatives.yaml has no formula for them
    OpInfo("linalg_ldl_factor_ex", [S(T(3, 3)), S(T(2, 4, 4, layout="transposed")), S(T(0, 0)),
                                    S(T(2, 3, 3), hermitian=True)],
           ref=lambda a, hermitian=False, check_errors=False: _np_ldl(a), grad="error",
           errors=[(S(T(3)), RuntimeError), (S(T(2, 3)), RuntimeError)],
           note="derivatives.yaml: ldl_factor has no derivative"),
    OpInfo("linalg_ldl_factor", [S(T(3, 3)), S(T(2, 3, 3))],
           ref=lambda a, hermitian=False: _np_ldl(a)[:2], grad="error",
           note="derivatives.yaml: ldl_factor has no derivative"),
    OpInfo("linalg_ldl_solve",
           [S(C(values=_LDL_LD), T(values=_LDL_PIV, dtype=ptl.int32, grad=False), T(3, 2)),
            S(C(values=_LDL_LD), T(values=_LDL_PIV, dtype=ptl.int32, grad=False), T(2, 3, 1))],
           ref=lambda ld, piv, b, hermitian=False: np.linalg.solve(_LDL_A, b), grad="error",
           errors=[(S(C(values=_LDL_LD), T(values=_LDL_PIV, dtype=ptl.int32, grad=False),
                      T(4, 2)), RuntimeError)],
           note="derivatives.yaml: ldl_solve has no derivative"),
    # linalg_lstsq.c: lstsq's QR drivers (no rcond: 'gels'; tests/aten/test_linalg_lstsq.py
    # covers rank, residuals and the SVD fallback through linalg.lstsq)
    OpInfo("_linalg_lstsq_qr",
           [S(T(5, 3), T(5, 2)), S(T(5, 3), T(5, 2), 1e-10), S(T(3, 5), T(3, 2)),
            S(T(4, 3, layout="transposed"), T(4)), S(T(2, 4, 3), T(1, 4, 2), 1e-10),
            S(T(0, 3), T(0, 2)), S(T(0, 4, 3), T(0, 4, 1))],
           ref=_np_lstsq_solution, rtol=1e-7, atol=1e-10, grad="none",
           errors=[(S(T(3), T(3)), RuntimeError), (S(T(3, 2), T(4, 1)), RuntimeError),
                   (S(T(2, 3, 2), T(3, 3, 1)), RuntimeError),
                   (S(T(3, 2), T(2, 3, 1)), RuntimeError)]),
]

ENTRIES += [
    # sparse COO tensors (sparse.c): Sp samples compare as their dense form; gradcheck runs
    # through dense leaves converted in grad_call (gradcheck takes dense tensors)
    OpInfo("sparse_coo_tensor.indices_size",
           [S(I([[0, 1, 1], [2, 0, 2]]), T(3), [2, 3]),
            S(I(np.zeros((2, 0), dtype=np.int64)), T(0), [2, 3]),
            S(I([[1, 0]]), T(2, 2, layout="transposed"), [3, 2])],
           ref=_np_coo, dtypes=NUMERIC, grad_call=_dense(lambda f, *a, **k: f(*a, **k)),
           grad_samples=[S(I([[0, 1, 1], [2, 0, 2]]), T(3), [2, 3])],
           errors=[(S(I([[0, 1]]), T(3), [2]), RuntimeError),
                   (S(I([[0, 1]]), T(2), [2, 3]), RuntimeError)]),
    OpInfo("sparse_coo_tensor.indices",
           [S(I([[0, 1, 1], [2, 0, 2]]), T(3)), S(I([[0, 1, 0]]), T(3, 2)),
            S(I(np.zeros((2, 0), dtype=np.int64)), T(0)),
            S(I([[1, 0]]), T(2, 2, layout="transposed"))],
           ref=_np_coo, dtypes=NUMERIC, grad_call=_dense(lambda f, *a, **k: f(*a, **k)),
           grad_samples=[S(I([[0, 1, 1], [2, 0, 2]]), T(3)), S(I([[0, 1, 0]]), T(3, 2))],
           errors=[(S(I([[0, 1]]), T(3)), RuntimeError),
                   (S(I([[0, 1]]), T(2), [2, 3]), RuntimeError)]),
    OpInfo("_indices", [S(Sp(3, 4)), S(Sp(4, 2, sparse_dim=1))],
           ref=lambda a: np.array(np.nonzero(a.reshape(a.shape[0], -1).any(1))
                                  if a.ndim == 2 and a.shape[1] == 2 else np.nonzero(a)),
           grad="none"),
    OpInfo("indices", [S(Sp(3, 4))], ref=lambda a: np.array(np.nonzero(a)), grad="none",
           errors=[(S(Sp(3, 4, uncoalesced=True)), RuntimeError)]),
    OpInfo("_values", [S(Sp(3, 4)), S(Sp(4, 3, sparse_dim=1))],
           ref=lambda a: a[np.nonzero(a)] if a.shape[1] == 4 else a[a.any(1)],
           grad_samples=[S(T(2, 3))], grad_call=lambda f, x: f(x.to_sparse())),
    OpInfo("values", [S(Sp(3, 4))], ref=lambda a: a[np.nonzero(a)],
           grad_samples=[S(T(2, 3))], grad_call=lambda f, x: f(x.to_sparse()),
           errors=[(S(Sp(3, 4, uncoalesced=True)), RuntimeError)]),
    OpInfo("coalesce", [S(Sp(3, 4, uncoalesced=True)), S(Sp(4, 3, sparse_dim=1)),
                        S(Sp(3, 4))],
           ref=lambda a: a, grad_samples=[S(T(2, 3))],
           grad_call=_dense(lambda f, x: f(x.to_sparse())),
           errors=[(S(T(2, 3)), RuntimeError)]),
    OpInfo("to_dense", [S(Sp(3, 4)), S(Sp(4, 3, sparse_dim=1)), S(Sp(2, 3, 2, sparse_dim=2)),
                        S(Sp(3, 4, uncoalesced=True)), S(T(2, 3)), S(Sp(0, 3))],
           ref=lambda a: a, dtypes=NUMERIC, grad_samples=[S(T(2, 3)), S(T(3, 2, 2))],
           grad_call=lambda f, x: f(x.to_sparse(1))),
    OpInfo("to_sparse.sparse_dim", [S(T(2, 3), 1), S(T(2, 3), 2),
                                    S(T(0, 3), 1), S(T(3, 2, layout="transposed"), 2),
                                    S(T(), 0)],
           ref=lambda a, sparse_dim: a, dtypes=NUMERIC,
           grad_call=_dense(lambda f, *a: f(*a)), grad_samples=[S(T(2, 3), 1), S(T(2, 3), 2)],
           errors=[(S(T(2, 3), 3), RuntimeError), (S(T(2, 3), -1), RuntimeError),
                   (S(T(2, 3), 0), RuntimeError)]),
    OpInfo("to_sparse", [S(T(2, 3)), S(T(3, 2, layout="transposed")), S(T(0, 2)),
                         S(T(4, layout="sliced"))],
           ref=lambda a: a, dtypes=NUMERIC, grad_call=_dense(lambda f, *a: f(*a))),
    OpInfo("sparse_mask", [S(T(3, 4), Sp(3, 4)), S(T(4, 3), Sp(4, 3, sparse_dim=1)),
                           S(T(3, 4, layout="transposed"), Sp(3, 4, uncoalesced=True))],
           ref=lambda a, m: np.where(m != 0, a, 0), grad_call=_dense(lambda f, *a: f(*a)),
           errors=[(S(T(2, 3), Sp(3, 3)), RuntimeError)],
           note="Sp zeroes whole rows, so the mask of Sp(4, 3, sparse_dim=1) is m != 0"),
]


# The classic mistakes: (sample, the exception PyTorch raises), by op.  Kept apart from the
# entries above so that those stay a list of samples each; build_table() joins them.
ERRORS = {
    "frexp.Tensor": [(S(T(2, dtype=ptl.int64)), RuntimeError)],
    "hypot": [(S(T(2, dtype=ptl.int64), T(2, dtype=ptl.int64)), NotImplementedError)],
    "nextafter": [(S(T(2, dtype=ptl.int64), T(2, dtype=ptl.int64)), NotImplementedError)],
    "igamma": [(S(T(2, dtype=ptl.int64), T(2, dtype=ptl.int64)), NotImplementedError)],
    "igammac": [(S(T(2, dtype=ptl.int64), T(2, dtype=ptl.int64)), NotImplementedError)],
    "gcd": [(S(T(2, dtype=ptl.float32), T(2, dtype=ptl.float32)), NotImplementedError),
            (S(T(2, dtype=ptl.bool), T(2, dtype=ptl.bool)), NotImplementedError)],
    "lcm": [(S(T(2, dtype=ptl.float32), T(2, dtype=ptl.float32)), NotImplementedError)],
    "add.Tensor": [(S(T(2, 3), T(4)), RuntimeError)],
    "max": [(S(T(0)), RuntimeError)],
    "min": [(S(T(0)), RuntimeError)],
    "mm": [(S(T(2, 3), T(2, 3)), RuntimeError)],
    "bmm": [(S(T(2, 2, 3), T(3, 3, 2)), RuntimeError)],
    "mv": [(S(T(2, 3), T(2)), RuntimeError)],
    "dot": [(S(T(3), T(4)), RuntimeError)],
    "addmm": [(S(T(2, 2), T(2, 3), T(2, 2)), RuntimeError)],
    "mm.dtype": [(S(T(2, 3), T(3, 4), ptl.float16), RuntimeError)],
    "bmm.dtype": [(S(T(1, 2, 3), T(1, 3, 4), ptl.int64), RuntimeError)],
    "cat": [(S([T(2, 3), T(2, 4)]), RuntimeError), (S([]), ValueError)],
    "stack": [(S([T(2), T(3)]), RuntimeError)],
    "view": [(S(T(2, 3), [4]), RuntimeError)],
    "reshape": [(S(T(2, 3), [-1, -1]), RuntimeError)],
    "expand": [(S(T(2, 3), [3, 3]), RuntimeError)],
    "permute": [(S(T(2, 3), [0]), RuntimeError)],
    "repeat": [(S(T(2, 3), [2]), RuntimeError)],
    "flip": [(S(T(2, 3), [0, 0]), RuntimeError)],
    "select.int": [(S(T(2, 3), 0, 5), IndexError)],
    "transpose.int": [(S(T(2, 3), 0, 2), IndexError)],
    "unsqueeze": [(S(T(2, 3), 4), IndexError)],
    "squeeze.dim": [(S(T(2, 3), 3), IndexError)],
    "narrow": [(S(T(2, 3), 1, 2, 2), RuntimeError)],
    "unfold": [(S(T(2, 3), 1, 4, 1), RuntimeError)],
    "diagonal": [(S(T(2, 3), 0, 0, 0), RuntimeError)],
    "chunk": [(S(T(2, 3), 0), RuntimeError)],
    "split.Tensor": [(S(T(2, 3), -1), RuntimeError)],
    "tril": [(S(T(3)), RuntimeError)],
    "trace": [(S(T(3)), RuntimeError)],
    "copy_": [(S(T(2), T(3)), RuntimeError)],
    "lerp.Scalar": [(S(T(2), T(3), 0.5), RuntimeError)],
    "sum.dim_IntList": [(S(T(2, 3), [2]), IndexError)],
    "var.dim": [(S(T(2, 3), [2]), IndexError)],
    "logsumexp": [(S(T(2, 3), [3]), IndexError)],
    "cumsum": [(S(T(2, 3), 2), IndexError)],
    "_softmax": [(S(T(2, 3), 2, False), IndexError)],
    "sort": [(S(T(2, 3), 2), IndexError)],
    "topk": [(S(T(2, 3), 4), RuntimeError)],
    "kthvalue": [(S(T(2, 3), 4), RuntimeError), (S(T(3), 0), RuntimeError)],
    "index_select": [(S(T(3, 4), 0, I([5])), IndexError)],
    "index.Tensor": [(S(T(3), [I([3])]), IndexError)],
    "index_put": [(S(T(3), [I([5])], T(1)), IndexError)],
    "gather": [(S(T(3, 4), 1, I([[5]])), RuntimeError)],
    "scatter.src": [(S(T(3, 4), 1, I([[4]]), T(1, 1)), RuntimeError)],
    "take": [(S(T(3, 4), I([12])), IndexError)],
    "embedding": [(S(T(3, 2), I([3])), IndexError)],
    "masked_fill.Scalar": [(S(T(2, 3), T(2, 3, dtype=ptl.int64), 1.0), RuntimeError)],
    "where.self": [(S(T(2, dtype=ptl.int64), T(2), T(2)), RuntimeError)],
    "nll_loss_nd": [(S(T(2, 3), I([0, 5]), None, 1, -100), IndexError)],
    "mse_loss": [(S(T(2, dtype=ptl.int64), T(2, dtype=ptl.int64)), NotImplementedError),
                 (S(T(2), T(3)), RuntimeError)],
    "smooth_l1_loss": [(S(T(2), T(2), 1, -0.5), RuntimeError)],
    "huber_loss": [(S(T(2), T(2), 1, 0.0), RuntimeError)],
    "bitwise_and.Tensor": [(S(T(2, dtype=ptl.float64), T(2, dtype=ptl.float64)),
                            NotImplementedError)],
    "div.Tensor_mode": [(S(T(2), T(2), rounding_mode="bad"), RuntimeError)],
    "clamp_": [(S(T(2, dtype=ptl.int64), 0.5), RuntimeError)],
    "linalg_cross": [(S(T(2, 2), T(2, 2)), RuntimeError)],
    "one_hot": [(S(I([-1]), 3), RuntimeError)],
    "bincount": [(S(I([-1])), RuntimeError)],
    "arange.start_step": [(S(0, 5, 0), RuntimeError)],
    "linspace": [(S(0, 1, -1), RuntimeError)],
    "randperm": [(S(-1), RuntimeError)],
    "multinomial": [(S(T(3), 4), RuntimeError)],
    "reflection_pad1d": [(S(T(1, 2, 3), [3, 0]), RuntimeError)],
    "convolution": [(S(T(1, 2, 3, 3), T(2, 3, 2, 2), None, [1, 1], [0, 0], [1, 1], False,
                       [0, 0], 1), RuntimeError)],
    "max_pool2d_with_indices": [(S(T(1, 1, 2, 2), [3, 3]), RuntimeError)],
}


def functional_of(name):
    """The functional op an in-place or out= op computes: add_.Tensor -> add.Tensor,
    add.out -> add.Tensor, round.decimals_out -> round.decimals."""
    base, _, ov = name.partition(".")
    if base.endswith("_") and not base.startswith("_"):
        return base[:-1] + ("." + ov if ov else "")
    if ov == "out" or ov.endswith("_out"):
        stem = ov[:-len("_out")] if ov.endswith("_out") else ""
        cands = [base + "." + stem] if stem else [base, base + ".Tensor", base + ".Tensor_Tensor",
                                                  base + ".self"]
        for c in cands:
            if c in SCHEMAS:
                return c
    return None


def _inplace_samples(samples):
    """A functional op's samples that an in-place op takes: self is not expanded, and already
    has the shape the tensors broadcast to (it cannot broadcast itself)."""
    out = []
    for s in samples:
        if not s.args or not isinstance(s.args[0], T) or s.args[0].layout == "expanded":
            continue
        shapes = [t.shape for t in s.specs() if t.dtype is None]
        try:
            full = np.broadcast_shapes(*shapes) if shapes else s.args[0].shape
        except ValueError:   # not a broadcasting op (scatter_add_, index_add_, ...)
            full = s.args[0].shape
        if tuple(full) == s.args[0].shape:
            out.append(s)
    return out


def _np_view_as_complex(a):
    return a[..., 0] + 1j * a[..., 1]


def _np_angle_real(a):
    """torch.angle of a real array: pi for negatives, 0 otherwise (nan stays nan)"""
    return np.where(np.isnan(a), a, np.where(a < 0, np.pi, 0.0))


def _of_complex(op, a, *rest, **kw):
    """op on the complex tensor whose parts are a's last dim (a [..., 2], float64)."""
    return op(ptl.view_as_complex(a), *rest, **kw)


# complex64/complex128 (Note [Complex dtypes] in src/aten/native/complex.c): the table's
# samples are real, so these rows check the real-input side of the ops that build and take
# apart complex tensors, and their gradchecks reach the complex side through grad_call
# (Note [Complex autograd] in src/autograd/derivatives/complex.c);
# tests/aten/test_complex.py checks their complex values against NumPy and
# tests/autograd/test_complex_autograd.py their gradients on complex inputs.
COMPLEX_GRAD_SAMPLES = [S(T(3, 2)), S(T(2, 3, 2))]
ENTRIES += [
    OpInfo("real", [S(T(2, 3)), S(T()), S(T(3, 2, layout="transposed"))], ref=lambda a: a,
           dtypes=NUMERIC, grad_samples=COMPLEX_GRAD_SAMPLES, grad_call=_of_complex),
    OpInfo("imag", [], errors=[(S(T(2, 3)), RuntimeError)],
           grad_samples=COMPLEX_GRAD_SAMPLES, grad_call=_of_complex),
    OpInfo("view_as_real", [], errors=[(S(T(2, 3)), RuntimeError)],
           grad_samples=COMPLEX_GRAD_SAMPLES, grad_call=_of_complex),
    OpInfo("view_as_complex", [S(T(3, 2)), S(T(4, 3, 2)), S(T(0, 2))],
           ref=_np_view_as_complex,
           errors=[(S(T(3)), RuntimeError), (S(T()), RuntimeError),
                   (S(T(2, 2, layout="transposed")), RuntimeError),
                   (S(T(3, 2, dtype=ptl.int64)), RuntimeError)]),
    OpInfo("complex", [S(T(2, 3), T(2, 3)), S(T(2, 1), T(3)), S(T(), T()), S(T(0, 2), T(2)),
                       S(T(3, 2, layout="transposed"), T(2))],
           ref=lambda a, b: a + 1j * b,
           errors=[(S(T(2), T(2, dtype=ptl.int64)), RuntimeError),
                   (S(T(2), T(2, dtype=ptl.float32)), RuntimeError),
                   (S(T(2), T(3)), RuntimeError)]),
    OpInfo("polar", [S(T(2, 3), T(2, 3)), S(T(2, 1), T(3)), S(T(), T()), S(T(0, 2), T(2)),
                     S(T(3, 2, layout="transposed"), T(2))],
           ref=lambda a, b: a * np.cos(b) + 1j * a * np.sin(b),
           errors=[(S(T(2, dtype=ptl.int64), T(2, dtype=ptl.int64)), RuntimeError),
                   (S(T(2), T(2, dtype=ptl.float32)), RuntimeError)]),
    OpInfo("angle", None, ref=_np_angle_real, grad_samples=COMPLEX_GRAD_SAMPLES,
           grad_call=_of_complex),
    OpInfo("conj", [S(T(2, 3)), S(T()), S(T(3, 2, layout="transposed"))], ref=lambda a: a,
           dtypes=NUMERIC, grad_samples=COMPLEX_GRAD_SAMPLES, grad_call=_of_complex),
    OpInfo("conj_physical", None, ref=lambda a: a, dtypes=NUMERIC,
           grad_samples=COMPLEX_GRAD_SAMPLES, grad_call=_of_complex),
]

# torch.special's functions of native/special.c (tests/aten/test_special_functions.py checks
# their accuracy, special values and errors); the Bessel and Airy functions are not
# differentiable, as in PyTorch
ZETA_NOTE = ("derivatives.yaml: not_implemented for self (the exponent); gradcheck "
             "differentiates other")
ENTRIES += [
    OpInfo("special_zeta", _constant_first(binary_samples()), ref=special.zeta,
           domain=(1.5, 3.0), note=ZETA_NOTE),
    unary("special_entr", special.entr, domain=POS),
    unary("special_ndtr", special.ndtr),
    unary("special_log_ndtr", special.log_ndtr),
    unary("special_ndtri", special.ndtri, domain=(0.05, 0.95)),
    unary("special_erfcx", special.erfcx),
    unary("special_bessel_j0", special.j0, grad="none"),
    unary("special_bessel_j1", special.j1, grad="none"),
    unary("special_bessel_y0", special.y0, domain=POS, grad="none"),
    unary("special_bessel_y1", special.y1, domain=POS, grad="none"),
    unary("special_modified_bessel_i0", special.i0, grad="none"),
    unary("special_modified_bessel_i1", special.i1, grad="none"),
    unary("special_modified_bessel_k0", special.k0, domain=POS, grad="none"),
    unary("special_modified_bessel_k1", special.k1, domain=POS, grad="none"),
    unary("special_scaled_modified_bessel_k0", special.k0e, domain=POS, grad="none"),
    unary("special_scaled_modified_bessel_k1", special.k1e, domain=POS, grad="none"),
    unary("special_spherical_bessel_j0", lambda a: special.spherical_jn(0, a), grad="none"),
    unary("special_airy_ai", lambda a: special.airy(a)[0], grad="none"),
]


def _degree(n):
    """the polynomials' degree: n truncated toward zero (0 for n < 0 is not sampled)"""
    return np.trunc(n).astype(np.int64)


def _np_chebyshev_vw(sign):
    """V (sign -1) or W (sign 1) = U_n + sign U_(n-1)"""
    return lambda x, n: (special.eval_chebyu(_degree(n), x) +
                         sign * special.eval_chebyu(_degree(n) - 1, x))


# x from the op's domain, n in [0, 9) (its gradient is not defined: the ops are not
# differentiable)
POLYNOMIAL_SAMPLES = [
    S(T(2, 3), C(2, 3, low=0, high=9)), S(T(2, 3), C(3, low=0, high=9)),
    S(T(), C(2, 2, low=0, high=9)), S(T(0, 3), C(1, 3, low=0, high=9)),
    S(T(3, 2, layout="transposed"), C(3, 1, low=0, high=9)),
    S(T(4, layout="sliced"), C(4, low=0, high=9))]
_V, _W = _np_chebyshev_vw(-1), _np_chebyshev_vw(1)
ENTRIES += [OpInfo("special_" + name, POLYNOMIAL_SAMPLES, ref=ref, domain=domain, grad="none",
                   rtol=1e-8, atol=1e-9)
            for name, ref, domain in [
    ("chebyshev_polynomial_t", lambda x, n: special.eval_chebyt(_degree(n), x), (-1.2, 1.2)),
    ("chebyshev_polynomial_u", lambda x, n: special.eval_chebyu(_degree(n), x), (-1.2, 1.2)),
    ("chebyshev_polynomial_v", _V, (-1.2, 1.2)),
    ("chebyshev_polynomial_w", _W, (-1.2, 1.2)),
    ("shifted_chebyshev_polynomial_t",
     lambda x, n: special.eval_chebyt(_degree(n), 2 * x - 1), (-0.1, 1.1)),
    ("shifted_chebyshev_polynomial_u",
     lambda x, n: special.eval_chebyu(_degree(n), 2 * x - 1), (-0.1, 1.1)),
    ("shifted_chebyshev_polynomial_v", lambda x, n: _V(2 * x - 1, n), (-0.1, 1.1)),
    ("shifted_chebyshev_polynomial_w", lambda x, n: _W(2 * x - 1, n), (-0.1, 1.1)),
    ("hermite_polynomial_h", lambda x, n: special.eval_hermite(_degree(n), x), (-2.0, 2.0)),
    ("hermite_polynomial_he", lambda x, n: special.eval_hermitenorm(_degree(n), x),
     (-2.0, 2.0)),
    ("laguerre_polynomial_l", lambda x, n: special.eval_laguerre(_degree(n), x), (-1.0, 5.0)),
    ("legendre_polynomial_p", lambda x, n: special.eval_legendre(_degree(n), x), (-1.2, 1.2))]]


def _np_r2c(a, dim, normalization, onesided):
    """NumPy's fftn over dim, scaled as normalization says, halved along the last dim."""
    r = np.fft.fftn(a, axes=dim) / [1, np.sqrt(np.prod([a.shape[d] for d in dim])),
                                    np.prod([a.shape[d] for d in dim])][normalization]
    return r[tuple(slice(0, a.shape[d] // 2 + 1) if onesided and d == dim[-1] % a.ndim else
                   slice(None) for d in range(a.ndim))]


# the FFT operators (Note [FFT kernel] in src/aten/native/fft.c): c2c and c2r take complex
# input, so their rows check the refusal of a real one and gradcheck through grad_call;
# tests/aten/test_fft.py checks every transform against numpy.fft
ENTRIES += [
    OpInfo("_fft_c2c", [], errors=[(S(T(2, 3), [1], 0, True), RuntimeError)],
           grad_samples=[S(T(3, 4, 2), [0, 1], 1, True), S(T(5, 2), [0], 2, False)],
           grad_call=_of_complex),
    OpInfo("_fft_r2c", [S(T(3, 8), [1], 0, True), S(T(4, 5, layout="transposed"), [0, 1], 2,
                                                     False),
                        S(T(2, 3, 5), [-1, 0], 1, True), S(T(0, 4), [1], 0, True)],
           ref=_np_r2c, errors=[(S(T(2, 3), [1, 1], 0, True), RuntimeError),
                                (S(T(2, 3), [2], 0, True), IndexError)]),
    OpInfo("_fft_c2r", [], errors=[(S(T(2, 3), [1], 0, 4), RuntimeError)],
           grad_samples=[S(T(3, 4, 2), [1], 0, 6), S(T(2, 3, 2), [0, 1], 2, 5)],
           grad_call=_of_complex),
]


def build_table():
    """name -> OpInfo for every op the table covers: the ENTRIES (samples generated from the
    schema where an entry gives none), and the in-place and out= variants of the ENTRIES that
    have no entry of their own."""
    table = {e.name: e for e in ENTRIES}
    for e in ENTRIES:
        if e.samples is None:
            e.samples = generated_samples(e.name)
    for name in SCHEMAS:
        if name in table:
            continue
        fn = functional_of(name)
        if fn is None or fn not in table:
            continue
        f = table[fn]
        if name.split(".")[0].endswith("_"):
            table[name] = OpInfo(name, _inplace_samples(f.samples), ref=f.ref, dtypes=f.dtypes,
                                 domain=f.domain, grad=f.grad, gradgrad=f.gradgrad,
                                 note=f.note, rtol=f.rtol, atol=f.atol)
        else:
            table[name] = OpInfo(name, f.samples, ref=f.ref, dtypes=f.dtypes, domain=f.domain,
                                 grad="none", out_of=fn, rtol=f.rtol, atol=f.atol)
    for name, errors in ERRORS.items():
        table[name].errors += errors
    return table


TABLE = build_table()
