"""Python functions whose PyTorch twin is native check their calls against PyTorch's schemas
(Note [Native signatures], pytorchlite/_native_signature.py): bad calls raise PyTorch's
TypeError before the body runs (compared with torch where installed, stored cases without),
good calls run unchanged; the parser's rules that the check made visible hold for the operator
bindings too: float and float[], out=None, and a single int for an int list."""
import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _C
from pytorchlite._native_schemas import SCHEMAS
from pytorchlite._native_signature import _checker
from helpers import assert_close, make, torch, torch_ref

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated")
MODULES = ("", "linalg", "special", "fft", "nn.functional")


def _module(lib, path):
    for part in filter(None, path.split(".")):
        lib = getattr(lib, part)
    return lib


def _decorated():
    """{schema name: (module path, function name)} of the functions decorated @native."""
    found = {}
    for path in MODULES:
        module = _module(ptl, path)
        for name in dir(module):
            native_name = getattr(getattr(module, name), "native_name", None)
            if isinstance(native_name, str):
                found.setdefault(native_name, (path, name))
    return found


DECORATED = _decorated()
NAMES = sorted(DECORATED)


def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the type is what is compared
        return type(e), str(e)
    return None


def _bad_calls(lib, name):
    """Calls of the function checked against the schemas of aten::<name> that a parser
    refuses: a str where the first parameter is, one positional argument too many, an unknown
    keyword."""
    path, attr = DECORATED[name]
    f = getattr(_module(lib, path), attr)
    x = lib.ones(2, 3)
    return {
        "str first": lambda: f("a"),
        "too many": lambda: f(x, x, x, x, x, x, x, x, x),
        "unknown keyword": lambda: f(x, bogus_keyword=1),
    }


def test_every_schema_of_the_table_has_a_user():
    """Each name of the one table is a function's @native check, or an nn.functional
    composite's native_fault check (Note [Native signatures of composites])."""
    import glob
    import os
    from helpers import ROOT
    source = "".join(open(f).read() for f in glob.glob(os.path.join(ROOT, "pytorchlite", "nn",
                                                                      "*.py")))
    unused = [n for n in SCHEMAS if n not in DECORATED and f'"{n}"' not in source]
    assert not unused


@pytest.mark.parametrize("name", NAMES)
def test_every_listed_function_is_checked(name):
    path, attr = DECORATED[name]
    f = getattr(_module(ptl, path), attr)
    assert hasattr(f, "__wrapped__"), f"{name} is not decorated with @native"
    assert f.__name__ == attr
    for call in _bad_calls(ptl, name).values():
        got = _raised(call)
        assert got is not None and got[0] is TypeError, got


@torch_ref
def test_the_table_is_what_the_tool_writes_from_torch():
    """pytorchlite/_native_schemas.py is tools/native_schemas.py's output for the installed
    torch, byte for byte (a new torch's schemas, or a hand edit, fail here)."""
    import importlib.util
    import os
    from helpers import ROOT
    spec = importlib.util.spec_from_file_location(
        "native_schemas_tool", os.path.join(ROOT, "tools", "native_schemas.py"))
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    with open(tool.TABLE) as f:
        assert f.read() == tool.render(tool.generate(SCHEMAS))


