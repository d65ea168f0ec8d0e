"""Non-finite inputs against PyTorch: nan, inf, -inf, -0.0, huge and tiny values planted at the
start, middle and end of rows whose lengths cross the kernels' block lengths (SUM_BLOCK,
SCAN_BLOCK and CUM_BLOCK, the vector widths, PTL_RED_COL_BLOCK), float32 and float64, on one
and two threads, must give PyTorch's results: the same nan positions, the same infinities, the
same indices, the finite values to a tolerance.  Two parts: the operator table swept
(nonfinite_sweep.py: every op of tests/opinfo.py with a torch twin, its samples planted), and
the reductions over dims 0, 1, -1 and the whole tensor, with their gradients.

EXPECTED lists the differences kept on purpose, each with its reason: we match PyTorch unless
PyTorch is itself wrong."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import num_threads, torch, torch_ref
from nonfinite_sweep import FLOATING, TABLE, compare, sweep, sweep_names

pytestmark = torch_ref

_LAPACK = ("LAPACK promises nothing for non-finite input: which factors are nan, or "
           "whether it reports an error (PyTorch raises for eigh with nan, ours returns nan; "
           "ours raises for svd with inf, PyTorch returns nan)")
_SLOGDET = "a matrix with nan: PyTorch's sign is 0, ours the sign of the pivots (+-1)"
_MEAN_INF = ("the mean of a row with inf is inf (as x.mean() in both); PyTorch's Welford "
             "update gives nan (inf - inf)")
_BACKWARD_ORDER = ("inf in a gradient or saved statistic: the formula's order of terms "
                   "decides between inf and nan (inf - inf); inputs outside the domain")
_ZERO_TAP = ("a tap of weight exactly 0 (zero padding, an interpolation weight of 0) still "
             "multiplies: 0 * nan is nan (IEEE); PyTorch skips those taps")
_POLY = ("float32 at +-inf: ours the polynomial's limit (+-inf), PyTorch's nan; a nan x in "
         "PyTorch's float32 kernel gives finite values (its bug), ours nan")
_MODE_NAN = ("rows with nan: PyTorch's std::sort with < leaves nans anywhere (its answer "
             "depends on where they were); ours runs its scan on sort's order, nan last, each "
             "nan a run of its own (Note [Mode with NaN])")
_SORTED_NAN = ("nan in the sorted boundaries or rows: ours orders nan last (sort's order); "
               "PyTorch's binary search steps past a nan and its unique_dim sorts nan rows "
               "first")

# op -> why its non-finite results differ from PyTorch's (the sweep skips it)
EXPECTED = {
    "_cdist_forward": "p=inf with nan: PyTorch's max drops the nan (a finite distance); ours "
                      "is nan.  float32 near 1e38: PyTorch squares and overflows to inf, ours "
                      "scales and gives the finite distance",
    "_pdist_forward": "float32 near 1e38: PyTorch overflows to inf, ours gives the finite "
                      "distance (as _cdist_forward)",
    "_cdist_backward": "follows _cdist_forward's finite distance near 1e38",
    "_fft_r2c": "nan in a row: every part of the row's transform is nan; pocketfft's "
                "butterflies leave the parts whose twiddle is exactly 0 finite",
    "_linalg_det": "LU of a matrix with nan: the pivot picked among nans is undefined (the "
                   "determinant is nan either way)",
    "_linalg_solve_ex": "LU of a matrix with nan: the pivot picked among nans is undefined",
    "_linalg_eigh": _LAPACK, "linalg_eigvalsh": _LAPACK, "linalg_svdvals": _LAPACK,
    "_linalg_svd": _LAPACK, "linalg_cholesky": _LAPACK, "linalg_cholesky_ex": _LAPACK,
    "linalg_ldl_factor_ex": _LAPACK, "linalg_qr": _LAPACK, "linalg_solve": _LAPACK,
    "linalg_slogdet": _SLOGDET, "slogdet": _SLOGDET, "_linalg_slogdet": _SLOGDET,
    **{op: _MEAN_INF for op in ("var_mean", "var_mean.correction", "var_mean.dim", "std_mean",
                                "std_mean.correction", "std_mean.dim", "native_layer_norm",
                                "native_batch_norm", "native_group_norm")},
    **{op: _BACKWARD_ORDER for op in ("native_layer_norm_backward",
                                      "native_batch_norm_backward",
                                      "native_group_norm_backward",
                                      "binary_cross_entropy_backward", "mish_backward")},
    **{op: _ZERO_TAP for op in ("convolution", "convolution_backward", "upsample_trilinear3d",
                                "upsample_trilinear3d_backward")},
    **{"special_" + op + "_polynomial_" + k: _POLY for op, ks in (
        ("chebyshev", "tuvw"), ("shifted_chebyshev", "tuvw"), ("hermite", ("h", "he")),
        ("laguerre", "l"), ("legendre", "p")) for k in ks},
    **{op: _SORTED_NAN for op in ("bucketize.Scalar", "bucketize.Tensor", "searchsorted.Scalar",
                                  "searchsorted.Tensor", "unique_dim")},
    "_scaled_dot_product_flash_attention_for_cpu":
        "a query with nan: its row's output and logsumexp are nan (ours, as softmax and "
        "PyTorch's math attention give); PyTorch's flash kernel takes a row of nan scores "
        "for a masked one: output 0, logsumexp 0 (Note [Attention with NaN])",
    "_scaled_dot_product_flash_attention_for_cpu_backward":
        "keys masked out for every query (causal) get gradient 0 (ours) where PyTorch "
        "multiplies their probability 0 by a nan",
    "binary_cross_entropy": "fixed: a nan target is refused, as PyTorch (the message: "
                            "test_nonfinite_regressions.py); the sweep's samples differ in "
                            "which refusal comes first",
    "histc": "fixed: a range with nan or inf is refused, as PyTorch "
             "(test_nonfinite_regressions.py)",
    "fractional_max_pool2d": "a nan random sample: ours refuses it (the window would be "
                             "outside the input), PyTorch pools somewhere",
    "fractional_max_pool3d": "a nan random sample: ours refuses it, PyTorch pools somewhere",
    "grid_sampler_2d_backward": "inf in grad_output: our grid gradient adds a channel's taps "
                                "times grad_output one by one (inf - inf: nan), PyTorch's "
                                "combines the taps first (+-inf); a nan coordinate's gradient: "
                                "test_nonfinite_regressions.py",
    **{op: "a nan or inf grid coordinate (zeros padding): ours nan, as grid_sampler_2d in both "
           "(Note [Grid sampler non-finite coordinates]); PyTorch's 3-d kernel moves it "
           "outside and samples 0" for op in ("grid_sampler_3d", "grid_sampler_3d_backward")},
    "mode": _MODE_NAN,
}

DTYPES = [pytest.param(d, id=str(d).split(".")[-1]) for d in FLOATING]
SWEEP = [pytest.param(n, id=n) for n in sweep_names() if n not in EXPECTED]


@pytest.mark.parametrize("name", SWEEP)
def test_table_sweep(name):
    diffs = []
    for dtype in TABLE[name].dtypes:
        if dtype in FLOATING or dtype.is_complex:   # float16 and bfloat16: no NumPy twin
            diffs += sweep(name, dtype)
    assert not diffs, "\n".join(diffs[:8])


# ---- the reductions over rows that cross the block lengths ----

SIZES = (5, 17, 64, 257, 2049, 4099)
PLANTED = {"nan": [np.nan], "inf": [np.inf], "-inf": [-np.inf], "mixed": [np.inf, -np.inf],
           "nan_inf": [np.nan, np.inf], "-0": [-0.0], "huge": ["huge"], "tiny": ["tiny"]}


def planted_rows(n, label, dtype, near_one=False, seed=0):
    """A [7, n] float64 array: random rows with the label's values planted at the start (row
    0), middle (1), end (2), start and end (3: ties), nowhere (4), and the values in turn at
    the start, middle and end (5, 6).  near_one: the random values are +-[0.9, 1.1] (products
    of 4099 of them neither overflow nor underflow)."""
    gen = np.random.default_rng(seed + n)
    a = gen.uniform(-2, 2, (7, n))
    if near_one:
        a = np.where(a < 0, -1, 1) * gen.uniform(0.9, 1.1, (7, n))
    np32 = dtype == ptl.float32
    vals = [{"huge": 1e38 if np32 else 1e308,
             "tiny": float(ptl.finfo(dtype).tiny)}.get(v, v) for v in PLANTED[label]]
    mid = n // 2
    for row, cols in ((0, [0]), (1, [mid]), (2, [n - 1]), (3, [0, n - 1])):
        for c in cols:
            a[row, c] = vals[0]
    for row, cols in ((5, [0, mid, n - 1]), (6, [n - 1, 1, mid])):
        for k, c in enumerate(cols):
            a[row, c] = vals[k % len(vals)]
    return a


def _pair(m):
    return m.float64


def _nll(m, x, d):
    t = m.arange(x.shape[0]) % x.shape[1]
    return m.nn.functional.nll_loss(m.log_softmax(x, 1), t, reduction="none")


def _cross_entropy(m, x, d):
    t = m.arange(x.shape[0]) % x.shape[1]
    return m.nn.functional.cross_entropy(x, t, reduction="none")


def _flat(x, d):
    """x, or for the whole tensor its flattening (the ops that take one dim)."""
    return x if d is not None else x.reshape(-1)


def _picked(res, x, d):
    """topk's, kthvalue's and mode's values, and the values their indices pick (the index among
    equal values is either's choice)."""
    values, indices = res
    return values, x.gather(d or 0, indices)


