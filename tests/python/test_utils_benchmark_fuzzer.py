"""utils.benchmark's Fuzzer, FuzzedParameter, ParameterAlias, FuzzedTensor and
FuzzedSparseTensor: a seed gives the same draws every time and PyTorch's parameters, orders
and layouts (Note [Fuzzer draws]); bounds, distributions, element and allocation limits,
constraints, contiguity and steps hold; errors are PyTorch's."""
import math

import numpy as np
import pytest

import golden
import pytorchlite as ptl
from pytorchlite.utils.benchmark import (FuzzedParameter, FuzzedSparseTensor, FuzzedTensor,
                                         Fuzzer, ParameterAlias)
from helpers import torch

if torch is not None:
    import torch.utils.benchmark  # noqa: F401  (the submodule, for torch.utils.benchmark.X)


def _spec(lib):
    bench = lib.utils.benchmark
    return dict(
        parameters=[
            bench.FuzzedParameter("k0", minval=1, maxval=64, distribution="loguniform"),
            [bench.FuzzedParameter("k1", minval=2, maxval=9, distribution="uniform"),
             bench.FuzzedParameter("scale", minval=0.5, maxval=2.0, distribution="uniform")],
            bench.FuzzedParameter("step", minval=1, maxval=3, distribution="uniform"),
            bench.FuzzedParameter("ndim", minval=1, maxval=3, distribution="uniform",
                                  strict=True),
        ],
        tensors=[
            bench.FuzzedTensor("x", size=("k0", "k1", 3), steps=("step", 1, "step"),
                               probability_contiguous=0.4, max_elements=256,
                               dim_parameter="ndim"),
            [bench.FuzzedTensor("y", size=("k1", "k0"), probability_contiguous=0.6,
                                min_elements=4, max_allocation_bytes=2048,
                                dtype=lib.float64)],
        ],
        constraints=[lambda p: (p["k0"] + p["k1"]) % 3 != 0])


def _draws(lib, seed, n=12):
    out = []
    for tensors, properties, params in Fuzzer_of(lib)(**_spec(lib), seed=seed).take(n):
        out.append({
            "params": params,
            "shapes": {k: list(t.shape) for k, t in tensors.items()},
            "strides": {k: list(t.stride()) for k, t in tensors.items()},
            "properties": {k: {**p, "order": [int(i) for i in p["order"]],
                               "steps": list(p["steps"])} for k, p in properties.items()},
        })
    return out


def Fuzzer_of(lib):
    return lib.utils.benchmark.Fuzzer


@pytest.mark.parametrize("seed", [0, 7, 2 ** 31 + 5])
def test_fuzzer_draws_are_pytorchs(seed):
    ours = _draws(ptl, seed)
    golden.assert_equal(ours, lambda: _draws(torch, seed))


def test_fuzzer_same_seed_same_draws():
    def values(seed):
        return [{k: t.numpy().copy() for k, t in tensors.items()}
                for tensors, _, _ in Fuzzer(**_spec(ptl), seed=seed).take(6)]
    a, b, c = values(3), values(3), values(4)
    for da, db in zip(a, b):
        for k in da:
            np.testing.assert_array_equal(da[k], db[k])
    assert _draws(ptl, 3) == _draws(ptl, 3)
    assert _draws(ptl, 3) != _draws(ptl, 4)
    assert any(da["y"].shape != dc["y"].shape or not np.array_equal(da["y"], dc["y"])
               for da, dc in zip(a, c))


def test_fuzzer_constraints_hold():
    fuzzer = Fuzzer(**_spec(ptl), seed=11)
    for tensors, properties, params in fuzzer.take(60):
        assert 1 <= params["k0"] <= 64 and isinstance(params["k0"], int)
        assert 2 <= params["k1"] <= 9 and isinstance(params["k1"], int)
        assert 0.5 <= params["scale"] <= 2.0 and isinstance(params["scale"], float)
        assert (params["k0"] + params["k1"]) % 3 != 0
        x, y = tensors["x"], tensors["y"]
        full = (params["k0"], params["k1"], 3)[:params["ndim"]]
        assert tuple(x.shape) == full and x.numel() <= 256
        assert x.dtype == ptl.float32 and y.dtype == ptl.float64
        assert tuple(y.shape) == (params["k1"], params["k0"])
        assert 4 <= y.numel() and y.numel() * 8 <= 2048
        assert properties["y"]["numel"] == y.numel()
        assert properties["x"]["is_contiguous"] == x.is_contiguous()
        assert ((x >= 0) & (x < 1)).all()
    assert 0 < fuzzer.rejection_rate < 1


