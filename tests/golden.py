"""PyTorch's own outputs, recorded once, for the checks whose reference is PyTorch behaviour
with no NumPy equivalent: dtype inference and promotion, printed forms, error messages,
attributes of dtype/device/Size objects.

golden(fn) returns what fn() gave under PyTorch (a value, or the exception it raised), read from
tests/fixtures/golden_<module>.json, where <module> is the running test file without its
`test_` prefix, under a key made of the running test's id and the call's rank within the test.
fn is only called when PyTorch is installed: then the live result must equal the stored one
(a stale file fails), so the test still compares with torch there.  With the environment
variable PTL_RECORD_GOLDEN=1 (tests/fixtures/make_golden.py, in PyTorch's venv) the live results
are stored instead and the files rewritten at the end of the session."""
import builtins
import hashlib
import json
import os

import numpy as np

import pytorchlite as ptl
from helpers import TESTS, torch

FIXTURES = os.path.join(TESTS, "fixtures")
RECORDING = os.environ.get("PTL_RECORD_GOLDEN") == "1"

LONG_TEXT = 2000  # longer strings are stored as a digest (the files stay small)

_stored = {}      # fixture file -> {key: encoded value}
_recorded = {}    # fixture file -> {key: encoded value}, in record mode
_calls = {}       # running test id -> golden() calls so far


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


def _current():
    """(fixture file, key) for the next golden() call of the running test."""
    test = os.environ["PYTEST_CURRENT_TEST"].rsplit(" ", 1)[0]
    path, name = test.split("::", 1)
    module = os.path.basename(path)[:-len(".py")]
    if module.startswith("test_"):
        module = module[len("test_"):]
    rank = _calls[test] = _calls.get(test, -1) + 1
    return os.path.join(FIXTURES, f"golden_{module}.json"), f"{name}#{rank}"


def start_test():
    """Called before each test (conftest.py): the ranks of golden() calls start again."""
    _calls.clear()


def _load(fname):
    if fname not in _stored:
        try:
            with open(fname) as f:
                _stored[fname] = json.load(f)
        except FileNotFoundError:
            _stored[fname] = {}
    return _stored[fname]


def _live(fn):
    try:
        return encode(fn())
    except Exception as exc:  # noqa: BLE001 -- the reference's exception is the value
        return encode(exc)


def golden(fn):
    """PyTorch's result of fn() (see the module docstring); an exception comes back as a
    Raised, a tensor as a golden.Tensor."""
    fname, key = _current()
    if RECORDING:
        live = _recorded.setdefault(fname, {})[key] = _live(fn)
        return decode(live)
    stored = _load(fname)
    assert key in stored, \
        f"no value for {key} in {fname}: run tests/fixtures/make_golden.py with PyTorch"
    if torch is not None:
        live = _live(fn)
        assert json.dumps(live) == json.dumps(stored[key]), \
            f"{fname} is stale at {key}: torch now gives {live}, stored {stored[key]}"
    return decode(stored[key])


def write_recorded():
    """Record mode: (re)writes every fixture file that this session recorded into."""
    for fname, values in _recorded.items():
        lines = [f"{json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}"
                 for k, v in sorted(values.items())]
        with open(fname, "w") as f:
            f.write("{\n" + ",\n".join(lines) + "\n}\n")
