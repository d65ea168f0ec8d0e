"""pytorchlite.library: operators defined and kernels registered from Python, per dispatch key,
checked against NumPy in float64, gradcheck, and PyTorch's messages (torch_ref)."""
import gc
import itertools
import re
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C, library
from helpers import (BROADCAST_PAIRS, SHAPES, assert_close, assert_raises_like_torch, make,
                     to_numpy, torch, torch_ref)

_names = itertools.count()


def fresh_ns():
    """A namespace no other test (nor an earlier run in this process) used."""
    return f"ptltest{next(_names)}"


def sigmoid_add_np(x, y):
    return 1.0 / (1.0 + np.exp(-x)) + y


@pytest.fixture
def lib():
    lib = library.Library(fresh_ns(), "DEF")
    yield lib
    lib._destroy()


def define_sigmoid_add(lib, key="CPU"):
    lib.define("sigmoid_add(Tensor x, Tensor y) -> Tensor")
    lib.impl("sigmoid_add", lambda x, y: ptl.sigmoid(x) + y, key)
    return getattr(getattr(ptl.ops, lib.ns), "sigmoid_add")


# ---- values against NumPy, on every layout ----

@pytest.mark.parametrize("key", ["CPU", "CompositeImplicitAutograd", "CompositeExplicitAutograd"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "expanded"])
def test_python_kernel_matches_numpy(lib, key, layout):
    op = define_sigmoid_add(lib, key)
    for i, shape in enumerate(SHAPES):
        x, xa = make(shape, ptl.float64, layout, seed=i)
        y, ya = make(shape, ptl.float64, layout, seed=i + 100)
        assert_close(op(x, y), sigmoid_add_np(xa, ya), ptl.float64)
        assert_close(op.default(x, y), sigmoid_add_np(xa, ya), ptl.float64)
    for a, b in BROADCAST_PAIRS:
        x, xa = make(a, ptl.float32)
        y, ya = make(b, ptl.float32, seed=1)
        assert_close(op(x, y), sigmoid_add_np(xa.astype(np.float64), ya), ptl.float32)


@pytest.mark.parametrize("key", ["CPU", "CompositeImplicitAutograd", "CompositeExplicitAutograd"])
def test_complex_tensors_and_scalars_reach_the_kernel(lib, key):
    """A library's operator is not refused at the Complex key as an aten op without a complex
    kernel is: its kernel gets complex tensors and a complex Scalar, as PyTorch's does."""
    lib.define("scale(Tensor x, Scalar a) -> Tensor")
    lib.impl("scale", lambda x, a: x * a, key)
    op = getattr(ptl.ops, lib.ns).scale
    z = ptl.tensor([1 + 1j, -2j], dtype=ptl.complex64)
    assert_close(op(z, 2 - 1j), to_numpy(z) * (2 - 1j), ptl.complex64)
    assert_close(op(z, 3), to_numpy(z) * 3, ptl.complex64)
    x = ptl.tensor([1.0, 2.0], dtype=ptl.float64)
    assert op(x, 1j).dtype == ptl.complex128
    assert_close(op(x, 1j), to_numpy(x) * 1j, ptl.complex128)
    assert_close(op(x, 0.5), to_numpy(x) * 0.5, ptl.float64)


def test_memory_format_reaches_the_kernel_and_a_generator_is_refused(lib):
    # the tracer's and the Python kernels' argument conversion is one function
    # (ptlpy_ivalue_to_py): a MemoryFormat arrives as the object the caller passed
    lib.define("f(Tensor x, MemoryFormat? memory_format=None, Generator? generator=None) "
               "-> Tensor")
    seen = []
    lib.impl("f", lambda x, memory_format=None, generator=None:
             seen.append(memory_format) or x.clone(), "CPU")
    f = getattr(getattr(ptl.ops, lib.ns), "f")
    f(ptl.ones(2), memory_format=ptl.channels_last)
    f(ptl.ones(2))
    assert seen == [ptl.channels_last, None]
    with pytest.raises(NotImplementedError, match="can't take Generator arguments yet"):
        f(ptl.ones(2), generator=ptl.Generator())


