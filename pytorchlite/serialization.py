"""Checkpoints (torch/serialization.py): save / load in PyTorch's file formats.

Note [Checkpoint format]
A checkpoint written by torch.save is an uncompressed zip archive whose records all sit under
one folder, `<archive>/`:

    data.pkl              the object, pickled with protocol 2
    .format_version       "1"
    .storage_alignment    "64"
    byteorder             "little"
    data/<key>            the raw bytes of one storage, one record per storage
    version               "3\\n"
    .data/serialization_id

Each record's bytes start at a multiple of 64 (padding sits in the local header's extra field).
In data.pkl a tensor is the call `torch._utils._rebuild_tensor_v2(storage, storage_offset,
size, stride, requires_grad, OrderedDict())` and a storage is the persistent id
`('storage', torch.<Dtype>Storage, key, location, numel)`, so two views of one storage name one
key and load as views of one storage.  Parameters wrap that call in
`torch._utils._rebuild_parameter(tensor, requires_grad, OrderedDict())`.

The legacy format (before PyTorch 1.6) is a stream of pickles instead: a magic number, the
protocol version, a dict of system facts, the object (persistent ids carry a sixth field,
view metadata), the sorted list of storage keys, then for each key an 8-byte element count and
the storage's bytes.  Storages are filled after the object is rebuilt, so tensors are made as
views first and see the bytes once they arrive.

A storage is represented here by a 1-D contiguous tensor over all of its elements; a tensor is
rebuilt as `as_strided` of it, which keeps sharing and checks every offset against its size.

Note [Weights-only loading]
load() defaults to weights_only=True: the unpickler resolves only the globals in a fixed
allowlist (tensor and parameter rebuilders, storage classes, dtypes, torch.Size, torch.device,
OrderedDict, set, frozenset, complex, and `_codecs.encode` for protocol-2 bytes) plus those the
user adds with add_safe_globals().  Any other GLOBAL (os.system, builtins.eval, a class whose
__reduce__ runs code) raises pickle.UnpicklingError before anything is called.  Every allowed
callable validates its arguments, so a crafted file gets an exception, never a crash.

Note [Checkpoint size limits]
A checkpoint must not make load() allocate far more than it holds.  Before anything is read:
- a storage record must hold the bytes its persistent id declares (numel * element size), and
  only those are read;
- everything read out of the archive (data.pkl and the storages), and every rebuilt tensor's
  numel * element size, must fit in `max_bytes`: by default the file's size plus 1 GiB
  (MAX_INFLATION), so a stored (uncompressed) checkpoint of any size loads, while a compressed
  record that inflates a few MB into GBs is refused with a RuntimeError naming `max_bytes`;
- each pickle is scanned (pickletools, nothing is built) before it is unpickled: a memo index
  may not exceed the number of opcodes before it (the C unpickler sizes its memo table by the
  largest index), and an error message shows at most a bounded repr of what the file holds.
torch.load has no such cap: it reads every record at its stated size (mmap=True maps instead)
and its weights-only unpickler keeps the memo in a dict.
"""
import _compat_pickle
import array
import collections
import io
import json
import os
import pickle
import pickletools
import reprlib
import struct
import sys
import zipfile
from contextlib import contextmanager

from . import _C, _layout
from ._size import Size
from ._tensor import Tensor, _rebuild_from_type_v2
from .autograd.grad_mode import no_grad

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "save_safetensors", "load_safetensors", "load_safetensors_metadata"]

# dtype name -> (storage class, safetensors code); ORDER: the 10 dtypes of c10/dtype.h
_DTYPES = {
    "bool": ("BoolStorage", "BOOL"),
    "uint8": ("ByteStorage", "U8"),
    "int8": ("CharStorage", "I8"),
    "int16": ("ShortStorage", "I16"),
    "int32": ("IntStorage", "I32"),
    "int64": ("LongStorage", "I64"),
    "float16": ("HalfStorage", "F16"),
    "bfloat16": ("BFloat16Storage", "BF16"),
    "float32": ("FloatStorage", "F32"),
    "float64": ("DoubleStorage", "F64"),
    "complex64": ("ComplexFloatStorage", "C64"),
    "complex128": ("ComplexDoubleStorage", None),   # safetensors has no 128-bit complex
}
_STORAGE_DTYPE = {storage: name for name, (storage, _) in _DTYPES.items()}
_SAFETENSORS_DTYPE = {code: name for name, (_, code) in _DTYPES.items() if code is not None}

