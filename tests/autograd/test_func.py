"""torch.func (pytorchlite.func): grad, grad_and_value, vjp, jvp, linearize, jacrev, jacfwd,
hessian, vmap, functional_call and stack_module_state against closed-form derivatives in
float64 and NumPy, composed (grad of grad, vmap of grad, hessian), with PyTorch's errors; where
torch is installed, the same calls give torch.func's values and messages."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.func import (functional_call, grad, grad_and_value, hessian, jacfwd, jacrev,
                              jvp, linearize, stack_module_state, vjp, vmap)
from helpers import torch, torch_ref

D = ptl.float64


def rand(*shape, seed=0):
    return ptl.randn(shape, dtype=D, generator=ptl.Generator().manual_seed(seed))


def close(a, b, tol=1e-12):
    a = a.detach().numpy() if isinstance(a, ptl.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, ptl.Tensor) else np.asarray(b)
    assert a.shape == b.shape
    np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


# ---- grad ----

@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4)])
def test_grad_closed_form(shape):
    x = rand(*shape)
    close(grad(lambda t: (t ** 3).sum())(x), 3 * x.numpy() ** 2)
    g, v = grad_and_value(lambda t: t.sin().sum())(x)
    close(g, np.cos(x.numpy()))
    close(v, np.sin(x.numpy()).sum())


def test_grad_non_contiguous_input_and_argnums():
    x = rand(4, 3).t()
    y = rand(3, 4, seed=1)
    gx, gy = grad(lambda a, b: (a * b.exp()).sum(), argnums=(0, 1))(x, y)
    close(gx, np.exp(y.numpy()))
    close(gy, x.numpy() * np.exp(y.numpy()))
    close(grad(lambda a, b: (a * b).sum(), argnums=-1)(x, y), x.numpy())


def test_grad_pytree_inputs_and_aux():
    p = {"w": rand(3), "b": (rand(1, seed=2), rand(2, seed=3))}

    def f(params):
        loss = (params["w"] ** 2).sum() + params["b"][0].sum() * params["b"][1].sum()
        return loss, {"loss": loss}
    g, aux = grad(f, has_aux=True)(p)
    close(g["w"], 2 * p["w"].numpy())
    close(g["b"][0], np.full(1, p["b"][1].numpy().sum()))
    close(g["b"][1], np.full(2, p["b"][0].numpy().sum()))
    assert isinstance(g["b"], tuple) and not aux["loss"].requires_grad


def test_grad_of_grad_and_unused_input():
    x = rand()
    close(grad(grad(lambda t: t.sin()))(x), -np.sin(x.numpy()))
    close(grad(grad(grad(lambda t: t.sin())))(x), -np.cos(x.numpy()))
    close(grad(lambda a, b: a.sum(), argnums=1)(rand(2), rand(3)), np.zeros(3))


def test_grad_results_detached_unless_they_depend_on_outside():
    x = rand(3)
    assert not grad(lambda t: (t ** 3).sum())(x).requires_grad
    w = rand(3, seed=1).requires_grad_()
    g = grad(lambda t: (t * t * w).sum())(x)           # a closure parameter
    assert g.requires_grad
    (gw,) = ptl.autograd.grad(g.sum(), w)
    close(gw, 2 * x.numpy())
    xr = x.clone().requires_grad_()
    g = grad(lambda t: (t ** 3).sum())(xr)               # ordinary autograd differentiates it
    (gx,) = ptl.autograd.grad(g.sum(), xr)
    close(gx, 6 * x.numpy())
    with ptl.no_grad():
        assert not grad(lambda t: (t ** 3).sum())(xr).requires_grad


@pytest.mark.parametrize("fn, args, kwargs, msg", [
    (lambda t: t * 2, (rand(3),), {}, "Expected f(*args) to return a scalar Tensor, got tensor "
     "with 1 dims. Maybe you wanted to use the vjp or jacrev APIs instead?"),
    (lambda t: 3.0, (rand(3),), {}, "Expected f(*args) to return a Tensor, got <class 'float'>"),
    (lambda t: t.sum(), (rand(3),), {"argnums": 1}, "Got argnum=1, but only 1 positional inputs"),
    (lambda t: t.sum(), (rand(3),), {"argnums": ()}, "argnums must be non-empty"),
    (lambda t: t.sum(), (rand(3),), {"argnums": (0.5,)}, "argnum must be int, got: <class "
     "'float'>"),
    (lambda t: t.sum(), (rand(3),), {"has_aux": True}, "output of function f should be a "
     "tuple: (output, aux) if has_aux is True"),
    (lambda t: t.sum(), (ptl.arange(3),), {}, "only Tensors of floating point dtype can "
     "require gradients"),
])
def test_grad_errors(fn, args, kwargs, msg):
    with pytest.raises(RuntimeError) as info:
        grad(fn, **kwargs)(*args)
    assert msg in str(info.value)


# ---- vjp, jvp, linearize ----

def test_vjp_jvp_linearize_of_a_linear_map_and_sin():
    a = rand(4, 3)
    x = rand(3, seed=1)
    t = rand(3, seed=2)
    u = rand(4, seed=3)
    out, fn = vjp(lambda v: a @ v.sin(), x)
    close(out, a.numpy() @ np.sin(x.numpy()))
    (ct,) = fn(u)
    close(ct, np.cos(x.numpy()) * (a.numpy().T @ u.numpy()))
    (ct2,) = fn(u)                                       # vjp_fn can be called again
    close(ct2, ct)
    out, tangent = jvp(lambda v: a @ v.sin(), (x,), (t,))
    close(tangent, a.numpy() @ (np.cos(x.numpy()) * t.numpy()))
    assert not out.requires_grad and not tangent.requires_grad
    out, fn = linearize(lambda v: a @ v.sin(), x)
    close(fn(t), tangent)
    close(out, a.numpy() @ np.sin(x.numpy()))


def test_jvp_of_a_function_ignoring_its_input_and_aux():
    x = rand(3)
    out, tangent, aux = jvp(lambda v: (ptl.ones(2, dtype=D), v.sum()), (x,), (x,), has_aux=True)
    close(tangent, np.zeros(2))
    close(aux, x.numpy().sum())


def test_jvp_vjp_errors():
    x = rand(3)
    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(lambda v: v, x, (x,))
    with pytest.raises(RuntimeError, match="Tensor is of size \\[3\\] while the given forward "
                       "gradient is of size \\[2\\]"):
        jvp(lambda v: v.sin(), (x,), (rand(2),))
    _, fn = vjp(lambda v: v.sin(), x)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        fn(rand(2))


# ---- jacobians ----

@pytest.mark.parametrize("jac", [jacrev, jacfwd])
def test_jacobian_closed_form(jac):
    a = rand(4, 3)
    x = rand(3, seed=1)
    j = jac(lambda v: a @ v.tanh())(x)
    close(j, a.numpy() * (1 - np.tanh(x.numpy()) ** 2))
    ja, jb = jac(lambda u, v: (u * v).sum(0), argnums=(0, 1))(rand(2, 3), x)
    assert tuple(ja.shape) == (3, 2, 3) and tuple(jb.shape) == (3, 3)
    j0 = jac(lambda v: v.sum(0))(rand(0, 3))            # a size-0 input
    assert tuple(j0.shape) == (3, 0, 3)


def test_jacrev_outputs_pytree_and_aux():
    x = rand(3)
    jac, aux = jacrev(lambda v: ({"s": v.sin(), "c": v.cos().sum()}, v * 2), has_aux=True)(x)
    close(jac["s"], np.diag(np.cos(x.numpy())))
    close(jac["c"], -np.sin(x.numpy()))
    close(aux, 2 * x.numpy())


def test_hessian_of_a_quadratic_form_and_a_composition():
    a = rand(4, 4)
    x = rand(4, seed=1)
    close(hessian(lambda v: v @ a @ v)(x), a.numpy() + a.numpy().T)
    close(hessian(lambda v: v.sin().sum())(x), np.diag(-np.sin(x.numpy())))
    hxy = hessian(lambda u, v: (u * u * v).sum(), argnums=(0, 1))(x, x + 1)
    close(hxy[0][1], np.diag(2 * x.numpy()))


def test_jacobian_option_errors():
    with pytest.raises(RuntimeError, match="Only allowed values for randomness are 'error', "
                       "'different', or 'same'. Got bad"):
        jacfwd(lambda v: v, randomness="bad")
    with pytest.raises(ValueError, match="chunk_size"):
        jacrev(lambda v: v, chunk_size=0)


# ---- vmap ----

def test_vmap_dims_and_structures():
    a, b = rand(5, 3), rand(5, 3, seed=1)
    close(vmap(ptl.dot)(a, b), (a.numpy() * b.numpy()).sum(1))
    close(vmap(ptl.dot, in_dims=(1, 1))(a.t(), b.t()), (a.numpy() * b.numpy()).sum(1))
    close(vmap(ptl.dot, in_dims=(0, None))(a, b[0]), a.numpy() @ b.numpy()[0])
    close(vmap(lambda u: u * 2, out_dims=1)(a), 2 * a.numpy().T)
    close(vmap(lambda u: u.sum(), in_dims=-1)(a), a.numpy().sum(0))
    outer = vmap(vmap(lambda u, v: u * v, in_dims=(None, 0)), in_dims=(0, None))
    close(outer(a[:, 0], b[:, 0]), np.outer(a.numpy()[:, 0], b.numpy()[:, 0]))
    d = vmap(lambda p, scale: {"y": p["x"] * scale, "n": p["x"].sum()},
             in_dims=({"x": 0},))({"x": a}, scale=3.0)
    close(d["y"], 3 * a.numpy())
    close(d["n"], a.numpy().sum(1))
    s, c = vmap(lambda u: (u.sin(), u.cos()), out_dims=(0, 1))(a)
    close(s, np.sin(a.numpy()))
    close(c, np.cos(a.numpy()).T)
    close(vmap(lambda u: ptl.ones(2, dtype=D))(a), np.ones((5, 2)))
    empty = vmap(lambda u: u.sum(0, keepdim=True) * 2)(rand(0, 3))
    assert tuple(empty.shape) == (0, 1)


def test_vmap_of_grad_is_per_sample_gradients():
    model = ptl.nn.Linear(3, 2).double()
    params = {k: v.detach() for k, v in model.named_parameters()}
    x, y = rand(6, 3), rand(6, 2, seed=1)

    def loss(p, xi, yi):
        return ((functional_call(model, p, (xi,)) - yi) ** 2).sum()
    per = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(6):
        model.zero_grad()
        ((model(x[i]) - y[i]) ** 2).sum().backward()
        close(per["weight"][i], model.weight.grad)
        close(per["bias"][i], model.bias.grad)


def test_vmap_randomness():
    x = rand(4, 2)
    with pytest.raises(RuntimeError, match="called random operation while in randomness error "
                       "mode"):
        vmap(lambda u: u + ptl.rand(2, dtype=D))(x)
    same = vmap(lambda u: ptl.rand(3), randomness="same")(x)
    assert all(ptl.equal(same[0], same[i]) for i in range(4))
    diff = vmap(lambda u: ptl.rand(3), randomness="different")(x)
    assert not ptl.equal(diff[0], diff[1])
    with pytest.raises(RuntimeError, match="Only allowed values for randomness"):
        vmap(lambda u: u, randomness="x")


@pytest.mark.parametrize("call, exc, msg", [
    (lambda: vmap(lambda u, v: u + v)(rand(3, 4), rand(2, 4)), ValueError,
     "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
     "[3, 2] for the mapped dimension"),
    (lambda: vmap(lambda u: u, in_dims=2)(rand(3, 4)), ValueError,
     "Got in_dim=2 for some input, but that input is a Tensor of dimensionality 2 so expected "
     "in_dim to satisfy -2 <= in_dim < 2."),
    (lambda: vmap(lambda u: u, in_dims=(None,))(rand(3, 4)), ValueError,
     "vmap: Expected at least one Tensor to vmap over"),
    (lambda: vmap(lambda u: u)(), ValueError, "got no inputs. Maybe you forgot to add inputs"),
    (lambda: vmap(lambda u: u, in_dims=None)(rand(3)), ValueError,
     "expected `in_dims` to be int or a (potentially nested) tuple matching the structure of "
     "inputs, got: <class 'NoneType'>."),
    (lambda: vmap(lambda u: u, in_dims=(0, 0))(rand(3)), ValueError,
     "in_dims is not compatible with the structure of `inputs`."),
    (lambda: vmap(lambda u: u.sum())(3.0), ValueError,
     "Got in_dim=0 for an input but the input is of type <class 'float'>. We cannot vmap over "
     "non-Tensor arguments, please use None as the respective in_dim"),
    (lambda: vmap(lambda u: 3.0)(rand(3)), ValueError,
     "must only return Tensors, got type <class 'float'>. Did you mean to set out_dims= to None "
     "for output?"),
    (lambda: vmap(lambda u: u, out_dims=None)(rand(3)), ValueError,
     "can not return a BatchedTensor when out_dim is None"),
    (lambda: vmap(lambda u: u, out_dims=(0, 1))(rand(3)), ValueError,
     "out_dims is not compatible with the structure of `outputs`."),
    (lambda: vmap(lambda u: u, out_dims=3)(rand(3, 4)), IndexError, "Dimension out of range"),
    (lambda: vmap(lambda u: u, chunk_size=0)(rand(3)), ValueError,
     "vmap: chunk_size should be None or greater than 0. (got 0)"),
])
def test_vmap_errors(call, exc, msg):
    with pytest.raises(exc) as info:
        call()
    assert msg in str(info.value)


# ---- modules ----

def test_functional_call_replaces_and_restores():
    m = ptl.nn.Linear(3, 2).double()
    w0 = m.weight
    x = rand(4, 3)
    new = {"weight": rand(2, 3, seed=5), "bias": ptl.zeros(2, dtype=D)}
    close(functional_call(m, new, (x,)), x.numpy() @ new["weight"].numpy().T)
    close(functional_call(m, new, x), x.numpy() @ new["weight"].numpy().T)
    assert m.weight is w0 and isinstance(m.weight, ptl.nn.Parameter)
    close(functional_call(m, ({"weight": new["weight"]}, {"bias": new["bias"]}), x),
          x.numpy() @ new["weight"].numpy().T)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        functional_call(m, ({"weight": new["weight"]}, {"weight": new["weight"]}), x)
    with pytest.raises(RuntimeError, match="Error\\(s\\) in reparametrizing for Linear:\n\t"
                       "Missing key\\(s\\): 'bias'."):
        functional_call(m, {"weight": new["weight"]}, x, strict=True)
    with pytest.raises(RuntimeError, match="Unexpected key\\(s\\): 'foo'."):
        functional_call(m, dict(new, foo=x), x, strict=True)
    bn = ptl.nn.BatchNorm1d(3).double().eval()
    stats = {"running_mean": ptl.ones(3, dtype=D), "running_var": ptl.full((3,), 4.0, dtype=D)}
    close(functional_call(bn, stats, x), (x.numpy() - 1) / np.sqrt(4 + 1e-5))
    assert ptl.equal(bn.running_mean, ptl.zeros(3, dtype=D))


def test_functional_call_tied_weights():
    emb = ptl.nn.Embedding(4, 3).double()
    head = ptl.nn.Linear(3, 4, bias=False).double()
    head.weight = emb.weight
    model = ptl.nn.Sequential(emb, head)
    w = rand(4, 3, seed=7)
    idx = ptl.tensor([1, 3])
    expected = w.numpy()[[1, 3]] @ w.numpy().T
    close(functional_call(model, {"0.weight": w}, (idx,)), expected)
    untied = functional_call(model, {"0.weight": w}, (idx,), tie_weights=False)
    close(untied, w.numpy()[[1, 3]] @ emb.weight.detach().numpy().T)
    with pytest.raises(ValueError, match="which are tied"):
        functional_call(model, {"0.weight": w, "1.weight": w.clone()}, (idx,))


def test_ensemble_with_stack_module_state_and_vmap():
    models = [ptl.nn.Linear(3, 2).double() for _ in range(4)]
    params, buffers = stack_module_state(models)
    assert tuple(params["weight"].shape) == (4, 2, 3) and params["weight"].is_leaf
    assert params["weight"].requires_grad and buffers == {}
    x = rand(5, 3)

    def run(p, b, inp):
        return functional_call(models[0], (p, b), (inp,))
    out = vmap(run, in_dims=(0, 0, None))(params, buffers, x)
    for i, m in enumerate(models):
        close(out[i], m(x).detach())
    with pytest.raises(RuntimeError, match="Expected at least one model"):
        stack_module_state([])


# ---- against torch.func ----

@torch_ref
def test_same_values_and_messages_as_torch_func():
    tf = torch.func
    xs = np.random.default_rng(0).standard_normal((4, 3))

    def both(make):
        return make(ptl, ptl.func), make(torch, tf)
    for make in [
        lambda L, F: F.grad(lambda t: (t.sin() * t).sum())(L.tensor(xs)),
        lambda L, F: F.jacrev(lambda t: t.tanh().sum(0))(L.tensor(xs)),
        lambda L, F: F.hessian(lambda t: (t ** 3).sum())(L.tensor(xs[0])),
        lambda L, F: F.jvp(lambda t: t.exp(), (L.tensor(xs),), (L.tensor(xs),))[1],
        lambda L, F: F.vmap(lambda t: t.outer(t))(L.tensor(xs)),
        lambda L, F: F.vmap(F.grad(lambda t: t.sin().sum()))(L.tensor(xs)),
    ]:
        ours, theirs = both(make)
        close(ours, theirs.numpy())
        assert ours.requires_grad == theirs.requires_grad
    for call in [
        lambda L, F: F.grad(lambda t: t * 2)(L.tensor(xs)),
        lambda L, F: F.vmap(lambda u, v: u + v)(L.tensor(xs), L.tensor(xs[:2])),
        lambda L, F: F.vmap(lambda u: u, in_dims=2)(L.tensor(xs)),
        lambda L, F: F.vmap(lambda u: 3.0)(L.tensor(xs)),
        lambda L, F: F.vmap(lambda u: L.rand(2))(L.tensor(xs)),
    ]:
        errors = []
        for L, F in ((ptl, ptl.func), (torch, tf)):
            with pytest.raises(Exception) as info:
                call(L, F)
            errors.append((type(info.value).__name__, str(info.value)))
        assert errors[0] == errors[1]
