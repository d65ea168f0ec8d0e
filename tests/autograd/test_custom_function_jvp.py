"""A custom autograd.Function's jvp under forward-mode AD (forward_ad, func.jvp, jacfwd,
gradcheck's check_forward_ad) and the torch.func transforms over custom Functions
(setup_context, vmap staticmethod, generate_vmap_rule): tangents against central finite
differences in NumPy float64 and against torch, and PyTorch's errors."""
import numpy as np
import pytest

import pytorchlite as ptl
from helpers import assert_no_leak, assert_raises_like_torch, torch, torch_ref

fwAD = ptl.autograd.forward_ad


def _t(a):
    return ptl.from_numpy(np.array(a, dtype=np.float64))


def _classes(lib):
    """The same custom Functions written against lib (pytorchlite or torch)."""
    Function = lib.autograd.Function
    calls = []

    class SinMul(Function):
        """(sin(x) * y, x + y): two outputs, broadcasting inputs, setup_context style; its
        backward is deliberately wrong so that a tangent that comes out right came from jvp."""
        generate_vmap_rule = True

        @staticmethod
        def forward(x, y):
            return x.sin() * y, x + y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(*inputs)
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 1000, g2 * 1000

        @staticmethod
        def jvp(ctx, tx, ty):
            calls.append((tx, ty))
            x, y = ctx.saved_tensors
            return tx * x.cos() * y + ty * x.sin(), tx + ty

    class Cube(Function):
        """x ** 3 in the ctx-first style, with a scale kept on ctx and both save kinds."""

        @staticmethod
        def forward(ctx, x, scale):
            ctx.scale = scale
            ctx.save_for_backward(x)
            ctx.save_for_forward(x * x)
            return x ** 3 * scale

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * 3 * x * x * ctx.scale, None

        @staticmethod
        def jvp(ctx, tx, tscale):
            calls.append((tx, tscale))
            x2, = ctx.saved_tensors
            return tx * 3 * x2 * ctx.scale

    class Sin(Function):
        """sin with both passes and generate_vmap_rule: usable under every transform."""
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x.sin()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_forward(inputs[0])
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * x.cos()

        @staticmethod
        def jvp(ctx, t):
            x, = ctx.saved_tensors
            return t * x.cos()

    class NoJvp(Sin):
        jvp = staticmethod(Function.jvp)

    return dict(SinMul=SinMul, Cube=Cube, NoJvp=NoJvp, Sin=Sin, calls=calls)


ptl_fns = _classes(ptl)


def _fd(f, xs, ts, eps=1e-6):
    """Central finite difference of NumPy function f at xs along ts."""
    plus = f(*[x + eps * t for x, t in zip(xs, ts)])
    minus = f(*[x - eps * t for x, t in zip(xs, ts)])
    return [(p - m) / (2 * eps) for p, m in zip(plus, minus)]


@pytest.mark.parametrize("shapes", [((), ()), ((0,), (0,)), ((3,), (3,)), ((2, 3), (3,)),
                                    ((2, 3), (2, 1))], ids=str)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_forward_ad_uses_jvp(shapes, layout):
    rng = np.random.default_rng(0)
    x, tx = rng.standard_normal(shapes[0]), rng.standard_normal(shapes[0])
    y, ty = rng.standard_normal(shapes[1]), rng.standard_normal(shapes[1])
    px, ptx = _t(x), _t(tx)
    if layout == "transposed" and x.ndim == 2:
        px, ptx = _t(x.T.copy()).t(), _t(tx.T.copy()).t()
        assert not px.is_contiguous()
    with fwAD.dual_level():
        a, b = ptl_fns["SinMul"].apply(fwAD.make_dual(px, ptx), fwAD.make_dual(_t(y), _t(ty)))
        # through ops after the Function as well
        ta, tb, tc = (fwAD.unpack_dual(o).tangent for o in (a, b, (a * b).exp()))
    ref = _fd(lambda x, y: (np.sin(x) * y, x + y, np.exp(np.sin(x) * y * (x + y))),
              (x, y), (tx, ty))
    for got, want in zip((ta, tb, tc), ref):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-7)


