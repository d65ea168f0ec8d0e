"""Foundation benchmarks: per-op overhead of x + y, big elementwise ops, a full reduction,
half-precision casts, the training casts, clamp, transposed copies, the offset-table shape
ops, row and element indexing, fills, constant padding, seeded random fills, boolean-mask ops,
cumsum and the index, search and shape ops of issue 16's sweep.  Each group runs pytorchlite, NumPy and (when installed) PyTorch on the same data."""
import numpy as np
import pytest

from _impls import IMPLS, lib, make, randn, run


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [1, 100])
def test_add_overhead(benchmark, impl, n):
    benchmark.group = f"x + y, {n} float32"
    a = np.ones(n, np.float32)
    run(benchmark, impl, lambda x, y: x + y, a, a)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [10**6, 10**7])
@pytest.mark.parametrize("op", ["add", "mul"])
def test_binary_big(benchmark, impl, n, op):
    benchmark.group = f"{op} {n:.0e} float32"
    a = randn(n)
    fn = (lambda x, y: x + y) if op == "add" else (lambda x, y: x * y)
    run(benchmark, impl, fn, a, a)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [10**6, 10**7])
def test_exp_big(benchmark, impl, n):
    benchmark.group = f"exp {n:.0e} float32"
    a = randn(n)
    fn = np.exp if impl == "numpy" else (lambda x: x.exp())
    run(benchmark, impl, fn, a)


@pytest.mark.parametrize("impl", IMPLS)
def test_sum_4096(benchmark, impl):
    benchmark.group = "sum 4096x4096 float32"
    a = randn((4096, 4096))
    run(benchmark, impl, lambda x: x.sum(), a)


@pytest.mark.parametrize("impl", IMPLS)
def test_sum_columns(benchmark, impl):
    """A reduction over the leading dim: the column-sum rows loop of reduce.c."""
    benchmark.group = "sum(0) 4096x1024 float32"
    a = randn((4096, 1024))
    run(benchmark, impl, lambda x: x.sum(0), a)


@pytest.mark.parametrize("impl", IMPLS)
def test_view_ops_overhead(benchmark, impl):
    """Per-call cost of view-making ops (view, reshape, select, a slice, narrow)."""
    benchmark.group = "view/reshape/select/slice/narrow, 8x16 float32"
    a = randn((8, 16))

    def views(x):
        if impl == "numpy":
            return (x.reshape(16, 8), x.reshape(-1), x[3], x[:, 2:9:2], x[1:5])
        return (x.view(16, 8), x.reshape(-1), x.select(0, 3), x[:, 2:9:2], x.narrow(0, 1, 4))

    run(benchmark, impl, views, a)


CASTS = {"float32 -> float16": (np.float16, "half"), "float32 -> bfloat16": (None, "bfloat16"),
         "float16 -> float32": (np.float32, "float"), "float64 -> float16": (np.float16, "half"),
         "float16 -> float64": (np.float64, "double"),
         "float64 -> bfloat16": (None, "bfloat16")}


@pytest.mark.parametrize("cast,impl", [(cast, impl) for cast in CASTS for impl in IMPLS
                                        if impl != "numpy" or CASTS[cast][0] is not None])
def test_half_precision_casts(benchmark, impl, cast):
    """The casts of mixed-precision training (copy.c, Note [Half-precision conversions]);
    NumPy has no bfloat16, so the bfloat16 casts compare with PyTorch only."""
    benchmark.group = f"{cast}, 1e6 values"
    np_dtype, method = CASTS[cast]
    a = randn(10**6)
    a = a.astype(np.dtype(cast.split()[0]))
    fn = (lambda x: x.astype(np_dtype)) if impl == "numpy" else (
        lambda x: getattr(x, method)())
    run(benchmark, impl, fn, a)


# source dtype, NumPy destination, method: labels, images and masks to float32, a.long(),
# the float32 <-> float64 round trip (copy.c, Note [Vectorized casts] and Note [AVX2 casts
# into int64])
TRAINING_CASTS = {"float32 -> int64": (np.float32, np.int64, "long"),
                  "float64 -> int64": (np.float64, np.int64, "long"),
                  "float32 -> int32": (np.float32, np.int32, "int"),
                  "int64 -> float32": (np.int64, np.float32, "float"),
                  "uint8 -> float32": (np.uint8, np.float32, "float"),
                  "bool -> float32": (np.bool_, np.float32, "float"),
                  "float64 -> float32": (np.float64, np.float32, "float"),
                  "float32 -> float64": (np.float32, np.float64, "double")}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("cast", list(TRAINING_CASTS))
