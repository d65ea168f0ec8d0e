"""Inference tensors and torch.inference_mode (Note [Inference tensors] in
src/c10/tensor_impl.h): which tensors are inference tensors, their version counter, in-place
updates and requires_grad outside the mode, saving for backward, grad mode inside and
inference_mode(False), the decorator forms, threads and DataLoader workers.  Each case is
compared with PyTorch's outcome, message included (live, or stored: tests/golden.py)."""
import io
import threading

import numpy as np
import pytest

import pytorchlite as ptl
import golden
from helpers import torch

INPLACE_MSG = ("Inplace update to inference tensor outside InferenceMode is not allowed.You can "
               "make a clone to get a normal tensor before doing inplace update.See "
               "https://github.com/pytorch/rfcs/pull/17 for more details.")


def made_inside(lib, *shape, **kw):
    with lib.inference_mode():
        return lib.ones(*shape, **kw)


# ---- which tensors are inference tensors ----

def _made_inside(lib):
    return made_inside(lib, 3).is_inference(), lib.is_inference(made_inside(lib, 3))


def _made_outside(lib):
    return lib.ones(3).is_inference(), lib.is_inference(lib.ones(3))


def _views_and_results(lib):
    n = lib.arange(6.0).reshape(2, 3)
    x = made_inside(lib, 2, 3)
    with lib.inference_mode():
        inside = [n.view(6), n[1:], n.t(), n * 2, x[0], x.reshape(6), n.sum(), lib.zeros_like(n)]
        kinds = [t.is_inference() for t in inside] + [[t.is_inference() for t in n.unbind(0)]]
    outside = [x.view(6), x[:, 1], x.t(), x.detach(), x + 1, x.clone(), x.sum(),
               lib.ones_like(x), x.new_ones(2), lib.stack([x, x]), lib.from_numpy(x.numpy())]
    return kinds + [t.is_inference() for t in outside] + [x.unbind(0)[1].is_inference()]


def _from_numpy_and_tensor_inside(lib):
    with lib.inference_mode():
        return (lib.from_numpy(np.ones(2)).is_inference(), lib.tensor([1.0]).is_inference(),
                lib.empty(0).is_inference(), lib.tensor(2.0).is_inference())


def _module_forward(lib):
    lib.manual_seed(0)
    m = lib.nn.Linear(2, 3)
    with lib.inference_mode():
        out = m(lib.ones(4, 2))
    return out.is_inference(), out.requires_grad, out.grad_fn is None, m.weight.is_inference()


def _is_inference_of_a_number(lib):
    return lib.is_inference(1)


def _is_inference_with_an_argument(lib):
    return lib.ones(1).is_inference(1)


# ---- version counter ----

def _version_outside(lib):
    return made_inside(lib, 2)._version


def _version_inside(lib):
    x = made_inside(lib, 2)
    with lib.inference_mode():
        return x._version


def _version_of_a_view(lib):
    return made_inside(lib, 2)[:1]._version


def _normal_tensor_bumped_inside(lib):
    n = lib.zeros(2)
    with lib.inference_mode():
        n.add_(1)
        v = n[:1]
        v.mul_(3)
    return n._version, v._version, n.tolist(), v.is_inference()


# ---- in-place updates ----

def _inplace_inside(lib):
    x = made_inside(lib, 3)
    with lib.inference_mode():
        x.add_(1)
        x[0] = 5
        x.unsqueeze_(0)
    return x.tolist(), x.is_inference()


def _inplace_outside(lib):
    made_inside(lib, 3).add_(1)


def _inplace_outside_no_grad(lib):
    x = made_inside(lib, 3)
    with lib.no_grad():
        x.mul_(2)


def _inplace_outside_inference_mode_false(lib):
    x = made_inside(lib, 3)
    with lib.inference_mode():
        with lib.inference_mode(False):
            x.zero_()


def _inplace_on_a_view_outside(lib):
    made_inside(lib, 3)[1:].fill_(2)


def _setitem_outside(lib):
    made_inside(lib, 3)[0] = 1.0


def _copy_into_outside(lib):
    made_inside(lib, 3).copy_(lib.zeros(3))


def _copy_from_is_fine(lib):
    n = lib.zeros(3)
    n.copy_(made_inside(lib, 3))
    return n.tolist(), n.is_inference()


def _out_argument_outside(lib):
    lib.add(lib.ones(3), lib.ones(3), out=made_inside(lib, 3))


def _out_argument_normal(lib):
    n = lib.zeros(3)
    lib.add(made_inside(lib, 3), 1, out=n)
    return n.tolist(), n.is_inference()


