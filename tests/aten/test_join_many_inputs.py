"""cat and stack of many tensors that require grad: forward values and every input's gradient
against NumPy, on both sides of the sizes where autograd once stopped: the Autograd kernel
recorded at most 64 tensor inputs per call (65 raised NotImplementedError) and cat's backward
kept every input's temporaries in one formula scope of 96 (49 inputs raised "too many
temporaries")."""
import numpy as np
import pytest

import pytorchlite as ptl

# 64 is where the Autograd kernel's inline input arrays end (src/autograd/autograd_kernel.c,
# INPUTS_INLINE) and 48 where cat's backward once ran out of formula temporaries
CASES = [("cat", 48), ("cat", 49), ("cat", 64), ("cat", 65), ("cat", 300),
         ("stack", 49), ("stack", 64), ("stack", 65), ("stack", 97), ("stack", 300)]


@pytest.mark.parametrize("op,n", CASES, ids=[f"{op}-{n}" for op, n in CASES])
def test_join_forward_and_backward(op, n):
    rng = np.random.default_rng(n)
    values = [rng.standard_normal((2, 3)) for _ in range(n)]
    weight = rng.standard_normal((2 * n, 3) if op == "cat" else (n, 2, 3))
    xs = [ptl.tensor(v, requires_grad=True) for v in values]
    y = getattr(ptl, op)(xs)
    reference = np.concatenate if op == "cat" else np.stack
    np.testing.assert_array_equal(y.detach().numpy(), reference(values))
    (y * ptl.tensor(weight)).sum().backward()
    expected = np.split(weight, n) if op == "cat" else list(weight)
    for x, g in zip(xs, expected):
        np.testing.assert_allclose(x.grad.numpy(), g.reshape(2, 3), rtol=0, atol=0)