def test_training_casts(benchmark, impl, cast):
    benchmark.group = f"{cast}, 1e6 values"
    src, np_dtype, method = TRAINING_CASTS[cast]
    a = (randn(10**6) * 100).astype(src)
    fn = (lambda x: x.astype(np_dtype)) if impl == "numpy" else (
        lambda x: getattr(x, method)())
    run(benchmark, impl, fn, a)


@pytest.mark.parametrize("impl", IMPLS)
def test_clamp(benchmark, impl):
    benchmark.group = "clamp(-0.5, 0.5) 1e6 float32"
    fn = (lambda x: np.clip(x, -0.5, 0.5)) if impl == "numpy" else (lambda x: x.clamp(-0.5, 0.5))
    run(benchmark, impl, fn, randn(10**6))


PERMUTES = {"x.t().contiguous() 1024x1024": ((1024, 1024), (1, 0)),
            "NCHW -> NHWC 32x64x32x32": ((32, 64, 32, 32), (0, 2, 3, 1))}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", list(PERMUTES))
def test_transposed_copy(benchmark, impl, case):
    """Copies whose source is transposed to the destination (copy.c, Note [Transposed
    copies])."""
    benchmark.group = f"{case} float32"
    shape, perm = PERMUTES[case]
    fn = (lambda x: np.ascontiguousarray(x.transpose(perm))) if impl == "numpy" else (
        lambda x: x.permute(*perm).contiguous())
    run(benchmark, impl, fn, randn(shape))


SHAPE_OPS = {
    "flip(1)": (lambda x: x.flip(1), lambda a: np.ascontiguousarray(np.flip(a, 1))),
    "roll(3, 1)": (lambda x: x.roll(3, 1), lambda a: np.roll(a, 3, 1)),
    "repeat(2, 1)": (lambda x: x.repeat(2, 1), lambda a: np.tile(a, (2, 1))),
    "tril()": (lambda x: x.tril(), np.tril),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(SHAPE_OPS))
def test_shape_ops(benchmark, impl, op):
    """Ops that move data by offset tables (shape.c, Note [Gather by offset tables])."""
    benchmark.group = f"{op} 1024x1024 float32"
    tensor_fn, numpy_fn = SHAPE_OPS[op]
    run(benchmark, impl, numpy_fn if impl == "numpy" else tensor_fn, randn((1024, 1024)))


@pytest.mark.parametrize("impl", IMPLS)
def test_flip_vector(benchmark, impl):
    """flip(0) of one long row: no table for the flipped innermost dim, the row reversed by
    lane permutes (Note [Flip of the innermost dim] in shape_gather.c)"""
    benchmark.group = "flip(0) 65536 float32"
    fn = (lambda a: np.ascontiguousarray(np.flip(a, 0))) if impl == "numpy" else (
        lambda x: x.flip(0))
    run(benchmark, impl, fn, randn(65536))


@pytest.mark.parametrize("impl", IMPLS)
def test_flip_short_rows(benchmark, impl):
    """flip(2) of 64x64x64: 4096 reversed rows of 256 bytes, a run of 64 rows a kernel call"""
    benchmark.group = "flip(2) 64x64x64 float32"
    fn = (lambda a: np.ascontiguousarray(np.flip(a, 2))) if impl == "numpy" else (
        lambda x: x.flip(2))
    run(benchmark, impl, fn, randn((64, 64, 64)))


@pytest.mark.parametrize("impl", IMPLS)
def test_flip_of_a_transposed_input(benchmark, impl):
    """flip(1) of a transposed 1024x1024: the result keeps the input's layout and the copy
    walks the input's memory order (Note [Flip keeps the layout] in shape.c)"""
    benchmark.group = "flip(1) of .t() 1024x1024 float32"
    fn = (lambda a: np.flip(a.T, 1).copy(order="K")) if impl == "numpy" else (
        lambda x: x.t().flip(1))
    run(benchmark, impl, fn, randn((1024, 1024)))


