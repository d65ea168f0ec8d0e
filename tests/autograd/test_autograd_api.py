"""Autograd machinery: hooks, custom Functions, CopySlices, anomaly mode (forward tracebacks,
check_nan), graph tools.
Every value is compared with the installed torch running the same code (without torch, with
its stored answers: tests/golden.py)."""
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.autograd import Function, gradcheck, once_differentiable
import golden
from helpers import assert_no_leak, torch


def both(fn):
    """fn(pytorchlite) and PyTorch's answer fn(torch) (live, or stored without torch:
    tests/golden.py), both as JSON data (tensors as nested lists, tuples as lists)."""
    return golden.plain(fn(ptl)), golden.answer(lambda: fn(torch))


def same(a, b, tol=1e-6):
    if isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b)
        for x, y in zip(a, b):
            same(x, y, tol)
        return
    if isinstance(a, float) and isinstance(b, float):
        assert abs(a - b) <= tol
        return
    assert a == b


# ---- tensor hooks ----

def test_hook_order_and_replacement():
    def run(lib):
        log = []
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        a.register_hook(lambda g: log.append(("a", g.tolist())) or g * 10)
        b = a * 3
        b.retain_grad()
        b.register_hook(lambda g: log.append(("b1", g.tolist())))
        b.register_hook(lambda g: g + 1)
        c = b * 2
        c.grad_fn.register_prehook(lambda go: log.append(("pre", [g.tolist() for g in go])))
        c.grad_fn.register_hook(
            lambda gi, go: log.append(("post", [g.tolist() if g is not None else None for g in gi])))
        a.register_post_accumulate_grad_hook(lambda t: log.append(("acc", t.grad.tolist())))
        c.sum().backward()
        return log, a.grad.tolist(), b.grad.tolist(), b.retains_grad, a.retains_grad

    mine, ref = both(run)
    assert mine == ref


def test_hook_handle_remove_and_unreached_nodes():
    def run(lib):
        log = []
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        h = a.register_hook(lambda g: g * 100)
        h.remove()
        b = a * 2
        unused = a * 5
        unused.register_hook(lambda g: log.append("unused tensor"))
        unused.grad_fn.register_prehook(lambda go: log.append("unused node"))
        b.sum().backward()
        return log, a.grad.tolist()

    mine, ref = both(run)
    assert mine == ref == [[], [2.0, 2.0]]


def test_node_hooks_replace_gradients():
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = lib.tensor([3.0, 4.0], requires_grad=True)
        c = a * b
        c.grad_fn.register_prehook(lambda go: (go[0] * 2,))
        c.grad_fn.register_hook(lambda gi, go: (gi[0] + 1, gi[1]))
        c.sum().backward()
        return a.grad.tolist(), b.grad.tolist()

    mine, ref = both(run)
    assert mine == ref


def test_retain_grad_accumulates_and_errors():
    def run(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * a
        b.retain_grad()
        b.retain_grad()
        (b * 3).sum().backward(retain_graph=True)
        first = b.grad.tolist()
        (b * 3).sum().backward()
        return first, b.grad.tolist(), a.grad.tolist()

    mine, ref = both(run)
    assert mine == ref
    with pytest.raises(RuntimeError, match=re.escape(
            "can't retain_grad on Tensor that has requires_grad=False")):
        ptl.tensor([1.0]).retain_grad()


def test_hook_errors():
    msg = "cannot register a hook on a tensor that doesn't require gradient"
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.tensor([1.0]).register_hook(lambda g: g)
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        ptl.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)
    b = ptl.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match=re.escape(
            "post accumulate grad hooks cannot be registered on non-leaf tensors")):
        b.register_post_accumulate_grad_hook(lambda t: None)


class HookError(Exception):
    pass


@pytest.mark.parametrize("where", ["leaf", "nonleaf", "prehook", "posthook"])
def test_exceptions_in_hooks_propagate_without_leaks(where):
    def boom(*args):
        raise HookError("boom")

    def once():
        a = ptl.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        c = b.sum()
        if where == "leaf":
            a.register_hook(boom)
        elif where == "nonleaf":
            b.register_hook(boom)
        elif where == "prehook":
            b.grad_fn.register_prehook(boom)
        else:
            b.grad_fn.register_hook(boom)
        with pytest.raises(HookError, match="boom"):
            c.backward()

    assert_no_leak(once)