def _unique(m, x):
    """unique's values, counts and the values its inverse picks (the order of the nans,
    each unique, is the sort's)."""
    values, inverse, counts = m.unique(x, sorted=True, return_inverse=True,
                                       return_counts=True)
    return values, counts, values[inverse]


def _rows(x):
    """The [7, n] rows of a layout of planted_rows."""
    return x if x.shape[0] == 7 else x.t()


def _d(f):
    """An op of (x, dim): the whole tensor when dim is None."""
    return lambda m, x, d: f(m, x) if d is None else f(m, x, d)


# name -> f(module, x, dim): the same call in pytorchlite and in torch
REDUCTIONS = {
    "sum": _d(lambda m, x, *d: m.sum(x, *d)),
    "nansum": _d(lambda m, x, *d: m.nansum(x, *d)),
    "prod": _d(lambda m, x, *d: m.prod(x, *d)),
    "mean": _d(lambda m, x, *d: m.mean(x, *d)),
    "nanmean": _d(lambda m, x, *d: m.nanmean(x, *d)),
    "amax": _d(lambda m, x, *d: m.amax(x, *d)),
    "amin": _d(lambda m, x, *d: m.amin(x, *d)),
    "max": _d(lambda m, x, *d: m.max(x, *d)),
    "min": _d(lambda m, x, *d: m.min(x, *d)),
    "argmax": _d(lambda m, x, *d: m.argmax(x, *d)),
    "argmin": _d(lambda m, x, *d: m.argmin(x, *d)),
    "aminmax": lambda m, x, d: m.aminmax(x, dim=d),
    "cumsum": lambda m, x, d: m.cumsum(x if d is not None else x.reshape(-1), d or 0),
    "cumprod": lambda m, x, d: m.cumprod(x if d is not None else x.reshape(-1), d or 0),
    "cummax": lambda m, x, d: m.cummax(x if d is not None else x.reshape(-1), d or 0),
    "cummin": lambda m, x, d: m.cummin(x if d is not None else x.reshape(-1), d or 0),
    "logcumsumexp": lambda m, x, d: m.logcumsumexp(x if d is not None else x.reshape(-1),
                                                   d or 0),
    "logsumexp": lambda m, x, d: m.logsumexp(x, d if d is not None else (0, 1)),
    "softmax": lambda m, x, d: m.softmax(x if d is not None else x.reshape(-1), d or 0),
    "log_softmax": lambda m, x, d: m.log_softmax(x if d is not None else x.reshape(-1),
                                                 d or 0),
    "var": _d(lambda m, x, *d: m.var(x, *d)),
    "std": _d(lambda m, x, *d: m.std(x, *d)),
    "var_mean": _d(lambda m, x, *d: m.var_mean(x, *d)),
    "std_mean": _d(lambda m, x, *d: m.std_mean(x, *d)),
    "norm2": lambda m, x, d: m.linalg.vector_norm(x, 2, d),
    "norm1": lambda m, x, d: m.linalg.vector_norm(x, 1, d),
    "norm_inf": lambda m, x, d: m.linalg.vector_norm(x, float("inf"), d),
    "norm_-inf": lambda m, x, d: m.linalg.vector_norm(x, float("-inf"), d),
    "norm0": lambda m, x, d: m.linalg.vector_norm(x, 0, d),
    "norm3": lambda m, x, d: m.linalg.vector_norm(x, 3, d),
    "sort": lambda m, x, d: m.sort(_flat(x, d), dim=d or 0, stable=True),
    "sort_desc": lambda m, x, d: m.sort(_flat(x, d), dim=d or 0, descending=True,
                                        stable=True),
    "argsort": lambda m, x, d: m.argsort(_flat(x, d), dim=d or 0, stable=True),
    "topk": lambda m, x, d: _picked(m.topk(_flat(x, d), 3, d or 0), _flat(x, d), d),
    "topk_smallest": lambda m, x, d: _picked(m.topk(_flat(x, d), 3, d or 0, largest=False),
                                             _flat(x, d), d),
    "kthvalue": lambda m, x, d: _picked(m.kthvalue(_flat(x, d), 2, d or 0, keepdim=True),
                                        _flat(x, d), d),
    "median": _d(lambda m, x, *d: m.median(x, *d)),
    "nanmedian": _d(lambda m, x, *d: m.nanmedian(x, *d)),
    "quantile": lambda m, x, d: m.quantile(x, m.tensor([0.0, 0.3, 1.0], dtype=x.dtype), d),
    "nanquantile": lambda m, x, d: m.nanquantile(x, m.tensor([0.0, 0.3, 1.0], dtype=x.dtype),
                                                 d),
    "clamp": lambda m, x, d: m.clamp(x, -1.0, 1.0),
    "clamp_tensor": lambda m, x, d: m.clamp(x, x.flip(-1) - 1, x.flip(0) + 1),
    "maximum": lambda m, x, d: m.maximum(x, x.flip(-1)),
    "minimum": lambda m, x, d: m.minimum(x, x.flip(-1)),
    "fmax": lambda m, x, d: m.fmax(x, x.flip(-1)),
    "fmin": lambda m, x, d: m.fmin(x, x.flip(-1)),
    "isclose": lambda m, x, d: m.isclose(x, x.flip(0)),
    "isclose_equal_nan": lambda m, x, d: m.isclose(x, x.flip(0), equal_nan=True),
    "unique": lambda m, x, d: _unique(m, x),
    "dot": lambda m, x, d: m.dot(x[0], x[4]),
    "mv": lambda m, x, d: m.mv(x, x[4]),
    "mm": lambda m, x, d: m.mm(x, x.t()),
    "nll_loss": lambda m, x, d: _nll(m, x, d),
    "cross_entropy": lambda m, x, d: _cross_entropy(m, x, d),
    "layer_norm": lambda m, x, d: m.nn.functional.layer_norm(x, x.shape[-1:]),
    "batch_norm": lambda m, x, d: m.nn.functional.batch_norm(x.t(), None, None,
                                                             training=True),
    "group_norm": lambda m, x, d: m.nn.functional.group_norm(_rows(x).reshape(1, 7, -1), 7),
    "renorm": lambda m, x, d: m.renorm(x, 2, d if d is not None else 0, 1.0),
    "dist": lambda m, x, d: m.dist(x, x.flip(0)),
    "dist_inf": lambda m, x, d: m.dist(x, x.flip(0), float("inf")),
    "cdist": lambda m, x, d: m.cdist(x, x.flip(0),
                                     compute_mode="donot_use_mm_for_euclid_dist"),
    "cdist_1": lambda m, x, d: m.cdist(x, x.flip(0), 1.0),
    "cdist_inf": lambda m, x, d: m.cdist(x, x.flip(0), float("inf")),
    "count_nonzero": _d(lambda m, x, *d: m.count_nonzero(x, *d)),
    "all": _d(lambda m, x, *d: m.all(x, *d)),
    "any": _d(lambda m, x, *d: m.any(x, *d)),
    "mode": lambda m, x, d: _picked(m.mode(x, -1 if d is None else d, keepdim=True), x,
                                    -1 if d is None else d),
}