INDEX_OPS = {
    "index_select(0, idx)": (lambda x, i, v: x.index_select(0, i), lambda x, i, v: x[i]),
    "index_add(0, idx, v)": (lambda x, i, v: x.index_add(0, i, v),
                             lambda x, i, v: _np_index_add(x, i, v)),
    "index_put_ accumulate": (lambda x, i, v: x.clone().index_put_((i,), v, accumulate=True),
                              lambda x, i, v: _np_index_add(x, i, v)),
}


def _np_index_add(x, i, v):
    out = x.copy()
    np.add.at(out, i, v)
    return out


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(INDEX_OPS))
def test_index_rows(benchmark, impl, op):
    """Indexing that moves whole rows (index.c, Note [Contiguous index rows])."""
    benchmark.group = f"{op}, 1024 rows of 1024 float32"
    idx = np.random.default_rng(2).integers(0, 1024, 1024)
    args = [make(impl, randn((1024, 1024))), make(impl, idx),
            make(impl, randn((1024, 1024), seed=1))]
    tensor_fn, numpy_fn = INDEX_OPS[op]
    benchmark(numpy_fn if impl == "numpy" else tensor_fn, *args)


def _np_scatter_add(x, i, v):
    out = x.copy()
    np.add.at(out, (np.arange(i.shape[0])[:, None], i), v)
    return out


ELEMENT_INDEX_OPS = {
    "gather(1, idx2)": (lambda x, i, i2, v: x.gather(1, i2),
                        lambda x, i, i2, v: np.take_along_axis(x, i2, 1)),
    "scatter_add(1, idx2, v)": (lambda x, i, i2, v: x.scatter_add(1, i2, v),
                                lambda x, i, i2, v: _np_scatter_add(x, i2, v)),
    "index_select(1, idx)": (lambda x, i, i2, v: x.index_select(1, i),
                             lambda x, i, i2, v: np.take(x, i, 1)),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(ELEMENT_INDEX_OPS))
def test_index_elements(benchmark, impl, op):
    """Indexing that moves single elements along the last dim (scatter_gather.c, Note [Index
    row walk]; index.c's take_row)."""
    benchmark.group = f"{op}, 1024x1024 float32, int64 indices"
    gen = np.random.default_rng(2)
    args = [make(impl, randn((1024, 1024))), make(impl, gen.integers(0, 1024, 1024)),
            make(impl, gen.integers(0, 1024, (1024, 1024))),
            make(impl, randn((1024, 1024), seed=1))]
    tensor_fn, numpy_fn = ELEMENT_INDEX_OPS[op]
    benchmark(numpy_fn if impl == "numpy" else tensor_fn, *args)


FILLS = {
    "zeros(1024, 1024)": (lambda L: L.zeros(1024, 1024), lambda: np.zeros((1024, 1024), "f4")),
    "full((1024, 1024), 0.5)": (lambda L: L.full((1024, 1024), 0.5),
                                lambda: np.full((1024, 1024), 0.5, "f4")),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(FILLS))
def test_fills(benchmark, impl, op):
    """A contiguous fill: memset for zero bytes, a 4 KiB pattern copied for other values."""
    benchmark.group = f"{op} float32"
    tensor_fn, numpy_fn = FILLS[op]
    benchmark(numpy_fn if impl == "numpy" else lambda: tensor_fn(lib(impl)))


@pytest.mark.parametrize("impl", IMPLS)
def test_constant_pad(benchmark, impl):
    """constant_pad_nd fills the output and copies the input into it, chunk by chunk."""
    benchmark.group = "F.pad(x, (1, 1, 1, 1)), 32x64x32x32 float32"
    if impl == "numpy":
        def fn(a):
            return np.pad(a, [(0, 0), (0, 0), (1, 1), (1, 1)])
    else:
        def fn(x):
            return lib(impl).nn.functional.pad(x, (1, 1, 1, 1))
    run(benchmark, impl, fn, randn((32, 64, 32, 32)))


@pytest.mark.parametrize("impl", IMPLS)
def test_constant_pad_narrow_rows(benchmark, impl):
    """Rows of two floats padded to four: the runs of rows of Note [Constant pad rows]"""
    benchmark.group = "F.pad(x, (1, 1)), 100000x2 float32"
    if impl == "numpy":
        def fn(a):
            return np.pad(a, [(0, 0), (1, 1)])
    else:
        def fn(x):
            return lib(impl).nn.functional.pad(x, (1, 1))
    run(benchmark, impl, fn, randn((100000, 2)))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["bernoulli_(0.3)", "bernoulli(p)", "dropout(0.1)"])