def test_arguments_and_returns_of_every_kind(lib):
    lib.define("mix(Tensor x, int n, float f, bool b, Tensor? o, Tensor[] l, str s, int[] d) "
               "-> (Tensor, Tensor[], int, float)")
    lib.define("negate(bool b) -> bool")
    lib.impl("negate", lambda b: not b, "CPU")
    seen = {}

    def kernel(x, n, f, b, o, l, s, d):
        seen.update(n=n, f=f, b=b, o=o, ln=len(l), s=s, d=d)
        return x * n, [x + f, x], n + 1, f * 2

    lib.impl("mix", kernel, "CPU")
    x = ptl.tensor([1.0, 2.0])
    t, tl, n, f = getattr(ptl.ops, lib.ns).mix(x, 3, 0.5, True, None, [x, x], "hi", [1, 2])
    b = getattr(ptl.ops, lib.ns).negate(True)
    assert seen == dict(n=3, f=0.5, b=True, o=None, ln=2, s="hi", d=[1, 2])
    assert_close(t, np.array([3.0, 6.0]))
    assert len(tl) == 2 and (n, f, b) == (4, 1.0, False)
    assert_close(tl[0], np.array([1.5, 2.5]))


def test_with_keyset_passes_the_dispatch_key_set(lib):
    lib.define("keys(Tensor x) -> Tensor")
    got = []
    lib.impl("keys", lambda ks, x: got.append(ks) or x.clone(), "CPU", with_keyset=True)
    getattr(ptl.ops, lib.ns).keys(ptl.ones(2))
    assert isinstance(got[0], _C.DispatchKeySet)
    assert got[0].highestPriorityTypeId() == _C.DispatchKey.CPU


# ---- registration for every key ----

def test_every_key_registers_in_the_per_key_table(lib):
    for name in ["cpu_op", "cuda_op", "ag_op", "cia_op", "cea_op", "meta_op"]:
        lib.define(f"{name}(Tensor x) -> Tensor")
    kernel = lambda x: x.clone()   # noqa: E731
    lib.impl("cpu_op", kernel, "CPU")
    lib.impl("cuda_op", kernel, "CUDA")
    lib.impl("ag_op", kernel, "Autograd")
    lib.impl("cia_op", kernel, "CompositeImplicitAutograd")
    lib.impl("cea_op", kernel, "CompositeExplicitAutograd")
    lib.impl("meta_op", kernel, "Meta")
    has = _C._dispatch_has_kernel_for_dispatch_key
    ns = lib.ns
    assert has(f"{ns}::cpu_op", "CPU") and not has(f"{ns}::cpu_op", "CUDA")
    assert has(f"{ns}::cuda_op", "CUDA") and not has(f"{ns}::cuda_op", "CPU")
    assert has(f"{ns}::ag_op", _C.DispatchKey.Autograd)
    assert has(f"{ns}::cia_op", "CompositeImplicitAutograd")
    assert has(f"{ns}::cea_op", "CompositeExplicitAutograd")
    assert has(f"{ns}::cea_op", "CPU") and has(f"{ns}::cea_op", "CUDA")
    assert not has(f"{ns}::cpu_op", "CompositeExplicitAutograd")
    assert has(f"{ns}::meta_op", "Meta") and not has(f"{ns}::meta_op", "CPU")
    assert getattr(ptl.ops, ns).meta_op(ptl.empty(2, 3, device="meta")).shape == (2, 3)
    dump = _C._dispatch_dump(f"{ns}::cpu_op")
    assert f"schema: {ns}::cpu_op(Tensor x) -> Tensor" in dump
    assert re.search(r"^CPU: kernel registered at .*test_library\.py:\d+", dump, re.M)
    assert re.search(r"^CPU: kernel registered at .*\[CompositeExplicitAutograd\]",
                     _C._dispatch_dump(f"{ns}::cea_op"), re.M)


