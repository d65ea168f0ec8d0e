"""What a tensor subclass with __torch_dispatch__ gives up of its values: item(), bool(),
int(), float() and index() through aten::_local_scalar_dense (the operator itself on plain
tensors against NumPy), repr with and without tensor_contents, and the
__tensor_flatten__/__tensor_unflatten__ helpers of utils._python_dispatch, against PyTorch
(golden) where it answers."""
import importlib
import operator
import threading

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.utils import _python_dispatch as pd
import golden
from helpers import collect_all, logging_tensor, torch


@pytest.fixture(autouse=True)
def no_wrapper_left_behind():
    """Each test frees its wrappers before the next test (or file) counts live tensors."""
    yield
    collect_all()


def two_tensor(lib):
    """PyTorch's TwoTensor: two tensors of one shape, every operator on both, with the
    flatten protocol and return_and_correct_aliasing."""
    pd_ = importlib.import_module(lib.__name__ + ".utils._python_dispatch")
    tree_map = importlib.import_module(lib.__name__ + ".utils._pytree").tree_map

    class TwoTensor(lib.Tensor):
        @staticmethod
        def __new__(cls, a, b, outer_size=None, outer_stride=None):
            size = a.shape if outer_size is None else outer_size
            stride = a.stride() if outer_stride is None else outer_stride
            r = lib.Tensor._make_wrapper_subclass(cls, size, strides=stride, dtype=a.dtype,
                                                  device=a.device)
            r.a, r.b = a, b
            return r

        def __repr__(self):
            return f"TwoTensor({self.a!r}, {self.b!r})"

        def __tensor_flatten__(self):
            return ["a", "b"], None

        @staticmethod
        def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
            return TwoTensor(inner["a"], inner["b"], outer_size, outer_stride)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}

            def part(name):
                def pick(e):
                    return getattr(e, name) if isinstance(e, TwoTensor) else e
                return func(*tree_map(pick, args), **tree_map(pick, kwargs))
            out_a, out_b = part("a"), part("b")
            out = TwoTensor(out_a, out_b) if isinstance(out_a, lib.Tensor) else out_a
            return pd_.return_and_correct_aliasing(func, args, kwargs, out)
    return TwoTensor


# ---- aten::_local_scalar_dense -----------------------------------------------------------

DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "bool",
          "complex64", "complex128"]


@pytest.mark.parametrize("dtype", DTYPES)
def test_local_scalar_dense_is_the_first_element_of_its_kind(dtype):
    rng = np.random.default_rng(DTYPES.index(dtype))
    dt = getattr(ptl, dtype)
    x = (ptl.randn(3, 4, dtype=ptl.float64) * 5).to(dt)
    # a 0-dim tensor, a column of a transposed one (non-contiguous), a one-element slice
    r, c = int(rng.integers(3)), int(rng.integers(4))
    for t in (x[r, c], x.t()[c:, r], x[r:r + 1, c:c + 1]):
        got = ptl.ops.aten._local_scalar_dense(t)
        ref = t.reshape(-1)[0].item()
        assert type(got) is type(ref) and got == ref
    kind = bool if dtype == "bool" else complex if "complex" in dtype else \
        float if "float" in dtype else int
    assert type(ptl.ops.aten._local_scalar_dense(x)) is kind


def test_local_scalar_dense_resolves_conj_and_refuses_empty():
    z = ptl.tensor([1.5 + 2.0j, 3.0j])
    assert ptl.ops.aten._local_scalar_dense(z.conj()) == 1.5 - 2.0j
    golden.assert_raises(lambda: ptl.ops.aten._local_scalar_dense(ptl.zeros(0)),
                         lambda: torch.ops.aten._local_scalar_dense(torch.zeros(0)))
    assert str(ptl.ops.aten._local_scalar_dense.default._schema) == golden.golden(
        lambda: str(torch.ops.aten._local_scalar_dense.default._schema))


# ---- item() and the number slots of a wrapper --------------------------------------------

CONVERSIONS = {"item": lambda w: w.item(), "float": float, "int": int, "bool": bool,
               "index": operator.index}


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "complex64", "float64"])
@pytest.mark.parametrize("how", list(CONVERSIONS))
def test_wrapper_values_come_through_local_scalar_dense(dtype, how):
    def run(lib):
        log = []
        L = logging_tensor(lib, log)
        value = {"float32": 2.75, "int64": -3, "bool": True, "complex64": 1.5 + 0j,
                 "float64": -0.5}[dtype]
        w = L(lib.tensor([value], dtype=getattr(lib, dtype)))
        try:
            got = CONVERSIONS[how](w)
        except Exception as exc:  # noqa: BLE001 -- the exception is the answer
            return [type(exc).__name__, str(exc), log]
        return [type(got).__name__, repr(got), log]
    ours = run(ptl)
    theirs = golden.golden(lambda: run(torch))
    assert ours == theirs


