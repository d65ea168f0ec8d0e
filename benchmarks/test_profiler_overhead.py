"""What the profiler costs (issue 13): x + y on one float32 with no profiler (the Profiler key
is not in the thread's key set, so this is the plain dispatch path; compare with a build of
main for the 3% target), and with a profiler recording (the cost per op is the difference;
target at most 1 us).  PyTorch runs the same under torch.profiler when installed."""
import warnings

import numpy as np
import pytest

from _impls import TENSOR_IMPLS, lib, make

ROUNDS, ITERATIONS = 200, 100   # 20,000 events a run: the buffer's growth stays out of it


def add(x, y):
    return x + y


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_add_without_profiler(benchmark, impl):
    benchmark.group = "x + y, 1 float32, no profiler"
    a = np.ones(1, np.float32)
    benchmark.pedantic(add, args=(make(impl, a), make(impl, a)), rounds=ROUNDS,
                       iterations=ITERATIONS)


@pytest.mark.parametrize("impl", TENSOR_IMPLS)
def test_add_with_profiler(benchmark, impl):
    benchmark.group = "x + y, 1 float32, profiler recording"
    a = np.ones(1, np.float32)
    x, y = make(impl, a), make(impl, a)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with lib(impl).profiler.profile():
            benchmark.pedantic(add, args=(x, y), rounds=ROUNDS, iterations=ITERATIONS)
