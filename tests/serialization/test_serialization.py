"""pytorchlite.save / load against PyTorch's checkpoint formats, the weights-only unpickler and
safetensors.  Fixtures in tests/fixtures/ were written by the real torch (make_fixtures.py);
when torch is installed, files written here are also loaded by torch.load."""
import collections
import io
import json
import os
import pickle
import re
import struct
import zipfile

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import serialization
from helpers import (ALL_DTYPES, LAYOUTS, NP_DTYPE, SHAPES, TESTS, assert_close, make, torch,
                     torch_ref)


FIXTURES = os.path.join(TESTS, "fixtures")
DTYPE_NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
               "float32", "float64"]


def bits(t):
    return ptl._C._tensor_bytes(t)


def roundtrip(obj, **kwargs):
    buf = io.BytesIO()
    ptl.save(obj, buf, **kwargs)
    buf.seek(0)
    return ptl.load(buf)


def fixture_values(n, name):
    """NumPy twin of make_fixtures.values()."""
    i = np.arange(n, dtype=np.float64)
    if name == "bool":
        return i % 3 == 0
    if name == "uint8":
        return i.astype(np.uint8)
    if name.startswith("int"):
        return (i - n // 2).astype(name)
    return (i - n // 2) / 4


def make_linear(monkeypatch, n_in, n_out):
    """An nn.Linear with weights (i - n // 2) / 7: its random init is replaced, so the test
    depends only on state_dict handling."""
    monkeypatch.setattr(ptl.nn.init, "kaiming_uniform_", lambda t, **kwargs: t)
    monkeypatch.setattr(ptl.nn.init, "uniform_", lambda t, *args, **kwargs: t)
    lin = ptl.nn.Linear(n_in, n_out)
    with ptl.no_grad():
        lin.weight.copy_(ptl.tensor(fixture_values(n_in * n_out, "float64").reshape(
            n_out, n_in) / 7))
        lin.bias.copy_(ptl.tensor(fixture_values(n_out, "float64") / 3))
    return lin


def assert_same(got, want):
    """Same type, dtype, shape, strides and bits."""
    assert type(got) is type(want)
    assert got.dtype == want.dtype and tuple(got.shape) == tuple(want.shape)
    assert got.stride() == want.stride() and got.storage_offset() == want.storage_offset()
    assert bits(got) == bits(want)


# ---- round trips ----

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_roundtrip_every_shape_and_layout(dtype):
    cases = {f"{shape}-{layout}": make(shape, dtype, layout, seed=i)
             for i, (shape, layout) in enumerate((s, l) for s in SHAPES for l in LAYOUTS)}
    loaded = roundtrip({k: t for k, (t, _) in cases.items()})
    assert list(loaded) == list(cases)
    for key, (t, a) in cases.items():
        assert_close(loaded[key], a, dtype=dtype, rtol=0, atol=0)
        assert_same(loaded[key], t)


def test_special_float_bits_survive():
    a = np.array([np.nan, -0.0, np.inf, -np.inf, 1e-40, 65504.0])
    for dtype in (ptl.float16, ptl.bfloat16, ptl.float32, ptl.float64):
        t = ptl.tensor(a).to(dtype)
        assert bits(roundtrip(t)) == bits(t)


def test_shared_storage_is_preserved():
    base = ptl.arange(12.0)
    views = {"base": base, "m": base.reshape(3, 4), "row": base.reshape(3, 4)[1],
             "t": base.reshape(3, 4).t(), "tail": base[5:]}
    buf = io.BytesIO()
    ptl.save(views, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        assert [n for n in zf.namelist() if "/data/" in n] == ["archive/data/0"]
    buf.seek(0)
    loaded = ptl.load(buf)
    ptrs = {t._storage_ptr() for t in loaded.values()}
    assert len(ptrs) == 1
    loaded["base"].add_(1)
    assert loaded["row"].tolist() == [5.0, 6.0, 7.0, 8.0]
    assert loaded["tail"][0].item() == 6.0
    for key, t in views.items():
        assert loaded[key].stride() == t.stride()
        assert loaded[key].storage_offset() == t.storage_offset()


def test_nested_containers_numbers_strings():
    od = collections.OrderedDict(b=ptl.ones(2, dtype=ptl.int64), a=1)
    obj = {"list": [1, 2.5, None, True, "s", b"raw"], "tuple": (ptl.zeros(1), ("x", 3)),
           "od": od, "dtype": ptl.bfloat16, "size": ptl.Size([2, 3]), "dev": ptl.device("cpu"),
           "set": {1, 2}, "complex": 1 + 2j}
    got = roundtrip(obj)
    assert got["list"] == [1, 2.5, None, True, "s", b"raw"]
    assert type(got["od"]) is collections.OrderedDict and list(got["od"]) == ["b", "a"]
    assert got["od"]["b"].tolist() == [1, 1] and got["od"]["b"].dtype == ptl.int64
    assert got["tuple"][1] == ("x", 3) and got["tuple"][0].tolist() == [0.0]
    assert got["dtype"] is ptl.bfloat16
    assert type(got["size"]) is ptl.Size and got["size"] == (2, 3)
    assert got["dev"] == ptl.device("cpu")
    assert got["set"] == {1, 2} and got["complex"] == 1 + 2j


def test_parameter_and_requires_grad():
    p = ptl.nn.Parameter(ptl.ones(2, 2))
    q = ptl.nn.Parameter(ptl.zeros(3), requires_grad=False)
    g = ptl.ones(2, requires_grad=True)
    got = roundtrip({"p": p, "q": q, "g": g})
    assert type(got["p"]) is ptl.nn.Parameter and got["p"].requires_grad
    assert type(got["q"]) is ptl.nn.Parameter and not got["q"].requires_grad
    assert type(got["g"]) is ptl.Tensor and got["g"].requires_grad and got["g"].is_leaf


def test_path_and_legacy_writer(tmp_path):
    x = ptl.arange(6, dtype=ptl.int16).reshape(2, 3)
    path = tmp_path / "model.pt"
    ptl.save({"x": x, "r": x[1]}, path)
    with zipfile.ZipFile(path) as zf:
        names = zf.namelist()
    assert names[0] == "model/data.pkl" and "model/version" in names
    assert "model/byteorder" in names and "model/.data/serialization_id" in names
    got = ptl.load(str(path))
    assert_same(got["x"], x)
    legacy = tmp_path / "legacy.pt"
    ptl.save({"x": x, "r": x[1]}, legacy, _use_new_zipfile_serialization=False)
    got = ptl.load(legacy)
    assert_same(got["r"], x[1])
    assert got["r"]._storage_ptr() == got["x"]._storage_ptr()


def test_records_are_64_byte_aligned():
    buf = io.BytesIO()
    ptl.save({"a": ptl.ones(3), "b": ptl.ones(5, dtype=ptl.int8)}, buf)
    raw = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        for info in zf.infolist():
            name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:
                                                         info.header_offset + 30])
            assert (info.header_offset + 30 + name_len + extra_len) % 64 == 0


def test_map_location():
    x = ptl.arange(4.0)
    for where in ("cpu", ptl.device("cpu"), {"cpu": "cpu"}, lambda s, loc: s,
                  lambda s, loc: None):
        buf = io.BytesIO()
        ptl.save(x, buf)
        buf.seek(0)
        assert ptl.load(buf, map_location=where).tolist() == [0.0, 1.0, 2.0, 3.0]
    seen = []
    buf.seek(0)
    ptl.load(buf, map_location=lambda s, loc: seen.append(loc))
    assert seen == ["cpu"]


# ---- files written by torch ----

def test_torch_fixture_every_dtype_and_view():
    got = ptl.load(os.path.join(FIXTURES, "dtypes.pt"))
    assert list(got) == DTYPE_NAMES
    for name in DTYPE_NAMES:
        d, dtype = got[name], getattr(ptl, name)
        base = fixture_values(20, name).reshape(4, 5)
        assert_close(d["base"], base, dtype=dtype, rtol=0, atol=0)
        assert_close(d["row"], base[1], dtype=dtype, rtol=0, atol=0)
        assert_close(d["t"], base.T, dtype=dtype, rtol=0, atol=0)
        assert_close(d["cols"], base[:, 1:4:2], dtype=dtype, rtol=0, atol=0)
        assert_close(d["scalar"], fixture_values(3, name)[2], dtype=dtype, rtol=0, atol=0)
        assert_close(d["empty"], fixture_values(0, name).reshape(0, 3), dtype=dtype)
        assert d["t"].stride() == (1, 5) and d["cols"].stride() == (5, 2)
        assert d["row"].storage_offset() == 5
        assert len({d[k]._storage_ptr() for k in ("base", "row", "t", "cols")}) == 1


def test_torch_fixture_linear_into_module(monkeypatch):
    sd = ptl.load(os.path.join(FIXTURES, "linear_state_dict.pt"))
    assert type(sd) is collections.OrderedDict and list(sd) == ["weight", "bias"]
    lin = make_linear(monkeypatch, 3, 2)
    lin.load_state_dict(sd)
    assert_close(lin.weight.detach(), fixture_values(6, "float32").reshape(2, 3), rtol=0, atol=0)
    out = lin(ptl.ones(1, 3))
    assert_close(out.detach(), fixture_values(6, "float32").reshape(2, 3).sum(1)[None]
                 + fixture_values(2, "float32"))


def test_torch_fixture_adam_state_into_optimizer(monkeypatch):
    sd = ptl.load(os.path.join(FIXTURES, "adam_state_dict.pt"))
    assert sd["param_groups"][0]["lr"] == 0.5 and sd["param_groups"][0]["params"] == [0, 1]
    assert_close(sd["state"][0]["exp_avg"], np.full((2, 3), 0.1), dtype=ptl.float32)
    assert_close(sd["state"][1]["exp_avg_sq"], np.full(2, 0.001), dtype=ptl.float32)
    lin = make_linear(monkeypatch, 3, 2)
    opt = ptl.optim.Adam(lin.parameters(), lr=0.1)
    opt.load_state_dict(sd)
    assert opt.param_groups[0]["lr"] == 0.5
    assert opt.state[lin.bias]["step"].item() == 1.0


def test_torch_fixture_nested():
    got = ptl.load(os.path.join(FIXTURES, "nested.pt"))
    assert type(got) is collections.OrderedDict
    assert got["numbers"] == [1, 2.5, -3, True, None] and got["text"] == "hello"
    assert_close(got["pair"][0], fixture_values(4, "int64"), dtype=ptl.int64)
    assert got["pair"][1] == "x"
    param = got["inner"]["param"]
    assert type(param) is ptl.nn.Parameter and param.requires_grad
    assert_close(param.detach(), fixture_values(3, "float64"), dtype=ptl.float64, rtol=0, atol=0)
    assert_close(got["inner"]["f16"], fixture_values(5, "float16"), dtype=ptl.float16)


def test_torch_fixture_legacy_format():
    got = ptl.load(os.path.join(FIXTURES, "legacy.pt"))
    base = fixture_values(12, "float64")
    assert_close(got["a"], base.reshape(3, 4), dtype=ptl.float64, rtol=0, atol=0)
    assert_close(got["b"], base[4:8], dtype=ptl.float64, rtol=0, atol=0)
    assert_close(got["i"], fixture_values(5, "int32"), dtype=ptl.int32)
    assert got["a"]._storage_ptr() == got["b"]._storage_ptr()


# ---- files written here, read by torch ----

def torch_bits(t):
    return bytes(t.clone(memory_format=torch.contiguous_format).untyped_storage())


@torch_ref
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_torch_loads_our_files(tmp_path, legacy):
    ours = {}
    for i, dtype in enumerate(ALL_DTYPES):
        base, _ = make((3, 4), dtype, seed=i)
        ours[str(dtype)] = {"base": base, "t": base.t(), "row": base[2], "s": base[1, 1]}
    path = tmp_path / "ours.pt"
    ptl.save(ours, path, _use_new_zipfile_serialization=not legacy)
    got = torch.load(path, weights_only=True)
    for key, d in ours.items():
        for name, t in d.items():
            g = got[key][name]
            assert str(g.dtype) == key and tuple(g.shape) == tuple(t.shape)
            assert g.stride() == t.stride() and g.storage_offset() == t.storage_offset()
            assert torch_bits(g) == bits(t)
        ptrs = {got[key][n].untyped_storage().data_ptr() for n in d}
        assert len(ptrs) == 1


@torch_ref
def test_linear_state_dict_through_both_libraries(tmp_path, monkeypatch):
    lin = make_linear(monkeypatch, 4, 3)
    path = tmp_path / "ptl.pt"
    ptl.save(lin.state_dict(), path)
    tlin = torch.nn.Linear(4, 3)
    tlin.load_state_dict(torch.load(path))
    x = np.arange(8.0).reshape(2, 4) / 7
    want = tlin(torch.tensor(x, dtype=torch.float32)).detach().numpy()
    assert_close(lin(ptl.tensor(x, dtype=ptl.float32)).detach(), want)
    tpath = tmp_path / "torch.pt"
    torch.save(tlin.state_dict(), tpath)
    back = make_linear(monkeypatch, 4, 3)
    with ptl.no_grad():
        back.weight.zero_()
        back.bias.zero_()
    back.load_state_dict(ptl.load(tpath))
    assert bits(back.weight.detach()) == bits(lin.weight.detach())
    assert bits(back.bias.detach()) == bits(lin.bias.detach())


@torch_ref
def test_torch_written_bits_match(tmp_path):
    path = tmp_path / "t.pt"
    values = {name: torch.tensor(np.linspace(-3, 3, 7)).to(getattr(torch, name))
              for name in DTYPE_NAMES}
    torch.save(values, path)
    got = ptl.load(path)
    for name, t in values.items():
        assert bits(got[name]) == torch_bits(t)


# ---- weights-only loading ----

class SystemCall:
    def __reduce__(self):
        return (os.system, ("echo pwned > /dev/null",))


class EvalCall:
    def __reduce__(self):
        return (eval, ("__import__('os').getcwd()",))


class SneakyDict(dict):
    """A subclass of an allowed container: its class is a global the file must name."""


def refused_message(full):
    return re.escape(f"Unsupported global: GLOBAL {full} was not an allowed global by default. "
                     f"Please use `pytorchlite.serialization.add_safe_globals([{full}])`")


@pytest.mark.parametrize("payload, name", [
    (SystemCall(), f"{os.system.__module__}.system"),
    (EvalCall(), "builtins.eval"),
    (SneakyDict(a=1), "test_serialization.SneakyDict"),
], ids=["os.system", "eval", "subclass"])
@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_malicious_globals_refused(payload, name, legacy):
    buf = io.BytesIO()
    ptl.save({"w": ptl.ones(2), "evil": payload}, buf, _use_new_zipfile_serialization=not legacy)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=refused_message(name)):
        ptl.load(buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=re.escape("Weights only load failed.")):
        ptl.load(buf, weights_only=True)