def _metadata_inplace_outside(lib):
    made_inside(lib, 3).unsqueeze_(0)


def _clone_is_writable(lib):
    c = made_inside(lib, 3).clone()
    c.add_(1)
    return c.tolist(), c.is_inference()


# ---- requires_grad ----

def _requires_grad_outside(lib):
    made_inside(lib, 3).requires_grad_()


def _requires_grad_attribute_outside(lib):
    made_inside(lib, 3).requires_grad = True


def _requires_grad_false_outside(lib):
    return made_inside(lib, 3).requires_grad_(False).requires_grad


def _requires_grad_inside(lib):
    x = made_inside(lib, 3)
    with lib.inference_mode():
        x.requires_grad_()
        y = lib.ones(2, requires_grad=True)
    return x.requires_grad, y.requires_grad, y.is_inference(), y.is_leaf


def _parameter_of_an_inference_tensor(lib):
    lib.nn.Parameter(made_inside(lib, 3))


# ---- autograd ----

def _saved_for_backward(lib):
    w = lib.ones(3, requires_grad=True)
    w * made_inside(lib, 3)


def _saved_as_self(lib):
    made_inside(lib, 3).mul(lib.ones(3, requires_grad=True))


def _saved_in_a_list(lib):
    lib.ones(3, requires_grad=True)[made_inside(lib, 2, dtype=lib.long)]


def _not_saved_is_fine(lib):
    w = lib.ones(3, requires_grad=True)
    (w + made_inside(lib, 3)).sum().backward()
    return w.grad.tolist()


def _saved_without_grad_is_fine(lib):
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        return (w * made_inside(lib, 3)).tolist()


def _custom_function_saves(lib):
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g, None

    F.apply(lib.ones(3, requires_grad=True), made_inside(lib, 3))


def _no_graph_inside(lib):
    w = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        y = w * 2
        with lib.enable_grad():
            z = w * 2
            enabled = lib.is_grad_enabled()
    return y.requires_grad, z.requires_grad, z.grad_fn is None, enabled, z.is_inference()


# ---- the mode ----

def _mode_flags(lib):
    seen = [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]
    with lib.inference_mode():
        seen += [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]
        with lib.inference_mode(False):
            seen += [lib.is_inference_mode_enabled(), lib.is_grad_enabled(),
                     lib.ones(1).is_inference()]
        seen += [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]
    with lib.no_grad():
        with lib.inference_mode(False):
            seen += [lib.is_grad_enabled()]
        with lib.inference_mode():
            pass
        seen += [lib.is_grad_enabled(), lib.is_inference_mode_enabled()]
    return seen + [lib.is_inference_mode_enabled(), lib.is_grad_enabled()]


def _mode_restored_after_an_error(lib):
    try:
        with lib.inference_mode():
            raise ValueError("inside")
    except ValueError:
        pass
    return lib.is_inference_mode_enabled(), lib.is_grad_enabled()


def _decorators(lib):
    @lib.inference_mode()
    def called():
        return lib.ones(1).is_inference(), lib.is_inference_mode_enabled()

    @lib.inference_mode
    def bare():
        return lib.ones(1).is_inference()

    @lib.inference_mode(False)
    def off():
        return lib.ones(1).is_inference()

    with lib.inference_mode():
        inner = off()
    return called(), bare(), inner, lib.is_inference_mode_enabled()


def _save_and_load(lib):
    buf = io.BytesIO()
    lib.save({"x": made_inside(lib, 3), "v": made_inside(lib, 4)[1:]}, buf)
    buf.seek(0)
    got = lib.load(buf)
    got["x"].add_(1)
    return got["x"].is_inference(), got["v"].is_inference(), got["x"].tolist()


CASES = [_made_inside, _made_outside, _views_and_results, _from_numpy_and_tensor_inside,
         _module_forward, _is_inference_of_a_number, _is_inference_with_an_argument,
         _version_outside, _version_inside, _version_of_a_view, _normal_tensor_bumped_inside,
         _inplace_inside, _inplace_outside, _inplace_outside_no_grad,
         _inplace_outside_inference_mode_false, _inplace_on_a_view_outside, _setitem_outside,
         _copy_into_outside, _copy_from_is_fine, _out_argument_outside, _out_argument_normal,
         _metadata_inplace_outside, _clone_is_writable, _requires_grad_outside,
         _requires_grad_attribute_outside, _requires_grad_false_outside, _requires_grad_inside,
         _parameter_of_an_inference_tensor, _saved_for_backward, _saved_as_self,
         _saved_in_a_list, _not_saved_is_fine, _saved_without_grad_is_fine,
         _custom_function_saves, _no_graph_inside,
         _mode_flags, _mode_restored_after_an_error, _decorators, _save_and_load]