def test_bernoulli_fill(benchmark, impl, op):
    """Bernoulli draws of 1024 x 1024 float32 (bernoulli_range: one Philox word an element,
    32 elements a draw) with a scalar p, a tensor of p, and dropout's mask in training;
    NumPy's uniforms compared with p as the reference"""
    benchmark.group = f"{op} 1024x1024 float32"
    x = randn((1024, 1024))
    probs = np.random.default_rng(1).random((1024, 1024)).astype(np.float32)
    if impl == "numpy":
        rng = np.random.default_rng(0)
        fns = {"bernoulli_(0.3)": lambda: (rng.random((1024, 1024)) < 0.3).astype(np.float32),
               "bernoulli(p)": lambda: (rng.random((1024, 1024)) < probs).astype(np.float32),
               "dropout(0.1)": lambda: x * (rng.random((1024, 1024)) < 0.9) / np.float32(0.9)}
    else:
        L = lib(impl)
        L.manual_seed(0)
        out, t, p = L.empty(1024, 1024), L.tensor(x), L.tensor(probs)
        fns = {"bernoulli_(0.3)": lambda: out.bernoulli_(0.3),
               "bernoulli(p)": lambda: L.bernoulli(p),
               "dropout(0.1)": lambda: L.nn.functional.dropout(t, 0.1)}
    benchmark(fns[op])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("count", [5, 50, 10000])
def test_binomial(benchmark, impl, count):
    """binomial of 100000 float32 counts at p = 0.3 (Note [Binomial sampling]: inversion for
    count 5, BTRS for 50 and 10000); NumPy's Generator.binomial as the reference"""
    benchmark.group = f"binomial 100000 x Binomial({count}, 0.3) float32"
    if impl == "numpy":
        rng = np.random.default_rng(0)
        benchmark(lambda: rng.binomial(count, 0.3, 100000).astype(np.float32))
        return
    L = lib(impl)
    c, p = L.full((100000,), float(count)), L.full((100000,), 0.3)
    benchmark(lambda: L.binomial(c, p))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", ["rand", "uniform_(-2, 3)", "randn"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_random_fill(benchmark, impl, op, dtype):
    """Seeded fills of 1024 x 1024 (rand and uniform_: Note [Vector Philox]; float16 and
    bfloat16 stored eight at a time, store_halves; float64 uniforms by uniform_range_f8)"""
    benchmark.group = f"{op} 1024x1024 {dtype}"
    if impl == "numpy":
        if dtype == "bfloat16":
            pytest.skip("NumPy has no bfloat16")
        rng = np.random.default_rng(0)
        dt = np.dtype(dtype)
        fns = {"rand": lambda: rng.random((1024, 1024), dtype=np.float32).astype(dt),
               "uniform_(-2, 3)": lambda: rng.uniform(-2, 3, (1024, 1024)).astype(dt),
               "randn": lambda: rng.standard_normal((1024, 1024), dtype=np.float32).astype(dt)}
        if dtype == "float64":
            fns["rand"] = lambda: rng.random((1024, 1024))
            fns["randn"] = lambda: rng.standard_normal((1024, 1024))
    else:
        L = lib(impl)
        L.manual_seed(0)
        dt = getattr(L, dtype)
        out = L.empty(1024, 1024, dtype=dt)
        fns = {"rand": lambda: L.rand(1024, 1024, dtype=dt),
               "uniform_(-2, 3)": lambda: out.uniform_(-2, 3),
               "randn": lambda: L.randn(1024, 1024, dtype=dt)}
    benchmark(fns[op])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", ["randint(0, 1000) int64", "randint(-7, 13) int32",
                                  "random_(0, 2) uint8", "random_() float32"])