def test_default_key_is_composite_implicit_and_differentiates_through_its_ops(lib):
    lib.define("cube(Tensor x) -> Tensor")
    lib.impl("cube", lambda x: x * x * x)
    assert _C._dispatch_has_kernel_for_dispatch_key(f"{lib.ns}::cube", "CompositeImplicitAutograd")
    x = ptl.tensor([1.0, -2.0, 0.5], dtype=ptl.float64, requires_grad=True)
    op = getattr(ptl.ops, lib.ns).cube
    assert ptl.autograd.gradcheck(op, (x,))
    op(x).sum().backward()
    assert_close(x.grad, 3 * np.array([1.0, -2.0, 0.5]) ** 2)


def test_registered_op_shows_in_the_trace(lib, capfd):
    op = define_sigmoid_add(lib)
    x = ptl.ones(2)
    capfd.readouterr()
    with ptl.dispatch_trace():
        op(x, x)
        with ptl.no_grad():
            op(x, x)
    lines = [ln for ln in capfd.readouterr().err.splitlines() if "[dispatch]" in ln]
    ns = lib.ns
    assert lines[0] == f"[dispatch] {ns}::sigmoid_add  keys={{Autograd, CPU}}  -> Autograd fallback"
    assert lines[1] == f"  [dispatch] {ns}::sigmoid_add  keys={{CPU}}  -> CPU kernel"
    assert f"[dispatch] {ns}::sigmoid_add  keys={{CPU}}  masked={{Autograd}}  -> CPU kernel" in lines


def test_trace_names_the_keys_that_fell_through(lib, capfd):
    lib.define("only_autograd(Tensor x) -> Tensor")
    lib.impl("only_autograd", lambda x: x.clone(), "Autograd")
    capfd.readouterr()
    with ptl.dispatch_trace(), ptl.autocast("cpu"):
        getattr(ptl.ops, lib.ns).only_autograd(ptl.ones(1))
    err = capfd.readouterr().err
    assert "keys={AutocastCPU, Autograd, CPU}  -> AutocastCPU fallback" in err


# ---- lifetime ----

def test_destroy_and_garbage_collection_remove_ops_and_kernels():
    ns = fresh_ns()
    lib = library.Library(ns, "DEF")
    lib.define("f(Tensor x) -> Tensor")
    impl_lib = library.Library(ns, "IMPL")
    impl_lib.impl("f", lambda x: x + 1, "CPU")
    op = getattr(ptl.ops, ns).f
    assert_close(op(ptl.zeros(1)), np.ones(1))
    del impl_lib
    gc.collect()
    assert not _C._dispatch_has_kernel_for_dispatch_key(f"{ns}::f", "CPU")
    with pytest.raises(NotImplementedError, match=f"Could not run '{ns}::f' with arguments from "
                                                  "the 'CPU' backend"):
        op(ptl.zeros(1))
    lib._destroy()
    assert not hasattr(getattr(ptl.ops, ns), "f")
    assert _C._dispatch_schema(f"{ns}::f") is None
    again = library.Library(ns, "DEF")   # the namespace is free again
    assert again.define("f(Tensor x) -> Tensor") == "f"
    again._destroy()


def test_kernel_callables_are_released():
    ns = fresh_ns()

    def run():
        lib = library.Library(ns, "DEF")
        lib.define("g(Tensor x) -> Tensor")
        lib.impl("g", lambda x: x * 2, "CPU")
        getattr(ptl.ops, ns).g(ptl.ones(3))
        lib._destroy()

    run()
    gc.collect()
    before = len(gc.get_objects())
    for _ in range(5):
        run()
    gc.collect()
    assert len(gc.get_objects()) - before < 50


# ---- custom_op ----