@pytest.mark.parametrize("how", list(CONVERSIONS))
def test_wrapper_of_several_elements_raises_before_dispatch(how):
    def run(lib):
        log = []
        w = logging_tensor(lib, log)(lib.tensor([1, 2]))
        try:
            CONVERSIONS[how](w)
        except Exception as exc:  # noqa: BLE001 -- the exception is the answer
            return [type(exc).__name__, str(exc), log]
        return ["no error", "", log]
    assert run(ptl) == golden.golden(lambda: run(torch))


def answer_tensor(lib):
    """A 0-dim float32 wrapper whose every value is the class attribute `value`."""
    class Answer(lib.Tensor):
        value = 0

        @staticmethod
        def __new__(cls):
            return lib.Tensor._make_wrapper_subclass(cls, (), dtype=lib.float32)

        @classmethod
        def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
            return cls.value
    return Answer


@pytest.mark.parametrize("value", [7, 2.5, True, 1 - 2j, "2", None],
                         ids=["int", "float", "bool", "complex", "str", "None"])
def test_the_subclass_chooses_the_value_and_its_kind(value):
    def run(lib):
        Answer = answer_tensor(lib)
        Answer.value = value
        w, out = Answer(), []
        for how in ("item", "float", "int", "bool"):
            try:
                got = CONVERSIONS[how](w)
                out.append([type(got).__name__, repr(got)])
            except Exception as exc:  # noqa: BLE001 -- the exception is the answer
                out.append([type(exc).__name__, str(exc)])
        return out
    assert run(ptl) == golden.golden(lambda: run(torch))


