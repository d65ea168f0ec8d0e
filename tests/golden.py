"""PyTorch's answers stored once, so that a test whose reference is PyTorch also runs without it.

A test hands its own result and a function computing torch's answer to `assert_close`,
`assert_equal` or `assert_raises`, under a key.  Without torch the answer comes from
tests/fixtures/golden/<layer>/<test file>.json.gz, written by tests/fixtures/make_golden.py from
PyTorch 2.13's real outputs (never ours).  With torch installed the live answer is the
reference, and the stored one is checked too, so a stale fixture shows as a failure.

Arrays of more than SMALL elements are stored as a fingerprint: shape, dtype, the positions
of non-finite values (as weighted sums) and PROJECTIONS weighted sums of the finite values,
each with the weighted sum of magnitudes that bounds how far a result within (rtol, atol)
of torch's elementwise can move it.  So a result within tolerance always passes, and a wrong
element moves every sum by its error times a weight in [-1, 1]: an error in one element is
caught from about (atol + rtol |x|) times the array's size upwards (1e-5 on 60 values near 1
at rtol 1e-7); a smaller one can pass, where the elementwise check of live torch would fail."""
import atexit
import functools
import gzip
import json
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


def _write_recorded():
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


if RECORDING:
    atexit.register(_write_recorded)


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
    """Equal JSON data, NaN equal to NaN."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


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