def test_tensor_inputs_without_tangent_get_zeros_and_other_arguments_none():
    calls = ptl_fns["calls"]
    calls.clear()
    x = _t([1.0, 2.0])
    with fwAD.dual_level():
        out = ptl_fns["Cube"].apply(fwAD.make_dual(x, _t([1.0, -1.0])), 2.0)
        tangent = fwAD.unpack_dual(out).tangent
        (tx, tscale), = calls
        assert tscale is None
        calls.clear()
        ptl_fns["SinMul"].apply(fwAD.make_dual(_t([0.5]), _t([2.0])), _t([3.0]))
        a = ptl_fns["SinMul"].apply(_t([0.5]), fwAD.make_dual(_t([3.0]), _t([2.0])))[0]
        fwAD.unpack_dual(a)
        (zx, ty), = calls
    np.testing.assert_allclose(tangent.numpy(), [6.0, -24.0])
    np.testing.assert_allclose(tx.numpy(), [1.0, -1.0])
    assert zx.numpy().tolist() == [0.0] and ty.numpy().tolist() == [2.0]


def test_jvp_not_called_without_a_tangent_request_and_no_tangent_without_duals():
    calls = ptl_fns["calls"]
    calls.clear()
    with fwAD.dual_level():
        out = ptl_fns["Cube"].apply(fwAD.make_dual(_t([1.0]), _t([1.0])), 1.0)
        assert calls == []
        plain = ptl_fns["Cube"].apply(_t([1.0]), 1.0)
        assert fwAD.unpack_dual(plain).tangent is None
        assert calls == []
        assert fwAD.unpack_dual(out).tangent is not None


def test_reverse_mode_keeps_using_backward():
    x = _t([0.5, 1.5]).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, _t([1.0, 1.0]))
        out = ptl_fns["Sin"].apply(d)
        primal, tangent = fwAD.unpack_dual(out)
    primal.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.cos([0.5, 1.5]), rtol=1e-14)
    np.testing.assert_allclose(tangent.numpy(), np.cos([0.5, 1.5]), rtol=1e-14)


def test_non_differentiable_and_non_tensor_outputs():
    class Split(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, idx, c = x * 2, x.argmax(), x * 5
            ctx.mark_non_differentiable(c)
            return a, idx, c, "tag"

        @staticmethod
        def jvp(ctx, t):
            return t * 2, None, None, None

    with fwAD.dual_level():
        a, idx, c, tag = Split.apply(fwAD.make_dual(_t([1.0, 3.0]), _t([1.0, 1.0])))
        assert tag == "tag" and not c.requires_grad
        np.testing.assert_allclose(fwAD.unpack_dual(a).tangent.numpy(), [2.0, 2.0])
        assert fwAD.unpack_dual(c).tangent is None and fwAD.unpack_dual(idx).tangent is None


def test_jvp_returning_none_gives_a_zero_tangent():
    # PyTorch fails an internal assert here; a zero tangent is what None means
    class NoTangent(ptl.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def jvp(ctx, t):
            return None

    with fwAD.dual_level():
        out = NoTangent.apply(fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 1.0])))
        assert fwAD.unpack_dual(out).tangent.numpy().tolist() == [0.0, 0.0]