def test_integer_fill(benchmark, impl, case):
    """Seeded integer draws of 1024 x 1024 whose range fits 32 bits: one Philox word an element
    and its remainder through the double reciprocal (Note [Integer draws in vectors])"""
    benchmark.group = f"{case} 1024x1024"
    op, dtype = case.rsplit(" ", 1)
    if impl == "numpy":
        rng = np.random.default_rng(0)
        fns = {"randint(0, 1000)": lambda: rng.integers(0, 1000, (1024, 1024)),
               "randint(-7, 13)": lambda: rng.integers(-7, 13, (1024, 1024), dtype=np.int32),
               "random_(0, 2)": lambda: rng.integers(0, 2, (1024, 1024), dtype=np.uint8),
               "random_()": lambda: rng.integers(0, 2 ** 24 + 1, (1024, 1024))
               .astype(np.float32)}
    else:
        L = lib(impl)
        L.manual_seed(0)
        dt = getattr(L, dtype)
        out = L.empty(1024, 1024, dtype=dt)
        fns = {"randint(0, 1000)": lambda: L.randint(0, 1000, (1024, 1024)),
               "randint(-7, 13)": lambda: L.randint(-7, 13, (1024, 1024), dtype=dt),
               "random_(0, 2)": lambda: out.random_(0, 2),
               "random_()": lambda: out.random_()}
    benchmark(fns[op])


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", ["1 of 50257", "10 of 100 x1000 rows", "1000 of 100000",
                                  "100 of 100 x1000 rows, replacement"])
def test_multinomial(benchmark, impl, case):
    """multinomial: a GPT's next token (one of a 50257-word vocabulary, replacement=False, the
    default), a few of many (best_keys' heap), and draws with replacement (a branchless
    search of the CDF); NumPy's Generator.choice for one row as the reference"""
    benchmark.group = f"multinomial {case}"
    shapes = {"1 of 50257": ((50257,), 1, False), "10 of 100 x1000 rows": ((1000, 100), 10, False),
              "1000 of 100000": ((100000,), 1000, False),
              "100 of 100 x1000 rows, replacement": ((1000, 100), 100, True)}
    shape, n, replacement = shapes[case]
    p = np.random.default_rng(0).random(shape).astype(np.float32)
    if impl == "numpy":
        if len(shape) > 1:
            pytest.skip("NumPy's choice draws from one distribution at a time")
        rng = np.random.default_rng(0)
        q = p.astype(np.float64) / p.sum(dtype=np.float64)
        benchmark(lambda: rng.choice(shape[0], n, replace=replacement, p=q))
    else:
        L = lib(impl)
        L.manual_seed(0)
        t = L.tensor(p)
        benchmark(lambda: L.multinomial(t, n, replacement))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("n", [1000, 100000])
def test_randperm(benchmark, impl, n):
    """randperm(n): Fisher-Yates on Philox words drawn eight blocks a vector (random.c)"""
    benchmark.group = f"randperm {n}"
    if impl == "numpy":
        rng = np.random.default_rng(0)
        benchmark(lambda: rng.permutation(n))
    else:
        L = lib(impl)
        L.manual_seed(0)
        benchmark(lambda: L.randperm(n))