INFER_CASES = [
    ("def f(x: ptl.Tensor) -> ptl.Tensor", (), "(Tensor x) -> Tensor"),
    ("def f(x: ptl.Tensor, n: int, a: float, b: bool, s: str) -> ptl.Tensor", (),
     "(Tensor x, SymInt n, float a, bool b, str s) -> Tensor"),
    ("def f(x: Optional[ptl.Tensor], l: List[ptl.Tensor], q: Sequence[int]) -> ptl.Tensor", (),
     "(Tensor? x, Tensor[] l, SymInt[] q) -> Tensor"),
    ("def f(x: ptl.Tensor | None = None, a: float = 2.0, *, k: int = 3) -> List[ptl.Tensor]", (),
     "(Tensor? x=None, float a=2.0, *, SymInt k=3) -> Tensor[]"),
    ("def f(x: ptl.Tensor, y: ptl.Tensor) -> None", ("x",), "(Tensor(a0!) x, Tensor y) -> ()"),
    ("def f(x: ptl.Tensor, y: ptl.Tensor) -> Tuple[ptl.Tensor, ptl.Tensor]", ("x", "y"),
     "(Tensor(a0!) x, Tensor(a1!) y) -> (Tensor, Tensor)"),
]


def compile_fn(source):
    env = {"ptl": ptl}
    exec("from typing import List, Optional, Sequence, Tuple\n" + source + ": pass", env)
    return env["f"]


@pytest.mark.parametrize("source,mutates,expected", INFER_CASES)
def test_infer_schema(source, mutates, expected):
    assert library.infer_schema(compile_fn(source), mutates_args=mutates) == expected


@torch_ref
@pytest.mark.parametrize("source,mutates,expected", INFER_CASES)
def test_infer_schema_like_torch(source, mutates, expected):
    env = {"ptl": torch}
    exec("from typing import List, Optional, Sequence, Tuple\n" + source + ": pass", env)
    theirs = torch.library.infer_schema(env["f"], mutates_args=mutates)
    assert theirs == expected


def test_infer_schema_errors():
    def no_annotation(x) -> ptl.Tensor:
        return x

    def no_return(x: ptl.Tensor):
        return x

    def bad_type(x: dict) -> ptl.Tensor:
        return x
    with pytest.raises(ValueError, match="infer_schema\\(func\\): Parameter x must have a type "
                                         "annotation. Got func with signature \\(x\\)"):
        library.infer_schema(no_annotation, mutates_args=())
    with pytest.raises(ValueError, match="No return type annotation was provided"):
        library.infer_schema(no_return, mutates_args=())
    with pytest.raises(ValueError, match="Parameter x has unsupported type"):
        library.infer_schema(bad_type, mutates_args=())
    with pytest.raises(ValueError, match=re.escape("['z'] in mutates_args were not found")):
        library.infer_schema(no_return.__wrapped__ if hasattr(no_return, "__wrapped__")
                             else compile_fn("def f(x: ptl.Tensor) -> None"), mutates_args=("z",))


@pytest.mark.parametrize("make_bad,exc,msg", [
    (lambda L: L.library.custom_op("ptlnons", mutates_args=())(lambda x: x), ValueError,
     "infer_schema(func): Parameter x must have a type annotation. Got func with signature (x))"),
    (lambda L: L.library.custom_op("ptlnons", mutates_args=(), schema="(Tensor x) -> Tensor")(
        lambda x: x), ValueError, "not enough values to unpack (expected 2, got 1)"),
    (lambda L: L.library.custom_op("ptlx::y")(lambda x: x), TypeError,
     "custom_op() missing 1 required keyword-only argument: 'mutates_args'"),
])
def test_custom_op_argument_errors(make_bad, exc, msg):
    assert_raises_like_torch(make_bad, exc, msg)