# cases whose PyTorch outcome is an error, with the message's start
RAISES = {
    "_is_inference_of_a_number": "is_inference(): argument 'input' (position 1) must be Tensor",
    "_is_inference_with_an_argument": "is_inference() takes no arguments (1 given)",
    "_version_outside": "Inference tensors do not track version counter.",
    "_version_inside": "Inference tensors do not track version counter.",
    "_version_of_a_view": "Inference tensors do not track version counter.",
    "_inplace_outside": INPLACE_MSG,
    "_inplace_outside_no_grad": INPLACE_MSG,
    "_inplace_outside_inference_mode_false": INPLACE_MSG,
    "_inplace_on_a_view_outside": INPLACE_MSG,
    "_setitem_outside": INPLACE_MSG,
    "_copy_into_outside": INPLACE_MSG,
    "_out_argument_outside": INPLACE_MSG,
    "_metadata_inplace_outside": INPLACE_MSG,
    "_requires_grad_outside": "Setting requires_grad=True on inference tensor outside",
    "_requires_grad_attribute_outside": "Setting requires_grad=True on inference tensor outside",
    "_parameter_of_an_inference_tensor": "Setting requires_grad=True on inference tensor",
    "_saved_for_backward": "Inference tensors cannot be saved for backward.",
    "_saved_as_self": "Inference tensors cannot be saved for backward.",
    "_saved_in_a_list": "Inference tensors cannot be saved for backward.",
    "_custom_function_saves": "Inference tensors cannot be saved for backward.",
}


def outcome(fn, lib):
    """The case's result, or the exception's type and message (its class's prefix dropped:
    PyTorch's C methods belong to TensorBase, ours too)."""
    try:
        r = fn(lib)
    except Exception as e:   # noqa: BLE001 -- the exception is the result compared
        return ("raised", type(e).__name__, str(e).replace("TensorBase.", ""))
    return ("ok", r)


@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__.strip("_"))
def test_matches_torch(fn):
    """The same outcome as torch's (live, or stored without torch: tests/golden.py)."""
    assert golden.plain(outcome(fn, ptl)) == golden.answer(lambda: outcome(fn, torch))


@pytest.mark.parametrize("name", sorted(RAISES))
def test_error_cases_raise(name):
    """The cases above that must raise do (so the comparison compares errors), with the
    message's start written out here."""
    got = outcome(globals()[name], ptl)
    assert got[0] == "raised" and got[2].startswith(RAISES[name]), got


def test_refused_calls_change_nothing():
    """A refused in-place update writes nothing, and a refused save leaves no graph."""
    x = made_inside(ptl, 3)
    with pytest.raises(RuntimeError):
        x.add_(1)
    w = ptl.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError):
        w * x
    assert x.tolist() == [1.0, 1.0, 1.0] and w.grad is None


def test_the_mode_is_per_thread():
    """A thread started inside the mode starts outside it, and the mode it enters stays its
    own (the flag is thread-local state of the C core)."""
    seen, go, entered = {}, threading.Event(), threading.Event()

    def worker():
        seen["start"] = (ptl.is_inference_mode_enabled(), ptl.is_grad_enabled(),
                         ptl.ones(1).is_inference())
        with ptl.inference_mode():
            entered.set()
            go.wait()
            seen["inside"] = ptl.ones(1).is_inference()

    with ptl.inference_mode():
        t = threading.Thread(target=worker)
        t.start()
    entered.wait()
    main_view = (ptl.is_inference_mode_enabled(), ptl.ones(1).is_inference())
    go.set()
    t.join()
    assert seen == {"start": (False, True, False), "inside": True}
    assert main_view == (False, False)


@pytest.mark.parametrize("workers", [0, 2])
def test_dataloader_batches(workers):
    """Batches are made where the loop runs: inference tensors inside the mode, normal ones
    outside, with worker processes or without (PyTorch's answer too)."""
    from pytorchlite.utils.data import DataLoader, TensorDataset
    ds = TensorDataset(ptl.arange(8.0))
    with ptl.inference_mode():
        inside = [b[0].is_inference() for b in DataLoader(ds, batch_size=4,
                                                          num_workers=workers)]
    outside = [b[0] for b in DataLoader(ds, batch_size=4, num_workers=workers)]
    assert inside == [True, True]
    assert [b.is_inference() for b in outside] == [False, False]
    outside[0].add_(1)
    assert outside[0]._version == 1
