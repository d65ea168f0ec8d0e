"""The operands of the GEMM tests (test_gemm*.py): random matrices and the
same values as a contiguous, transposed or column-strided pytorchlite matrix; and the checks
of a product's bits and of its values against NumPy's in float64."""
import numpy as np

import pytorchlite as ptl
from helpers import assert_close


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-2, 2, shape).astype(dtype)


def operand(x, layout):
    """x as a pytorchlite matrix with the same values in the given layout."""
    if layout == "contiguous":
        return ptl.tensor(x)
    if layout == "transposed":
        return ptl.tensor(np.ascontiguousarray(x.T)).t()
    # every other column of a wider matrix: no unit stride
    wide = np.zeros((x.shape[0], 2 * x.shape[1]), x.dtype)
    wide[:, ::2] = x
    return ptl.tensor(wide)[:, ::2]


def bits(t):
    """t's values as a NumPy array, to compare bit for bit."""
    return np.array(t.numpy())


def close(actual, exp, k, dtype):
    """actual against a float64 `exp` within the rounding of k multiply-adds in dtype."""
    if dtype == np.float32:
        assert_close(actual, exp, dtype=ptl.float32, rtol=1e-5, atol=1.6e-6 * max(k, 1))
    else:
        assert_close(actual, exp, dtype=ptl.float64, rtol=1e-12, atol=1e-13 * max(k, 1))