def test_crafted_pickle_with_getattr_refused():
    # GLOBAL builtins.getattr; it would fetch os.system from an allowed object.
    data = (b"\x80\x02cbuiltins\ngetattr\nccollections\nOrderedDict\nX\x04\x00\x00\x00keys"
            b"\x86R.")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/data.pkl", data)
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match=refused_message("builtins.getattr")):
        ptl.load(buf)


def test_rebuild_with_bad_arguments_raises():
    rebuild = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n"
    storage = (b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000"
               b"X\x03\x00\x00\x00cpuK\x02tQ")
    cases = [
        (rebuild + b"(X\x01\x00\x00\x00xK\x00)))\x89tR.", TypeError, "expected a storage"),
        (rebuild + b"(" + storage + b"K\x00K\x05\x85K\x01\x85\x89tR.", RuntimeError,
         "out of bounds of a storage of 8 bytes"),
        (rebuild + b"(" + storage + b"J\xff\xff\xff\xff)\x29\x89tR.", RuntimeError,
         "invalid tensor geometry"),
        (rebuild + b"(" + storage + b"K\x00K\x01\x85)\x89tR.", RuntimeError,
         "mismatch in length of strides and shape"),
    ]
    for data, exc, msg in cases:
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("archive/data.pkl", data)
            zf.writestr("archive/data/0", b"\x00" * 8)
        buf.seek(0)
        with pytest.raises(exc, match=re.escape(msg)):
            ptl.load(buf)