NORMAL_FILLS = ["randn float32 1e6", "randn float64 1e6", "randn float32 1e3",
                "randn float64 1e3", "normal_(1.5, 2) float32 1e6", "normal_(1.5, 2) float64 1e6",
                "randn_like float32 1e6", "log_normal_ float32 1e6", "log_normal_ float16 1e6",
                "log_normal_ float64 1e6",
                "normal(Tensor, Tensor) float16 1e6", "normal(Tensor, Tensor) float64 1e6",
                "normal_(1.5, 2) float16 1e6"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("lam", [0.5, 4.0, 50.0])
def test_poisson(benchmark, impl, dtype, lam):
    """poisson of 1e5 equal rates: Knuth's product below rate 10, the transformed rejection
    above, each element's first Philox blocks drawn eight elements at a time (Note [Poisson
    draws in vectors])"""
    benchmark.group = f"poisson({lam}) {dtype} 1e5"
    n = 100000
    if impl == "numpy":
        rng = np.random.default_rng(0)
        benchmark(lambda: rng.poisson(lam, n).astype(dtype))
    else:
        L = lib(impl)
        L.manual_seed(0)
        rates = L.full((n,), lam, dtype=getattr(L, dtype))
        benchmark(L.poisson, rates)


GAMMA_CASES = ["_standard_gamma(2.5) float32 1e6", "_standard_gamma(0.5) float32 1e6",
               "Dirichlet(1.5) 250000x4 float32", "Beta(2, 3) float32 1e6"]


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", GAMMA_CASES)
def test_gamma_samplers(benchmark, impl, case):
    """Gamma draws (Note [Gamma draws in vectors]: the first Marsaglia-Tsang try in vectors)
    and the distributions built on them: Dirichlet and Beta sample through
    _sample_dirichlet."""
    benchmark.group = case
    if impl == "numpy":
        rng = np.random.default_rng(0)
        fns = {GAMMA_CASES[0]: lambda: rng.standard_gamma(2.5, 10**6).astype(np.float32),
               GAMMA_CASES[1]: lambda: rng.standard_gamma(0.5, 10**6).astype(np.float32),
               GAMMA_CASES[2]: lambda: rng.dirichlet([1.5] * 4, 250000).astype(np.float32),
               GAMMA_CASES[3]: lambda: rng.beta(2.0, 3.0, 10**6).astype(np.float32)}
        benchmark(fns[case])
        return
    L = lib(impl)
    L.manual_seed(0)
    if case == GAMMA_CASES[2]:
        d = L.distributions.Dirichlet(L.full((250000, 4), 1.5))
        benchmark(d.sample)
    elif case == GAMMA_CASES[3]:
        d = L.distributions.Beta(L.full((10**6,), 2.0), L.full((10**6,), 3.0))
        benchmark(d.sample)
    else:
        alpha = L.full((10**6,), 2.5 if case == GAMMA_CASES[0] else 0.5)
        benchmark(L._standard_gamma, alpha)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("case", NORMAL_FILLS)
def test_normal_fill(benchmark, impl, case):
    """Seeded normal fills (Note [Vector Box-Muller]; float64 through normal_doubles_##S),
    large and small, new and in place; log_normal_ and normal with tensor mean and std take
    the vector standard normals and finish a chunk at a time (normal_finish_floats and
    normal_finish_doubles; float64 log_normal_: log_normal_range_f8); float16 and bfloat16 are
    stored eight at a time (store_halves)"""
    benchmark.group = case
    op, dtype, n = case.rsplit(" ", 2)
    n = int(float(n))
    if impl == "numpy":
        rng = np.random.default_rng(0)
        dt = np.dtype(dtype)
        fns = {"randn": lambda: rng.standard_normal(n, dtype=dt),
               "normal_(1.5, 2)": lambda: rng.normal(1.5, 2.0, n).astype(dt),
               "randn_like": lambda: rng.standard_normal(n, dtype=dt),
               "log_normal_": lambda: rng.lognormal(0.0, 1.0, n).astype(dt),
               "normal(Tensor, Tensor)": lambda: rng.normal(np.zeros(n, dt), np.ones(n, dt))
               .astype(dt)}
    else:
        L = lib(impl)
        L.manual_seed(0)
        dt = getattr(L, dtype)
        out = L.empty(n, dtype=dt)
        fns = {"randn": lambda: L.randn(n, dtype=dt),
               "normal_(1.5, 2)": lambda: out.normal_(1.5, 2.0),
               "randn_like": lambda: L.randn_like(out),
               "log_normal_": lambda: out.log_normal_(),
               "normal(Tensor, Tensor)": lambda: L.normal(mean, std)}
        mean, std = L.zeros(n, dtype=dt), L.ones(n, dtype=dt)
    benchmark(fns[op])


MASK_OPS = {
    "nonzero": (lambda x, m: m.nonzero(), lambda x, m: np.argwhere(m)),
    "masked_select": (lambda x, m: x.masked_select(m), lambda x, m: x[m]),
    "x[mask]": (lambda x, m: x[m], lambda x, m: x[m]),
    "masked_fill": (lambda x, m: x.masked_fill(m, 0.0), lambda x, m: np.where(m, 0.0, x)),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(MASK_OPS))
def test_mask_ops(benchmark, impl, op):
    """Boolean-mask ops at half density, the mask made beforehand (index.c, Note [Mask
    rows]; masked_fill is one elementwise pass)."""
    benchmark.group = f"{op}, 1024x1024 float32 half masked"
    a = randn((1024, 1024))
    args = [make(impl, a), make(impl, a > 0)]
    tensor_fn, numpy_fn = MASK_OPS[op]
    benchmark(numpy_fn if impl == "numpy" else tensor_fn, *args)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dim", [0, -1])
def test_cumsum(benchmark, impl, dim):
    """cumsum along an outer and the inner dim (scan.c, Note [Scan tiles])."""
    benchmark.group = f"cumsum({dim}) 1024x1024 float32"
    fn = (lambda x: np.cumsum(x, dim)) if impl == "numpy" else (lambda x: x.cumsum(dim))
    run(benchmark, impl, fn, randn((1024, 1024)))


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("dim", [0, 1])
def test_cumsum_int64(benchmark, impl, dim):
    """int64 cumsum of 1000 x 1000 along either dim (scan.c: tiles of columns, and lines in
    groups of four, scan_line_i8)."""
    benchmark.group = f"cumsum({dim}) 1000x1000 int64"
    fn = (lambda x: np.cumsum(x, dim)) if impl == "numpy" else (lambda x: x.cumsum(dim))
    run(benchmark, impl, fn, np.random.default_rng(0).integers(-1000, 1000, (1000, 1000)))


def _np_pdist(a):
    d = np.sqrt(((a[:, None, :] - a[None, :, :]) ** 2).sum(-1))
    return d[np.triu_indices(a.shape[0], 1)]


def _np_scatter_amax(a, i):
    out = np.zeros(1000, np.float32)
    np.maximum.at(out, i, a.reshape(-1))
    return out


# (tensor fn, NumPy fn) of (A = 1000x1000 float32, I = 1e6 int64 in [0, 1000))
SWEEP_OPS = {
    "zeros(1000).scatter_reduce(0, I, A, amax)": (
        lambda m, a, i: m.zeros(1000).scatter_reduce(0, i, a.view(-1), "amax"),
        _np_scatter_amax),
    "A.view(-1).index_put_((I,), 1, accumulate)": (
        lambda m, a, i: a.clone().view(-1).index_put_((i,), m.ones(10**6), accumulate=True),
        lambda a, i: _np_index_add(a.reshape(-1), i, np.ones(10**6, np.float32))),
    "bincount(I)": (lambda m, a, i: m.bincount(i), lambda a, i: np.bincount(i)),
    "bincount(I, A.view(-1))": (lambda m, a, i: m.bincount(i, a.view(-1)),
                                lambda a, i: np.bincount(i, a.reshape(-1))),
    "zeros(1000).scatter_reduce(0, I, A, mean)": (
        lambda m, a, i: m.zeros(1000).scatter_reduce(0, i, a.view(-1), "mean"),
        lambda a, i: np.bincount(i, a.reshape(-1), 1000) / (np.bincount(i, None, 1000) + 1)),
    "isin(I, I[:1000])": (lambda m, a, i: m.isin(i, i[:1000]), lambda a, i: np.isin(i, i[:1000])),
    "bucketize(A, linspace(-3, 3, 100))": (
        lambda m, a, i: m.bucketize(a, m.linspace(-3, 3, 100)),
        lambda a, i: np.searchsorted(np.linspace(-3, 3, 100, dtype=np.float32), a)),
    "rot90(A)": (lambda m, a, i: m.rot90(a), lambda a, i: np.ascontiguousarray(np.rot90(a))),
    "triu_indices(1000, 1000)": (lambda m, a, i: m.triu_indices(1000, 1000),
                                 lambda a, i: np.stack(np.triu_indices(1000))),
    "prod(A * 0.01 + 1, 1)": (lambda m, a, i: m.prod(a * 0.01 + 1, 1),
                              lambda a, i: np.prod(a * np.float32(0.01) + 1, 1)),
    "pdist(A[:500, :64])": (lambda m, a, i: m.pdist(a[:500, :64]),
                            lambda a, i: _np_pdist(a[:500, :64])),
    "cat(chunk(A, 10, 1), 0)": (lambda m, a, i: m.cat(m.chunk(a, 10, 1), 0),
                                lambda a, i: np.concatenate(np.array_split(a, 10, 1), 0)),
    "count_nonzero(A)": (lambda m, a, i: m.count_nonzero(a), lambda a, i: np.count_nonzero(a)),
}


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("op", list(SWEEP_OPS))
def test_index_sweep(benchmark, impl, op):
    """The index, search and shape ops of issue 16's sweep (docs/performance.md, Index and
    shape ops of the sweep)."""
    benchmark.group = f"{op}"
    tensor_fn, numpy_fn = SWEEP_OPS[op]
    a, i = randn((1000, 1000)), np.random.default_rng(1).integers(0, 1000, 10**6)
    if impl == "numpy":
        benchmark(numpy_fn, a, i)
        return
    m = lib(impl)
    args = [make(impl, a), make(impl, i)]
    benchmark(lambda x, y: tensor_fn(m, x, y), *args)
