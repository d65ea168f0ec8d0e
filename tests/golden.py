"""PyTorch's answers stored once, so that a test whose reference is PyTorch also runs without it.

Two ways in, one store.  `golden(fn)` returns what fn() (a torch call) gives: a value, a
golden.Tensor, or a Raised for the exception it raised (for printed forms, dtypes, messages:
PyTorch behaviour with no NumPy equivalent).  `assert_close`, `assert_equal`, `assert_raises`
and `assert_same_results` take our result and a function computing torch's, under a key.
Without torch the answers come from tests/fixtures/golden/<layer>/<test file>.json.gz,
written by tests/fixtures/make_golden.py from PyTorch 2.13's real outputs (never ours).  With
torch installed the live answer is the reference, and the stored one is checked too, so a
stale fixture shows as a failure.  Keys are the running test's id and either the key the test
gives or the call's rank within the test.

Arrays of more than SMALL elements that the assert_* functions store are kept as a
fingerprint: shape, dtype, the positions of non-finite values (as weighted sums) and
PROJECTIONS weighted sums of the finite values, each with the weighted sum of magnitudes that
bounds how far a result within (rtol, atol) of torch's elementwise can move it.  A wrong
element moves every sum by its error times a weight in [-1, 1], so the check fails where the
elementwise one would, up to a cancellation across the PROJECTIONS sums that deterministic
weights make unlikely, and except for one element wrong by much less than the tolerance
summed over all elements (60 values near 1 at rtol 1e-7: a single element off by 1e-6 passes,
by 1e-5 fails).  golden() stores tensors whole (keep them small) and printed strings longer
than LONG_TEXT as a digest."""
import builtins
import functools
import gzip
import hashlib
import json
import math
import os
import re

import numpy as np
import pytest

import pytorchlite as ptl
from helpers import TESTS, torch

GOLDEN = os.path.join(TESTS, "fixtures", "golden")
# Set by tests/fixtures/make_golden.py: the live torch answers are stored, not checked.
RECORDING = os.environ.get("PTL_RECORD_GOLDEN") == "1"
SMALL = 16
LONG_TEXT = 2000  # golden(): longer strings are stored as a digest
PROJECTIONS = 4

# The libraries a test with its expected values written out checks: torch too when installed.
LIBRARIES = ([torch] if torch is not None else []) + [ptl]

_loaded = {}
_recorded = {}
_numbered = {}


def _test_file_and_id():
    """('nn/test_layers', 'test_x[param]') of the running test, from pytest's environment."""
    node = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
    path, name = node.split("::", 1)
    rel = os.path.relpath(os.path.join(os.path.dirname(TESTS), path), TESTS)
    return os.path.splitext(rel)[0], name


def _file(rel):
    return os.path.join(GOLDEN, rel + ".json.gz")


def _stored(rel, name, sub):
    if rel not in _loaded:
        try:
            with open(_file(rel), "rb") as f:
                _loaded[rel] = json.loads(gzip.decompress(f.read()))
        except FileNotFoundError:
            _loaded[rel] = {}
    if sub not in _loaded[rel].get(name, {}):
        pytest.fail(f"no golden value for {rel}::{name} {sub!r}: run "
                    f"`python tests/fixtures/make_golden.py` with PyTorch installed")
    return _loaded[rel][name][sub]