def test_safe_globals_and_weights_only_false():
    buf = io.BytesIO()
    ptl.save({"d": SneakyDict(a=1)}, buf)
    buf.seek(0)
    assert type(ptl.load(buf, weights_only=False)["d"]) is SneakyDict
    buf.seek(0)
    with serialization.safe_globals([SneakyDict]):
        assert SneakyDict in serialization.get_safe_globals()
        assert ptl.load(buf)["d"] == {"a": 1}
    assert SneakyDict not in serialization.get_safe_globals()
    serialization.add_safe_globals([SneakyDict])
    try:
        buf.seek(0)
        assert ptl.load(buf)["d"] == {"a": 1}
    finally:
        serialization.clear_safe_globals()
    assert serialization.get_safe_globals() == []


# ---- corrupt files ----

def sample_file(legacy):
    buf = io.BytesIO()
    x = ptl.arange(40.0).reshape(5, 8)
    ptl.save({"x": x, "row": x[2], "n": [1, "two"], "i": ptl.ones(3, dtype=ptl.int64)}, buf,
             _use_new_zipfile_serialization=not legacy)
    return buf.getvalue()


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_truncated_files_raise(legacy):
    raw = sample_file(legacy)
    for cut in range(0, len(raw) - 1, 37):
        with pytest.raises((RuntimeError, pickle.UnpicklingError, EOFError, ValueError,
                            TypeError, KeyError)):
            ptl.load(io.BytesIO(raw[:cut]))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_flipped_bytes_never_crash(legacy):
    raw = sample_file(legacy)
    gen = np.random.default_rng(1)
    outcomes = set()
    for _ in range(300):
        data = bytearray(raw)
        for pos in gen.integers(0, len(raw), size=3):
            data[pos] ^= int(gen.integers(1, 256))
        try:
            ptl.load(io.BytesIO(bytes(data)))
            outcomes.add("loaded")
        except Exception as e:  # noqa: BLE001  (any exception is fine; a crash is not)
            outcomes.add(type(e).__name__)
    assert len(outcomes) >= 2