_MAGIC_NUMBER = 0x1950a86a20f9469cfc6c
_PROTOCOL_VERSION = 1001
_ALIGNMENT = 64
_SAFETENSORS_MAX_HEADER = 100_000_000
MAX_INFLATION = 1 << 30
_INT64_MAX = (1 << 63) - 1


def _short_repr(obj):
    """repr() cut to a bounded size: a pickle can make an object whose repr is huge."""
    r = reprlib.Repr()
    r.maxlevel, r.maxstring, r.maxother = 3, 60, 60
    return r.repr(obj)


def _dtype_name(dtype):
    return str(dtype).split(".")[1]


def _dtype(name):
    return getattr(_C, name)


# ---------------------------------------------------------------------------------------------
# save

class _Global:
    """A stand-in that pickles as `GLOBAL module name`, whether or not that module exists here
    (torch's names are written without importing torch)."""

    def __init__(self, module, name):
        self.module, self.name = module, name

    def __call__(self, *args):
        raise RuntimeError(f"{self.module}.{self.name} is a pickling placeholder")


_GLOBALS = {}


def _global(module, name):
    key = (module, name)
    if key not in _GLOBALS:
        _GLOBALS[key] = _Global(module, name)
    return _GLOBALS[key]


class _StorageRef:
    """The storage under `tensor`, pickled as a persistent id."""

    def __init__(self, key, tensor):
        self.key, self.tensor = key, tensor


