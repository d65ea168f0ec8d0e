"""Hostile checkpoints: code-execution attempts, truncations, zip and pickle bombs, overflowing
or inconsistent tensor geometry, short storages and wrong storage types.  Each must raise a
clear error before anything in the file runs and before loading allocates what the file
claims (Note [Checkpoint size limits] in pytorchlite/serialization.py)."""
import collections
import io
import pickle
import re
import zipfile

import pytest

import pytorchlite as ptl
from pytorchlite import serialization

REBUILD = b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n"
LOAD_ERRORS = (RuntimeError, pickle.UnpicklingError)


def ops(value):
    """The opcodes that push `value` (protocol 2, without the header and STOP)."""
    return pickle.dumps(value, 2)[2:-1]


def storage_id(numel, storage_type=b"FloatStorage", key=b"0"):
    return (b"(X\x07\x00\x00\x00storagectorch\n" + storage_type + b"\nX" +
            len(key).to_bytes(4, "little") + key + b"X\x03\x00\x00\x00cpu" + ops(numel) + b"tQ")


def tensor_pickle(offset, size, stride, numel=2, storage_type=b"FloatStorage"):
    return (REBUILD + b"(" + storage_id(numel, storage_type) + ops(offset) + ops(tuple(size)) +
            ops(tuple(stride)) + b"\x89tR.")