def test_error_messages(tmp_path):
    with pytest.raises(FileNotFoundError):
        ptl.load(tmp_path / "missing.pt")
    with pytest.raises(RuntimeError, match=re.escape("Invalid magic number; corrupt file?")):
        ptl.load(io.BytesIO(b"hello world"))
    with pytest.raises(RuntimeError, match=re.escape("PytorchStreamReader failed reading zip "
                                                     "archive")):
        ptl.load(io.BytesIO(b"PK\x03\x04garbage"))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("archive/version", "3\n")
    buf.seek(0)
    with pytest.raises(RuntimeError, match=re.escape("PytorchStreamReader failed locating file "
                                                     "data.pkl: file not found")):
        ptl.load(buf)
    buf = io.BytesIO()
    ptl.save(ptl.ones(2), buf)
    buf.seek(0)
    if not ptl.cuda.is_available():   # the CPU-only error
        with pytest.raises(RuntimeError, match=re.escape(
                "Attempting to deserialize object on a CUDA device but "
                "torch.cuda.is_available() is False.")):
            ptl.load(buf, map_location="cuda:0")
    buf.seek(0)
    with pytest.raises(RuntimeError, match=re.escape("don't know how to restore data location "
                                                     "of cpu (tagged with meta)")):
        ptl.load(buf, map_location="meta")
    with pytest.raises(NotImplementedError, match="supports only the standard pickle module"):
        ptl.save(ptl.ones(1), io.BytesIO(), pickle_module=json)