class _Pickler(pickle._Pickler):
    """Pickles pytorchlite tensors, parameters, dtypes, devices and sizes as the globals torch
    writes for its own (Note [Checkpoint format]).  The pure-Python pickler is used because
    only it lets a placeholder write a GLOBAL of a module that is not importable here."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol, legacy):
        super().__init__(file, protocol)
        self.legacy = legacy
        self.storages = {}      # storage pointer -> _StorageRef
        self.keep = []          # holds saved tensors so a pointer is not reused mid-save

    def write_global(self, obj, module, name):
        self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode("utf-8"))
        self.memoize(obj)

    def save_placeholder(self, obj):
        self.write_global(obj, obj.module, obj.name)

    def save_dtype(self, obj):
        self.write_global(obj, "torch", _dtype_name(obj))

    dispatch[_Global] = save_placeholder
    dispatch[_C.dtype] = save_dtype

    def persistent_id(self, obj):
        if not isinstance(obj, _StorageRef):
            return None
        t = obj.tensor
        storage = _global("torch", _DTYPES[_dtype_name(t.dtype)][0])
        location = str(t.device) if t.device.type != "cpu" else "cpu"
        numel = t._storage_nbytes() // t.element_size()
        if self.legacy:
            return ("storage", storage, obj.key, location, numel, None)
        return ("storage", storage, obj.key, location, numel)

    def storage_ref(self, t):
        ptr = t._storage_ptr()
        ref = self.storages.get(ptr)
        if ref is None or t._storage_nbytes() == 0:
            ref = _StorageRef(str(len(self.storages)), t)
            self.storages[ptr if t._storage_nbytes() else ("empty", ref.key)] = ref
        elif ref.tensor.dtype != t.dtype:
            raise RuntimeError("Cannot save multiple tensors or storages that view the same data "
                               "as different types")
        self.keep.append(t)
        return ref

    def reducer_override(self, obj):
        from .nn.parameter import Parameter
        if isinstance(obj, Parameter):
            return (_global("torch._utils", "_rebuild_parameter"),
                    (obj.detach(), obj.requires_grad, collections.OrderedDict()))
        if isinstance(obj, _C.TensorBase) and obj.is_sparse:
            t = obj.detach()
            return (_global("torch._utils", "_rebuild_sparse_tensor"),
                    (t.layout, (t._indices(), t._values(), Size(t.shape), t.is_coalesced())))
        if isinstance(obj, _layout.layout):
            return (_global("torch.serialization", "_get_layout"), ("torch." + obj._name,))
        if isinstance(obj, _C.TensorBase):
            t = obj.detach()
            args = (self.storage_ref(t), t.storage_offset(), tuple(t.shape), tuple(t.stride()),
                    obj.requires_grad, collections.OrderedDict())
            if t.is_conj():   # the storage keeps its bytes, the bit goes in PyTorch's metadata
                args += ({"conj": True},)
            rebuild = _global("torch._utils", "_rebuild_tensor_v2")
            if type(obj) is Tensor:
                return (rebuild, args)
            # a subclass: PyTorch's _rebuild_from_type_v2(func, type, args, state)
            state = getattr(obj, "__dict__", None)
            return (_global("torch._tensor", "_rebuild_from_type_v2"),
                    (rebuild, type(obj), args, dict(state) if state else None))
        if isinstance(obj, _C.device):
            return (_global("torch", "device"), (str(obj),))
        if isinstance(obj, Size):
            return (_global("torch", "Size"), (tuple(obj),))
        return NotImplemented


def _storage_bytes(t):
    """The bytes of the whole storage under t (not just t's elements)."""
    numel = t._storage_nbytes() // t.element_size()
    full = (t.conj() if t.is_conj() else t).as_strided((numel,), (1,), 0)   # memory, not values
    if full.device.type != "cpu":
        full = full.cpu()
    return _C._tensor_bytes(full)


@contextmanager
def _open(f, mode):
    """Yields a file object for a path or passes an open file-like object through."""
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(f, mode) as fh:
            yield fh
    else:
        yield f


def _archive_name(f):
    if isinstance(f, (str, os.PathLike)):
        name = os.path.splitext(os.path.basename(os.fspath(f)))[0]
        if name:
            return name
    return "archive"


def _write_record(zf, name, data):
    """Writes one stored record whose data starts at a multiple of _ALIGNMENT: the local header
    (30 bytes + name) is followed by an extra field ("FB", length, padding) that pads it."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_STORED
    start = zf.fp.tell() + 30 + len(name.encode("utf-8")) + 4
    pad = -start % _ALIGNMENT
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


def _save_zip(pickler_output, storages, f):
    root = _archive_name(f)
    with _open(f, "wb") as fh:
        with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED) as zf:
            _write_record(zf, f"{root}/data.pkl", pickler_output)
            _write_record(zf, f"{root}/.format_version", b"1")
            _write_record(zf, f"{root}/.storage_alignment", str(_ALIGNMENT).encode())
            _write_record(zf, f"{root}/byteorder", sys.byteorder.encode())
            for ref in storages:
                _write_record(zf, f"{root}/data/{ref.key}", _storage_bytes(ref.tensor))
            _write_record(zf, f"{root}/version", b"3\n")
            serial = int.from_bytes(os.urandom(16), "little") % 10**40
            _write_record(zf, f"{root}/.data/serialization_id", f"{serial:040d}".encode())


def _save_legacy(pickler_output, storages, f, protocol):
    sys_info = dict(protocol_version=_PROTOCOL_VERSION, little_endian=sys.byteorder == "little",
                    type_sizes=dict(short=2, int=4, long=4))
    with _open(f, "wb") as fh:
        pickle.dump(_MAGIC_NUMBER, fh, protocol=protocol)
        pickle.dump(_PROTOCOL_VERSION, fh, protocol=protocol)
        pickle.dump(sys_info, fh, protocol=protocol)
        fh.write(pickler_output)
        keys = sorted((ref.key for ref in storages), key=int)
        pickle.dump(keys, fh, protocol=protocol)
        by_key = {ref.key: ref.tensor for ref in storages}
        for key in keys:
            t = by_key[key]
            fh.write(struct.pack("<q", t._storage_nbytes() // t.element_size()))
            fh.write(_storage_bytes(t))


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=True,
         _disable_byteorder_record=False):
    """Saves obj to f (a path or a writable binary file) in PyTorch's checkpoint format
    (Note [Checkpoint format]); torch.load reads the result.  `_use_new_zipfile_serialization=
    False` writes the legacy format."""
    if pickle_module is not pickle:
        raise NotImplementedError("pytorchlite.save supports only the standard pickle module")
    buf = io.BytesIO()
    pickler = _Pickler(buf, pickle_protocol, legacy=not _use_new_zipfile_serialization)
    pickler.dump(obj)
    storages = sorted({id(r): r for r in pickler.storages.values()}.values(),
                      key=lambda r: int(r.key))
    if _use_new_zipfile_serialization:
        _save_zip(buf.getvalue(), storages, f)
    else:
        _save_legacy(buf.getvalue(), storages, f, pickle_protocol)


# ---------------------------------------------------------------------------------------------
# load

class _Storage:
    """A loaded storage: `tensor` is 1-D over its elements; a legacy view starts at `offset`."""

    def __init__(self, tensor, max_bytes, offset=0):
        self.tensor, self.max_bytes, self.offset = tensor, max_bytes, offset


def _check_int(name, value):
    if type(value) is not int and type(value) is not bool:
        raise TypeError(f"{name} must be an int, but got {type(value).__name__}")


def _check_ints(name, values):
    if not isinstance(values, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of ints, but got {type(values).__name__}")
    for v in values:
        _check_int(name, v)


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False,
                       backward_hooks=None, metadata=None):
    """A view of a loaded storage (torch._utils._rebuild_tensor_v2)."""
    if not isinstance(storage, _Storage):
        raise TypeError(f"expected a storage, but got {type(storage).__name__}")
    _check_int("storage_offset", storage_offset)
    _check_ints("size", size)
    _check_ints("stride", stride)
    if len(size) != len(stride):
        raise RuntimeError(f"mismatch in length of strides and shape: size has {len(size)} "
                           f"dimensions, stride has {len(stride)}")
    if storage_offset < 0 or any(s < 0 for s in size):
        raise RuntimeError(f"invalid tensor geometry: offset {storage_offset}, size {tuple(size)}")
    numel = 1
    for s in size:
        numel *= s
    nbytes = numel * storage.tensor.element_size()
    if nbytes > storage.max_bytes or nbytes > _INT64_MAX:
        raise RuntimeError(f"a tensor of size {_short_repr(tuple(size))} is {nbytes} bytes, more "
                           f"than max_bytes={storage.max_bytes} allows over a storage of "
                           f"{storage.tensor.numel()} elements (Note [Checkpoint size limits])")
    with no_grad():
        t = storage.tensor.as_strided(tuple(size), tuple(stride), storage.offset + storage_offset)
        if isinstance(metadata, dict) and metadata.get("conj"):
            t = t.conj()
    if requires_grad:
        t.requires_grad_(True)
    return t


def _get_layout(name):
    """torch.strided or torch.sparse_coo by its printed name (torch.serialization._get_layout)."""
    layouts = {"torch.strided": _layout.strided, "torch.sparse_coo": _layout.sparse_coo}
    if name not in layouts:
        raise RuntimeError(f"Unsupported layout: {name}")
    return layouts[name]


def _rebuild_sparse_tensor(layout, data):
    """A sparse COO tensor from (indices, values, size, is_coalesced)
    (torch._utils._rebuild_sparse_tensor)."""
    from . import sparse_coo, sparse_coo_tensor
    if layout is not sparse_coo:
        raise NotImplementedError(f"rebuilding sparse tensor for layout {layout}")
    indices, values, size, coalesced = data
    return sparse_coo_tensor(indices, values, size, is_coalesced=coalesced)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    from .nn.parameter import Parameter
    if not isinstance(data, _C.TensorBase):
        raise TypeError(f"expected a tensor, but got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    param = _rebuild_parameter(data, requires_grad)
    if isinstance(state, tuple) and len(state) == 2:
        state = state[0]
    if isinstance(state, dict):
        for k, v in state.items():
            if not isinstance(k, str) or k.startswith("__"):
                raise RuntimeError(f"invalid Parameter state key {_short_repr(k)}")
            setattr(param, k, v)
    return param


def _encode(text, encoding="utf-8"):
    """_codecs.encode as protocol 2 uses it for bytes: latin-1 text to bytes, nothing else."""
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1"):
        raise pickle.UnpicklingError("_codecs.encode is allowed only for latin1 byte strings")
    return text.encode("latin1")


def _make_device(*args):
    return _C.device(*args)


def _make_size(*args):
    return Size(*args)


def _allowed_globals():
    from .nn.parameter import Parameter
    table = {
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_sparse_tensor"): _rebuild_sparse_tensor,
        ("torch.serialization", "_get_layout"): _get_layout,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "Size"): _make_size,
        ("torch", "device"): _make_device,
        ("torch.nn.parameter", "Parameter"): Parameter,
        ("collections", "OrderedDict"): collections.OrderedDict,
        ("builtins", "set"): set,
        ("builtins", "frozenset"): frozenset,
        ("builtins", "complex"): complex,
        ("_codecs", "encode"): _encode,
    }
    for name, (storage, _) in _DTYPES.items():
        table[("torch", name)] = _dtype(name)
        table[("torch", storage)] = storage
    return table


_safe_globals = {}


def _global_name(obj):
    return f"{getattr(obj, '__module__', None)}.{getattr(obj, '__qualname__', None)}"


def add_safe_globals(safe_globals):
    """Allows weights-only load() to resolve these functions or classes (by module and
    qualified name), for files from a trusted source."""
    for obj in safe_globals:
        if isinstance(obj, tuple):
            obj, name = obj
            _safe_globals[name] = obj
        else:
            _safe_globals[_global_name(obj)] = obj


def get_safe_globals():
    return list(_safe_globals.values())


def clear_safe_globals():
    _safe_globals.clear()


@contextmanager
def safe_globals(globals_list):
    """Within the block, weights-only load() also resolves globals_list."""
    saved = dict(_safe_globals)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _safe_globals.clear()
        _safe_globals.update(saved)


_WEIGHTS_ONLY_MESSAGE = (
    "Weights only load failed. Re-running `pytorchlite.load` with `weights_only` set to `False` "
    "will likely succeed, but it can result in arbitrary code execution. Do it only if you got "
    "the file from a trusted source.\n\n")


def _unsupported_global(module, name):
    full = f"{module}.{name}"
    return pickle.UnpicklingError(
        _WEIGHTS_ONLY_MESSAGE + f"Unsupported global: GLOBAL {full} was not an allowed global by "
        f"default. Please use `pytorchlite.serialization.add_safe_globals([{full}])` or the "
        f"`pytorchlite.serialization.safe_globals([{full}])` context manager to allowlist this "
        "global if you trust this class/function.")


class _Unpickler(pickle.Unpickler):
    """Resolves torch's globals to pytorchlite's; with weights_only, refuses every global outside
    the allowlist (Note [Weights-only loading])."""

    def __init__(self, file, weights_only, load_storage, **kwargs):
        super().__init__(file, **kwargs)
        self.weights_only = weights_only
        self.load_storage = load_storage
        self.allowed = _allowed_globals()

    def find_class(self, module, name):
        # protocol 2 writes Python 2 names (__builtin__.set); map them back as pickle does
        if (module, name) in _compat_pickle.NAME_MAPPING:
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        module = _compat_pickle.IMPORT_MAPPING.get(module, module)
        found = self.allowed.get((module, name))
        if found is not None:
            return found
        found = _safe_globals.get(f"{module}.{name}")
        if found is not None:
            return found
        if self.weights_only:
            raise _unsupported_global(module, name)
        if module == "torch" or module.startswith("torch."):
            return _pytorchlite_global(module, name)
        return super().find_class(module, name)

    def persistent_load(self, pid):
        if not isinstance(pid, tuple) or len(pid) < 5 or pid[0] != "storage":
            raise pickle.UnpicklingError(f"unsupported persistent id {_short_repr(pid)}")
        storage_type, key, location, numel = pid[1:5]
        if not isinstance(storage_type, str) or storage_type not in _STORAGE_DTYPE:
            raise pickle.UnpicklingError(f"unsupported storage type {_short_repr(storage_type)}")
        if not isinstance(key, str) or not isinstance(location, str):
            raise pickle.UnpicklingError(f"malformed storage id {_short_repr(pid)}")
        _check_int("numel", numel)
        view = pid[5] if len(pid) > 5 else None
        return self.load_storage(_STORAGE_DTYPE[storage_type], key, location, numel, view)


def _pytorchlite_global(module, name):
    """The pytorchlite counterpart of torch's module.name, for whole objects (an nn.Module,
    an optimizer) pickled by PyTorch and loaded with weights_only=False: torch.nn.modules.
    linear.Linear is pytorchlite.nn.modules.linear.Linear."""
    import importlib
    ours = "pytorchlite" + module[len("torch"):]
    try:
        obj = importlib.import_module(ours)
        for part in name.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise pickle.UnpicklingError(f"{module}.{name} has no counterpart in pytorchlite "
                                     f"({ours}.{name}: {e})") from None
    return obj


def _restore_location(storage, location, map_location):
    """Moves a loaded storage (a 1-D tensor) where map_location says (torch's default_restore
    and map_location rules); only 'cpu' exists unless CUDA is available."""
    if callable(map_location) and not isinstance(map_location, (str, _C.device, dict)):
        result = map_location(storage, location)
        if result is not None:
            return result
        target = location
    elif isinstance(map_location, dict):
        target = map_location.get(location, location)
    elif map_location is None:
        target = location
    else:
        target = str(map_location)
    if isinstance(target, _C.device):
        target = str(target)
    if target.startswith("cuda"):
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but "
                "torch.cuda.is_available() is False. If you are running on a CPU-only machine, "
                "please use torch.load with map_location=torch.device('cpu') to map your "
                "storages to the CPU.")
    elif target != "cpu":
        raise RuntimeError(f"don't know how to restore data location of {location} "
                           f"(tagged with {target})")
    return storage if target == storage.device.type == "cpu" else storage.to(target)


def _swap_bytes(data, itemsize):
    codes = {2: "H", 4: "I", 8: "Q"}
    if itemsize not in codes:
        return data
    arr = array.array(codes[itemsize])
    arr.frombytes(data)
    arr.byteswap()
    return arr.tobytes()


_MEMO_OPS = ("PUT", "BINPUT", "LONG_BINPUT")


def _check_pickle(f):
    """Scans the pickle at f's position without building anything, and refuses a memo index
    beyond the opcodes before it (Note [Checkpoint size limits]); f is left where it was.  A
    pickle the scan cannot parse is left to the unpickler, whose error names the problem."""
    start = f.tell()
    try:
        for count, (op, arg, _) in enumerate(pickletools.genops(f)):
            if op.name in _MEMO_OPS and (not isinstance(arg, int) or arg > count):
                raise pickle.UnpicklingError(
                    f"invalid pickle: memo index {_short_repr(arg)} at opcode {count} (a "
                    "pickler numbers its memo entries in order)")
    except ValueError:
        pass
    finally:
        f.seek(start)


class _Budget:
    """The bytes load() may still read or view (Note [Checkpoint size limits])."""

    def __init__(self, max_bytes):
        self.max_bytes = self.left = max_bytes

    def take(self, nbytes, what):
        if nbytes > self.left:
            raise RuntimeError(
                f"{what} needs {nbytes} bytes, more than the {self.left} left of max_bytes="
                f"{self.max_bytes}; pass a larger max_bytes to load() if the checkpoint is "
                "trusted (Note [Checkpoint size limits])")
        self.left -= nbytes


def _read_record(zf, name, nbytes):
    """The first nbytes of a record: inflates no more than that, whatever the record holds."""
    with zf.open(name) as fh:
        data = fh.read(nbytes)
    if len(data) != nbytes:
        raise RuntimeError(f"PytorchStreamReader failed reading record {name}: it holds "
                           f"{len(data)} bytes, fewer than its header declares")
    return data


def _load_zip(zf, map_location, weights_only, pickle_load_args, budget):
    names = zf.namelist()
    pkl = [n for n in names if n.endswith("data.pkl") and n.count("/") == 1]
    if not pkl:
        raise RuntimeError("PytorchStreamReader failed locating file data.pkl: file not found")
    root = pkl[0][:-len("data.pkl")]
    byteorder = "little"
    if f"{root}byteorder" in names:
        byteorder = zf.read(f"{root}byteorder").decode("ascii", "replace")
        if byteorder not in ("little", "big"):
            raise RuntimeError(f"Unknown endianness type: {byteorder}")
    loaded = {}

    def load_storage(dtype_name, key, location, numel, view):
        if key in loaded:
            return loaded[key]
        name = f"{root}data/{key}"
        if name not in names:
            raise RuntimeError(f"PytorchStreamReader failed locating file {name}: file not found")
        dtype = _dtype(dtype_name)
        itemsize = dtype.itemsize
        size = zf.getinfo(name).file_size
        if numel < 0 or size < numel * itemsize:
            raise RuntimeError(f"storage {_short_repr(key)} holds {size} bytes, fewer than its "
                               f"{numel} elements of {dtype_name} need")
        budget.take(numel * itemsize, f"storage {_short_repr(key)}")
        data = _read_record(zf, name, numel * itemsize)
        if byteorder != sys.byteorder:
            data = _swap_bytes(data, itemsize)
        storage = _C._tensor_from_bytes(data, dtype, (numel,))
        loaded[key] = _Storage(_restore_location(storage, location, map_location),
                               budget.max_bytes)
        return loaded[key]

    size = zf.getinfo(pkl[0]).file_size
    budget.take(size, pkl[0])
    f = io.BytesIO(_read_record(zf, pkl[0], size))
    _check_pickle(f)
    return _Unpickler(f, weights_only, load_storage, **pickle_load_args).load()


class _Dummy:
    """Stands for every global in the first pass over a legacy pickle, which only collects the
    storages it names: nothing the file refers to is called."""

    def __new__(cls, *args, **kwargs):
        return object.__new__(cls)

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        return _Dummy()

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


class _ScanUnpickler(_Unpickler):
    def find_class(self, module, name):
        found = self.allowed.get((module, name))
        if isinstance(found, str):
            return found
        if self.weights_only:
            super().find_class(module, name)
        return _Dummy

    def persistent_load(self, pid):
        super().persistent_load(pid)
        return _Dummy()


def _load_legacy(data, map_location, weights_only, pickle_load_args, max_bytes):
    f = io.BytesIO(data)

    def header():
        _check_pickle(f)
        return _Unpickler(f, True, None, **pickle_load_args).load()

    try:
        magic = header()
    except Exception as e:
        raise RuntimeError("Invalid magic number; corrupt file?") from e
    if magic != _MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    protocol = header()
    if protocol != _PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {protocol}")
    sys_info = header()
    if not isinstance(sys_info, dict):
        raise RuntimeError("Invalid legacy checkpoint: malformed system info")
    little = sys_info.get("little_endian", True)

    # Pass 1 learns each storage's dtype and size (the bytes follow the object, and their
    # length depends on the dtype); pass 2 rebuilds the object over the filled storages.
    roots = {}

    def scan_storage(dtype_name, key, location, numel, view):
        if roots.setdefault(key, (dtype_name, location, numel)) != (dtype_name, location, numel):
            raise RuntimeError(f"storage {key} is used with two different types or sizes")
        if numel < 0:
            raise RuntimeError(f"invalid storage size {numel}")
    start = f.tell()
    _check_pickle(f)
    _ScanUnpickler(f, weights_only, scan_storage, **pickle_load_args).load()
    keys = header()
    if not isinstance(keys, list):
        raise RuntimeError("Invalid legacy checkpoint: malformed storage key list")
    storages = {}
    for key in keys:
        if key not in roots:
            raise RuntimeError(f"Invalid legacy checkpoint: unknown storage key {_short_repr(key)}")
        dtype_name, location, numel = roots[key]
        head = f.read(8)
        if len(head) != 8:
            raise RuntimeError("Invalid legacy checkpoint: truncated storage")
        (count,) = struct.unpack("<q", head)
        itemsize = _dtype(dtype_name).itemsize
        if count != numel or numel * itemsize > len(data) - f.tell():
            raise RuntimeError(f"Invalid legacy checkpoint: storage {_short_repr(key)} is truncated")
        raw = f.read(numel * itemsize)
        if len(raw) != numel * itemsize:
            raise RuntimeError(f"Invalid legacy checkpoint: storage {key} is truncated")
        if little != (sys.byteorder == "little"):
            raw = _swap_bytes(raw, itemsize)
        storage = _C._tensor_from_bytes(raw, _dtype(dtype_name), (numel,))
        storages[key] = _restore_location(storage, location, map_location)

    def load_storage(dtype_name, key, location, numel, view):
        if key not in storages:
            raise RuntimeError(f"Invalid legacy checkpoint: storage {_short_repr(key)} has no data")
        offset = 0
        if view is not None:
            if not (isinstance(view, tuple) and len(view) == 3):
                raise RuntimeError(f"malformed view metadata {_short_repr(view)}")
            offset = view[1]
            _check_int("view offset", offset)
        return _Storage(storages[key], max_bytes, offset)
    f.seek(start)
    return _Unpickler(f, weights_only, load_storage, **pickle_load_args).load()


def _is_zip(fh):
    pos = fh.tell()
    head = fh.read(4)
    fh.seek(pos)
    return head == b"PK\x03\x04" or head == b"PK\x05\x06"


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         max_bytes=None, **pickle_load_args):
    """Loads an object saved by torch.save or pytorchlite.save (zip or legacy format) from a
    path or a readable, seekable binary file.  weights_only (default True) refuses any global
    outside the allowlist (Note [Weights-only loading]); pass False only for trusted files.
    map_location: a device or its name, a dict from saved to wanted location, or a callable
    (storage, location) -> storage or None.  mmap is accepted and the file is read instead.
    max_bytes caps what loading reads and views (Note [Checkpoint size limits]); the default
    is the file's size plus MAX_INFLATION (1 GiB)."""
    if pickle_module is not None and pickle_module is not pickle:
        raise NotImplementedError("pytorchlite.load supports only the standard pickle module")
    if weights_only is None:
        weights_only = True
    pickle_load_args.setdefault("encoding", "utf-8")
    with _open(f, "rb") as fh:
        if max_bytes is None:
            pos = fh.tell()
            max_bytes = fh.seek(0, os.SEEK_END) - pos + MAX_INFLATION
            fh.seek(pos)
        if _is_zip(fh):
            try:
                zf = zipfile.ZipFile(fh)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
                raise RuntimeError(f"PytorchStreamReader failed reading zip archive: {e}. The "
                                   "checkpoint file is likely corrupted or truncated.") from e
            with zf:
                try:
                    return _load_zip(zf, map_location, weights_only, pickle_load_args,
                                     _Budget(max_bytes))
                except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as e:
                    raise RuntimeError(f"PytorchStreamReader failed reading record: {e}. The "
                                       "checkpoint file is likely corrupted.") from e
        data = fh.read()
        return _load_legacy(data, map_location, weights_only, pickle_load_args, max_bytes)