STORED = [
    (lambda: ptl.addbmm(ptl.ones(2, 2), "b", ptl.ones(1, 2, 2)),
     "addbmm(): argument 'batch1' (position 2) must be Tensor, not str"),
    (lambda: ptl.cholesky_inverse(2),
     "cholesky_inverse(): argument 'input' (position 1) must be Tensor, not int"),
    (lambda: ptl.column_stack(ptl.ones(2)),
     "column_stack(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"),
    (lambda: ptl.qr(ptl.eye(2), None),
     "qr(): argument 'some' (position 2) must be bool, not NoneType"),
    (lambda: ptl.pinverse(ptl.eye(2), ptl.ones(2)),
     "pinverse(): argument 'rcond' (position 2) must be float, not Tensor"),
    (lambda: ptl.unsafe_split_with_sizes(ptl.ones(4), "2"),
     "unsafe_split_with_sizes(): argument 'split_sizes' (position 2) must be tuple of ints, "
     "not str"),
    (lambda: ptl.logaddexp(ptl.ones(2), ptl.ones(2), 3),
     "logaddexp() takes 2 positional arguments but 3 were given"),
    # torch.linalg, torch.special, torch.fft: aten's names
    (lambda: ptl.linalg.svd("a"),
     "linalg_svd(): argument 'A' (position 1) must be Tensor, not str"),
    (lambda: ptl.linalg.vector_norm(ptl.ones(2), "a"),
     "linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str"),
    (lambda: ptl.special.logit(ptl.ones(2), "a"),
     "special_logit(): argument 'eps' (position 2) must be float, not str"),
    (lambda: ptl.fft.rfft(ptl.ones(4), 2.5),
     "fft_rfft(): argument 'n' (position 2) must be int, not float"),
    # the torch namespace's twins and their methods: aten::logit's words, a method's positions
    (lambda: ptl.logit(ptl.ones(2), "a"),
     "logit(): argument 'eps' (position 2) must be float, not str"),
    (lambda: ptl.ones(2).logit("a"), "logit(): argument 'eps' (position 1) must be float, not str"),
    (lambda: ptl.eye(2).matrix_power(0.5),
     "matrix_power(): argument 'n' (position 1) must be int, not float"),
    (lambda: ptl.dropout(ptl.ones(2), 0.5, "a"),
     "dropout(): argument 'train' (position 3) must be bool, not str"),
]


@pytest.mark.parametrize("call, message", STORED, ids=range(len(STORED)))
def test_stored_messages(call, message):
    with pytest.raises(TypeError) as info:
        call()
    assert str(info.value) == message


def test_accepted_calls_run_the_body_with_their_own_arguments():
    x, a = make((3, 4), ptl.float64)
    y, b = make((3, 4), ptl.float64, seed=1)
    assert_close(ptl.logaddexp(x, y), np.logaddexp(a, b))
    assert_close(ptl.copysign(x, -1.0), -np.abs(a))
    q, r = ptl.qr(x.t() @ x)
    assert_close(q @ r, a.T @ a)
    out = (ptl.empty(0, dtype=ptl.float64), ptl.empty(0, dtype=ptl.float64))
    ptl.qr(x.t() @ x, out=out)
    assert_close(out[0] @ out[1], a.T @ a)
    assert [t.tolist() for t in ptl.nonzero(ptl.tensor([[1, 0], [0, 2]]), as_tuple=True)] == \
        [[0, 1], [0, 1]]
    assert ptl.hann_window(4, False).shape == (4,) and ptl.trapz(x).shape == (3,)
    # out= of a function written without it (the twin has an out= overload): written as
    # PyTorch's out= overloads write, resized, the dtype checked
    out = ptl.empty(0, dtype=ptl.float64)
    assert ptl.linalg.vector_norm(x, out=out) is out
    assert_close(out, np.linalg.norm(a))
    usv = tuple(ptl.empty(0, dtype=ptl.float64) for _ in range(3))
    u, s, vh = ptl.linalg.svd(x, full_matrices=False, out=usv)
    assert s is usv[1] and u.shape == (3, 3)
    assert_close(s, np.linalg.svd(a, compute_uv=False))
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype double"):
        ptl.linalg.vector_norm(x, out=ptl.empty(0, dtype=ptl.int64))
    with pytest.raises(TypeError, match="unexpected keyword argument 'out'"):
        ptl.matrix_exp(x @ x.t(), out=out)   # aten::matrix_exp has no out= overload
    # the older positional forms: pinv(A, rcond, hermitian), matrix_rank(A, tol, hermitian)
    assert_close(ptl.linalg.pinv(x, 0.3), np.linalg.pinv(a, rcond=0.3))
    assert int(ptl.linalg.matrix_rank(x, 5.0)) == int(np.linalg.matrix_rank(a, tol=5.0)) == 2


