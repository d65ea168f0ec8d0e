"""torch.cond and torch.while_loop in eager mode (pytorchlite/_control_flow.py): the branch
and the loop's results against Python's own control flow and PyTorch's (tests/golden.py),
gradients through the taken branch and the loop's steps, and PyTorch's argument checks."""
import pytest

import golden
import pytorchlite as ptl
from helpers import torch


def _results(lib):
    x = lib.arange(3.0)
    return {
        "tensor pred true": lib.cond(lib.tensor(True), lambda v: v + 1, lambda v: v - 1, (x,)),
        "tensor pred false": lib.cond(lib.tensor(0.0), lambda v: v + 1, lambda v: v - 1, [x]),
        "python pred": lib.cond(1, lambda v: v * 2, lambda v: v, (x,)),
        "no operands": lib.cond(False, lambda: x + 1, lambda: x - 1),
        "two outputs": lib.cond(lib.tensor([True]), lambda v, w: (v + w, v * w),
                                lambda v, w: (v - w, v * 2), (x, x + 1)),
        "loop": lib.while_loop(lambda i, s: i < 4, lambda i, s: (i + 1, s + i * 0.5),
                               (lib.tensor(0), lib.tensor(0.0))),
        "loop list": lib.while_loop(lambda i, s: s.sum() < 10, lambda i, s: (i + 1, s * 2),
                                    [lib.tensor(0), lib.ones(2)]),
        "loop not run": lib.while_loop(lambda i: i > 3, lambda i: (i + 1,), (lib.tensor(0),)),
    }


def test_results_like_torch():
    ours = _results(ptl)
    assert ours["tensor pred true"].tolist() == [1.0, 2.0, 3.0]
    assert ours["tensor pred false"].tolist() == [-1.0, 0.0, 1.0]
    assert [t.tolist() for t in ours["loop"]] == [4, 3.0]
    assert [t.tolist() for t in ours["loop list"]] == [3, [8.0, 8.0]]
    golden.assert_equal(golden.plain(ours), lambda: golden.plain(_results(torch)))


def test_loop_not_run_returns_clones():
    i = ptl.tensor(5)
    out = ptl.while_loop(lambda i: i < 3, lambda i: (i + 1,), (i,))
    assert isinstance(out, tuple) and out[0].item() == 5
    assert out[0].data_ptr() != i.data_ptr()


def test_body_with_a_bare_tensor():
    assert ptl.while_loop(lambda i: i < 3, lambda i: i + 1, (ptl.tensor(0),)).item() == 3


def test_gradients_flow():
    x = ptl.tensor([1.0, 2.0], dtype=ptl.float64, requires_grad=True)
    ptl.cond(x.sum() > 0, lambda v: (v * v).sum(), lambda v: v.sum(), (x,)).backward()
    assert x.grad.tolist() == [2.0, 4.0]
    y = ptl.tensor(1.5, dtype=ptl.float64, requires_grad=True)
    _, s = ptl.while_loop(lambda i, s: i < 3, lambda i, s: (i + 1, s * y), (ptl.tensor(0), y))
    s.backward()
    assert y.grad.item() == pytest.approx(4 * 1.5 ** 3)


ERRORS = {
    "pred two elements": lambda lib: lib.cond(lib.tensor([True, False]), lambda: 1,
                                              lambda: 2),
    "pred string": lambda lib: lib.cond("a", lambda: 1, lambda: 2),
    "branch not callable": lambda lib: lib.cond(lib.tensor(True), 1, lambda: 2),
    "operand not a tensor": lambda lib: lib.cond(lib.tensor(True), lambda v: v, lambda v: v,
                                                 (1,)),
    "operands a tensor": lambda lib: lib.cond(lib.tensor(True), lambda v: v, lambda v: v,
                                              lib.ones(1)),
    "body not callable": lambda lib: lib.while_loop(lambda i: i < 3, None, (lib.tensor(0),)),
    "carried a string": lambda lib: lib.while_loop(lambda i: i < 3, lambda i: (i + 1,),
                                                   ("a",)),
    "carried a tensor and a float": lambda lib: lib.while_loop(
        lambda i, f: i < 3, lambda i, f: (i + 1, f), [lib.tensor(0), 1.5]),
}


@pytest.mark.parametrize("what", list(ERRORS))
def test_errors_like_torch(what):
    golden.assert_raises(lambda: ERRORS[what](ptl), lambda: ERRORS[what](torch))


def test_errors_of_the_loop():
    """PyTorch's eager loop's checks (while_loop_dense: torch compiles the loop first and
    reports these in its own words)."""
    with pytest.raises(RuntimeError, match="^carried_inputs must be a tuple or list but got "
                                           "<class 'torch.Tensor'>$"):
        ptl.while_loop(lambda i: i < 3, lambda i: (i + 1,), ptl.tensor(0))
    with pytest.raises(RuntimeError, match=r"^cond_fn must return a boolean scalar tensor or "
                                           r"a boolean but got tensor\(\[True, True\]\)"):
        ptl.while_loop(lambda i: ptl.tensor([True, True]), lambda i: (i + 1,),
                       (ptl.tensor(0),))
    with pytest.raises(RuntimeError, match="^cond_fn must return a boolean scalar tensor"):
        ptl.while_loop(lambda i: (i < 3).float(), lambda i: (i + 1,), (ptl.tensor(0),))
    with pytest.raises(RuntimeError, match="^body_fn should return the same number of "
                                           "elements as carried_inputs, got 2 vs 1$"):
        ptl.while_loop(lambda i: i < 3, lambda i: (i + 1, i), (ptl.tensor(0),))