# ---------------------------------------------------------------------------------------------
# safetensors

def save_safetensors(tensors, path, metadata=None):
    """Writes {name: tensor} in the safetensors format: an 8-byte little-endian header length,
    a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {str: str}} padded with
    spaces to a multiple of 8, then the tensors' bytes back to back (largest alignment first,
    then by name, as the reference writer orders them)."""
    if not isinstance(tensors, dict):
        raise TypeError(f"tensors must be a dict, but got {type(tensors).__name__}")
    header = {}
    if metadata is not None:
        if not isinstance(metadata, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("metadata must be a dict of str to str")
        header["__metadata__"] = dict(metadata)
    for name, t in tensors.items():
        if not isinstance(name, str):
            raise TypeError(f"tensor names must be str, but got {type(name).__name__}")
        if name == "__metadata__":
            raise ValueError("'__metadata__' is reserved and cannot name a tensor")
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"tensors[{name!r}] must be a tensor, but got {type(t).__name__}")
    order = sorted(tensors, key=lambda n: (-tensors[n].element_size(), n))
    chunks, offset = [], 0
    for name in order:
        t = tensors[name].detach()
        if _DTYPES[_dtype_name(t.dtype)][1] is None:
            raise TypeError(f"tensors[{name!r}]: safetensors has no dtype for {t.dtype}")
        data = _C._tensor_bytes(t if t.device.type == "cpu" else t.cpu())
        header[name] = {"dtype": _DTYPES[_dtype_name(t.dtype)][1], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with _open(path, "wb") as fh:
        fh.write(struct.pack("<Q", len(text)))
        fh.write(text)
        for chunk in chunks:
            fh.write(chunk)


def _read_safetensors(path):
    with _open(path, "rb") as fh:
        blob = fh.read()
    if len(blob) < 8:
        raise ValueError("invalid safetensors file: shorter than its 8-byte header length")
    (n,) = struct.unpack("<Q", blob[:8])
    if n > _SAFETENSORS_MAX_HEADER:
        raise ValueError(f"invalid safetensors file: header of {n} bytes is too large")
    if 8 + n > len(blob):
        raise ValueError("invalid safetensors file: header length exceeds the file size")
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"invalid safetensors file: header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise ValueError("invalid safetensors file: header is not a JSON object")
    metadata = header.pop("__metadata__", None)
    if metadata is not None and not (isinstance(metadata, dict) and all(
            isinstance(v, str) for v in metadata.values())):
        raise ValueError("invalid safetensors file: __metadata__ must map str to str")
    return blob, 8 + n, header, metadata


def _check_safetensors_entry(name, info, size):
    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise ValueError(f"invalid safetensors file: entry {name!r} needs exactly dtype, shape "
                         "and data_offsets")
    dtype_name = _SAFETENSORS_DTYPE.get(info["dtype"])
    if dtype_name is None:
        raise ValueError(f"invalid safetensors file: unsupported dtype {info['dtype']!r} "
                         f"of {name!r}")
    shape, offsets = info["shape"], info["data_offsets"]
    if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
        raise ValueError(f"invalid safetensors file: bad shape of {name!r}")
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(type(o) is int for o in offsets) and 0 <= offsets[0] <= offsets[1] <= size):
        raise ValueError(f"invalid safetensors file: bad data_offsets of {name!r}")
    numel = 1
    for d in shape:
        numel *= d
    if numel * _dtype(dtype_name).itemsize != offsets[1] - offsets[0]:
        raise ValueError(f"invalid safetensors file: data_offsets of {name!r} do not match "
                         "its dtype and shape")
    return dtype_name, tuple(shape), offsets


def load_safetensors(path):
    """Reads a safetensors file into {name: tensor}, in the order of their data.  The header is
    validated as the format requires: known dtypes, offsets matching dtype and shape, and the
    tensors covering the data area exactly, without holes or overlaps."""
    blob, base, header, _ = _read_safetensors(path)
    size = len(blob) - base
    entries = sorted(((_check_safetensors_entry(name, info, size), name)
                      for name, info in header.items()), key=lambda e: e[0][2])
    end = 0
    for (_, _, offsets), name in entries:
        if offsets[0] != end:
            raise ValueError(f"invalid safetensors file: the data of {name!r} does not start "
                             "where the previous tensor's ends")
        end = offsets[1]
    if end != size:
        raise ValueError("invalid safetensors file: the tensors do not cover the data area")
    out = {}
    for (dtype_name, shape, (lo, hi)), name in entries:
        out[name] = _C._tensor_from_bytes(blob[base + lo:base + hi], _dtype(dtype_name), shape)
    return out


def load_safetensors_metadata(path):
    """The __metadata__ dict of a safetensors file (None when it has none)."""
    return _read_safetensors(path)[3]
