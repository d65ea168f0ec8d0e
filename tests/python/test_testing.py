"""torch.testing (pytorchlite/testing.py): assert_close's verdicts and messages, make_tensor's
ranges, layouts and errors, and the complex isclose / isnan / isinf / isfinite kernels that
assert_close relies on, against NumPy (float64 and complex128 references) and, where torch is
installed, message for message against PyTorch."""
import math
import warnings

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import torch, torch_ref
from pytorchlite.testing import assert_close, make_tensor

T = ptl.tensor


def _message(call):
    """(exception type, message) of what call raises; None when it raises nothing."""
    try:
        call()
    except Exception as error:
        return type(error), str(error)
    return None


@pytest.mark.parametrize("actual, expected", [
    (T([1., 2.]), T([1., 2.])),
    (T([1., 2.]), T([1., 2. + 1e-6])),            # within float32's rtol 1.3e-6 + atol 1e-5
    ([T(1.), (T(2.), 3)], [T(1.), (T(2.), 3)]),
    ({"a": T([1])}, {"a": T([1])}),
    (1.0, 1.0 + 1e-8), (None, None), (True, True),
    (np.array([1., 2.]), np.array([1., 2.])),
    (T([], dtype=ptl.float32), T([])),
])
def test_close_inputs_pass(actual, expected):
    assert_close(actual, expected)


def test_nan_is_close_to_nan_only_with_equal_nan():
    assert_close(T([1., math.nan]), T([1., math.nan]), equal_nan=True)
    assert_close(math.nan, math.nan, equal_nan=True)
    with pytest.raises(AssertionError, match="Greatest absolute difference: nan at index"):
        assert_close(T([1., math.nan]), T([1., math.nan]))


def test_tensor_mismatch_message():
    kind, text = _message(lambda: assert_close(T([1., 2., 3.]), T([1., 2.5, 3.])))
    assert kind is AssertionError
    assert text == ("Tensor-likes are not close!\n\nMismatched elements: 1 / 3 (33.3%)\n"
                    "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)\n"
                    "Greatest relative difference: 0.20000000298023224 at index (1,) "
                    "(up to 1.3e-06 allowed)")


def test_integer_mismatch_is_exact_and_reports_indices_of_2d():
    kind, text = _message(lambda: assert_close(T([[1, 2], [3, 4]]), T([[1, 2], [3, 5]])))
    assert text == ("Tensor-likes are not equal!\n\nMismatched elements: 1 / 4 (25.0%)\n"
                    "Greatest absolute difference: 1 at index (1, 1)\n"
                    "Greatest relative difference: 0.20000000298023224 at index (1, 1)")


def test_scalar_and_nested_messages():
    _, text = _message(lambda: assert_close([T(1.), {"x": (1, T(2.))}],
                                            [T(1.), {"x": (1, T(2.5))}]))
    assert text == ("Scalars are not close!\n\nExpected 2.5 but got 2.0.\n"
                    "Absolute difference: 0.5 (up to 1e-05 allowed)\n"
                    "Relative difference: 0.2 (up to 1.3e-06 allowed)\n\n"
                    "The failure occurred for item [1]['x'][1]")
    _, text = _message(lambda: assert_close(1, 2))
    assert text == ("Scalars are not equal!\n\nExpected 2 but got 1.\nAbsolute difference: 1\n"
                    "Relative difference: 0.5")