def test_fuzzer_strict_parameter_kept_while_resampling():
    tried = []
    spec = _spec(ptl)
    spec["constraints"] = [lambda p: tried.append(dict(p)) or p["k0"] % 4 == 0]
    draws = Fuzzer(**spec, seed=3).take(30)
    resampled, ndims = 0, set()
    for _ in range(30):
        tried.clear()
        _, _, params = next(draws)
        assert {p["ndim"] for p in tried} == {params["ndim"]}
        assert len({(p["k0"], p["k1"]) for p in tried}) > 1 or len(tried) == 1
        resampled += len(tried) > 1
        ndims.add(params["ndim"])
    assert resampled > 10 and ndims == {1, 2, 3}


def test_fuzzer_steps_and_contiguity():
    spec = dict(parameters=[FuzzedParameter("n", minval=2, maxval=5, distribution="uniform")],
                tensors=[FuzzedTensor("a", size=("n", 4, 3), steps=(1, 2, 1),
                                      probability_contiguous=1.0),
                         FuzzedTensor("b", size=("n", 4, 3), probability_contiguous=0.0),
                         FuzzedTensor("c", size=("n", 4, 3), probability_contiguous=1.0,
                                      dtype=ptl.int64)])
    for tensors, properties, params in Fuzzer(**spec, seed=5).take(20):
        a, b, c = tensors["a"], tensors["b"], tensors["c"]
        n = params["n"]
        assert a.stride() == (24, 6, 1) and tuple(a.shape) == (n, 4, 3)
        assert not a.is_contiguous() and properties["a"]["order"].tolist() == [0, 1, 2]
        order = properties["b"]["order"]
        assert sorted(order.tolist()) == [0, 1, 2] and order.tolist() != [0, 1, 2]
        assert not b.is_contiguous() and tuple(b.shape) == (n, 4, 3)
        assert c.is_contiguous() and c.dtype == ptl.int64
        assert ((c >= 1) & (c < 127)).all()


def test_fuzzer_dim_parameter_pads_with_ones():
    spec = dict(parameters=[FuzzedParameter("d", distribution={4: 1.0})],
                tensors=[FuzzedTensor("t", size=(2, 3), steps=(2,), dim_parameter="d",
                                      probability_contiguous=1.0)])
    (tensors, properties, params), = Fuzzer(**spec, seed=0).take(1)
    assert params == {"d": 4}
    assert tuple(tensors["t"].shape) == (2, 3, 1, 1) and properties["t"]["steps"] == (2, 1, 1, 1)
    assert tensors["t"].stride() == (6, 1, 1, 1)


def test_fuzzer_tensor_constructor_gets_params():
    seen = []

    def constructor(size, dtype, **params):
        seen.append((size, dtype, params))
        return ptl.full(size, float(params["v"]), dtype=dtype)

    spec = dict(parameters=[FuzzedParameter("v", minval=3, maxval=3, distribution="uniform")],
                tensors=[FuzzedTensor("t", size=(2, "v"), tensor_constructor=constructor)])
    (tensors, _, _), = Fuzzer(**spec, seed=1).take(1)
    assert seen == [((2, 3), ptl.float32, {"v": 3})]
    assert (tensors["t"] == 3).all()