def test_a_subclass_and_a_tensor_like_pass_the_check():
    class Sub(ptl.Tensor):
        pass

    x = ptl.ones(2).as_subclass(Sub)
    assert type(ptl.logaddexp(x, x)) is Sub

    class Duck:
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            return "duck"

    assert _C._signature("native_signature::logaddexp")(Duck(), Duck()) is None


def test_the_checker_is_the_parser_without_a_dispatch():
    check = _checker(SCHEMAS["addr"])
    v = ptl.ones(2)
    assert check(ptl.ones(2, 2), v, v, beta=2, alpha=0.5) is None
    assert check(ptl.ones(2, 2), v, v, out=None) is None
    with pytest.raises(TypeError, match=r"^addr\(\) got an unexpected keyword argument 'gamma'$"):
        check(ptl.ones(2, 2), v, v, gamma=1)
    with pytest.raises(AttributeError, match="no operator named 'native_signature::nothing'"):
        _C._signature("native_signature::nothing")


# a float parameter (isclose's rtol): PyTorch's parser takes a bool, an int of any size and a
# 0-dim tensor that does not require grad; it refuses a complex, a 1-element 1-d tensor, a
# tensor requiring grad, a str and None
@pytest.mark.parametrize("value, ok", [
    (True, True), (2, True), (2 ** 70, True), (np.float32(0.5), True), (np.int64(1), True),
    (ptl.tensor(0.5), True), (ptl.tensor(1), True), (ptl.tensor(True), True),
    (1j, False), (ptl.tensor([0.5]), False), (ptl.tensor(0.5, requires_grad=True), False),
    ("0.5", False), (None, False)])
def test_float_parameters_take_what_torchs_parser_takes(value, ok):
    a = np.array([1.0, 1.4, 3.0, 10.0])
    b = np.array([1.2, 1.0, 2.0, 0.0])
    x, y = ptl.tensor(a), ptl.tensor(b)
    if ok:
        got = ptl.isclose(x, y, float(value))
        assert got.tolist() == np.isclose(a, b, rtol=float(value), atol=1e-8).tolist()
    else:
        with pytest.raises(TypeError, match=r"^isclose\(\): argument 'rtol' \(position 3\) "
                                            r"must be float, not "):
            ptl.isclose(x, y, value)
    if torch is not None:
        got = _raised(lambda: torch.isclose(torch.tensor(a), torch.tensor(b), _as_torch(value)))
        assert (got is None) == ok, got


def _as_torch(v):
    if isinstance(v, ptl.Tensor):
        t = torch.tensor(v.tolist())
        return t.requires_grad_() if v.requires_grad else t
    return v


# an int parameter (diagonal's offset, fft's n): PyTorch's parser also takes a 0-dim integer
# tensor that does not require grad; it refuses a bool, a float or a 1-element 1-d tensor
@pytest.mark.parametrize("make_value, ok", [
    (lambda lib: lib.tensor(1), True), (lambda lib: lib.tensor(1, dtype=lib.uint8), True),
    (lambda lib: lib.tensor(True), False), (lambda lib: lib.tensor(1.0), False),
    (lambda lib: lib.tensor([1]), False), (lambda lib: 1.0, False), (lambda lib: True, False)],
    ids=range(7))
def test_int_parameters_take_what_torchs_parser_takes(make_value, ok):
    for lib in [ptl] + ([torch] if torch is not None else []):
        x, value = lib.arange(9.0).reshape(3, 3), make_value(lib)
        if ok:
            assert lib.diagonal(x, value).tolist() == [1.0, 5.0]
            assert lib.fft.fft(lib.ones(8), n=value).shape == (1,)
        else:
            with pytest.raises(TypeError, match=r"^diagonal\(\): argument 'offset' \(position "
                                                r"2\) must be int, not "):
                lib.diagonal(x, value)