# ---- safetensors ----

def build_safetensors(entries, metadata=None, pad=True):
    """A safetensors file built by hand from the spec: entries is [(name, code, shape, bytes)],
    the data laid out in the given order."""
    header, data = {}, b""
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, code, shape, raw in entries:
        header[name] = {"dtype": code, "shape": list(shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def test_safetensors_roundtrip_every_dtype(tmp_path):
    tensors = {}
    for i, dtype in enumerate(ALL_DTYPES):
        for j, shape in enumerate(((), (0,), (3, 4))):
            tensors[f"{dtype}-{j}"], _ = make(shape, dtype, "transposed", seed=i)
    path = tmp_path / "m.safetensors"
    serialization.save_safetensors(tensors, path, metadata={"format": "pt"})
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header["__metadata__"] == {"format": "pt"}
    assert header["torch.float64-2"]["dtype"] == "F64"
    assert header["torch.bfloat16-2"] == {"dtype": "BF16", "shape": [3, 4],
                                          "data_offsets": header["torch.bfloat16-2"]
                                          ["data_offsets"]}
    got = serialization.load_safetensors(path)
    assert set(got) == set(tensors)
    for key, t in tensors.items():
        assert got[key].dtype == t.dtype and tuple(got[key].shape) == tuple(t.shape)
        assert bits(got[key]) == bits(t)
    assert serialization.load_safetensors_metadata(path) == {"format": "pt"}


def test_safetensors_hand_built_file(tmp_path):
    f32 = np.array([[1.5, -2.0], [0.25, 8.0]], dtype=np.float32)
    i64 = np.array([7, -9, 2**40], dtype=np.int64)
    bf16 = np.array([0x3FC0, 0xC000], dtype=np.uint16)    # 1.5, -2.0 in bfloat16
    path = tmp_path / "spec.safetensors"
    path.write_bytes(build_safetensors([("w", "F32", (2, 2), f32.tobytes()),
                                        ("idx", "I64", (3,), i64.tobytes()),
                                        ("h", "BF16", (2,), bf16.tobytes()),
                                        ("flag", "BOOL", (), b"\x01")], {"k": "v"}, pad=False))
    got = serialization.load_safetensors(path)
    assert list(got) == ["w", "idx", "h", "flag"]
    assert_close(got["w"], f32, dtype=ptl.float32, rtol=0, atol=0)
    assert_close(got["idx"], i64, dtype=ptl.int64)
    assert_close(got["h"], np.array([1.5, -2.0]), dtype=ptl.bfloat16, rtol=0, atol=0)
    assert_close(got["flag"], np.array(True), dtype=ptl.bool)
    assert serialization.load_safetensors_metadata(path) == {"k": "v"}


def test_safetensors_writer_order_matches_reference():
    buf = io.BytesIO()
    serialization.save_safetensors({"b": ptl.ones(2, dtype=ptl.int8), "a": ptl.ones(1),
                                    "c": ptl.ones(1, dtype=ptl.float64)}, buf)
    raw = buf.getvalue()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert [header[k]["data_offsets"] for k in ("c", "a", "b")] == [[0, 8], [8, 12], [12, 14]]


@pytest.mark.parametrize("blob, msg", [
    (b"\x01\x00", "shorter than its 8-byte header length"),
    (struct.pack("<Q", 200_000_000) + b"{}", "header of 200000000 bytes is too large"),
    (struct.pack("<Q", 64) + b"{}", "header length exceeds the file size"),
    (struct.pack("<Q", 4) + b"[1] ", "header is not a JSON object"),
    (struct.pack("<Q", 4) + b"{1: ", "header is not valid JSON"),
    (build_safetensors([("x", "F32", (2,), b"\x00" * 4)]), "data_offsets of 'x' do not match"),
    (build_safetensors([("x", "F8_E5M2", (1,), b"\x00")]), "unsupported dtype 'F8_E5M2'"),
    (build_safetensors([("x", "F32", (-1,), b"")]), "bad shape of 'x'"),
    (build_safetensors([("x", "U8", (1,), b"\x00")]) + b"\x00", "do not cover the data area"),
    (build_safetensors([("x", "U8", (4,), b"\x00" * 4)])[:-1], "bad data_offsets of 'x'"),
    (build_safetensors([], {"k": 1}), "__metadata__ must map str to str"),
])
def test_safetensors_invalid_files(tmp_path, blob, msg):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=re.escape(msg)):
        serialization.load_safetensors(path)


def test_safetensors_overlap_and_hole(tmp_path):
    text = json.dumps({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                       "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}}).encode()
    path = tmp_path / "o.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"\x00" * 3)
    with pytest.raises(ValueError, match=re.escape("the data of 'b' does not start where the "
                                                   "previous tensor's ends")):
        serialization.load_safetensors(path)


def test_safetensors_save_errors():
    with pytest.raises(TypeError, match="metadata must be a dict of str to str"):
        serialization.save_safetensors({"a": ptl.ones(1)}, io.BytesIO(), metadata={"a": 1})
    with pytest.raises(TypeError, match=re.escape("tensors['a'] must be a tensor, but got int")):
        serialization.save_safetensors({"a": 1}, io.BytesIO())
    with pytest.raises(ValueError, match="'__metadata__' is reserved"):
        serialization.save_safetensors({"__metadata__": ptl.ones(1)}, io.BytesIO())


def test_dtype_table_covers_every_dtype():
    assert sorted(str(d).split(".")[1] for d in NP_DTYPE) == sorted(DTYPE_NAMES)