def test_custom_op_with_register_autograd_gradcheck():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::scaled_sin", mutates_args=())
    def scaled_sin(x: ptl.Tensor, a: float) -> ptl.Tensor:
        return ptl.sin(x) * a

    def setup_context(ctx, inputs, output):
        x, a = inputs
        ctx.save_for_backward(x)
        ctx.a = a

    def backward(ctx, grad):
        x, = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return grad * ptl.cos(x) * ctx.a, None

    scaled_sin.register_autograd(backward, setup_context=setup_context)
    assert repr(scaled_sin) == f"<CustomOpDef({ns}::scaled_sin)>"
    assert scaled_sin._schema == f"{ns}::scaled_sin(Tensor x, float a) -> Tensor"
    x, xa = make((3, 4), ptl.float64, "transposed")
    x.requires_grad_(True)
    y = scaled_sin(x, 2.5)
    assert y.grad_fn.name() == f"GeneratedBackwardFor_{ns}_scaled_sin_defaultBackward"
    assert_close(y.detach(), np.sin(xa) * 2.5)
    y.sum().backward()
    assert_close(x.grad, np.cos(xa) * 2.5)
    assert ptl.autograd.gradcheck(lambda t: scaled_sin(t, 2.5), (x.detach().requires_grad_(),))
    assert ptl.autograd.gradcheck(lambda t: getattr(ptl.ops, ns).scaled_sin(t, -1.0),
                                  (ptl.zeros((), dtype=ptl.float64, requires_grad=True),))
    with ptl.no_grad():
        assert scaled_sin(x, 1.0).grad_fn is None


def test_register_autograd_on_a_library_op(lib):
    op = define_sigmoid_add(lib)

    def backward(ctx, grad):
        s, = ctx.saved_tensors
        return grad * s * (1 - s), grad

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(ptl.sigmoid(inputs[0]))

    library.register_autograd(f"{lib.ns}::sigmoid_add", backward, setup_context=setup_context)
    x = ptl.tensor([1.0, 2.0], requires_grad=True)
    y = ptl.tensor([3.0, 4.0], requires_grad=True)
    op(x, y).sum().backward()
    assert_close(x.grad, np.array([0.19661193, 0.10499359]), atol=1e-6)
    assert_close(y.grad, np.array([1.0, 1.0]))
    xd = ptl.tensor([0.3, -1.2, 0.0], dtype=ptl.float64, requires_grad=True)
    yd = ptl.tensor([1.0, 2.0, 3.0], dtype=ptl.float64, requires_grad=True)
    assert ptl.autograd.gradcheck(op, (xd, yd))


def test_custom_op_mutates_args_bumps_the_version_once():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::add_one_", mutates_args=("x",))
    def add_one_(x: ptl.Tensor) -> None:
        x.add_(1)

    assert add_one_._schema == f"{ns}::add_one_(Tensor(a!) x) -> ()"
    t = ptl.zeros(3)
    v = t._version
    assert add_one_(t) is None
    assert_close(t, np.ones(3))
    assert t._version - v == 2   # add_ once, the operator once (PyTorch: 2 as well)


def test_custom_op_device_types_and_register_kernel():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::twice", mutates_args=(), device_types="cpu")
    def twice(x: ptl.Tensor) -> ptl.Tensor:
        return x * 2

    has = _C._dispatch_has_kernel_for_dispatch_key
    assert has(f"{ns}::twice", "CPU") and not has(f"{ns}::twice", "CUDA")
    twice.register_kernel("cuda", lambda x: x * 2)
    assert has(f"{ns}::twice", "CUDA")


def test_custom_op_without_autograd_raises_at_backward():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::nog", mutates_args=())
    def nog(x: ptl.Tensor) -> ptl.Tensor:
        return x.sin()

    y = nog(ptl.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError, match=re.escape(
            f"Trying to backward through {ns}.nog.default but no autograd formula was "
            "registered. Please use register_autograd to add one.")):
        y.sum().backward()


@torch_ref
def test_custom_op_without_autograd_message_like_torch():
    def run(L):
        ns = fresh_ns()

        @L.library.custom_op(f"{ns}::nog", mutates_args=())
        def nog(x: L.Tensor) -> L.Tensor:
            return x.sin()
        nog(L.ones(2, requires_grad=True)).sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through ptltest"):
        run(torch)
    with pytest.raises(RuntimeError, match="Trying to backward through ptltest"):
        run(ptl)