def _dirty_class(lib, inplace):
    class Scale(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            x.mul_(y)
            ctx.mark_dirty(x)
            ctx.save_for_forward(y)
            ctx.x = x.clone()
            return x

        @staticmethod
        def jvp(ctx, tx, ty):
            y, = ctx.saved_tensors
            if inplace:
                return tx.mul_(y).add_(ty * ctx.x / y)
            return tx * y + ty * ctx.x / y
    return Scale


def _run_dirty(lib, inplace):
    fw = lib.autograd.forward_ad
    x = lib.tensor([1.0, 2.0], dtype=lib.float64)
    tangent = lib.ones_like(x)
    with fw.dual_level():
        d = fw.make_dual(x, tangent)
        e = fw.make_dual(x * 3, lib.full_like(x, 2.0))
        a = d * 1                        # in place on a non-leaf
        out = _dirty_class(lib, inplace).apply(a, e)
        return out is a, [fw.unpack_dual(o).tangent.tolist() for o in (out, a, out * out)]


def test_mark_dirty_jvp_modifies_the_tangent_in_place():
    same, (t_out, t_a, t_sq) = _run_dirty(ptl, True)
    # out = x * y with x = [1, 2], y = 3x; tangents tx = 1, ty = 2
    assert same and t_out == [5.0, 10.0] and t_a == t_out
    assert t_sq == [2 * 3 * 5.0, 2 * 12 * 10.0]
    if torch is not None:
        assert _run_dirty(torch, True) == (same, [t_out, t_a, t_sq])


def test_mark_dirty_jvp_not_in_place_raises():
    assert_raises_like_torch(lambda lib: _run_dirty(lib, False), RuntimeError,
                             "An inplace custom Function is not modifying the forward mode "
                             "gradients inplace. If the forward is modifying an input inplace, "
                             "then the jvp function must modify the corresponding gradient "
                             "inplace.")


def _as_is(lib, view):
    class Both(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x, x * 2

        @staticmethod
        def jvp(ctx, t):
            return (t.view_as(t) if view else t), t * 2

    fw = lib.autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(lib.tensor([1.0, 2.0], dtype=lib.float64),
                         lib.tensor([5.0, 6.0], dtype=lib.float64))
        a, b = Both.apply(d)
        return a is d, fw.unpack_dual(a).tangent.tolist(), fw.unpack_dual(b).tangent.tolist()


def test_input_returned_as_is():
    got = _as_is(ptl, True)
    assert got == (False, [5.0, 6.0], [10.0, 12.0])
    if torch is not None:
        assert _as_is(torch, True) == got
    assert_raises_like_torch(lambda lib: _as_is(lib, False), RuntimeError,
                             "A custom Function's forward is returning a view (or an input "
                             "as-is) but the jvp is not returning a view.")


def _bad_jvp(lib, forward, jvp):
    class Bad(lib.autograd.Function):
        pass
    Bad.forward = staticmethod(forward)
    Bad.jvp = staticmethod(jvp)
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        x = lib.tensor([1.0, 2.0], dtype=lib.float64)
        out = Bad.apply(fw.make_dual(x, lib.ones_like(x)))
        return [fw.unpack_dual(o).tangent for o in (out if isinstance(out, tuple) else (out,))]


@pytest.mark.parametrize("case,exc,msg", [
    ("two-for-one", RuntimeError,
     "Function's jvp returned an invalid number of forward gradients (expected 1 but got 2)"),
    ("one-for-two", RuntimeError,
     "Function's jvp returned an invalid number of forward gradients (expected 2 but got 1)"),
    ("not-a-tensor", RuntimeError, "expected Variable or None (got int) for grad output 0."),
    ("shape", RuntimeError,
     "Trying to set a forward gradient that has a different size than that of the original "
     "Tensor, this is not supported. Tensor is of size [2] while the given forward gradient "
     "is of size [1]."),
    ("non-differentiable", RuntimeError,
     "Function's jvp returned a gradient at position 1, but  the corresponding forward output "
     "is not a differentiable Tensor.You should return None at that position instead."),
    ("save-non-tensor", AssertionError,
     "save_for_forward expects all arguments to be tensors; you should save non-tensors as "
     "attributes on ctx."),
])
def test_bad_jvp_raises_like_torch(case, exc, msg):
    def nondiff_forward(ctx, x):
        y = x * 3
        ctx.mark_non_differentiable(y)
        return x * 2, y

    def save_forward(ctx, x):
        ctx.save_for_forward(x, 3)
        return x * 2

    forwards = {"one-for-two": lambda ctx, x: (x * 2, x * 3), "non-differentiable":
                nondiff_forward, "save-non-tensor": save_forward}
    jvps = {"two-for-one": lambda ctx, t: (t, t), "one-for-two": lambda ctx, t: t,
            "not-a-tensor": lambda ctx, t: 3, "shape": lambda ctx, t: t[:1],
            "non-differentiable": lambda ctx, t: (t, t)}
    forward = forwards.get(case, lambda ctx, x: x * 2)
    jvp = jvps.get(case, lambda ctx, t: t * 2)
    assert_raises_like_torch(lambda lib: _bad_jvp(lib, forward, jvp), exc, msg)


def test_missing_jvp_raises_at_apply():
    def run(lib):
        fw = lib.autograd.forward_ad
        NoJvp = _classes(lib)["NoJvp"]
        with fw.dual_level():
            x = lib.tensor([1.0], dtype=lib.float64)
            NoJvp.apply(x)                          # no tangent: fine
            d = fw.make_dual(x, lib.ones_like(x))
            NoJvp.apply(d.sin() * 2)                # depends on the dual: refused
    assert_raises_like_torch(run, NotImplementedError,
                             "You must implement the jvp function for custom autograd.Function "
                             "to use it with forward mode AD.")


def test_missing_jvp_under_func_jvp_and_jacfwd():
    NoJvp = ptl_fns["NoJvp"]
    x = _t([1.0, 2.0])
    msg = "You must implement the jvp function"
    with pytest.raises(NotImplementedError, match=msg):
        ptl.func.jvp(NoJvp.apply, (x,), (x,))
    with pytest.raises(NotImplementedError, match=msg):
        ptl.func.jacfwd(NoJvp.apply)(x)
    ptl.func.jacrev(NoJvp.apply)(x)           # reverse mode needs no jvp


def test_forward_ad_graph_is_freed():
    Sin = ptl_fns["Sin"]

    def once():
        with fwAD.dual_level():
            d = fwAD.make_dual(_t([1.0, 2.0]), _t([1.0, 1.0]))
            fwAD.unpack_dual(Sin.apply(d * 2).exp())
        ptl.func.jvp(Sin.apply, (_t([1.0]),), (_t([1.0]),))
        ptl.func.jacfwd(Sin.apply)(_t([1.0, 2.0]))
    assert_no_leak(once)


# ---- torch.func over custom Functions ----

def _transforms(lib, name):
    func = lib.func
    Sin = _classes(lib)["Sin"]
    x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64)
    t = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
    calls = {
        "grad": lambda: func.grad(lambda x: Sin.apply(x * x).sum())(x),
        "jvp": lambda: func.jvp(lambda x: Sin.apply(x).exp(), (x,), (t,)),
        "jacrev": lambda: func.jacrev(Sin.apply)(x),
        "jacfwd": lambda: func.jacfwd(lambda x: Sin.apply(x).exp() * x)(x),
        "hessian": lambda: func.hessian(lambda x: Sin.apply(x * x).sum())(x),
        "vmap": lambda: func.vmap(Sin.apply)(x.reshape(3, 1).expand(3, 2) * 2),
        "grad-of-jvp": lambda: func.grad(lambda x: func.jvp(Sin.apply, (x,), (t,))[1].sum())(x),
        "jvp-of-grad": lambda: func.jvp(func.grad(lambda x: Sin.apply(x).sum()), (x,), (t,)),
        "vmap-of-jvp": lambda: func.vmap(func.jvp, in_dims=(None, None, 0))(
            Sin.apply, (x,), (lib.eye(3, dtype=lib.float64),)),
        "jvp-of-vmap": lambda: func.jvp(func.vmap(Sin.apply), (x,), (t,)),
        "linearize": lambda: func.linearize(Sin.apply, x)[1](t),
    }
    out = calls[name]()
    return [o.tolist() for o in (out if isinstance(out, tuple) else (out,))]


TRANSFORMS = ["grad", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "grad-of-jvp",
              "jvp-of-grad", "vmap-of-jvp", "jvp-of-vmap", "linearize"]


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_over_a_custom_function(name):
    x = np.array([0.5, 1.0, 2.0])
    t = np.array([1.0, -2.0, 0.5])
    want = {
        "grad": [2 * x * np.cos(x * x)],
        "jvp": [np.exp(np.sin(x)), np.exp(np.sin(x)) * np.cos(x) * t],
        "jacrev": [np.diag(np.cos(x))],
        "jacfwd": [np.diag(np.exp(np.sin(x)) * (np.cos(x) * x + 1))],
        "hessian": [np.diag(2 * np.cos(x * x) - 4 * x * x * np.sin(x * x))],
        "vmap": [np.sin(np.stack([2 * x, 2 * x], 1))],
        "grad-of-jvp": [-np.sin(x) * t],
        "jvp-of-grad": [np.cos(x), -np.sin(x) * t],
        "vmap-of-jvp": [np.stack([np.sin(x)] * 3), np.diag(np.cos(x))],
        "jvp-of-vmap": [np.sin(x), np.cos(x) * t],
        "linearize": [np.cos(x) * t],
    }[name]
    got = _transforms(ptl, name)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), w, rtol=1e-12, atol=1e-14)


