"""torch.compile, torch.compiler and torch._dynamo: the wrapper forms, the OptimizedModule's
state_dict prefix and attribute forwarding, results and gradients equal to eager's (Note
[torch.compile runs the code as written]), Python side effects kept, and PyTorch's errors for
bad arguments; where torch is installed, the same behaviour as PyTorch's (with its "eager"
backend, which generates no code)."""
import pytest

import pytorchlite as ptl
import pytorchlite._dynamo
import pytorchlite.nn as nn
from helpers import torch, torch_ref

LIBS = ["ptl", pytest.param("torch", marks=torch_ref)]


def lib_of(name):
    if name == "ptl":
        return ptl
    import torch._dynamo  # noqa: F401  (torch imports it lazily)
    return torch


def small_net(lib):
    lib.manual_seed(0)
    return lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))


@pytest.mark.parametrize("lib_name", LIBS)
def test_module_wrapper_state_dict_and_attributes(lib_name):
    lib = lib_of(lib_name)
    m = small_net(lib)
    cm = lib.compile(m, backend="eager")
    assert isinstance(cm, lib.nn.Module) and isinstance(cm, lib._dynamo.eval_frame.OptimizedModule)
    assert cm._orig_mod is m
    assert list(cm.state_dict()) == ["_orig_mod." + k for k in m.state_dict()]
    assert [n for n, _ in cm.named_parameters()] == \
        ["_orig_mod." + n for n, _ in m.named_parameters()]
    assert getattr(cm, "0") is m[0] and cm._orig_mod[0].weight is m[0].weight
    cm.note = 5                     # a write goes to the original module
    assert m.note == 5 and "note" not in cm.__dict__
    cm.eval()
    assert not m.training and not m[0].training
    cm.train()
    assert m.training
    assert repr(cm).startswith("OptimizedModule(\n  (_orig_mod): Sequential(")


@pytest.mark.parametrize("lib_name", LIBS)
def test_results_and_gradients_equal_eager(lib_name):
    lib = lib_of(lib_name)
    m = small_net(lib)
    cm = lib.compile(m, backend="eager")
    x = lib.randn(5, 4, generator=lib.Generator().manual_seed(1))
    y = cm(x)
    assert lib.equal(y, m(x))
    y.square().sum().backward()
    g = m[0].weight.grad.clone()
    m.zero_grad()
    m(x).square().sum().backward()
    assert lib.equal(g, m[0].weight.grad)


@pytest.mark.parametrize("lib_name", LIBS)
def test_function_forms_keep_side_effects_and_branches(lib_name):
    lib = lib_of(lib_name)
    calls = []

    @lib.compile(backend="eager")
    def step(x):
        calls.append(x.shape[0])           # a Python side effect runs every call
        return x * 2 if x.sum() > 0 else x - 1   # a value-dependent branch

    assert step.__name__ == "step"
    pos, neg = lib.ones(3), -lib.ones(2)
    assert lib.equal(step(pos), pos * 2) and lib.equal(step(neg), neg - 1)
    assert calls == [3, 2]

    def plain(x):
        return x + 1
    compiled = lib.compile(plain, backend="eager")
    assert compiled is not plain and compiled._torchdynamo_orig_callable is plain
    assert lib.equal(compiled(pos), pos + 1)
    assert lib.compile(plain, disable=True) is plain


def test_default_backend_runs_as_written():
    # ours only: PyTorch's default backend (Inductor) generates and compiles C++ code
    m = small_net(ptl)
    x = ptl.randn(3, 4)
    for mode in (None, "default", "reduce-overhead", "max-autotune"):
        assert ptl.equal(ptl.compile(m, mode=mode)(x), m(x))
    assert ptl.equal(ptl.compile(m, options={"trace.enabled": False}, fullgraph=True,
                                 dynamic=True)(x), m(x))