# the products: their rows are near +-1 (a product of 4099 values in [-2, 2] underflows, and
# inf times the 0 it underflowed to is inf or nan by the order of the lanes)
NEAR_ONE = {"prod", "cumprod"}

_DOT_ORDER = ("terms that overflow to +inf and -inf: the order of the partial sums decides "
              "between inf and nan")
_PROD_ORDER = "a product that overflows on the way: inf or the finite product by the order"

# (op, planted label[, dtype]) -> why its result differs from PyTorch's on purpose
EXPECTED_REDUCTIONS = {
    **{(op, lab): _MEAN_INF for op in ("var_mean", "std_mean")
       for lab in ("inf", "-inf", "mixed")},
    **{(op, "huge"): _DOT_ORDER for op in ("dot", "mv", "mm")},
    **{(op, "huge"): _PROD_ORDER for op in ("prod", "cumprod")},
    ("layer_norm", "huge"): "float64 rows with two values near 1e308: the variance overflows; "
                            "PyTorch's 0 (Welford's finite mean times rstd 0) and our nan (the "
                            "sum of the row overflows, inf - inf) are both that overflow's",
    ("group_norm", "huge"): "float64 rows near 1e308: the variance overflows (as layer_norm); "
                            "PyTorch's 0, our nan (E[(x-k)^2] - m^2 is inf - inf)",
    **{("cdist_inf", lab): "PyTorch's p=inf max drops a nan difference (inf - inf too): a "
                           "finite distance; ours is nan" for lab in ("nan", "inf", "-inf",
                                                                       "mixed", "nan_inf")},
    **{("mode", lab): _MODE_NAN for lab in ("nan", "nan_inf")},
    ("batch_norm", "huge", "float64"): "float64 channels with two values near 1e308: the "
                                       "variance overflows (as layer_norm's): PyTorch's 0, our "
                                       "nan",
}