def write_recorded():
    """Record mode (conftest.py, at the session's end): merges what was recorded into the
    fixture files."""
    for rel, values in _recorded.items():
        path = _file(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        old = {}
        if os.path.exists(path):
            with open(path, "rb") as f:
                old = json.loads(gzip.decompress(f.read()))
        for name, subs in values.items():
            old.setdefault(name, {}).update(subs)
        text = json.dumps(old, sort_keys=True, separators=(",", ":"), indent=0)
        with open(path, "wb") as f:
            f.write(gzip.compress(text.encode(), 9, mtime=0))


def _answer(sub, encoded_live):
    """The stored answer for this test's `sub` key (None: numbered in call order within the
    test); while recording, encoded_live() is stored (and returned) instead."""
    rel, name = _test_file_and_id()
    if sub is None:
        n = _numbered[rel, name] = _numbered.get((rel, name), 0) + 1
        sub = f"#{n}"
    if RECORDING:
        answer = _recorded.setdefault(rel, {}).setdefault(name, {})[sub] = encoded_live()
        return answer
    return _stored(rel, name, sub)


# ---- values of any kind: golden(fn) ---------------------------------------------------

class Raised:
    """An exception PyTorch raised: its class name and message."""

    def __init__(self, type_name, message):
        self.type_name, self.message = type_name, message

    def __repr__(self):
        return f"Raised({self.type_name}, {self.message!r})"

    def matches(self, exc):
        """exc is of the same class (by name, along its bases) with the same message."""
        names = [c.__name__ for c in type(exc).__mro__]
        return self.type_name in names and str(exc) == self.message

    def check(self, fn):
        """fn() raises the same exception, with the same message."""
        kind = getattr(builtins, self.type_name, Exception)
        try:
            fn()
        except kind as exc:
            assert self.matches(exc), f"raised {type(exc).__name__}({exc}), torch: {self!r}"
        else:
            raise AssertionError(f"did not raise; torch: {self!r}")


class Digest:
    """A long string PyTorch returned, kept as its SHA-256, length and opening; equal to the
    strings with that digest."""

    def __init__(self, sha256, length, start):
        self.sha256, self.length, self.start = sha256, length, start

    def __repr__(self):
        return f"Digest(sha256={self.sha256[:12]}..., length={self.length}, start={self.start!r})"

    def __eq__(self, other):
        return (isinstance(other, str) and len(other) == self.length
                and hashlib.sha256(other.encode()).hexdigest() == self.sha256)


class Tensor:
    """A tensor PyTorch returned: dtype (pytorchlite's dtype of that name), shape, values."""

    def __init__(self, dtype_name, shape, values):
        self.dtype = getattr(ptl, dtype_name)
        self.shape = tuple(shape)
        self._flat = values

    def numpy(self):
        """The values as an ndarray: float64 for floating dtypes, exact otherwise."""
        if self.dtype.is_floating_point:
            return np.array(self._flat, dtype=np.float64).reshape(self.shape)
        name = str(self.dtype).split(".")[1]
        return np.array(self._flat, dtype=np.bool_ if name == "bool" else name).reshape(
            self.shape)

    def tolist(self):
        return self.numpy().tolist()


def encode(value):
    """A JSON form of a PyTorch result (tensors, dtypes, devices, Sizes, exceptions and plain
    Python values, nested in lists and tuples)."""
    if isinstance(value, BaseException):
        return {"raises": type(value).__name__, "message": str(value)}
    if torch is not None:
        if isinstance(value, torch.Tensor):
            flat = value.detach().reshape(-1)
            return {"tensor": str(value.dtype).split(".")[1], "shape": list(value.shape),
                    "values": flat.tolist()}
        if isinstance(value, torch.dtype):
            return {"dtype": str(value).split(".")[1]}
        if isinstance(value, torch.Size):
            return {"size": list(value)}
        if isinstance(value, torch.device):
            return {"device": str(value)}
    if isinstance(value, tuple):
        return {"tuple": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"dict": [[k, encode(v)] for k, v in value.items()]}
    if isinstance(value, str) and len(value) > LONG_TEXT:
        return {"sha256": hashlib.sha256(value.encode()).hexdigest(), "length": len(value),
                "start": value[:200]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"golden: cannot store a {type(value).__name__}")


def decode(data):
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "raises" in data:
        return Raised(data["raises"], data["message"])
    if "tensor" in data:
        return Tensor(data["tensor"], data["shape"], data["values"])
    if "dtype" in data:
        return getattr(ptl, data["dtype"])
    if "size" in data:
        return ptl.Size(data["size"])
    if "device" in data:
        return ptl.device(data["device"])
    if "sha256" in data:
        return Digest(data["sha256"], data["length"], data["start"])
    if "tuple" in data:
        return tuple(decode(v) for v in data["tuple"])
    return {k: decode(v) for k, v in data["dict"]}


def _live(fn):
    try:
        return encode(fn())
    except Exception as exc:  # noqa: BLE001 -- the reference's exception is the value
        return encode(exc)


def golden(fn):
    """PyTorch's result of fn() (see the module docstring); an exception comes back as a
    Raised, a tensor as a golden.Tensor.  With torch installed, fn() runs and must give what
    is stored."""
    if torch is None:
        return decode(_answer(None, None))
    live = _live(fn)
    stored = _answer(None, lambda: live)
    assert _same_json(live, stored), \
        f"the stored answer is stale: torch now gives {live}, stored {stored}"
    return decode(stored)



# ---- arrays ------------------------------------------------------------------------------

def as_array(x):
    """An ndarray (float64 for floating types, exact otherwise) of a tensor of either
    library, an ndarray or a Python number."""
    if hasattr(x, "detach"):
        x = x.detach()
        if str(x.dtype).split(".")[-1] in ("bfloat16", "float16"):
            return np.asarray(x.double().numpy())
        return np.asarray(x.numpy())
    return np.asarray(x)


def _dtype_name(x):
    return str(x.dtype).split(".")[-1] if hasattr(x, "dtype") else np.asarray(x).dtype.name


def _weights(n):
    """PROJECTIONS deterministic weight rows in [-1, 1] for n elements."""
    i = np.arange(1, n + 1, dtype=np.float64)
    return np.stack([np.sin(i * (k + 1) * 2.399963229728653 + k) for k in range(PROJECTIONS)])


def fingerprint(x):
    """The JSON form of an array (see the module docstring)."""
    dtype = _dtype_name(x)
    a = as_array(x)
    out = {"shape": list(a.shape), "dtype": dtype}
    a = a.astype(np.float64).ravel()
    if a.size <= SMALL:
        out["values"] = [float(v) if np.isfinite(v) else repr(float(v)) for v in a]
        return out
    w = _weights(a.size)
    code = np.where(np.isnan(a), 1.0, np.where(a == np.inf, 2.0, np.where(a == -np.inf, 3.0, 0)))
    finite = np.where(code == 0, a, 0.0)
    if code.any():
        out["nonfinite"] = (w @ code).tolist()
    out["sums"] = (w @ finite).tolist()
    out["abs_sums"] = (np.abs(w) @ np.abs(finite)).tolist()
    return out


def _check_fingerprint(got, ref, rtol, atol, what, check_dtype):
    mine = fingerprint(got)
    assert mine["shape"] == ref["shape"], f"{what}: shape {mine['shape']} != {ref['shape']}"
    assert not check_dtype or mine["dtype"] == ref["dtype"], \
        f"{what}: dtype {mine['dtype']} != {ref['dtype']}"
    if "values" in ref:
        a = np.array([float(v) for v in mine["values"]])
        b = np.array([float(v) for v in ref["values"]])
        ok = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        if not ok.all():
            i = int(np.argmin(ok))
            raise AssertionError(f"{what}: element {i} (flat) is {a[i]!r}, PyTorch's {b[i]!r}")
        return
    assert mine.get("nonfinite") == ref.get("nonfinite"), f"{what}: NaN/inf positions differ"
    n = int(np.prod(ref["shape"]))
    bound = atol * np.abs(_weights(n)).sum(axis=1) + rtol * np.array(ref["abs_sums"])
    diff = np.abs(np.array(mine["sums"]) - np.array(ref["sums"]))
    bad = diff > bound * (1 + 1e-9) + 1e-300
    assert not bad.any(), (f"{what}: weighted sums {mine['sums']} differ from PyTorch's "
                           f"{ref['sums']} by {diff.tolist()} (allowed {bound.tolist()})")


def assert_close(got, torch_fn, rtol=1e-7, atol=1e-8, sub="", what=None, check_dtype=True):
    """got (a tensor or array) equals torch_fn()'s tensor in shape, dtype name (unless
    check_dtype is false) and values within rtol/atol elementwise: live when torch is
    installed, else against the stored fingerprint."""
    what = what or sub or "value"
    if torch is not None:
        ref = torch_fn()
        a, b = as_array(got), as_array(ref)
        assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
        assert not check_dtype or _dtype_name(got) == _dtype_name(ref), \
            f"{what}: dtype {_dtype_name(got)} != {_dtype_name(ref)}"
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=rtol,
                                   atol=atol, err_msg=what)
        stored = _answer(sub, lambda: fingerprint(ref))
    else:
        stored = _answer(sub, None)
    _check_fingerprint(got, stored, rtol, atol, what, check_dtype)