def test_module_compile_method_checks_its_arguments():
    m = small_net(ptl)
    assert m.compile(mode="max-autotune") is None
    assert list(m.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    with pytest.raises(RuntimeError, match="Unrecognized mode=fast"):
        m.compile(mode="fast")


@pytest.mark.parametrize("lib_name", LIBS)
@pytest.mark.parametrize("kwargs, exc, msg", [
    ({"mode": "fast"}, RuntimeError,
     "Unrecognized mode=fast, should be one of: default, lite, reduce-overhead, "
     "max-autotune-no-cudagraphs, max-autotune"),
    ({"mode": "default", "options": {}}, RuntimeError,
     "Either mode or options can be specified, but both can't be specified at the same time."),
    ({"backend": "nope"}, RuntimeError,
     "Invalid backend: 'nope', see `torch._dynamo.list_backends()` for available backends."),
    ({"dynamic": "yes"}, AssertionError, "Expected enable to be a bool, got <class 'str'>"),
])
def test_bad_arguments_raise_pytorchs_errors(lib_name, kwargs, exc, msg):
    lib = lib_of(lib_name)
    with pytest.raises(exc) as info:
        lib.compile(lambda x: x, **kwargs)
    assert str(info.value) == msg
    if "backend" in kwargs:
        assert isinstance(info.value, lib._dynamo.exc.InvalidBackend)


@pytest.mark.parametrize("lib_name", LIBS)
def test_not_callable_model(lib_name):
    lib = lib_of(lib_name)
    with pytest.raises(AssertionError,
                       match="A callable function is expected, but <class 'int'> is provided."):
        lib.compile(3)


def test_compiler_namespace():
    c = ptl.compiler
    assert c.list_backends() == ["inductor"]
    assert c.list_backends(exclude_tags=()) == ["aot_eager", "eager", "inductor"]
    assert ptl._dynamo.list_backends() == ["inductor"]
    assert not c.is_compiling() and not c.is_dynamo_compiling() and not c.is_exporting()

    def f(x):
        return x
    assert c.disable(f) is f and c.disable(recursive=False)(f) is f
    assert c.allow_in_graph(f) is f and c.assume_constant_result(f) is f
    assert c.substitute_in_graph(len)(f) is f
    assert c.reset() is None and ptl._dynamo.reset() is None
    assert c.cudagraph_mark_step_begin() is None
    with pytest.raises(TypeError, match="expects a callable"):
        c.disable(3)
    with pytest.raises(TypeError, match="allow_in_graph expects a callable"):
        c.allow_in_graph(3)


def test_default_backend_setting():
    c = ptl.compiler
    assert c.get_default_backend() == "inductor"
    try:
        c.set_default_backend("eager")
        assert c.get_default_backend() == "eager"
        with pytest.raises(RuntimeError, match="Invalid backend: 'zz'"):
            c.set_default_backend("zz")
        assert c.get_default_backend() == "eager"
    finally:
        c.set_default_backend(None)
    assert c.get_default_backend() == "inductor"


def test_set_stance_forms_and_errors():
    c = ptl.compiler
    with c.set_stance("force_eager"):
        pass

    @c.set_stance("eager_on_recompile")
    def f(x):
        return x + 1
    assert ptl.equal(f(ptl.ones(1)), ptl.full((1,), 2.0))
    c.set_stance("default")
    with pytest.raises(RuntimeError, match="invalid torch.compile stance 'bad'"):
        c.set_stance("bad")
    with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend set"):
        c.set_stance("force_eager", force_backend="eager")
    with pytest.raises(RuntimeError, match="Invalid backend: 'zz'"):
        c.set_stance("default", force_backend="zz")


@pytest.mark.parametrize("lib_name", LIBS)
def test_dynamo_config(lib_name):
    lib = lib_of(lib_name)
    cfg = lib._dynamo.config
    assert cfg.suppress_errors is False and cfg.cache_size_limit == 8
    old = cfg.cache_size_limit
    cfg.cache_size_limit = 16
    assert cfg.cache_size_limit == 16
    cfg.cache_size_limit = old
    name = cfg.__name__
    with pytest.raises(AttributeError, match=f"{name}.no_such_flag does not exist"):
        cfg.no_such_flag = 1
    with pytest.raises(AttributeError, match=f"{name}.no_such_flag does not exist"):
        cfg.no_such_flag


def test_checkpoint_of_a_compiled_model_loads_with_the_hint():
    m = small_net(ptl)
    saved = ptl.compile(m).state_dict()
    fresh = small_net(ptl)
    with pytest.raises(RuntimeError, match="carry the prefix '_orig_mod.'"):
        fresh.load_state_dict(saved)
    fresh.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in saved.items()})
    assert all(ptl.equal(a, b) for a, b in zip(fresh.parameters(), m.parameters()))