def _layouts(m, a, d):
    """The tensor a reduction over dim d runs on: rows along d (contiguous for dim 1 and
    whole, a transposed copy for dim 0, a transposed view for dim -1)."""
    x = m.from_numpy(a.copy()) if m is torch else ptl.from_numpy(a.copy())
    if d == 0:
        return x.t().contiguous()
    if d == -1:
        return x.t().contiguous().t()
    return x


def _run_reduction(name, label, dtype, n, d):
    a = planted_rows(n, label, dtype, near_one=name in NEAR_ONE)
    f = REDUCTIONS[name]
    x = _layouts(ptl, a, d).to(dtype)
    tdtype = getattr(torch, str(dtype).split(".")[-1])
    tx = _layouts(torch, a, d).to(tdtype)
    want = f(torch, tx, d)
    got = f(ptl, x, d)
    rtol = 2e-4 if dtype == ptl.float32 else 1e-9
    atol = rtol * 1e-2 * n   # sums of n terms: n roundings
    why = compare(got, want, rtol, atol)
    if why is not None and dtype == ptl.float32:
        # PyTorch's float32 kernel is itself wrong where its float64 one agrees with ours
        # (squares and sums that overflow float32 while the result does not)
        wide = f(torch, tx.to(torch.float64), d)
        wide = [w.to(tdtype) if w.dtype == torch.float64 else w
                for w in (wide if isinstance(wide, (list, tuple)) else [wide])]
        if compare(got, wide, rtol, atol) is None:
            return None
    return why