@pytest.mark.parametrize("actual, expected, kind, text", [
    (T([1.]), T([1.], dtype=ptl.float64), AssertionError,
     "The values for attribute 'dtype' do not match: torch.float32 != torch.float64."),
    (T([1., 2.]), T([1.]), AssertionError,
     "The values for attribute 'shape' do not match: torch.Size([2]) != torch.Size([1])."),
    (1, 1.0, AssertionError, "The (d)types do not match: <class 'int'> != <class 'float'>."),
    (True, False, AssertionError, "Booleans mismatch: True is not False"),
    (None, 1, AssertionError, "None mismatch: None is not 1"),
    ([1, 2], [1, 2, 3], AssertionError, "The length of the sequences mismatch: 2 != 3"),
    ({"a": 1}, {"b": 1}, AssertionError, "The keys of the mappings do not match:\n"
     "Missing keys in the actual mapping: ['b']\nAdditional keys in the actual mapping: ['a']"),
    ("a", "a", TypeError,
     "No comparison pair was able to handle inputs of type <class 'str'> and <class 'str'>."),
])
def test_attribute_and_structure_errors(actual, expected, kind, text):
    assert _message(lambda: assert_close(actual, expected)) == (kind, text)


def test_tensor_against_a_number_is_not_a_pair():
    kind, text = _message(lambda: assert_close(T([1.]), 1.0))
    assert kind is TypeError and text.startswith("No comparison pair was able to handle")


def test_options():
    assert_close(T([1., 2.]), T([1., 2.], dtype=ptl.float64), check_dtype=False)
    assert_close(T([0., 1.]), T([0., 1.1]), rtol=0.2, atol=0)
    strided = ptl.zeros(2, 2)[:, 0]
    assert_close(strided, ptl.zeros(2))
    assert _message(lambda: assert_close(strided, ptl.zeros(2), check_stride=True)) == (
        AssertionError, "The values for attribute 'stride()' do not match: (2,) != (1,).")
    assert _message(lambda: assert_close(T([1.]), T([2.]), msg="custom")) == (
        AssertionError, "custom")
    _, text = _message(lambda: assert_close(T([1.]), T([2.]), msg=lambda m: m + "!!"))
    assert text.startswith("Tensor-likes are not close!") and text.endswith("!!")
    assert _message(lambda: assert_close(T([1.]), T([1.]), rtol=1e-3)) == (
        ValueError, "Both 'rtol' and 'atol' must be either specified or omitted, but got no "
        "atol.")


def test_requires_grad_and_complex_inputs():
    assert_close(T([1., 2.], requires_grad=True), T([1., 2.]))
    a = ptl.complex(T([1., 2.]), T([1., 0.]))
    assert_close(a, a.clone())
    _, text = _message(lambda: assert_close(a, ptl.complex(T([1., 2.5]), T([1., 0.]))))
    assert "Greatest absolute difference: 0.5 at index (1,)" in text


def test_assert_allclose_is_deprecated_and_ignores_dtype():
    with pytest.warns(FutureWarning, match="assert_allclose"):
        ptl.testing.assert_allclose(T([1., 2.]), [1., 2.])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError):
            ptl.testing.assert_allclose(T([1., 2.]), [1., 3.])


# ---- the complex kernels assert_close relies on ----

def _complex_cases(rng, dtype):
    special = [0, 1, -1, math.inf, -math.inf, math.nan]
    parts = np.array([[x, y] for x in special for y in special], dtype=np.float64)
    random = rng.standard_normal((50, 2))
    pairs = np.concatenate([parts, random])
    values = np.empty(len(pairs), np.complex64 if dtype == ptl.complex64 else np.complex128)
    values.real, values.imag = pairs[:, 0], pairs[:, 1]
    return values


def _to_ptl(values, dtype):
    real = ptl.tensor(values.real.astype(np.float64))
    imag = ptl.tensor(values.imag.astype(np.float64))
    return ptl.complex(real, imag).to(dtype)


@pytest.mark.parametrize("dtype", [ptl.complex64, ptl.complex128])
def test_complex_predicates_match_numpy(dtype):
    values = _complex_cases(np.random.default_rng(0), dtype)
    x = _to_ptl(values, dtype)
    for name in ("isnan", "isinf", "isfinite"):
        ours = getattr(ptl, name)(x)
        assert ours.dtype == ptl.bool
        np.testing.assert_array_equal(ours.numpy(), getattr(np, name)(values), err_msg=name)
    # non-contiguous and 0-dim
    np.testing.assert_array_equal(ptl.isnan(x[::3]).numpy(), np.isnan(values[::3]))
    assert ptl.isinf(x[3]).shape == () and bool(ptl.isinf(x[3])) == bool(np.isinf(values[3]))