@torch_ref
@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_over_a_custom_function_match_torch(name):
    got, want = _transforms(ptl, name), _transforms(torch, name)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.array(g), np.array(w), rtol=1e-12, atol=1e-14)


def test_jacfwd_and_func_jvp_use_jvp_not_backward():
    x, t = np.array([0.3, 1.2]), np.array([1.0, 0.5])
    px = _t(x)
    SinMul = ptl_fns["SinMul"]
    # SinMul's backward is wrong on purpose: these values come from its jvp
    jac = ptl.func.jacfwd(lambda x: SinMul.apply(x, x)[0])(px)
    np.testing.assert_allclose(jac.numpy(), np.diag(np.cos(x) * x + np.sin(x)), rtol=1e-12)
    tangent = ptl.func.jvp(lambda x: SinMul.apply(x, px)[0], (px,), (_t(t),))[1]
    np.testing.assert_allclose(tangent.numpy(), np.cos(x) * x * t, rtol=1e-12)


def test_forward_over_forward_differentiates_jvp():
    # PyTorch 2.13 gives zeros here (Note [Custom Function jvp over the double vjp])
    x, t = np.array([0.5, 1.0, 2.0]), np.array([1.0, -2.0, 0.5])
    Sin = ptl_fns["Sin"]
    inner = ptl.func.jvp(lambda x: ptl.func.jvp(Sin.apply, (x,), (_t(t),))[1], (_t(x),),
                         (_t(t),))
    np.testing.assert_allclose(inner[0].numpy(), np.cos(x) * t, rtol=1e-14)
    np.testing.assert_allclose(inner[1].numpy(), -np.sin(x) * t * t, rtol=1e-14)
    hess = ptl.func.jacfwd(ptl.func.jacfwd(lambda x: Sin.apply(x).sum()))(_t(x))
    np.testing.assert_allclose(hess.numpy(), np.diag(-np.sin(x)), rtol=1e-14, atol=1e-15)