# the ops whose result pairs the rows: on dim 0's [n, 7] layout they make an [n, n] result
# (16M entries at 4099, a minute a case), so past 257 they run on the [7, n] layouts only
PAIRWISE = ("mm", "cdist", "cdist_1", "cdist_inf")

RED_PARAMS = [pytest.param(name, dtype, id=f"{name}-{str(dtype).split('.')[-1]}")
              for name in REDUCTIONS for dtype in FLOATING]


@pytest.mark.parametrize("name, dtype", RED_PARAMS)
def test_reduction_nonfinite(name, dtype):
    diffs = []
    for threads in (1, 2):
        with num_threads(threads):
            for label in PLANTED:
                if {(name, label), (name, label, str(dtype)[6:])} & set(EXPECTED_REDUCTIONS):
                    continue
                for n in SIZES if threads == 1 else SIZES[-2:]:   # the sizes that split
                    for d in (1, 0, -1, None):
                        if d == 0 and n > 257 and name in PAIRWISE:
                            continue      # an [n, n] result: the rows layout covers them
                        why = _run_reduction(name, label, dtype, n, d)
                        if why:
                            diffs.append(f"{label} n={n} dim={d} threads={threads}: {why}")
    assert not diffs, "\n".join(diffs[:8])


# ---- the gradients of the main reductions with non-finite inputs ----

