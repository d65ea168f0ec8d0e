"""The complex coverage net: every public callable pytorchlite shares with PyTorch, called
with complex64 arguments in both (tests/aten/complex_coverage.py), must behave as PyTorch's
(compute where it computes, refuse with the same exception type where it refuses) unless
EXPECTED_GAPS lists it.  An op made to work must leave the list: a stale entry fails too.
`python tests/aten/complex_coverage.py FILE` writes the sweep's full report."""
import pytest

from helpers import torch_ref

# Why each callable still differs: a gap (PyTorch computes, pytorchlite has no complex kernel
# yet), the two calls refuse with different exception types, or pytorchlite computes what
# PyTorch refuses.
REASONS = {
    "gap": "no complex kernel for this op yet",
    "type": "both refuse complex, with another exception type than PyTorch's",
    "extra": "pytorchlite computes what PyTorch refuses",
}

# torch 2.13's CPU build has no kernel for the out_dtype overloads of the mm family (they run
# on its CUDA and meta devices); ours are composites that run on every device
GAPS_BY_AREA = {"extra": "aten::addmm.dtype aten::baddbmm.dtype aten::bmm.dtype aten::mm.dtype"}

EXPECTED_GAPS = {name: (area, REASONS[area]) for area, names in GAPS_BY_AREA.items()
                 for name in names.split()}


@pytest.fixture(scope="module")
def sweep():
    import complex_coverage
    found, _ = complex_coverage.sweep()
    return found


def _kind(area):
    return area if area in ("type", "extra") else "gap"


@torch_ref
def test_every_difference_is_listed(sweep):
    unlisted = {n: v for n, v in sweep.items() if n not in EXPECTED_GAPS}
    assert not unlisted, "complex64 calls that differ from torch's:\n" + "\n".join(
        f"{kind} {n} {sample}: ours={ours} torch={theirs}"
        for n, (kind, sample, ours, theirs) in sorted(unlisted.items()))


@torch_ref
def test_no_stale_entry(sweep):
    stale = sorted(n for n, (area, _) in EXPECTED_GAPS.items()
                   if n not in sweep or sweep[n][0] != _kind(area))
    assert not stale, "EXPECTED_GAPS entries that no longer differ (remove them): " + \
        " ".join(stale)


# The complex128 gradients (vector-Jacobian products with the same random complex
# grad_outputs in both) of the ops whose forward runs in both libraries: where they still
# differ from PyTorch's, and why.
EXPECTED_GRAD_GAPS = {}


@torch_ref
def test_complex_gradients_match_torch():
    import complex_coverage
    found = complex_coverage.sweep_grads()
    unlisted = {n: v for n, v in found.items() if n not in EXPECTED_GRAD_GAPS}
    stale = sorted(n for n, (kind, _) in EXPECTED_GRAD_GAPS.items()
                   if n not in found or found[n][0] != kind)
    assert not unlisted, "complex gradients that differ from torch's:\n" + "\n".join(
        f"{kind} {n} {sample}: {detail}" for n, (kind, sample, detail) in sorted(unlisted.items()))
    assert not stale, "EXPECTED_GRAD_GAPS entries that no longer differ: " + " ".join(stale)
