"""The cost of calling an operator that a C extension registered, next to a built-in operator
of the same kind in the same process: z = sigmoid(x) + y from a C kernel
(torch.ops.bench_ext.sigmoid_add) against the built-in aten::add.Tensor (one dispatcher call,
two tensors in, one elementwise loop out) and against the built-in torch.sigmoid(x) + y.
The target is at most 1.2x the built-in call for small tensors, where the call dominates.

    pytest benchmarks/test_c_extension_call.py --benchmark-enable -q -s
"""
import timeit

import pytest

import pytorchlite as ptl
from pytorchlite.utils.cpp_extension import load_inline

SOURCE = r"""
#include <math.h>

static int
sigmoid_add_cpu(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0), *y = ptl_api_stack_tensor(stack, 1);
    if (ptl_api_dtype(x) != PTL_API_FLOAT32 || ptl_api_dtype(y) != PTL_API_FLOAT32 ||
        !ptl_api_is_contiguous(x) || !ptl_api_is_contiguous(y) ||
        ptl_api_numel(x) != ptl_api_numel(y)) {
        return ptl_api_set_error(PTL_API_TYPE_ERROR, "expected contiguous float32 tensors");
    }
    PtlApiTensor *z = ptl_api_empty_like(x);
    if (z == NULL) {
        return -1;
    }
    const float *a = ptl_api_data_ptr(x), *b = ptl_api_data_ptr(y);
    float *c = ptl_api_data_ptr(z);
    for (int64_t i = 0, n = ptl_api_numel(z); i < n; i++) {
        c[i] = 1.0f / (1.0f + expf(-a[i])) + b[i];
    }
    ptl_api_stack_clear(stack);
    int rc = ptl_api_push_tensor(stack, z);
    ptl_api_release(z);
    return rc;
}

PTL_LIBRARY(bench_ext, m) { ptl_api_def(m, "sigmoid_add(Tensor x, Tensor y) -> Tensor"); }
PTL_LIBRARY_IMPL(bench_ext, CPU, m) { ptl_api_impl(m, "sigmoid_add", sigmoid_add_cpu, NULL); }
"""

SIZES = [1, 1024, 1 << 20]


@pytest.fixture(scope="module")
def ops():
    load_inline("bench_c_extension_call", SOURCE, extra_cflags=["-O3"])
    return {"c_extension": ptl.ops.bench_ext.sigmoid_add.default,
            "builtin_add": ptl.ops.aten.add.Tensor,
            "builtin_sigmoid_add": lambda x, y: ptl.sigmoid(x) + y}


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("impl", ["c_extension", "builtin_add", "builtin_sigmoid_add"])
def test_call(benchmark, ops, impl, n):
    benchmark.group = f"C extension op vs built-in, {n} float32"
    x, y = ptl.randn(n), ptl.randn(n)
    benchmark(ops[impl], x, y)


@pytest.mark.parametrize("n", SIZES)
def test_ratio(ops, n):
    """Prints the C extension's time over each built-in's (best of several runs; indicative
    only on a shared machine)."""
    x, y = ptl.randn(n), ptl.randn(n)
    number = max(1, 20000 // n) if n < 1 << 20 else 20
    best = {name: min(timeit.repeat(lambda f=f: f(x, y), number=number, repeat=7)) / number
            for name, f in ops.items()}
    ext = best["c_extension"]
    print(f"\nn={n}: C extension {ext * 1e6:.2f} us; "
          f"vs aten::add {ext / best['builtin_add']:.2f}x; "
          f"vs sigmoid(x) + y {ext / best['builtin_sigmoid_add']:.2f}x")
    assert ptl.allclose(ops["c_extension"](x, y), ops["builtin_sigmoid_add"](x, y), atol=1e-6)