_AMAX_NAN = ("a row with nan: PyTorch's amax/amin backward divides by the count of elements "
             "equal to the result (0 for nan: the whole row's gradient is nan); ours gives it "
             "to the nan elements, as max() and max(dim) do in both")
_TIE = "among equal values the index kthvalue picks (its quickselect's) is PyTorch's choice"

# (op, planted label) -> why its gradient differs from PyTorch's on purpose
EXPECTED_GRADIENTS = {
    **{(op, lab): _AMAX_NAN for op in ("amax", "amin") for lab in ("nan", "nan_inf")},
    **{("kthvalue", lab): _TIE for lab in ("-inf", "mixed")},
}

# name -> f(module, x, dim) whose gradient (of the outputs weighted by fixed random values)
# must be PyTorch's: which element of a tie or of a row with nan gets the gradient
GRADIENTS = {
    "sum": _d(lambda m, x, *d: m.sum(x, *d)),
    "mean": _d(lambda m, x, *d: m.mean(x, *d)),
    "prod": _d(lambda m, x, *d: m.prod(x, *d)),
    "amax": _d(lambda m, x, *d: m.amax(x, *d)),
    "amin": _d(lambda m, x, *d: m.amin(x, *d)),
    "max": lambda m, x, d: m.max(x) if d is None else m.max(x, d)[0],
    "min": lambda m, x, d: m.min(x) if d is None else m.min(x, d)[0],
    "logsumexp": lambda m, x, d: m.logsumexp(x, d if d is not None else (0, 1)),
    "softmax": lambda m, x, d: m.softmax(_flat(x, d), d or 0),
    "log_softmax": lambda m, x, d: m.log_softmax(_flat(x, d), d or 0),
    "norm2": lambda m, x, d: m.linalg.vector_norm(x, 2, d),
    "norm_inf": lambda m, x, d: m.linalg.vector_norm(x, float("inf"), d),
    "var": _d(lambda m, x, *d: m.var(x, *d)),
    "cumsum": lambda m, x, d: m.cumsum(_flat(x, d), d or 0),
    "cumprod": lambda m, x, d: m.cumprod(_flat(x, d), d or 0),
    "cummax": lambda m, x, d: m.cummax(_flat(x, d), d or 0)[0],
    "sort": lambda m, x, d: m.sort(_flat(x, d), dim=d or 0, stable=True)[0],
    "median": lambda m, x, d: m.median(x) if d is None else m.median(x, d)[0],
    "nanmedian": lambda m, x, d: m.nanmedian(x) if d is None else m.nanmedian(x, d)[0],
    "kthvalue": lambda m, x, d: m.kthvalue(_flat(x, d), 2, d or 0)[0],
    "clamp": lambda m, x, d: m.clamp(x, -1.0, 1.0),
    "maximum": lambda m, x, d: m.maximum(x, x.flip(-1)),
    "fmax": lambda m, x, d: m.fmax(x, x.flip(-1)),
}

GRAD_LABELS = ("nan", "inf", "-inf", "mixed", "nan_inf")


def _grad_of(m, f, a, d, dtype):
    x = _layouts(m, a, d).to(dtype).detach().requires_grad_(True)
    out = f(m, x, d)
    w = np.random.default_rng(1).uniform(0.5, 1.5, tuple(out.shape))
    tw = (torch.from_numpy(w) if m is torch else ptl.from_numpy(w)).to(dtype)
    (out * tw).sum().backward()
    return x.grad


GRAD_PARAMS = [pytest.param(name, id=name) for name in GRADIENTS]


@pytest.mark.parametrize("name", GRAD_PARAMS)
def test_reduction_gradient_nonfinite(name):
    diffs = []
    f = GRADIENTS[name]
    for label in GRAD_LABELS:
        if (name, label) in EXPECTED_GRADIENTS:
            continue
        for n in (5, 17, 257):
            for d in (1, 0, -1, None):
                a = planted_rows(n, label, ptl.float64, near_one=name in NEAR_ONE)
                got = _grad_of(ptl, f, a, d, ptl.float64)
                want = _grad_of(torch, f, a, d, torch.float64)
                why = compare(got, want, 1e-9, 1e-12 * n)
                if why:
                    diffs.append(f"{label} n={n} dim={d}: {why}")
    assert not diffs, "\n".join(diffs[:8])