@pytest.mark.parametrize("dtype", [ptl.complex64, ptl.complex128])
@pytest.mark.parametrize("equal_nan", [False, True])
def test_complex_isclose_matches_numpy(dtype, equal_nan):
    rng = np.random.default_rng(1)
    a = _complex_cases(rng, dtype)
    with np.errstate(invalid="ignore"):
        near = a + (a * 1e-7).astype(a.dtype)
    rolled = np.roll(a, 5)
    for b in (a, near, rolled):
        for rtol, atol in ((1e-5, 1e-8), (0.0, 0.0), (0.5, 0.1)):
            ours = ptl.isclose(_to_ptl(a, dtype), _to_ptl(b, dtype), rtol=rtol, atol=atol,
                               equal_nan=equal_nan)
            ref = np.isclose(a.astype(np.complex128), b.astype(np.complex128), rtol=rtol,
                             atol=atol, equal_nan=equal_nan)
            np.testing.assert_array_equal(ours.numpy(), ref)


def test_complex_isclose_broadcasts_and_checks_dtypes():
    a = _to_ptl(np.array([[1 + 1j], [2 - 1j]]), ptl.complex128)
    b = _to_ptl(np.array([1 + 1j, 2 - 1j, 0j]), ptl.complex128)
    np.testing.assert_array_equal(ptl.isclose(a, b).numpy(),
                                  [[True, False, False], [False, True, False]])
    assert ptl.isclose(a[:0], b).shape == (0, 3)
    with pytest.raises(RuntimeError, match="ComplexDouble did not match ComplexFloat"):
        ptl.isclose(a, b.to(ptl.complex64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        ptl.isclose(a, a, rtol=-1.0)


def test_complex_allclose_and_equal():
    a = _to_ptl(np.array([1 + 1j, math.nan + 0j]), ptl.complex64)
    assert ptl.allclose(a, a, equal_nan=True)
    assert not ptl.allclose(a, a)
    assert not ptl.equal(a, a)          # NaN is unequal
    assert ptl.equal(a[:1], a[:1].clone())
    assert not ptl.equal(a, a[:1])


# ---- make_tensor ----

@pytest.mark.parametrize("dtype, low, high", [
    (ptl.bool, 0, 2), (ptl.uint8, 0, 10), (ptl.int8, -9, 10), (ptl.int32, -9, 10),
    (ptl.int64, -9, 10), (ptl.float16, -9, 9), (ptl.bfloat16, -9, 9), (ptl.float32, -9, 9),
    (ptl.float64, -9, 9), (ptl.complex64, -9, 9), (ptl.complex128, -9, 9)])
def test_make_tensor_default_ranges(dtype, low, high):
    ptl.manual_seed(0)
    x = make_tensor((40, 50), dtype=dtype, device="cpu")
    assert x.dtype == dtype and x.shape == (40, 50) and x.is_contiguous()
    parts = ptl.view_as_real(x) if dtype.is_complex else x
    values = parts.to(ptl.float64).numpy()
    assert values.min() >= low and values.max() < high
    assert values.max() - values.min() >= (high - low) / 2   # spread over the range


def test_make_tensor_options():
    x = make_tensor(3, 4, dtype=ptl.float32, device="cpu", low=-1, high=1, requires_grad=True,
                    noncontiguous=True)
    assert x.shape == (3, 4) and not x.is_contiguous() and x.requires_grad
    assert float(x.abs().max()) < 1
    assert make_tensor([1], dtype=ptl.float32, device="cpu", noncontiguous=True).is_contiguous()
    cl = make_tensor((2, 3, 4, 5), dtype=ptl.float32, device="cpu",
                     memory_format=ptl.channels_last)
    assert cl.is_contiguous(memory_format=ptl.channels_last)
    z = make_tensor((2000,), dtype=ptl.int8, device="cpu", low=0, high=2, exclude_zero=True)
    assert int((z == 0).sum()) == 0
    f = make_tensor((100,), dtype=ptl.float32, device="cpu", low=0, high=1e-30,
                    exclude_zero=True)
    assert bool((f != 0).all())
    big = make_tensor((100,), dtype=ptl.float32, device="cpu", low=-math.inf, high=math.inf)
    assert bool(ptl.isfinite(big).all())    # clamped to the finite range, halved to draw


@pytest.mark.parametrize("kwargs, kind, text", [
    (dict(dtype=ptl.int64, requires_grad=True), ValueError,
     "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
     "dtype=torch.int64"),
    (dict(dtype=ptl.float32, low=2, high=1), ValueError,
     "`low` must be less than `high`, but got 2 >= 1"),
    (dict(dtype=ptl.float32, low=math.nan), ValueError,
     "`low` and `high` cannot be NaN, but got low=nan and high=9"),
    (dict(dtype=ptl.uint8, low=300, high=400), ValueError,
     "The value interval specified by `low` and `high` is [300, 400), but torch.uint8 only "
     "supports [0, 256)"),
    (dict(dtype=ptl.float32, noncontiguous=True, memory_format=ptl.channels_last), ValueError,
     "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but got "
     "noncontiguous=True and memory_format=torch.channels_last"),
])
def test_make_tensor_errors(kwargs, kind, text):
    assert _message(lambda: make_tensor((2, 2, 2, 2), device="cpu", **kwargs)) == (kind, text)


def test_make_tensor_low_equal_high_warns():
    with pytest.warns(FutureWarning, match="low==high"):
        x = make_tensor((3,), dtype=ptl.float64, device="cpu", low=2, high=2)
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_constants():
    assert ptl.pi == math.pi and ptl.e == math.e and ptl.inf == math.inf
    assert math.isnan(ptl.nan) and ptl.newaxis is None
    assert ptl.zeros(3)[ptl.newaxis].shape == (1, 3)


_CROSS_CASES = [
    lambda t: (t.tensor([1., 2., 3.]), t.tensor([1., 2.5, 3.])),
    lambda t: (t.tensor([1, 2, 3]), t.tensor([1, 2, 4])),
    lambda t: (t.tensor(math.nan), t.tensor(math.nan)),
    lambda t: ([t.tensor(1.), t.tensor(2.)], [t.tensor(1.), t.tensor(3.)]),
    lambda t: ({"a": t.tensor(1.)}, {"a": t.tensor(2.)}),
    lambda t: (t.tensor([True, False]), t.tensor([True, True])),
    lambda t: (t.tensor([math.inf]), t.tensor([-math.inf])),
    lambda t: (t.tensor([1.], dtype=t.float16), t.tensor([1.001], dtype=t.float16)),
    lambda t: (t.tensor([1.], dtype=t.bfloat16), t.tensor([1.1], dtype=t.bfloat16)),
    lambda t: (t.tensor([1, 2]), t.tensor([1, 2], dtype=t.int32)),
    lambda t: (t.tensor([1., 2.]), t.tensor([2., 1.])),
    lambda t: (t.tensor([[True]]), t.tensor([[False]])),
    lambda t: (t.tensor(5), t.tensor(7)),
    lambda t: (1 + 2j, 1 + 2.5j),
    lambda t: (1.0, math.nan),
    lambda t: (np.float64(1.0), np.float64(1.5)),
    lambda t: (t.complex(t.tensor([1., 2.]), t.tensor([1., 0.])),
               t.complex(t.tensor([1., 2.5]), t.tensor([1., 0.]))),
]


@torch_ref
@pytest.mark.parametrize("case", range(len(_CROSS_CASES)))
def test_messages_match_pytorch(case):
    ours = _message(lambda: assert_close(*_CROSS_CASES[case](ptl)))
    theirs = _message(lambda: torch.testing.assert_close(*_CROSS_CASES[case](torch)))
    assert ours == theirs