def test_hooks_and_metadata_do_not_leak():
    def once():
        a = ptl.tensor([1.0, 2.0], requires_grad=True)
        a.register_hook(lambda g: g)
        b = a * 2
        b.retain_grad()
        b.register_hook(lambda g: g)
        b.grad_fn.metadata["x"] = b.grad_fn
        b.grad_fn.register_hook(lambda gi, go: None)
        b.sum().backward()

    assert_no_leak(once, 50)


# ---- custom Functions ----

def make_functions(lib):
    F = lib.autograd.Function

    class SigmoidAdd(F):
        @staticmethod
        def forward(ctx, x, y):
            s = lib.sigmoid(x)
            ctx.save_for_backward(s)
            return s + y

        @staticmethod
        def backward(ctx, g):
            s, = ctx.saved_tensors
            return g * s * (1 - s), g

    class MulScale(F):   # setup_context style, a non-tensor input, None for it
        @staticmethod
        def forward(x, w, scale):
            return x * w * scale

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, w, scale = inputs
            ctx.scale = scale
            ctx.save_for_backward(x, w)
            ctx.flags = ctx.needs_input_grad

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            return (g * w * ctx.scale if ctx.needs_input_grad[0] else None,
                    g * x * ctx.scale if ctx.needs_input_grad[1] else None, None)

    class SplitTwo(F):   # two outputs, one non-differentiable, plus a non-tensor output
        @staticmethod
        def forward(ctx, x):
            idx = (x > 0).to(x.dtype)
            ctx.mark_non_differentiable(idx)
            ctx.set_materialize_grads(False)
            return x * 2, idx, "tag"

        @staticmethod
        def backward(ctx, g, g_idx, g_tag):
            assert g_tag is None
            return None if g is None else g * 2

    class Exp(F):   # saves its output
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            y, = ctx.saved_tensors
            return g * y

    class AddOneInplace(F):
        @staticmethod
        def forward(ctx, x):
            x.add_(1)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    class Identity(F):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 5

    class Once(F):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @(lib.autograd.function.once_differentiable)
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * g * x

    return dict(SigmoidAdd=SigmoidAdd, MulScale=MulScale, SplitTwo=SplitTwo, Exp=Exp,
                AddOneInplace=AddOneInplace, Identity=Identity, Once=Once)