def archive(pkl, records=None, compression=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as zf:
        zf.writestr("archive/data.pkl", pkl)
        for name, data in (records or {"0": b"\x00" * 8}).items():
            zf.writestr(f"archive/data/{name}", data)
    buf.seek(0)
    return buf


def legacy(obj_pickle, storages=()):
    """A legacy-format stream: magic, protocol, system info, the object, keys, then data."""
    head = (pickle.dumps(0x1950a86a20f9469cfc6c, 2) + pickle.dumps(1001, 2) +
            pickle.dumps({"little_endian": True}, 2))
    body = pickle.dumps([k for k, _, _ in storages], 2)
    for _, count, data in storages:
        body += count.to_bytes(8, "little", signed=True) + data
    return io.BytesIO(head + obj_pickle + body)


def saved(legacy_format=False):
    buf = io.BytesIO()
    state = collections.OrderedDict(w=ptl.arange(12.0).view(3, 4), b=ptl.ones(3, dtype=ptl.int64))
    ptl.save({"state": state, "step": 3}, buf, _use_new_zipfile_serialization=not legacy_format)
    return buf.getvalue()


# ---- code execution ----

@pytest.fixture
def marker(tmp_path):
    path = tmp_path / "ran"
    yield path
    assert not path.exists(), "the checkpoint ran code"


def shell(marker):
    cmd = f"touch {marker}".encode()
    return b"X" + len(cmd).to_bytes(4, "little") + cmd


@pytest.mark.parametrize("how", ["GLOBAL+REDUCE", "INST", "OBJ", "NEWOBJ", "exec", "getattr"])
@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_code_execution_is_refused(marker, how, fmt):
    body = {
        "GLOBAL+REDUCE": b"cos\nsystem\n(" + shell(marker) + b"tR.",
        "INST": b"(" + shell(marker) + b"ios\nsystem\n.",
        "OBJ": b"(cos\nsystem\n" + shell(marker) + b"o.",
        "NEWOBJ": b"cos\nsystem\n(" + shell(marker) + b"t\x81.",
        "exec": b"cbuiltins\nexec\n(X\x0f\x00\x00\x00import os;os._x" + b"tR.",
        "getattr": b"cbuiltins\ngetattr\ncos\nsystem\nX\x04\x00\x00\x00callR.",
    }[how]
    pkl = b"\x80\x02" + body
    f = archive(pkl) if fmt == "zip" else legacy(pkl)
    with pytest.raises(pickle.UnpicklingError, match="Unsupported global: GLOBAL "):
        ptl.load(f)


def test_build_cannot_change_a_class_or_run_setstate(marker):
    # BUILD with a (dict, slots) state on an allowed object: setattr of __class__ and of
    # __setstate__ must not turn the object into something that runs code
    state = ops(({"a": 1}, {"__setstate__": 1}))
    pkl = b"\x80\x02ccollections\nOrderedDict\n)Rq\x00" + state + b"b."
    got = ptl.load(archive(pkl))
    assert type(got) is collections.OrderedDict
    pkl = b"\x80\x02ccollections\nOrderedDict\n)R" + ops(({}, {"__class__": 1})) + b"b."
    with pytest.raises(TypeError, match="__class__ must be set to a class"):
        ptl.load(archive(pkl))


def test_rebuild_parameter_state_cannot_set_dunders():
    pkl = (b"\x80\x02ctorch._utils\n_rebuild_parameter_with_state\n(" +
           tensor_pickle(0, (2,), (1,))[len(b"\x80\x02"):-1] + b"\x88" + ops({}) +
           ops({"__class__": 1}) + b"tR.")
    with pytest.raises(RuntimeError, match=re.escape("invalid Parameter state key '__class__'")):
        ptl.load(archive(pkl))


# ---- truncations ----

@pytest.mark.parametrize("fmt", ["zip", "legacy"])
def test_truncated_checkpoints_raise(fmt):
    data = saved(legacy_format=fmt == "legacy")
    step = max(1, len(data) // 97)
    for end in list(range(0, len(data), step)) + [len(data) - 1]:
        with pytest.raises(LOAD_ERRORS + (EOFError,)):
            ptl.load(io.BytesIO(data[:end]))
    assert ptl.load(io.BytesIO(data))["step"] == 3


def test_truncated_data_pkl_raises():
    whole = saved()
    zf = zipfile.ZipFile(io.BytesIO(whole))
    pkl_name = [n for n in zf.namelist() if n.endswith("data.pkl")][0]
    pkl = zf.read(pkl_name)
    for end in range(0, len(pkl) - 1, 7):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as out:
            for n in zf.namelist():
                out.writestr(n, pkl[:end] if n == pkl_name else zf.read(n))
        buf.seek(0)
        with pytest.raises(LOAD_ERRORS + (EOFError,)):
            ptl.load(buf)


# ---- zip bombs ----

def test_zip_bomb_record_is_refused_before_inflating(monkeypatch):
    monkeypatch.setattr(serialization, "MAX_INFLATION", 1 << 20)
    numel = (16 << 20) // 4
    f = archive(tensor_pickle(0, (numel,), (1,), numel=numel), {"0": bytes(16 << 20)},
                zipfile.ZIP_DEFLATED)
    assert len(f.getvalue()) < 1 << 20
    with pytest.raises(RuntimeError, match=r"storage '0' needs 16777216 bytes, more than the "
                                           r"\d+ left of max_bytes=\d+; pass a larger max_bytes"):
        ptl.load(f)
    f.seek(0)
    assert ptl.load(f, max_bytes=20 << 20).shape == (numel,)


def test_zip_bomb_pickle_is_refused(monkeypatch):
    monkeypatch.setattr(serialization, "MAX_INFLATION", 1 << 20)
    f = archive(b"\x80\x02N" + b"0N" * (2 << 20) + b".", compression=zipfile.ZIP_DEFLATED)
    with pytest.raises(RuntimeError, match=r"archive/data.pkl needs 4194308 bytes, more than"):
        ptl.load(f)


def test_record_is_read_only_as_far_as_declared():
    # 8 bytes declared, a large record: only the declared bytes are read
    f = archive(tensor_pickle(0, (2,), (1,)), {"0": b"\x00" * 8 + b"\x01" * (4 << 20)},
                zipfile.ZIP_DEFLATED)
    assert ptl.load(f, max_bytes=4096).tolist() == [0.0, 0.0]


# ---- pickle bombs ----

def test_memo_index_bomb_is_refused():
    # LONG_BINPUT 2**28: the C unpickler would size its memo table for 2**28 entries (4 GB)
    pkl = b"\x80\x02Nr" + (1 << 28).to_bytes(4, "little") + b"."
    for f in (archive(pkl), legacy(pkl)):
        with pytest.raises(pickle.UnpicklingError,
                           match=re.escape("invalid pickle: memo index 268435456 at opcode 2")):
            ptl.load(f)


def test_shared_reference_repr_bomb_is_cut():
    # a persistent id of 60,000 references to one 60,000-element list: its full repr would
    # be 20 GB; the error shows a bounded repr
    n = 60_000
    pkl = b"\x80\x02](" + b"N" * n + b"eq\x00(" + b"h\x00" * n + b"tQ."
    with pytest.raises(pickle.UnpicklingError, match="unsupported persistent id") as info:
        ptl.load(archive(pkl))
    assert len(str(info.value)) < 1000


def test_deep_nesting_raises():
    pkl = b"\x80\x02" + b"]" * 50_000 + b"a" * 49_999 + b"."
    got = None
    try:
        got = ptl.load(archive(pkl))
    except LOAD_ERRORS + (RecursionError, MemoryError):
        pass
    assert got is None or isinstance(got, list)


# ---- geometry ----

@pytest.mark.parametrize("offset, size, stride, numel, message", [
    (0, (2**62,), (0,), 2, "a tensor of size (4611686018427387904,) is 18446744073709551616 "
                           "bytes, more than max_bytes="),
    (0, (2**40, 2**40), (0, 0), 2, "a tensor of size (1099511627776, 1099511627776) is"),
    (1, (2**63 - 1,), (0,), 2, "a tensor of size (9223372036854775807,) is"),
    (0, (2,), (2**62,), 2, "Storage size calculation overflowed with sizes=[2] and strides="),
    (0, (5,), (1,), 2, "out of bounds of a storage of 8 bytes"),
    (3, (1,), (1,), 2, "out of bounds of a storage of 8 bytes"),
    (2**63, (1,), (1,), 2, "Overflow when unpacking long"),
    (0, (2,), (-1,), 2, "as_strided: Negative strides are not supported"),
    (-1, (2,), (1,), 2, "invalid tensor geometry: offset -1, size (2,)"),
    (0, (2, -1), (1, 1), 2, "invalid tensor geometry: offset 0, size (2, -1)"),
    (0, (2,), (1, 1), 2, "mismatch in length of strides and shape"),
], ids=["2**62-stride-0", "numel-overflow", "int64-max", "stride-overflow", "too-long",
        "offset-past-end", "offset-overflow", "negative-stride", "negative-offset",
        "negative-size", "rank-mismatch"])
def test_overflowing_geometry_is_refused(offset, size, stride, numel, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ptl.load(archive(tensor_pickle(offset, size, stride, numel)))


def test_expanded_tensor_within_max_bytes_loads():
    t = ptl.load(archive(tensor_pickle(0, (1000,), (0,))))
    assert t.shape == (1000,) and t.stride() == (0,)


@pytest.mark.parametrize("numel, message", [
    (4, "storage '0' holds 8 bytes, fewer than its 4 elements of float32 need"),
    (2**61, "storage '0' holds 8 bytes, fewer than its 2305843009213693952 elements"),
    (-1, "storage '0' holds 8 bytes, fewer than its -1 elements of float32 need"),
])
def test_storage_shorter_than_declared_is_refused(numel, message):
    with pytest.raises(RuntimeError, match=re.escape(message)):
        ptl.load(archive(tensor_pickle(0, (1,), (1,), numel)))


def test_legacy_storage_shorter_than_declared_is_refused():
    obj = REBUILD + b"(" + storage_id(4) + ops(0) + ops((4,)) + ops((1,)) + b"\x89tR."
    for count, data in [(4, b"\x00" * 8), (2**61, b"\x00" * 16), (3, b"\x00" * 16)]:
        with pytest.raises(RuntimeError, match="Invalid legacy checkpoint: storage '0' is "
                                               "truncated"):
            ptl.load(legacy(obj, [("0", count, data)]))


# ---- wrong types ----

def test_wrong_storage_types_are_refused():
    with pytest.raises(pickle.UnpicklingError, match="GLOBAL torch.ComplexHalfStorage"):
        ptl.load(archive(tensor_pickle(0, (2,), (1,), storage_type=b"ComplexHalfStorage")))
    pid = b"\x80\x02(X\x07\x00\x00\x00storageK\x07X\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x02tQ."
    with pytest.raises(pickle.UnpicklingError, match="unsupported storage type 7"):
        ptl.load(archive(pid))
    pid = b"\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nK\x00K\x00K\x02tQ."
    with pytest.raises(pickle.UnpicklingError, match="malformed storage id"):
        ptl.load(archive(pid))
    pid = b"\x80\x02(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000" \
          b"X\x03\x00\x00\x00cpuG@\x00\x00\x00\x00\x00\x00\x00tQ."
    with pytest.raises(TypeError, match="numel must be an int, but got float"):
        ptl.load(archive(pid))


def test_one_storage_with_two_dtypes_is_refused():
    obj = (b"\x80\x02(" + storage_id(2)[1:-1] + b"Q" + storage_id(2, b"LongStorage") + b"t.")
    with pytest.raises(RuntimeError, match="storage 0 is used with two different types"):
        ptl.load(legacy(obj, [("0", 2, b"\x00" * 8)]))


def test_rebuild_arguments_of_wrong_types_are_refused():
    for pkl, message in [
        (REBUILD + b"(K\x01K\x00))\x89tR.", "expected a storage, but got int"),
        (REBUILD + b"(" + storage_id(2) + b"G?\xf0\x00\x00\x00\x00\x00\x00))\x89tR.",
         "storage_offset must be an int, but got float"),
        (REBUILD + b"(" + storage_id(2) + b"K\x00X\x01\x00\x00\x00a)\x89tR.",
         "size must be a tuple of ints, but got str"),
    ]:
        with pytest.raises(TypeError, match=re.escape(message)):
            ptl.load(archive(pkl))