def assert_equal(got, torch_fn, sub=""):
    """got (JSON data: numbers, strings, lists, dicts) equals torch_fn()."""
    if torch is not None:
        ref = _jsonable(torch_fn())
        assert _same_json(_jsonable(got), ref), f"{got!r} is not PyTorch's {ref!r}"
        stored = _answer(sub, lambda: ref)
    else:
        stored = _answer(sub, None)
    assert _same_json(_jsonable(got), stored), f"{got!r} is not PyTorch's {stored!r}"


def assert_same_results(run, rtol=1e-7, atol=1e-8, prefix=""):
    """run(lib) -> {name: tensor or JSON data}, for lib pytorchlite and torch: the same names
    and, name by name, equal values (assert_close for tensors, assert_equal otherwise).  The
    keys are prefix + name (a test that compares several runs gives each its prefix)."""
    ours = run(ptl)
    theirs = functools.cache(lambda: run(torch))
    assert_equal(list(ours), lambda: list(theirs()), sub=prefix + "names")
    for name, value in ours.items():
        if hasattr(value, "shape"):
            assert_close(value, lambda: theirs()[name], rtol=rtol, atol=atol, sub=prefix + name)
        else:
            assert_equal(value, lambda: theirs()[name], sub=prefix + name)


def plain(v):
    """v as JSON data: tensors of either library as nested lists (tolist), tuples as lists."""
    if hasattr(v, "tolist") and hasattr(v, "shape"):
        return v.tolist()
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def as_json(v):
    """plain(v) as it reads back from the stored JSON (the form answer() returns)."""
    return _jsonable(plain(v))