def test_function_seed_example():
    def run(lib):
        f = make_functions(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = lib.tensor([3.0, 4.0], requires_grad=True)
        z = f["SigmoidAdd"].apply(x, y)
        z.sum().backward()
        return type(z.grad_fn).__name__, z.tolist(), x.grad.tolist(), y.grad.tolist()

    mine, ref = both(run)
    assert mine[0] == ref[0] == "SigmoidAddBackward"
    same(mine[1:], ref[1:])
    assert np.allclose(mine[2], [0.1966, 0.1050], atol=1e-4)


def test_function_setup_context_nontensor_and_needs_input_grad():
    def run(lib):
        f = make_functions(lib)
        x = lib.tensor([1.0, -2.0], requires_grad=True)
        w = lib.tensor([0.5, 3.0])
        out = f["MulScale"].apply(x, w, 4.0)
        out.sum().backward()
        return out.tolist(), x.grad.tolist(), w.grad

    mine, ref = both(run)
    same(mine, ref)


def test_function_multiple_outputs_nondifferentiable_and_materialize():
    def run(lib):
        f = make_functions(lib)
        x = lib.tensor([1.0, -2.0, 3.0], requires_grad=True)
        a, idx, tag = f["SplitTwo"].apply(x)
        a.sum().backward()
        return tag, a.requires_grad, idx.requires_grad, idx.tolist(), x.grad.tolist()

    mine, ref = both(run)
    assert mine == ref


def test_function_saved_output_inplace_error_and_second_backward():
    def run(lib):
        f = make_functions(lib)
        x = lib.tensor([0.5, 1.0], requires_grad=True)
        y = f["Exp"].apply(x)
        y.sum().backward(retain_graph=True)
        g1 = x.grad.tolist()
        y.mul_(2)
        try:
            y.sum().backward()
        except RuntimeError as e:
            return g1, str(e).split(" Hint:")[0]

    mine, ref = both(run)
    same(mine[0], ref[0])
    assert mine[1] == ref[1]


def test_function_mark_dirty_and_identity_output():
    def run(lib):
        f = make_functions(lib)
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        h = x * 1
        out = f["AddOneInplace"].apply(h)
        same_obj = out is h
        out.sum().backward()
        g1 = x.grad.tolist()
        x.grad = None
        i = f["Identity"].apply(x)
        (i * 1).sum().backward()
        return same_obj, h.tolist(), type(h.grad_fn).__name__, g1, i is x, x.grad.tolist()

    mine, ref = both(run)
    assert mine == ref

    def leaf_dirty(lib):
        x = lib.tensor([1.0], requires_grad=True)
        make_functions(lib)["AddOneInplace"].apply(x)

    for lib in golden.LIBRARIES:
        with pytest.raises(RuntimeError, match=re.escape(
                "a leaf Variable that requires grad") if lib is torch else re.escape(
                "a leaf Variable that requires grad is being used in an in-place operation.")):
            leaf_dirty(lib)


def test_function_wrong_number_of_gradients():
    def run(lib):
        class Bad(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                return x + y

            @staticmethod
            def backward(ctx, g):
                return g

        x = lib.tensor([1.0], requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            Bad.apply(x, x).sum().backward()
        return str(e.value)

    mine, ref = both(run)
    assert mine == ref == "function BadBackward returned an incorrect number of gradients " \
                          "(expected 2, got 1)"


def test_function_gradient_for_nontensor_input_and_bad_shape():
    class GradForScale(Function):
        @staticmethod
        def forward(ctx, x, scale):
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g, g

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g.sum()

    x = ptl.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(
            "function GradForScaleBackward returned a gradient different than None at position "
            "2, but the corresponding forward input was not a Variable")):
        GradForScale.apply(x, 2.0).sum().backward()
    with pytest.raises(RuntimeError, match=re.escape(
            "Function BadShapeBackward returned an invalid gradient at index 0 - got [] but "
            "expected shape compatible with [2]")):
        BadShape.apply(x).sum().backward()


def test_function_once_differentiable_and_gradcheck():
    f = make_functions(ptl)
    x = ptl.tensor([0.3, -1.2, 2.0], dtype=ptl.float64, requires_grad=True)
    y = ptl.tensor([1.5, 0.1, -0.7], dtype=ptl.float64, requires_grad=True)
    assert gradcheck(f["SigmoidAdd"].apply, (x, y))
    assert gradcheck(lambda a: f["Exp"].apply(a), (x,))

    def run(lib):
        x = lib.tensor([0.3, -1.2, 2.0], dtype=lib.float64, requires_grad=True)
        v = lib.ones(3, dtype=lib.float64, requires_grad=True)
        out = make_functions(lib)["Once"].apply(x)
        g, = lib.autograd.grad(out, x, v, create_graph=True)
        with pytest.raises(RuntimeError) as e:
            g.sum().backward()
        return g.tolist(), g.requires_grad, str(e.value)

    mine, ref = both(run)
    assert mine == ref
    assert mine[2] == "trying to differentiate twice a function that was marked with " \
                      "@once_differentiable"


def test_function_without_grad_needed_records_nothing():
    f = make_functions(ptl)
    x = ptl.tensor([1.0, 2.0])
    z = f["SigmoidAdd"].apply(x, x)
    assert z.grad_fn is None and not z.requires_grad
    with ptl.no_grad():
        z = f["SigmoidAdd"].apply(x.requires_grad_(), x)
    assert z.grad_fn is None


def test_function_graph_is_freed():
    f = make_functions(ptl)

    def once():
        x = ptl.tensor([1.0, 2.0], requires_grad=True)
        y = f["Exp"].apply(x)
        z = f["SigmoidAdd"].apply(y, x)
        z.sum().backward()

    assert_no_leak(once, 30)


# ---- graph tools ----

def test_graph_walk_and_to_dot():
    from pytorchlite.autograd import graph
    w = ptl.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = ptl.tensor([0.5, 0.5], requires_grad=True)
    x = ptl.tensor([[1.0, -1.0]])
    out = (x.mm(w) + b).relu().sum()
    names = [fn.name() for fn in graph.walk([out.grad_fn])]
    assert names == ["SumBackward0", "ReluBackward0", "AddBackward0", "MmBackward0",
                     "AccumulateGrad", "AccumulateGrad"]
    dot = graph.to_dot(out, params={"weight": w, "bias": b}, show_saved=True)
    assert dot.startswith("digraph {") and dot.rstrip().endswith("}")
    assert '"weight\\n (2, 2)"' in dot and '"bias\\n (2)"' in dot
    assert '"MmBackward0\\nself: (1, 2)\\nmat2: (2, 2)"' in dot
    assert '"()" fillcolor=darkolivegreen1' in dot
    assert any(line.endswith(f" -> out{id(out)}") for line in dot.splitlines())
    edges = [line for line in dot.splitlines() if "->" in line]
    assert len(edges) == 6
    assert "ReluBackward0\\nresult: (1, 2)" not in graph.to_dot(out)


def test_graph_render(tmp_path, monkeypatch):
    from pytorchlite.autograd import graph
    out = (ptl.tensor([1.0], requires_grad=True) * 2).sum()
    monkeypatch.setattr(graph.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match=re.escape("apt-get install graphviz")):
        graph.render(graph.to_dot(out), tmp_path / "g.svg")


# ---- anomaly mode ----

def test_anomaly_mode_reports_nan():
    def run(lib):
        a = lib.tensor([0.0, 1.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                d = (a * 0).log() * 0
                with pytest.raises(RuntimeError) as e:
                    d.sum().backward()
        plain = (a * 0).log() * 0
        plain.sum().backward()   # off again: NaN passes silently
        return str(e.value), np.isnan(a.grad.tolist()).tolist()

    mine, ref = both(run)
    assert mine == ref
    assert mine[0] == "Function 'LogBackward0' returned nan values in its 0th output."
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        ptl.autograd.detect_anomaly()
    assert not ptl.autograd.is_anomaly_enabled()
    with ptl.autograd.set_detect_anomaly(True):
        assert ptl.autograd.is_anomaly_enabled()
    assert not ptl.autograd.is_anomaly_enabled()


# ---- anomaly mode ----

def anomaly_run(lib, check_nan=True):
    """x*0/x backward under detect_anomaly; returns (error text or None, x.grad, the
    'Error detected' warnings)."""
    x = lib.zeros(2, requires_grad=True)
    err = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly(check_nan=check_nan):
            z = (x * 0) / x  # the forward line the warning shows
            try:
                z.sum().backward()
            except RuntimeError as e:
                err = str(e)
    found = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    return err, x.grad, found


def test_anomaly_nan_error_and_forward_traceback():
    head = "Error detected in DivBackward0. Traceback of forward call that caused the error:\n"
    # both tracebacks end with this test's forward line
    line = "    z = (x * 0) / x  # the forward line the warning shows\n"
    for lib in golden.LIBRARIES:
        got = anomaly_run(lib)
        assert got[0] == "Function 'DivBackward0' returned nan values in its 1th output."
        assert len(got[2]) == 1
        assert got[2][0].startswith(head)
        assert line in got[2][0]
    got = anomaly_run(ptl)
    assert got[2][0].endswith(line)
    assert f'File "{__file__}"' in got[2][0]


def test_anomaly_check_nan_false_records_but_does_not_raise():
    for lib in golden.LIBRARIES:
        got = anomaly_run(lib, check_nan=False)
        assert got[0] is None
        assert got[2] == []
        assert got[1].isnan().tolist() == [True, True]


def test_anomaly_flags_match_torch():
    for lib in golden.LIBRARIES:
        mod = ptl.autograd if lib is ptl else torch
        assert not mod.is_anomaly_enabled()
        assert mod.is_anomaly_check_nan_enabled()
        with lib.autograd.set_detect_anomaly(True, check_nan=False):
            assert mod.is_anomaly_enabled()
            assert not mod.is_anomaly_check_nan_enabled()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with lib.autograd.detect_anomaly():
                    assert mod.is_anomaly_check_nan_enabled()
            assert not mod.is_anomaly_check_nan_enabled()
        assert not mod.is_anomaly_enabled()
        assert mod.is_anomaly_check_nan_enabled()


def test_anomaly_warns_for_any_backward_error():
    # a failing node (here the in-place error) warns with its forward traceback too
    x = ptl.randn(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ptl.autograd.detect_anomaly():
            y = x.sigmoid()  # saved here
            y.add_(1)
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.sum().backward()
    msgs = [str(w.message) for w in caught if "Error detected" in str(w.message)]
    assert len(msgs) == 1
    assert msgs[0].startswith("Error detected in SigmoidBackward0. Traceback of forward call")
    assert msgs[0].endswith("    y = x.sigmoid()  # saved here\n")


def test_anomaly_off_keeps_no_traceback_and_no_warning():
    x = ptl.zeros(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ((x * 0) / x).sum().backward()
    assert caught == []
    assert x.grad.isnan().tolist() == [True, True]