def _old_style(lib):
    """A Function in the ctx-first style, without setup_context."""
    class Old(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2
    return Old


def _new_style(lib):
    """x * 2 in the setup_context style, with backward and jvp but no vmap support."""
    class New(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

        @staticmethod
        def jvp(ctx, t):
            return t * 2
    return New


def _transform_errors(lib, name):
    func = lib.func
    Old, New = _old_style(lib), _new_style(lib)

    class BothRules(New):
        generate_vmap_rule = True

        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2, in_dims[0]

    x = lib.tensor([1.0, 2.0], dtype=lib.float64)
    other = lib.ones(2, dtype=lib.float64)
    cases = {
        "old-grad": lambda: func.grad(lambda x: Old.apply(x).sum())(x),
        "old-unrelated": lambda: func.grad(lambda x: Old.apply(other).sum() + x.sum())(x),
        "old-vmap": lambda: func.vmap(Old.apply)(x),
        "old-jvp": lambda: func.jvp(Old.apply, (x,), (x,)),
        "new-vmap": lambda: func.vmap(New.apply)(x),
        "new-vmap-unbatched": lambda: func.vmap(lambda a: New.apply(other) * a)(x),
        "new-jacfwd": lambda: func.jacfwd(New.apply)(x),
        "both-rules": lambda: func.vmap(BothRules.apply)(x),
    }
    cases[name]()


SETUP_CONTEXT = ("In order to use an autograd.Function with functorch transforms (vmap, grad, "
                 "jvp, jacrev, ...), it must override the setup_context staticmethod. For more "
                 "details, please see https://pytorch.org/docs/main/notes/extending.func.html")
NO_VMAP = ("You tried to vmap over New, but it does not have vmap support. Please override "
           "and implement the vmap staticmethod or set generate_vmap_rule=True. For more "
           "details, please see https://pytorch.org/docs/main/notes/extending.func.html")
BOTH = ("You tried to vmap over BothRules, but it has both generate_vmap_rule=True and an "
        "overridden vmap staticmethod. Please set generate_vmap_rule=False or delete the "
        "overridden vmap staticmethod to avoid ambiguity. For more details, please see "
        "https://pytorch.org/docs/main/notes/extending.func.html")


@pytest.mark.parametrize("name,msg", [
    ("old-grad", SETUP_CONTEXT), ("old-unrelated", SETUP_CONTEXT), ("old-vmap", SETUP_CONTEXT),
    ("old-jvp", SETUP_CONTEXT), ("new-vmap", NO_VMAP), ("new-vmap-unbatched", NO_VMAP),
    ("new-jacfwd", NO_VMAP), ("both-rules", BOTH)])
def test_transform_errors_like_torch(name, msg):
    assert_raises_like_torch(lambda lib: _transform_errors(lib, name), RuntimeError, msg)


def test_old_style_function_still_works_outside_transforms():
    x = _t([1.0]).requires_grad_()
    _old_style(ptl).apply(x).sum().backward()
    assert x.grad.tolist() == [2.0]


def _vmap_rule(lib):
    seen = []

    class Scaled(lib.autograd.Function):
        @staticmethod
        def forward(x, k):
            return x * k

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.k = inputs[1]

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

        @staticmethod
        def vmap(info, in_dims, x, k):
            seen.append((in_dims, info.randomness))
            # the rule's own result differs from forward, so that its use shows
            return Scaled.apply(x, k) + 100, in_dims[0]

    x = lib.arange(6, dtype=lib.float64).reshape(3, 2)
    return lib.func.vmap(Scaled.apply, in_dims=(1, None), randomness="same")(x, 2.0), seen


def test_vmap_staticmethod_is_used():
    out, seen = _vmap_rule(ptl)
    want = np.arange(6.0).reshape(3, 2).T * 2 + 100
    np.testing.assert_allclose(out.numpy(), want)
    assert seen and all(s == ((0, None), "same") for s in seen)
    if torch is not None:
        ref, ref_seen = _vmap_rule(torch)
        np.testing.assert_allclose(out.numpy(), ref.numpy())
        assert ref_seen == [((1, None), "same")]   # PyTorch: one call, the whole batch


def test_vmap_rule_must_return_output_and_out_dims():
    class Bad(_new_style(ptl)):
        @staticmethod
        def vmap(info, in_dims, x):
            return x * 2

    with pytest.raises(RuntimeError, match="Expected the vmap staticmethod to have two returns"):
        ptl.func.vmap(Bad.apply)(_t([1.0, 2.0]))


# ---- gradcheck(check_forward_ad=True) ----

def _gradcheck_class(lib, wrong):
    """SinMul with a right backward, and a jvp that drops y's tangent when wrong."""
    SinMul = _classes(lib)["SinMul"]

    class Checked(SinMul):
        @staticmethod
        def backward(ctx, g1, g2):
            x, y = ctx.saved_tensors
            return g1 * x.cos() * y + g2, g1 * x.sin() + g2

    if wrong:
        Checked.jvp = staticmethod(lambda ctx, tx, ty: SinMul.jvp(ctx, tx, ty * 0))
    return Checked


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("batched", [False, True])
def test_gradcheck_forward_ad(fast_mode, batched):
    def check(lib, wrong):
        gen = np.random.default_rng(3)
        x = lib.tensor(gen.standard_normal(3), dtype=lib.float64, requires_grad=True)
        y = lib.tensor(gen.standard_normal(3), dtype=lib.float64, requires_grad=True)
        return lib.autograd.gradcheck(_gradcheck_class(lib, wrong).apply, (x, y),
                                      check_forward_ad=True, fast_mode=fast_mode,
                                      check_batched_forward_grad=batched)
    assert check(ptl, False)
    assert_raises_like_torch(lambda lib: check(lib, True), RuntimeError,
                             "Jacobian computed with forward mode mismatch for output 0 with "
                             "respect to input 1")