def answer(torch_fn, sub=None):
    """PyTorch's answer as JSON data (see plain): plain(torch_fn()) when torch is installed
    (checked against the stored one), else the stored one.  Without sub, the answers of one
    test are numbered in the order it asks for them."""
    if torch is not None:
        live = as_json(torch_fn())
        stored = _answer(sub, lambda: live)
        assert _same_json(stored, live), \
            f"stored answer {stored!r} is stale: PyTorch gives {live!r}"
        return _jsonable(live)
    return _jsonable(_answer(sub, None))


def named(values, what="value"):
    """{f'{what} {k}': values[k]}: a sequence as assert_same_results's dict."""
    return {f"{what} {k}": v for k, v in enumerate(values)}


def _jsonable(v):
    return json.loads(json.dumps(v))


def _same_json(a, b):
    """Equal JSON data, NaN equal to NaN and floats equal within rounding (rtol 1e-6, atol
    1e-12): PyTorch on another CPU (another vector width in its MKL or oneDNN kernels) rounds
    the last bits of some results differently, and only a change larger than that means the
    stored answer is stale."""
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool) or \
                not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        if math.isinf(a) or math.isinf(b):
            return a == b
        return abs(a - b) <= 1e-12 + 1e-6 * max(abs(a), abs(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---- errors ------------------------------------------------------------------------------

def _raised(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001  (any exception is the answer)
        return [type(e).__name__, str(e)]
    return None


def assert_raises(ours_fn, torch_fn, sub="", compare=None):
    """ours_fn() raises what torch_fn() raises: the same exception class name and message.
    compare(ours_message, torch_message) decides the message (default: equal); torch's
    message, stored, stands in for the live one without torch."""
    if torch is not None:
        ref = _raised(torch_fn)
        assert ref is not None, "PyTorch raised nothing"
        stored = _answer(sub, lambda: ref)
    else:
        stored = _answer(sub, None)
    ours = _raised(ours_fn)
    assert ours is not None, f"pytorchlite raised nothing; PyTorch raises {stored[0]}: {stored[1]}"
    assert ours[0] == stored[0], f"{ours[0]}: {ours[1]} is not PyTorch's {stored[0]}: {stored[1]}"
    compare = compare or (lambda a, b: a == b)
    assert compare(ours[1], stored[1]), f"message {ours[1]!r} is not PyTorch's {stored[1]!r}"


def first_line_prefix(ours, ref):
    """ours starts with torch's first line."""
    return ours.startswith(ref.split("\n")[0])


def sets_sorted(message):
    """A message with every printed set's elements in sorted order: a set literal's order
    depends on the hash seed (and, for torch's, on the process that compiled its .pyc)."""
    return re.sub(r"\{([^{}]*)\}",
                  lambda m: "{" + ", ".join(sorted(m.group(1).split(", "))) + "}", message)