# ---- the autograd-not-implemented fallback ----

WARN_TAIL = (": an autograd kernel was not registered to the Autograd key(s) but we are trying "
             "to backprop through it. This may lead to silently incorrect behavior. This "
             "behavior is deprecated and will be removed in a future version of PyTorch.")


def warn_not_implemented(L):
    ns = fresh_ns()
    lib = L.library.Library(ns, "DEF")
    lib.define("detached(Tensor x) -> Tensor")
    lib.impl("detached", lambda x: x.detach().sin(), "CPU")
    x = L.ones(3, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        y = getattr(L.ops, ns).detached(x)
        assert not caught   # nothing at the call
        name = y.grad_fn.name()
        y.sum().backward()
    messages = [str(w.message) for w in caught if w.category is UserWarning]
    lib._destroy()
    return ns, name, x.grad, messages


def test_autograd_not_implemented_fallback_warns_at_backward():
    ns, name, grad, messages = warn_not_implemented(ptl)
    assert name == "torch::autograd::WarnNotImplemented"
    assert grad is None
    assert len(messages) == 1 and messages[0].startswith(f"{ns}::detached" + WARN_TAIL)


@torch_ref
def test_autograd_not_implemented_fallback_like_torch():
    theirs = warn_not_implemented(torch)
    ours = warn_not_implemented(ptl)
    assert theirs[1] == ours[1] and theirs[2] is None
    strip = lambda m: m.split(": ", 1)[1].split(" (Triggered internally")[0]   # noqa: E731
    assert strip(theirs[3][0]) == strip(ours[3][0])


# ---- opcheck ----

def test_opcheck_passes_a_correct_op():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::pair", mutates_args=())
    def pair(x: ptl.Tensor) -> tuple[ptl.Tensor, ptl.Tensor]:
        return x + 1, (x * 2).sum(0)

    @pair.register_fake
    def _(x):
        return ptl.empty_like(x), x.new_empty(x.shape[1:])

    pair.register_autograd(lambda ctx, g1, g2: g1 + 2 * g2)
    x = ptl.randn(3, 2, dtype=ptl.float64, requires_grad=True)
    assert library.opcheck(pair, (x,)) == {"test_schema": "SUCCESS",
                                           "test_autograd_registration": "SUCCESS",
                                           "test_faketensor": "SUCCESS"}


def test_opcheck_finds_each_kind_of_mistake(lib):
    lib.define("sneaky(Tensor x) -> Tensor")
    lib.impl("sneaky", lambda x: x.add_(1).clone(), "CPU")
    lib.define("aliasing(Tensor x) -> Tensor")
    lib.impl("aliasing", lambda x: x, "CPU")
    lib.define("shapes(Tensor x) -> Tensor")
    lib.impl("shapes", lambda x: x.sum(0), "CPU")
    library.register_fake(f"{lib.ns}::shapes", lambda x: ptl.empty_like(x))
    x = ptl.ones(2, 3)
    ns = lib.ns
    result = library.opcheck(f"{ns}::sneaky", (x,), raise_exception=False)
    assert "argument x is not defined as mutable but was mutated" in str(result["test_schema"])
    assert "no fake impl registered" in str(result["test_faketensor"])
    with pytest.raises(library.OpCheckError, match="output 0 aliases an input"):
        library.opcheck(f"{ns}::aliasing", (x,), test_utils="test_schema")
    with pytest.raises(library.OpCheckError, match=re.escape(
            "test_faketensor failed with " + f"{ns}::shapes: output 0: the fake function gives "
            "shape torch.Size([2, 3]), the kernel torch.Size([3])")):
        library.opcheck(f"{ns}::shapes", (x,))
    r = library.opcheck(f"{ns}::shapes", (ptl.ones(2, 3, requires_grad=True),),
                        test_utils=["test_autograd_registration"], raise_exception=False)
    assert "has no autograd kernel" in str(r["test_autograd_registration"])


# ---- bad input ----

@pytest.mark.parametrize("fn,exc,msg", [
    (lambda L: L.library.Library("ptlbadkind", "BAD"), ValueError, "Unsupported kind: BAD"),
    (lambda L: L.library.Library("aten", "DEF"), RuntimeError,
     "Only a single TORCH_LIBRARY can be used to register the namespace aten"),
])
def test_library_constructor_errors(fn, exc, msg):
    assert_raises_like_torch(fn, exc, msg)


def registration_errors(L, what):
    ns = fresh_ns()
    lib = L.library.Library(ns, "DEF")
    try:
        lib.define("foo(Tensor x) -> Tensor")
        if what == "def_twice":
            L.library.Library(ns, "DEF")
        elif what == "define_twice":
            lib.define("foo(Tensor x) -> Tensor")
        elif what == "bad_key":
            lib.impl("foo", lambda x: x, "Nope")
        elif what == "not_callable":
            lib.impl("foo", 3, "CPU")
        elif what == "no_kernel":
            getattr(L.ops, ns).foo(L.ones(1))
        elif what in ("wrong_count", "wrong_type"):
            lib.define("q(Tensor x) -> Tensor")
            lib.impl("q", (lambda x: (x, x)) if what == "wrong_count" else (lambda x: 3), "CPU")
            getattr(L.ops, ns).q(L.ones(1))
    finally:
        lib._destroy()


@pytest.mark.parametrize("what,exc,msg", [
    ("def_twice", RuntimeError, "Only a single TORCH_LIBRARY can be used to register the "
     "namespace ptltest"),
    ("define_twice", RuntimeError, "with the same name and overload name multiple times. Each "
     "overload's schema should only be registered with a single call to def(). Duplicate "
     "registration: registered at "),
    ("bad_key", RuntimeError, "could not parse dispatch key: Nope"),
    ("not_callable", TypeError, "Input function is required to be a callable but found type "
     "<class 'int'>"),
    ("no_kernel", NotImplementedError, "with arguments from the 'CPU' backend."),
])
def test_registration_errors_like_torch(what, exc, msg):
    assert_raises_like_torch(lambda L: registration_errors(L, what), exc, msg)


@pytest.mark.parametrize("what,msg", [
    ("wrong_count", "::q: the Python kernel registered for CPU returned (tensor([1.]), "
     "tensor([1.])) where its schema expects Tensor (return 0 of 1)"),
    ("wrong_type", "::q: the Python kernel registered for CPU returned 3 where its schema "
     "expects Tensor (return 0 of 1)"),
])
def test_kernel_returning_the_wrong_values_names_the_op(what, msg):
    with pytest.raises(RuntimeError, match=re.escape(msg)):
        registration_errors(ptl, what)


def test_kernel_returning_the_wrong_count_of_a_tuple(lib):
    lib.define("two(Tensor x) -> (Tensor, Tensor)")
    lib.impl("two", lambda x: x, "CPU")
    with pytest.raises(RuntimeError, match=re.escape(
            f"{lib.ns}::two: the Python kernel registered for CPU returned tensor([1.]) where "
            "its schema expects a tuple of 2 values")):
        getattr(ptl.ops, lib.ns).two(ptl.ones(1))


def test_kernel_exception_propagates_unchanged(lib):
    lib.define("boom(Tensor x) -> Tensor")

    def boom(x):
        raise KeyError("from the kernel")

    lib.impl("boom", boom, "CPU")
    with pytest.raises(KeyError, match="from the kernel"):
        getattr(ptl.ops, lib.ns).boom(ptl.ones(1))


def test_second_kernel_for_a_key_warns_and_overrides(lib):
    op = define_sigmoid_add(lib)
    with pytest.warns(UserWarning, match=re.escape(
            "Overriding a previously registered kernel for the same operator and the same "
            f"dispatch key\n  operator: {lib.ns}::sigmoid_add(Tensor x, Tensor y) -> Tensor")):
        lib.impl("sigmoid_add", lambda x, y: x - y, "CPU")
    assert_close(op(ptl.ones(2), ptl.ones(2)), np.zeros(2))


@torch_ref
def test_override_warning_like_torch():
    def run(L):
        lib = L.library.Library(fresh_ns(), "DEF")
        lib.define("f(Tensor x) -> Tensor")
        lib.impl("f", lambda x: x, "CPU")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lib.impl("f", lambda x: x, "CPU")
        lib._destroy()
        return [str(w.message).split("\n")[1] for w in caught]
    ours = run(ptl)
    assert ours == run(torch)[:1] or run(torch) == []   # torch warns once per process


def test_impl_for_an_undefined_op_and_malformed_schema(lib):
    with pytest.raises(RuntimeError, match=f"operator {lib.ns}::nope does not exist; define it "
                                           "with Library.define first"):
        lib.impl("nope", lambda x: x, "CPU")
    with pytest.raises(AttributeError, match=f"'_OpNamespace' '{lib.ns}' object has no "
                                             "attribute 'nope'"):
        library.impl(f"{lib.ns}::nope", "cpu", lambda x: x)
    with pytest.raises(RuntimeError, match=re.escape("expected ')' at position 13 in "
                                                     f"'{lib.ns}::baz(Tensor x -> Tensor'")
                       .replace("13", "\\d+")):
        lib.define("baz(Tensor x -> Tensor")
    with pytest.raises(RuntimeError, match="Invalid alias_analysis type WRONG"):
        lib.define("baz(Tensor x) -> Tensor", alias_analysis="WRONG")
    with pytest.raises(RuntimeError, match="define\\(\\) is not allowed in an IMPL library"):
        library.Library(lib.ns, "IMPL").define("baz(Tensor x) -> Tensor")


def test_module_level_define_impl_and_register_fake():
    ns = fresh_ns()
    assert library.define(f"{ns}::halve", "(Tensor x) -> Tensor") == "halve"

    @library.impl(f"{ns}::halve", ["cpu", "cuda"])
    def halve(x):
        return x * 0.5

    assert _C._dispatch_has_kernel_for_dispatch_key(f"{ns}::halve", "CUDA")
    library.register_fake(f"{ns}::halve")(lambda x: ptl.empty_like(x))
    x, xa = make((2, 0, 3), ptl.float32, "sliced")
    assert_close(getattr(ptl.ops, ns).halve(x), xa * 0.5)
    assert library.opcheck(f"{ns}::halve", (ptl.ones(2),))["test_faketensor"] == "SUCCESS"


def test_register_autograd_rejects_a_mutating_op():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::zero_", mutates_args=("x",))
    def zero_(x: ptl.Tensor) -> None:
        x.zero_()

    with pytest.raises(RuntimeError, match=f"register_autograd\\({ns}::zero_\\): operators that "
                                           "mutate their inputs are not supported"):
        zero_.register_autograd(lambda ctx, g: g)


def test_keyword_only_arguments_reach_the_kernel_by_name():
    ns = fresh_ns()

    @library.custom_op(f"{ns}::axpy", mutates_args=())
    def axpy(x: ptl.Tensor, y: ptl.Tensor, *, alpha: float = 1.0) -> ptl.Tensor:
        return x * alpha + y

    axpy.register_autograd(lambda ctx, g: (g * ctx.alpha, g, None),
                           setup_context=lambda ctx, inputs, output: setattr(ctx, "alpha",
                                                                             inputs[2]))
    assert axpy._schema == f"{ns}::axpy(Tensor x, Tensor y, *, float alpha=1) -> Tensor"
    x = ptl.tensor([1.0, 2.0], dtype=ptl.float64, requires_grad=True)
    y = ptl.tensor([0.5, -1.0], dtype=ptl.float64, requires_grad=True)
    assert_close(axpy(x, y, alpha=3.0).detach(), np.array([3.5, 5.0]))
    assert_close(axpy(x, y).detach(), np.array([1.5, 1.0]))
    assert ptl.autograd.gradcheck(lambda a, b: axpy(a, b, alpha=-2.0), (x, y))