@pytest.mark.parametrize("dims", [1, 2, 8, 9])
def test_float_lists_of_every_length_convert(dims):
    """histogramdd's range is a float[] of 2 * dims numbers: past 16 the list lives on the
    heap (the scratch buffer holds 16)."""
    pts, a = make((50, dims), ptl.float64)
    rng = [v for _ in range(dims) for v in (-1.0, 1)]
    hist, edges = ptl.histogramdd(pts, 2, range=rng)
    want, want_edges = np.histogramdd(a, 2, range=[(-1.0, 1.0)] * dims)
    assert_close(hist, want.astype(np.float64))
    assert all(np.allclose(e.numpy(), w) for e, w in zip(edges, want_edges))
    with pytest.raises(TypeError, match="tuple of floats"):
        ptl.histogramdd(pts, 2, range=rng[:-1] + ["x"])


def test_out_none_is_the_call_without_out():
    x = ptl.ones(2)
    assert ptl.add(x, x, out=None).tolist() == [2.0, 2.0]
    assert ptl.exp(ptl.zeros(1), out=None).tolist() == [1.0]
    with pytest.raises(TypeError, match=r"^conj\(\) got an unexpected keyword argument 'out'$"):
        ptl.conj(x, out=None)
    if torch is not None:
        with pytest.raises(TypeError, match=r"^conj\(\) got an unexpected keyword argument "
                                            r"'out'$"):
            torch.conj(torch.ones(2), out=None)
        assert torch.add(torch.ones(2), 1, out=None).tolist() == [2.0, 2.0]


# an int list without a length takes a single int only as the one positional parameter of
# the Python signature (self aside: x.view(6), zeros(2), x.permute(0)), as PyTorch's
# allow_varargs_intlist; a list with a length (int[1] dim) broadcasts one int
INT_LISTS = [
    (lambda lib, x: x.view(6), None),
    (lambda lib, x: x.view(3, 2), None),
    (lambda lib, x: lib.zeros(2), None),
    (lambda lib, x: lib.zeros(2, 3), None),
    (lambda lib, x: x.flip(0), None),
    (lambda lib, x: x.flip(0, 1), None),
    (lambda lib, x: x.reshape(6), None),
    (lambda lib, x: x.tile(2), None),
    (lambda lib, x: lib.sum(x, 0), None),
    (lambda lib, x: x.sum(0, True), None),
    (lambda lib, x: lib.amax(x, 1), None),
    (lambda lib, x: lib.flip(x, 0), "flip(): argument 'dims' (position 2) must be tuple of ints, "
                                    "not int"),
    (lambda lib, x: lib.permute(x, 0), "permute(): argument 'dims' (position 2) must be tuple "
                                       "of ints, not int"),
    (lambda lib, x: lib.reshape(x, 6), "reshape(): argument 'shape' (position 2) must be tuple "
                                       "of ints, not int"),
    (lambda lib, x: lib.tile(x, 2), "tile(): argument 'dims' (position 2) must be tuple of "
                                    "ints, not int"),
    (lambda lib, x: lib.split_with_sizes(x, 2), "split_with_sizes(): argument 'split_sizes' "
                                                "(position 2) must be tuple of ints, not int"),
    (lambda lib, x: lib.unflatten(x, 1, 3), "unflatten(): argument 'sizes' (position 3) must be "
                                            "tuple of ints, not int"),
]


@pytest.mark.parametrize("call, message", INT_LISTS, ids=range(len(INT_LISTS)))
def test_a_single_int_for_an_int_list(call, message):
    for lib in [ptl] + ([torch] if torch is not None else []):
        x = lib.ones(2, 3)
        if message is None:
            call(lib, x)
        else:
            with pytest.raises(TypeError) as info:
                call(lib, x)
            assert str(info.value) == message, lib.__name__
