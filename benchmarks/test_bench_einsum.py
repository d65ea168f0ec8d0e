"""einsum benchmarks: a batched matmul and a plain matmul written as einsum, against
torch.einsum and numpy.einsum(optimize=True) on the same float32 data."""
import numpy as np
import pytest

import pytorchlite as ptl
from _impls import IMPLS, make, torch


def einsum_fn(impl, eq):
    if impl == "pytorchlite":
        return lambda *xs: ptl.einsum(eq, *xs)
    if impl == "torch":
        return lambda *xs: torch.einsum(eq, *xs)
    return lambda *xs: np.einsum(eq, *xs, optimize=True)


@pytest.mark.parametrize("impl", IMPLS)
@pytest.mark.parametrize("eq,shapes", [("bij,bjk->bik", [(64, 64, 64), (64, 64, 64)]),
                                       ("ij,jk", [(512, 512), (512, 512)])])
def test_einsum(benchmark, impl, eq, shapes):
    benchmark.group = f"einsum {eq} {shapes[0]} float32"
    gen = np.random.default_rng(0)
    args = [make(impl, gen.standard_normal(s).astype(np.float32)) for s in shapes]
    benchmark(einsum_fn(impl, eq), *args)