def test_a_dispatch_mode_sees_item_of_a_plain_tensor():
    class Seen(pd.TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    x = ptl.tensor([4.0])
    with Seen() as mode:
        values = [x.item(), float(x), int(x), bool(x)]
    assert values == [4.0, 4.0, 4, True]
    assert mode.names == ["aten._local_scalar_dense.default"] * 4
    # off again: no mode, no dispatch
    assert x.item() == 4.0 and pd._len_torch_dispatch_stack() == 0


def test_a_mode_on_another_thread_sees_nothing_of_this_ones_item():
    class Seen(pd.TorchDispatchMode):
        names = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.names.append(str(func))
            return func(*args, **(kwargs or {}))

    entered, done = threading.Event(), threading.Event()

    def other():
        y = ptl.tensor([1.0])
        with Seen():
            entered.set()
            done.wait(30)
            Seen.names.append(y.item())

    t = threading.Thread(target=other)
    t.start()
    assert entered.wait(30)
    x = ptl.tensor([2.0])
    assert (x.item(), int(x)) == (2.0, 2) and Seen.names == []
    done.set()
    t.join()
    assert Seen.names == ["aten._local_scalar_dense.default", 1.0]


# ---- repr ------------------------------------------------------------------------------

REPRS = {
    "vector": lambda lib, L: L(lib.tensor([1.0, 2.0, 3.0])),
    "requires_grad": lambda lib, L: L(lib.tensor([1.0, 2.0, 3.0]), requires_grad=True),
    "int32": lambda lib, L: L(lib.tensor([1, 2], dtype=lib.int32)),
    "0-dim": lambda lib, L: L(lib.tensor(2.5)),
    "matrix": lambda lib, L: L(lib.tensor([[1.0, 2.0], [3.0, 4.0]])),
    "size-0": lambda lib, L: L(lib.zeros(0, 3)),
    "grad_fn": lambda lib, L: L(lib.ones(2, dtype=lib.float64), requires_grad=True) * 2,
    "two tensor": lambda lib, L: two_tensor(lib)(lib.tensor([1.0, 2.0]),
                                                 lib.tensor([3.0, 4.0])) + 1,
}


@pytest.mark.parametrize("case", list(REPRS))
def test_repr_of_canonical_wrappers_matches_pytorch(case):
    def run(lib):
        return [repr(REPRS[case](lib, logging_tensor(lib, []))),
                str(REPRS[case](lib, logging_tensor(lib, [])))]
    assert run(ptl) == golden.golden(lambda: run(torch))


TENSOR_CONTENTS = {
    "vector": lambda lib: lib.tensor([1.0, 2.0]),
    "float64 requires_grad": lambda lib: lib.tensor([1.0, 2.0], dtype=lib.float64,
                                                    requires_grad=True),
    "empty float64": lambda lib: lib.tensor([], dtype=lib.float64),
    "size (2, 0)": lambda lib: lib.zeros(2, 0),
}


@pytest.mark.parametrize("case", list(TENSOR_CONTENTS))
def test_tensor_contents_replaces_the_values_only(case):
    def run(lib):
        return TENSOR_CONTENTS[case](lib).__repr__(tensor_contents="<values>")
    assert run(ptl) == golden.golden(lambda: run(torch))


def test_wrapper_without_repr_prints_values_read_through_dispatch():
    # PyTorch's printer formats the unbound rows as tensors and fails for such a wrapper
    # (TypeError for a vector, RecursionError for 0-dim); pytorchlite reads them with item()
    log = []

    class Plain(logging_tensor(ptl, log)):
        __repr__ = ptl.Tensor.__repr__

    rng = np.random.default_rng(3)
    for shape in [(), (3,), (2, 3), (2000,)]:
        x = ptl.tensor(rng.standard_normal(shape), dtype=ptl.float32)
        log.clear()
        assert same_but_indent(repr(Plain(x)), repr(x))
        assert "aten._local_scalar_dense.default" in log
    i = ptl.tensor([[1, 2], [3, 4]], dtype=ptl.int16)
    assert same_but_indent(repr(Plain(i)), repr(i))


def same_but_indent(ours, tensors):
    """ours is the repr `tensors` of a tensor with the class name Plain (one character
    shorter than tensor, so the lines after the first sit one column left)."""
    return ours.split("\n") == [line[1:] if i else line.replace("tensor(", "Plain(")
                                 for i, line in enumerate(tensors.split("\n"))]


# ---- __tensor_flatten__ / __tensor_unflatten__ ----------------------------------------------

def test_traceable_wrapper_subclass_predicates():
    T = two_tensor(ptl)
    t = T(ptl.ones(2), ptl.zeros(2))
    L = logging_tensor(ptl, [])
    assert pd.is_traceable_wrapper_subclass(t)
    assert pd.is_traceable_wrapper_subclass_type(T)
    assert not pd.is_traceable_wrapper_subclass(L(ptl.ones(2)))
    assert not pd.is_traceable_wrapper_subclass_type(L)
    assert not pd.is_traceable_wrapper_subclass(ptl.ones(2))
    assert not pd.is_traceable_wrapper_subclass_type(ptl.Tensor)
    assert not pd.is_traceable_wrapper_subclass(T)   # a type is not an instance
    assert not pd.is_traceable_wrapper_subclass_type(int)


def test_transform_subclass_rebuilds_from_transformed_inner_tensors():
    T = two_tensor(ptl)
    a = ptl.randn(2, 3, dtype=ptl.float64)
    b = ptl.randn(2, 3, dtype=ptl.float64)
    t = T(a, b)
    seen = []

    def double(name, inner):
        seen.append(name)
        return inner * 2
    r = pd.transform_subclass(t, double)
    assert type(r) is T and seen == ["a", "b"] and r.shape == (2, 3)
    np.testing.assert_array_equal(r.a.numpy(), a.numpy() * 2)
    np.testing.assert_array_equal(r.b.numpy(), b.numpy() * 2)
    # the result must have the asked geometry
    r = pd.transform_subclass(t.t(), lambda name, inner: inner.contiguous(),
                              outer_size=(3, 2), outer_stride=(2, 1))
    assert r.shape == (3, 2) and r.stride() == (2, 1)

    class Fixed(T):   # rebuilds with its inner tensors' geometry, whatever was asked
        @staticmethod
        def __tensor_unflatten__(inner, meta, outer_size, outer_stride):
            return T(inner["a"], inner["b"])

    f = Fixed(a, b)
    with pytest.raises(AssertionError, match=r"__tensor_unflatten__\(\) to have shape equal "
                                             r"to \(6,\), but got: torch.Size\(\[2, 3\]\)$"):
        pd.transform_subclass(f, lambda name, inner: inner, outer_size=(6,), outer_stride=(1,))
    with pytest.raises(AssertionError, match=r"__tensor_unflatten__\(\) to have stride equal "
                                             r"to \(1, 2\), but got: \(3, 1\)$"):
        pd.transform_subclass(f, lambda name, inner: inner, outer_stride=(1, 2))


def test_return_and_correct_aliasing_returns_written_arguments():
    def run(lib):
        T = two_tensor(lib)
        t = T(lib.zeros(3), lib.ones(3))
        r = t.add_(1)
        out = T(lib.empty(3), lib.empty(3))
        o = lib.mul(t, 2, out=out)
        s = t + 1
        return [r is t, o is out, type(s).__name__, s.a.tolist(), out.b.tolist()]
    assert run(ptl) == golden.golden(lambda: run(torch))