def test_parameter_distributions():
    state = np.random.RandomState(0)
    ints = [FuzzedParameter("a", 3, 6, "uniform").sample(state) for _ in range(400)]
    assert set(ints) == {3, 4, 5, 6}
    logs = [FuzzedParameter("a", 1, 1000, "loguniform").sample(state) for _ in range(2000)]
    assert min(logs) >= 1 and max(logs) <= 1000 and all(type(v) is int for v in logs)
    below = sum(v < 32 for v in logs) / len(logs)
    assert abs(below - math.log2(32) / math.log2(1000)) < 0.05
    floats = [FuzzedParameter("a", 0, 1.5, "uniform").sample(state) for _ in range(400)]
    assert 0 <= min(floats) and max(floats) < 1.5 and max(floats) > 1.3
    choice = FuzzedParameter("a", distribution={"x": 0.25, 7: 0.75})
    draws = [choice.sample(state) for _ in range(2000)]
    assert set(draws) == {"x", 7} and type(draws[draws.index(7)]) is int
    assert abs(draws.count("x") / 2000 - 0.25) < 0.04


def test_parameter_alias():
    assert repr(ParameterAlias("n")) == "ParameterAlias[alias_to: n]"
    golden.assert_equal(repr(ParameterAlias("n")),
                        lambda: repr(torch.utils.benchmark.ParameterAlias("n")))
    spec = dict(parameters=[FuzzedParameter("n", minval=2, maxval=9, distribution="uniform"),
                            FuzzedParameter("m", distribution={1: 0.5, ParameterAlias("n"): 0.5}),
                            FuzzedParameter("k", distribution={ParameterAlias("m"): 1.0})],
                tensors=[FuzzedTensor("x", size=("n",)), FuzzedTensor("y", size=("k",))])
    kinds = set()
    for tensors, _, params in Fuzzer(**spec, seed=2).take(40):
        assert params["k"] == params["m"] and params["m"] in (1, params["n"])
        assert tuple(tensors["y"].shape) == (params["k"],)
        kinds.add(params["m"] == 1)
    assert kinds == {True, False}


def _resolve_cycle(lib):
    bench = lib.utils.benchmark
    return bench.Fuzzer._resolve_aliases({"a": bench.ParameterAlias("b"),
                                          "b": bench.ParameterAlias("a"), "c": 1})


@pytest.mark.parametrize("case", [
    "unknown", "none", "negative", "dict_with_minval_unnormalized", "duplicate", "cycle",
    "impossible", "negative_numel"])
def test_fuzzer_errors(case):
    def make(lib):
        bench = lib.utils.benchmark
        if case == "unknown":
            return bench.FuzzedParameter("a", 1, 2, distribution="normal")
        if case == "none":
            return bench.FuzzedParameter("a", 1, 2)
        if case == "negative":
            return bench.FuzzedParameter("a", distribution={1: -0.5, 2: 1.5})
        if case == "dict_with_minval_unnormalized":
            return bench.FuzzedParameter("a", minval=1, distribution={1: 0.5, 2: 0.5 + 1e-3})
        if case == "duplicate":
            return bench.Fuzzer([bench.FuzzedParameter("a", 1, 2, "uniform")],
                                [bench.FuzzedTensor("a", size=(2,))], seed=0)
        if case == "cycle":
            return _resolve_cycle(lib)
        if case == "negative_numel":
            return bench.FuzzedTensor("t", size=(2, -3)).satisfies_constraints({})
        return list(bench.Fuzzer([bench.FuzzedParameter("a", 1, 4, "uniform")],
                                 [bench.FuzzedTensor("t", size=("a",), min_elements=5)],
                                 seed=0).take(1))
    if case == "dict_with_minval_unnormalized":
        # PyTorch's inverted normalization check lets this through to the minval check
        with pytest.raises(AssertionError, match="^Distribution is not normalized$"):
            make(ptl)
        return
    golden.assert_raises(lambda: make(ptl), lambda: make(torch))


def test_custom_distribution_errors_are_ours():
    # PyTorch raises "Distribution is not normalized" for every normalized dict
    FuzzedParameter("a", distribution={1: 0.5, 2: 0.5})
    for kwargs, message in [
            ({"distribution": {1: 0.5, 2: 0.6}}, "Distribution is not normalized"),
            ({"minval": 1, "distribution": {1: 1.0}},
             "When passing a custom distribution, 'minval' must be None"),
            ({"maxval": 1, "distribution": {1: 1.0}},
             "When passing a custom distribution, 'maxval' must be None")]:
        with pytest.raises(AssertionError) as info:
            FuzzedParameter("a", **kwargs)
        assert str(info.value) == message


def test_fuzzed_sparse_tensor():
    spec = dict(parameters=[FuzzedParameter("n", minval=2, maxval=6, distribution="uniform"),
                            FuzzedParameter("density", distribution={0.25: 0.5, 0.5: 0.5}),
                            FuzzedParameter("coalesced", distribution={True: 0.5, False: 0.5}),
                            FuzzedParameter("sparse_dim", distribution={1: 0.5, 2: 0.5})],
                tensors=[FuzzedSparseTensor("s", size=("n", 5, 3), sparse_dim=True,
                                            dtype=ptl.float64),
                         FuzzedSparseTensor("f", size=(4, "n"))])
    seen = set()
    for tensors, properties, params in Fuzzer(**spec, seed=9).take(30):
        s, p = tensors["s"], properties["s"]
        size = (params["n"], 5, 3)
        nnz = math.ceil(sum(size) * params["density"])
        assert s.is_sparse and tuple(s.shape) == size and s.dtype == ptl.float64
        assert s.sparse_dim() == params["sparse_dim"] == p["sparse_dim"]
        assert p["dense_dim"] == 3 - params["sparse_dim"] and p["is_hybrid"]
        assert p["density"] == params["density"] and p["sparsity"] == 1 - params["density"]
        assert p["is_coalesced"] == params["coalesced"] == s.is_coalesced()
        if params["coalesced"]:
            assert s._nnz() <= nnz
        else:
            assert s._nnz() == 2 * nnz
            idx = s._indices()
            assert ptl.equal(idx[:, :nnz], idx[:, nnz:])
        assert (s._indices() >= 0).all() and (s._indices()[0] < params["n"]).all()
        f = tensors["f"]
        assert f.sparse_dim() == 2 and f.dtype == ptl.float32 and not properties["f"]["is_hybrid"]
        seen.add((params["coalesced"], params["sparse_dim"]))
    assert len(seen) == 4


def test_sparse_tensor_constructor_integer_values():
    ptl.manual_seed(0)
    x = FuzzedSparseTensor.sparse_tensor_constructor((6, 5), ptl.int32, 2, 8, True)
    v = x._values()
    assert x.dtype == ptl.int32 and x.is_coalesced() and ((v >= 1) & (v < 127)).all()
    x = FuzzedSparseTensor.sparse_tensor_constructor(4, ptl.float64, 3, 5, True)
    assert tuple(x.shape) == (4, 4, 4) and x.sparse_dim() == 3


def test_sparse_tensor_constructor_errors():
    golden.assert_raises(
        lambda: FuzzedSparseTensor.sparse_tensor_constructor((0, 3), ptl.float32, 1, 2, True),
        lambda: torch.utils.benchmark.FuzzedSparseTensor.sparse_tensor_constructor(
            (0, 3), torch.float32, 1, 2, True), sub="no room")
    # uncoalesced integer values: the duplicates' randn_like has no integer kernel
    golden.assert_raises(
        lambda: FuzzedSparseTensor.sparse_tensor_constructor((5, 3), ptl.int32, 1, 2, False),
        lambda: torch.utils.benchmark.FuzzedSparseTensor.sparse_tensor_constructor(
            (5, 3), torch.int32, 1, 2, False), sub="integer duplicates")
    spec = dict(parameters=[FuzzedParameter("density", distribution={2.0: 1.0}),
                            FuzzedParameter("coalesced", distribution={True: 1.0})],
                tensors=[FuzzedSparseTensor("s", size=(3, 3))])
    with pytest.raises(AssertionError, match="^nnz cannot exceed total number of elements$"):
        list(Fuzzer(**spec, seed=0).take(1))
