"""pytorchlite.Tensor: the Python half of the tensor type (torch/_tensor.py).

The C half, _C.TensorBase, holds the TensorImpl and every schema-driven method; this class
adds what is clearer in Python: printing, conversions, NumPy/DLPack interop, pickling."""
import math
import warnings

from . import _C
from . import _layout, _reductions, _tensor_types, storage
from . import overrides as _overrides
from ._functions import _in_place
from ._size import Size

# looked up once: _C._op scans every operator's name (x.float() of 1e6 values took 1.2x as
# long through a lookup at each call)
_to_copy = _C._op("aten::_to_copy")


def _rebuild_tensor(data, dtype_name, shape, requires_grad, device="cpu",
                    memory_format="contiguous_format"):
    """Unpickles a tensor: `data` holds its elements row-major (see Tensor.__reduce_ex__), and
    a channels-last tensor comes back channels last."""
    t = _C._tensor_from_bytes(data, getattr(_C, dtype_name), shape)
    if memory_format != "contiguous_format":
        t = t.contiguous(memory_format=getattr(_C, memory_format))
    if device != "cpu":
        t = t.to(device)
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_from_type_v2(func, new_type, args, state):
    """A pickled Tensor subclass (torch._tensor._rebuild_from_type_v2): func(*args) as
    new_type (as_subclass), its attributes restored from state (a dict, or PyTorch's
    (dict, slots) pair, or None), through new_type.__setstate__ when it defines one."""
    ret = func(*args)
    if type(ret) is not new_type:
        ret = ret.as_subclass(new_type)
    if getattr(new_type, "__setstate__", None) is not None:
        ret.__setstate__(state)
        return ret
    attrs, slots = state if isinstance(state, tuple) else (state, None)
    for mapping in (attrs, slots):
        for name, value in (mapping or {}).items():
            setattr(ret, name, value)
    return ret


def _rebuild_meta_tensor(dtype_name, shape, stride, requires_grad):
    """Unpickles a meta tensor: its geometry alone (see Tensor.__reduce_ex__)."""
    t = _C._op("aten::empty_strided")(list(shape), list(stride), dtype=getattr(_C, dtype_name),
                                      device="meta")
    if requires_grad:
        t.requires_grad_(True)
    return t


def _rebuild_sparse_tensor(indices, values, shape, coalesced, requires_grad):
    """Unpickles a sparse COO tensor (see Tensor.__reduce_ex__)."""
    from . import sparse_coo_tensor
    return sparse_coo_tensor(indices, values, shape, is_coalesced=coalesced,
                             requires_grad=requires_grad)


_DL_CPU, _DL_CUDA = 1, 2   # DLDeviceType codes


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing memory with ext_tensor: an object with __dlpack__ (a NumPy array, a
    torch or pytorchlite tensor) or a DLPack capsule, consumed once.  copy=True asks for a copy
    (made here when the producer cannot); device moves the result, which needs copy not
    False when it is another device than ext_tensor's."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is "
                                 "already a DLPack capsule.")
        return _C._from_dlpack(ext_tensor)
    source = tuple(ext_tensor.__dlpack_device__())
    kwargs = {"stream": 1} if source[0] == _DL_CUDA else {}
    move = False
    if device is not None:
        device = _C.device(device)
        target = (_DL_CUDA, device.index or 0) if device.type == "cuda" else (_DL_CPU, 0)
        move = target != source
        if move and copy is False:
            raise ValueError(f"cannot move DLPack tensor from device {source} to {target} "
                             "without copying. Set copy=None or copy=True.")
    # newest protocol first: DLPack 1.0 with copy, then without max_version, then without copy
    tries = [dict(kwargs, max_version=(1, 0)), dict(kwargs)]
    if copy is not None:
        tries = [dict(t, copy=copy) for t in tries] + [dict(kwargs)]
    for i, kw in enumerate(tries):
        try:
            capsule = ext_tensor.__dlpack__(**kw)
            break
        except TypeError:
            if i == len(tries) - 1:
                raise
    out = _C._from_dlpack(capsule)
    if copy and "copy" not in kw and not move:
        out = out.clone()
    return out.to(device) if move else out


_nowrap = None


def _nowrap_functions():
    global _nowrap
    if _nowrap is None:
        _nowrap = _overrides.get_default_nowrap_functions()
    return _nowrap


_WRAPPER_ARGS = ("cls", "size", "strides", "storage_offset", "memory_format", "dtype", "layout",
                 "device", "pin_memory", "requires_grad", "dispatch_sizes_strides_policy",
                 "dispatch_device", "dispatch_layout")


def _wrapper_arguments(args, kwargs):
    """_make_wrapper_subclass's arguments by name (None for the ones not given), with
    PyTorch's errors for too many, unknown and missing ones."""
    if len(args) > len(_WRAPPER_ARGS):
        raise TypeError(f"_make_wrapper_subclass() takes at most {len(_WRAPPER_ARGS)} "
                        f"arguments ({len(args)} given)")
    bound = dict(zip(_WRAPPER_ARGS, args))
    for name, value in kwargs.items():
        if name not in _WRAPPER_ARGS:
            raise TypeError(f"_make_wrapper_subclass() got an unexpected keyword argument "
                            f"'{name}'")
        bound[name] = value
    missing = [n for n in ("cls", "size") if n not in bound]
    if missing:
        names = ", ".join(f'"{n}"' for n in missing)
        raise TypeError(f"_make_wrapper_subclass() missing {len(missing)} required positional "
                        f"arguments: {names}")
    return {n: bound.get(n) for n in _WRAPPER_ARGS}


class Tensor(_C.TensorBase):
    __slots__ = ("__weakref__",)   # retain_grad and hooks refer to tensors weakly
    __array_priority__ = 1000   # NumPy defers to our reflected operators

    def __new__(cls, *args, **kwargs):
        """The legacy constructor: Tensor(), Tensor(*sizes), Tensor(size), Tensor(data),
        Tensor(other), in the default dtype (pytorchlite._tensor_types.legacy_new)."""
        t = _tensor_types.legacy_new(_C.get_default_dtype(), _C.device("cpu"), args, kwargs,
                                     check_other=False)
        return t if cls is Tensor else Tensor._make_subclass(cls, t, t.requires_grad)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """The default every subclass inherits (Note [Torch function]): func(*args, **kwargs)
        with subclass handling off, its tensors returned as cls (but for the functions of
        overrides.get_default_nowrap_functions()); NotImplemented when a type of `types` is
        not a base of cls."""
        if kwargs is None:
            kwargs = {}
        if not all(issubclass(cls, t) for t in types):
            return NotImplemented
        with _C.DisableTorchFunctionSubclass():
            ret = func(*args, **kwargs)
            if func in _nowrap_functions():
                return ret
            return _overrides._convert(ret, cls)

    def __init_subclass__(cls, **kwargs):
        """A subclass that defines __torch_dispatch__ but not __torch_function__ gets
        __torch_function__ = _C._disabled_torch_function_impl, as PyTorch's _TensorMeta
        gives it: its calls go straight to the dispatcher, where its objects' Python key
        brings them to __torch_dispatch__ (Note [Python tensors])."""
        super().__init_subclass__(**kwargs)
        if "__torch_dispatch__" in cls.__dict__:
            from .utils import _python_dispatch  # noqa: F401 (registers the key's handler)
            if "__torch_function__" not in cls.__dict__:
                cls.__torch_function__ = _C._disabled_torch_function_impl

    @staticmethod
    def _make_wrapper_subclass(*args, **kwargs):
        """_make_wrapper_subclass(cls, size, strides=None, storage_offset=None,
        memory_format=None, dtype=None, layout=torch.strided, device=None, pin_memory=False,
        requires_grad=False, dispatch_sizes_strides_policy=None, dispatch_device=False,
        dispatch_layout=False): a tensor of type cls (which must define __torch_dispatch__)
        with this metadata and no data, every operator on it going to cls's
        __torch_dispatch__ (Note [Python tensors] in src/python/python_dispatch.c)."""
        a = _wrapper_arguments(args, kwargs)
        cls = a["cls"]
        if not isinstance(cls, type) or not issubclass(cls, _C.TensorBase):
            raise TypeError("Creating a Tensor subclass from a class that does not inherit from "
                            "Tensor is not possible. Make sure your class inherits from Tensor.")
        if getattr(cls, "__torch_dispatch__", None) is None:
            raise TypeError(f"{cls.__name__} must define __torch_dispatch__")
        for name in ("dispatch_sizes_strides_policy", "dispatch_device", "dispatch_layout"):
            if a[name]:
                raise NotImplementedError(f"_make_wrapper_subclass({name}=...): pytorchlite's "
                                          "wrapper tensors report their own metadata")
        if a["layout"] not in (None, _layout.strided):
            raise NotImplementedError("_make_wrapper_subclass: only the strided layout")
        if a["memory_format"] not in (None, _C.contiguous_format):
            raise NotImplementedError("_make_wrapper_subclass: give strides instead of a "
                                      "memory_format other than torch.contiguous_format")
        device = a["device"]
        device = _C.device("cpu") if device is None else _C.device(device)
        dtype = _C.get_default_dtype() if a["dtype"] is None else a["dtype"]
        return _C._make_wrapper_subclass(cls, a["size"], a["strides"], a["storage_offset"] or 0,
                                         dtype, device, bool(a["requires_grad"]))

    def new(self, *args, **kwargs):
        """The legacy constructor in self's dtype and device (see Tensor.__new__)."""
        return _tensor_types.legacy_new(self.dtype, self.device, args, kwargs,
                                        check_other=True)

    # ---- printing ----
    def __repr__(self, *, tensor_contents=None):
        from ._tensor_str import _str
        return _str(self, tensor_contents=tensor_contents)

    def __format__(self, spec):
        """A 0-dim Tensor formats as its number (f"{t}" == "0.5"), as in PyTorch; other
        tensors and subclasses as their repr."""
        if self.dim() == 0 and type(self) is Tensor and not self.is_meta:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # ---- autograd ----
    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulates d self / d leaf into each leaf's .grad (see autograd.backward)."""
        from .autograd import backward
        backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """hook(grad) -> None or a new grad, run when self's gradient is computed."""
        from .autograd import _hooks
        return _hooks.register_hook(self, hook)

    def register_post_accumulate_grad_hook(self, hook):
        """hook(self), run after backward updated this leaf's .grad."""
        from .autograd import _hooks
        return _hooks.register_post_accumulate_grad_hook(self, hook)

    def retain_grad(self):
        """Populates .grad of this non-leaf tensor during backward."""
        from .autograd import _hooks
        _hooks.retain_grad(self)

    @property
    def retains_grad(self):
        return _C._retains_grad(self)

    def _is_view(self):
        """Whether self is a view of another tensor (its _base)."""
        return self._base is not None

    # ---- Python protocols ----
    def __dir__(self):
        """The attribute names (a function here only so that dir() reaches
        __torch_function__, as PyTorch's)."""
        return object.__dir__(self)

    def __iter__(self):
        """The rows, unbind(0) as PyTorch's (not itself routed: its dim() and unbind are)."""
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __contains__(self, element):
        if isinstance(element, (Tensor, int, float, bool)):
            return bool((self == element).any().item())
        raise RuntimeError(
            f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}.")

    def __complex__(self):
        """complex(t) of a one-element tensor of any dtype (Python's complex() would otherwise
        take float(t) and drop a complex tensor's imaginary part)."""
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return complex(self.item())

    def __reversed__(self):
        if self.dim() == 0:
            return self
        return self.flip(0) if hasattr(self, "flip") else Tensor._stack_rev(self)

    @staticmethod
    def _stack_rev(t):
        from . import stack
        return stack(list(t.unbind(0))[::-1])

    __rdiv__ = _C.TensorBase.__rtruediv__   # PyTorch's name for 2 / x (__torch_function__ sees it)

    def __rpow__(self, other):
        from . import pow as _pow
        return _pow(other, self)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        return _reductions.nanmean(self, dim, keepdim, dtype=dtype)

    def cov(self, *, correction=1, fweights=None, aweights=None):
        return _reductions.cov(self, correction=correction, fweights=fweights,
                               aweights=aweights)

    def corrcoef(self):
        return _reductions.corrcoef(self)

    def clamp_min_(self, min):
        return self.clamp_(min=min)

    def clamp_max_(self, max):
        return self.clamp_(max=max)

    # cumsum_ and cumprod_ are the composites' results copied into self (see _in_place).
    cumsum_ = _in_place(_C.TensorBase.cumsum)
    cumprod_ = _in_place(_C.TensorBase.cumprod)

    def fill_diagonal_(self, fill_value, wrap=False):
        """Fills the main diagonal (self[i, i, ..., i]) with fill_value; with wrap, a tall
        2-D tensor's diagonal restarts every ncols + 1 rows, as numpy.fill_diagonal's does.
        at::native::fill_diagonal_, including its strides."""
        if self.dim() < 2:
            raise RuntimeError("dimensions must larger than 1")
        height, width = self.shape[0], self.shape[1]
        if self.dim() > 2 and any(d != height for d in self.shape):
            raise RuntimeError("all dimensions of input must be of equal length")
        step = sum(self.stride())
        size = min(height, width)
        self.as_strided((size,), (step,), self.storage_offset()).fill_(fill_value)
        if wrap and self.dim() == 2 and height > width + 1:
            wrap_size = (self.numel() + width) // (width + 1) - size
            offset = self.storage_offset() + self.stride(0) * (width + 1)
            self.as_strided((wrap_size,), (step,), offset).fill_(fill_value)
        return self

    def polygamma(self, n):
        """polygamma(n, self): the method's argument order differs from the schema's."""
        return _C._functions["polygamma"](n, self)

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        new = self.clone()
        if self.requires_grad:
            new.requires_grad_(True)
        memo[id(self)] = new
        return new

    def __reduce_ex__(self, proto):
        rebuild, args = self._reduce_values()
        if type(self) is Tensor:
            return rebuild, args
        # a subclass comes back as its type, with its attributes (as PyTorch's
        # _rebuild_from_type_v2)
        state = getattr(self, "__dict__", None)
        return _rebuild_from_type_v2, (rebuild, type(self), args, dict(state) if state else None)

    def _reduce_values(self):
        info = self._sparse_info()
        if info is not None:
            return (_rebuild_sparse_tensor, (self._indices().detach(), self._values().detach(),
                                             tuple(self.shape), info[3], self.requires_grad))
        if self.device.type == "meta":   # sizes and strides, no bytes (as PyTorch)
            return (_rebuild_meta_tensor, (str(self.dtype).split(".")[1], tuple(self.shape),
                                           self.stride(), self.requires_grad))
        src = self if self.device.type == "cpu" else self.cpu()
        args = (_C._tensor_bytes(src), str(self.dtype).split(".")[1], tuple(self.shape),
                self.requires_grad)
        fmt = _C._suggest_memory_format(self)
        if fmt is not _C.contiguous_format and self.is_contiguous(memory_format=fmt):
            args += (str(self.device), str(fmt).split(".")[1])
        elif self.device.type != "cpu":
            args += (str(self.device),)
        return (_rebuild_tensor, args)

    # ---- shared and pinned memory ----
    def share_memory_(self):
        """Moves the storage into shared memory, in place (a no-op when it already is there,
        or for CUDA tensors).  Views on the storage follow.  See Note [Shared memory lifetime]
        in src/c10/storage_shm.c."""
        if self._sparse_info() is not None:
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        self._check_has_data()
        if self.device.type == "cpu":
            _C._share_memory_(self)
        return self

    def is_shared(self):
        """True when the storage lives in shared memory (CUDA tensors count as shared)."""
        return self.device.type != "cpu" or _C._is_shared(self)

    def pin_memory(self, device=None):
        """A copy in page-locked host memory from the pinned host allocator (self when it is
        pinned already), so that a copy to the device with non_blocking=True is
        asynchronous.  Without an accelerator PyTorch raises, and so do we."""
        from . import cuda
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.pin_memory() is deprecated. Please "
                          "do not pass this argument.", DeprecationWarning, stacklevel=2)
            if _C.device(device).type != "cuda":
                raise RuntimeError(f"{_C.device(device).type.upper()} device type not an "
                                   "accelerator.")
        if not cuda.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        if self.device.type != "cpu" or self._sparse_info() is not None:
            raise RuntimeError(f"cannot pin '{self.type()}' only dense CPU tensors can be "
                               "pinned")
        if _C._is_pinned(self):
            return self
        return _C._op("aten::_pin_memory")(self)

    def is_pinned(self, device=None):
        """True when the tensor's memory is pinned host memory (Tensor.pin_memory)."""
        if device is not None:
            warnings.warn("The argument 'device' of Tensor.is_pinned() is deprecated. Please "
                          "do not pass this argument.", DeprecationWarning, stacklevel=2)
        return self.device.type == "cpu" and self._sparse_info() is None and _C._is_pinned(self)

    def record_stream(self, stream):
        """Marks the tensor's memory as used by the work queued on stream, so the caching
        allocator does not reuse it, once freed, before that work is done."""
        from .cuda import memory, streams
        if not isinstance(stream, streams.Stream):
            raise RuntimeError("unknown parameter type")
        if self.device.type != "cuda":
            raise NotImplementedError("Could not run 'aten::record_stream' with arguments from "
                                      f"the '{self.device.type.upper()}' backend.")
        memory._allocator(self.device.index, init=True).record_stream(
            self.untyped_storage().data_ptr(), stream.cuda_stream)

    # ---- device, layout and dtype flags ----
    @property
    def is_cpu(self):
        return self.device.type == "cpu"

    @property
    def is_meta(self):
        return self.device.type == "meta"

    # backends, layouts and encodings pytorchlite does not have: tensors here are dense,
    # strided and on the CPU, CUDA or meta
    is_xpu = is_mps = is_ipu = is_maia = is_mtia = is_vulkan = is_xla = property(
        lambda self: False)
    is_sparse_csr = is_mkldnn = is_quantized = is_nested = property(lambda self: False)

    @property
    def is_sparse(self):
        return self._sparse_info() is not None

    def is_complex(self):
        return self.dtype.is_complex

    @property
    def real(self):
        return _C._functions["real"](self)

    @property
    def imag(self):
        return _C._functions["imag"](self)

    def is_neg(self):
        return False

    def resolve_conj(self):
        """A new tensor holding this conj view's values (conj(x) of its base x, computed),
        else self (Note [Conjugate views] in src/aten/native/conjugate.c)."""
        return _C._functions["conj_physical"](self.conj()) if self.is_conj() else self

    # No tensor carries a lazy negative bit, so resolving one is self.
    def resolve_neg(self):
        return self

    def is_distributed(self):
        return False

    def is_signed(self):
        return self.dtype.is_signed

    def is_nonzero(self):
        """Whether the single element is nonzero (bool() of a one-element tensor)."""
        return bool(self)

    def is_same_size(self, other):
        return self.shape == other.shape

    def is_set_to(self, tensor):
        """Whether both tensors lie on one storage with the same offset, sizes and strides."""
        return (self.untyped_storage()._cdata == tensor.untyped_storage()._cdata
                and self.storage_offset() == tensor.storage_offset()
                and self.shape == tensor.shape and self.stride() == tensor.stride())

    # ---- storage ----
    @property
    def layout(self):
        return _layout.strided if self._sparse_info() is None else _layout.sparse_coo

    def untyped_storage(self):
        """The storage under this tensor: one for a tensor and all its views."""
        if self._sparse_info() is not None:
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        self._check_has_data()
        return storage.UntypedStorage._of(self)

    def _check_has_data(self):
        """PyTorch's error for the memory of a wrapper subclass's tensor, which has none
        (Note [Python tensors])."""
        if (self.numel() and not self._storage_nbytes()
                and getattr(type(self), "__torch_dispatch__", None) is not None):
            raise RuntimeError("The tensor has a non-zero number of elements, but its data is "
                               "not allocated yet.")

    def storage(self):
        """The storage as elements of this tensor's dtype (deprecated: untyped_storage())."""
        if self._sparse_info() is not None:
            raise NotImplementedError("Cannot access storage of SparseTensorImpl")
        storage._warn_typed_storage_removal()
        return storage.TypedStorage(wrap_storage=self.untyped_storage(), dtype=self.dtype)

    def set_(self, source=None, storage_offset=None, size=None, stride=None):
        """Makes this tensor view `source` (a tensor, a storage, or nothing: an empty
        storage) with the given geometry; an in-place op."""
        if source is None:
            if (storage_offset, size, stride) != (None, None, None):
                raise TypeError("set_(): storage_offset, size and stride need a source")
            return _C._set_storage(self, None, 0, (0,), None)
        if isinstance(source, Tensor):
            if (storage_offset, size, stride) != (None, None, None):
                raise TypeError("set_(): a Tensor source takes no storage_offset, size or "
                                "stride")
            return _C.TensorBase.set_(self, source)
        if isinstance(source, storage.TypedStorage):
            source = source.untyped()
        if not isinstance(source, storage.UntypedStorage):
            raise TypeError(f"set_(): expected a Tensor or a storage as source, got "
                            f"{type(source).__name__}")
        if size is None:
            if storage_offset is not None or stride is not None:
                raise TypeError("set_(): storage_offset and stride need a size")
            return _C._set_storage(self, source, 0,
                                   (source.nbytes() // self.element_size(),), None)
        return _C._set_storage(self, source, 0 if storage_offset is None else storage_offset,
                               tuple(size), None if stride is None else tuple(stride))

    def resize_(self, *size, memory_format=None):
        """Gives this tensor the sizes `size` with contiguous strides (channels-last ones with
        memory_format=torch.channels_last), growing its storage when the elements do not fit;
        the same sizes leave it as it is.  An in-place op that no tensor requiring grad may
        take, in grad mode or not (aten::resize_ under the Autograd key checks the same)."""
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        return _C.TensorBase.resize_(self, *size, memory_format=memory_format)

    def resize(self, *sizes):
        """Deprecated out-of-place resize: self's elements in the shape `sizes` (their count
        must not change), a view when self is contiguous."""
        warnings.warn("non-inplace resize is deprecated", stacklevel=2)
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        count = math.prod(sizes)
        if count != self.numel():
            shape = "x".join(str(n) for n in self.shape)
            raise RuntimeError(
                f"requested resize to {'x'.join(str(n) for n in sizes)} ({count} elements in "
                f"total), but the given tensor has a size of {shape} ({self.numel()} "
                "elements). autograd's resize can only change the shape of a given tensor, "
                "while preserving the number of elements. ")
        return self.contiguous().view(sizes)

    def resize_as(self, tensor):
        """Deprecated out-of-place resize_as: resize to tensor's shape."""
        warnings.warn("non-inplace resize_as is deprecated", stacklevel=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return self.resize(tuple(tensor.shape))

    def resize_as_(self, the_template, *, memory_format=None):
        """resize_ to the sizes of `the_template`."""
        if self.requires_grad:
            raise RuntimeError("cannot resize variables that require grad")
        return _C.TensorBase.resize_as_(self, the_template, memory_format=memory_format)

    # ---- in-place view ops: self takes the geometry of the view op's result ----
    def _take_geometry(self, name, view):
        """Gives self view's sizes, strides and offset on their shared storage: an in-place op
        (through _set_storage, which also refuses a leaf that requires grad).  PyTorch rewrites
        the history of a non-leaf in the graph instead, which nothing here does yet."""
        if self.requires_grad and not self.is_leaf and _C.is_grad_enabled():
            raise RuntimeError(f"{name}(): in-place view ops on a tensor that is part of an "
                               f"autograd graph are not supported; use the out-of-place "
                               f"{name[:-1]}() or call it under torch.no_grad()")
        return _C._set_storage(self, self.untyped_storage(), view.storage_offset(),
                               tuple(view.shape), view.stride())

    def squeeze_(self, dim=None):
        return self._take_geometry("squeeze_", self.squeeze() if dim is None else
                                   self.squeeze(dim))

    def unsqueeze_(self, dim):
        return self._take_geometry("unsqueeze_", self.unsqueeze(dim))

    def t_(self):
        return self._take_geometry("t_", self.t())

    def transpose_(self, dim0, dim1):
        return self._take_geometry("transpose_", self.transpose(dim0, dim1))

    swapaxes_ = swapdims_ = transpose_

    def as_strided_(self, size, stride, storage_offset=None):
        return self._take_geometry("as_strided_", self.as_strided(size, stride, storage_offset))

    # ---- sparse COO (Note [Sparse tensors] in src/c10/tensor_impl.h) ----
    def is_coalesced(self):
        info = self._sparse_info()
        if info is None:
            raise RuntimeError("is_coalesced expected sparse coordinate tensor layout but got "
                               "Strided")
        return info[3]

    def sparse_dim(self):
        info = self._sparse_info()
        return 0 if info is None else info[0]

    def dense_dim(self):
        info = self._sparse_info()
        return self.dim() if info is None else info[1]

    def _nnz(self):
        info = self._sparse_info()
        if info is None:
            raise NotImplementedError(
                "Could not run 'aten::_nnz' with arguments from the 'CPU' backend. 'aten::_nnz' "
                "is only available for these backends: [SparseCPU].")
        return info[2]

    # ---- DLPack ----
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (torch.Tensor.__dlpack__): DLPack 1.0
        ("dltensor_versioned") when the consumer's max_version allows it, else 0.8.  copy=True
        exports a copy; dl_device names the device the consumer wants."""
        if self._sparse_info() is not None:
            raise BufferError("Can't export tensors with layout other than torch.strided")
        self._check_has_data()
        if self.requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        if self.is_conj():
            raise BufferError("Can't export tensors with the conjugate bit set")
        if self.device.type == "meta":
            raise BufferError("Cannot pack tensors on meta")
        if stream is not None and type(stream) is not int:
            raise TypeError("stream must be ``int`` or ``none``")
        if self.device.type == "cpu" and stream is not None and stream != -1:
            raise AssertionError("stream should be None on cpu.")
        t = self
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            if copy is False:
                raise BufferError(f"cannot move DLPack tensor from device "
                                  f"{self.__dlpack_device__()} to {tuple(dl_device)} "
                                  "without copying. Set copy=None or copy=True.")
            t = t.to("cuda" if dl_device[0] == _DL_CUDA else "cpu", copy=True)
        elif copy:
            t = t.clone()
        versioned = max_version is not None and max_version[0] >= 1
        return _C._to_dlpack(t, versioned)

    def __dlpack_device__(self):
        if self.device.type == "cuda":
            return (_DL_CUDA, self.device.index or 0)
        return (_DL_CPU, 0)

    # ---- NumPy ----
    def numpy(self, *, force=False):
        import numpy as np
        if getattr(type(self), "__torch_dispatch__", None) is not None:
            raise RuntimeError(".numpy() is not supported for tensor subclasses.")
        if self.requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self._sparse_info() is not None:
            raise TypeError("can't convert Sparse layout tensor to numpy. Use Tensor.to_dense() "
                            "first.")
        if self.device.type == "cuda":
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        if self.dtype == _C.bfloat16:
            raise TypeError("Got unsupported ScalarType BFloat16")
        if self.is_conj():
            if not force:
                raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. "
                                   "Use tensor.resolve_conj().numpy() instead.")
            return self.detach().resolve_conj().numpy()
        return np.asarray(memoryview(self))

    def __array__(self, dtype=None, copy=None):
        import numpy as np
        a = self.detach().numpy() if self.requires_grad else self.numpy()
        if dtype is not None and a.dtype != dtype:
            return a.astype(dtype)
        return np.array(a, copy=True) if copy else a

    # ---- conversions ----
    def to(self, *args, **kwargs):
        """to(dtype), to(device), to(device, dtype), to(other), with non_blocking/copy."""
        dtype = kwargs.pop("dtype", None)
        device = kwargs.pop("device", None)
        copy = kwargs.pop("copy", False)
        non_blocking = kwargs.pop("non_blocking", False)
        memory_format = kwargs.pop("memory_format", _C.preserve_format)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, (str, _C.device, int)) and not isinstance(a, bool):
                device = _C.device(a) if not isinstance(a, int) else _C.device("cuda", a)
            elif isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, bool):
                continue   # non_blocking and copy by position: only keywords are honoured
            else:
                raise TypeError(f"to() received an invalid combination of arguments - got ({type(a).__name__})")
        if device is not None and not isinstance(device, _C.device):
            device = _C.device(device)
        same_dtype = dtype is None or dtype == self.dtype
        same_device = device is None or device.type == self.device.type
        if memory_format is None:
            memory_format = _C.preserve_format
        elif not isinstance(memory_format, _C.memory_format):
            raise TypeError("to() received an invalid combination of arguments - got "
                            f"(memory_format={type(memory_format).__name__}, )")
        if (same_dtype and same_device and not copy and
                (memory_format is _C.preserve_format or
                 memory_format is _C._suggest_memory_format(self))):
            return self
        if device is not None and device.type == "cuda" and _C._cuda_in_bad_fork():
            _C._cuda_lazy_init()   # raises: Note [CUDA and fork]
        if non_blocking and not same_device:
            # copy_ is asynchronous from pinned memory (Note [Asynchronous copies])
            # and, as PyTorch's _to_copy, into pinned memory when it comes to the host
            from . import empty
            fmt = (_C._suggest_memory_format(self) if memory_format is _C.preserve_format
                   else memory_format)
            out = empty(self.shape, dtype=dtype or self.dtype, device=device,
                        pin_memory=device.type == "cpu" and self.device.type == "cuda",
                        memory_format=fmt)
            return out.copy_(self, non_blocking=True)
        return _to_copy(self, dtype=dtype, device=device, memory_format=memory_format)

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """With no argument, the legacy type name ('torch.FloatTensor'); otherwise self
        converted to a typed class, a dtype or such a name."""
        if dtype is None:
            return _tensor_types.type_name(self.dtype, self.device)
        dtype, device = _tensor_types.parse_type(dtype)
        if device is None or device == self.device.type:
            return self.to(dtype)
        return self.to(dtype=dtype, device=device)

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None, non_blocking=False):
        return self.to("cuda" if device is None else device, non_blocking=non_blocking)

    def _cast(self, dtype):
        """self.to(dtype) without to()'s argument parsing (x.float(), x.int(), ...): self
        when it has that dtype already, else a copy converted."""
        return self if self.dtype == dtype else _to_copy(self, dtype=dtype)

    def float(self):
        return self._cast(_C.float32)

    def double(self):
        return self._cast(_C.float64)

    def half(self):
        return self._cast(_C.float16)

    def cfloat(self):
        return self._cast(_C.complex64)

    def cdouble(self):
        return self._cast(_C.complex128)

    def adjoint(self):
        """The conjugate transpose of the last two dims (mH)."""
        return self.mH

    def const_data_ptr(self):
        return self.data_ptr()

    def dim_order(self, *, ambiguity_check=False):
        """The dims from the outermost in memory to the innermost: largest stride first, ties
        in the dims' order; a dim of size 1 has no place in memory and keeps its own.  With
        ambiguity_check (True, or a list of memory formats) a tensor with more than one such
        order (a size-1 dim, two neighbouring dims of one stride) is refused unless it is
        contiguous in exactly one of the formats listed, as PyTorch's."""
        strides, sizes = self.stride(), self.shape
        if not isinstance(ambiguity_check, (bool, list)) or (
                isinstance(ambiguity_check, list) and
                not all(isinstance(m, _C.memory_format) for m in ambiguity_check)):
            raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                            "formats.")
        formats = ambiguity_check if isinstance(ambiguity_check, list) else []
        several = any(a == b for a, b in zip(strides, strides[1:])) or 1 in sizes
        if (ambiguity_check is True or formats) and several and \
                sum(self.is_contiguous(memory_format=m) for m in formats) != 1:
            raise RuntimeError("The tensor does not have unique dim order, or cannot map to "
                               "exact one of the given memory formats.")
        moving = [d for d in range(self.dim()) if sizes[d] != 1]
        ordered = iter(sorted(moving, key=lambda d: -strides[d]))
        return tuple(next(ordered) if sizes[d] != 1 else d for d in range(self.dim()))

    def _map_elements(self, name, fn, others):
        """self's elements replaced by fn(element, *the others' elements): a Python loop, as
        PyTorch's apply_ / map_ / map2_ (CPU tensors only)."""
        if self.device.type != "cpu":
            raise TypeError(f"{name} is only implemented on CPU tensors")
        if self.requires_grad:
            raise RuntimeError(f"Can't call {name}() on Variable that requires grad. Use "
                               f"var.detach().{name}() instead.")
        columns = [self.reshape(-1).tolist()] + [o.expand(self.shape).reshape(-1).tolist()
                                                 for o in others]
        values = [fn(*args) for args in zip(*columns)]
        if not self.is_floating_point() and not self.is_complex() and self.dtype != _C.bool:
            values = [int(v) for v in values]
        return self.copy_(_C.tensor(values, dtype=self.dtype).reshape(self.shape))

    def apply_(self, callable):
        return self._map_elements("apply_", callable, ())

    def map_(self, tensor, callable):
        return self._map_elements("map_", callable, (tensor,))

    def map2_(self, x, y, callable):
        return self._map_elements("map2_", callable, (x, y))

    def bfloat16(self):
        return self._cast(_C.bfloat16)

    def int(self):
        return self._cast(_C.int32)

    def long(self):
        return self._cast(_C.int64)

    def short(self):
        return self._cast(_C.int16)

    def char(self):
        return self._cast(_C.int8)

    def byte(self):
        return self._cast(_C.uint8)

    def bool(self):
        return self._cast(_C.bool)

    def type_as(self, other):
        return self.to(other.dtype)

    # ---- shape helpers ----
    @property
    def T(self):
        if self.dim() == 0:
            warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity "
                          "in these cases.", UserWarning, stacklevel=2)
        elif self.dim() != 2:
            warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse "
                          "their shape is deprecated and it will throw an error in a future "
                          "release. Consider `x.mT` to transpose batches of matrices or "
                          "`x.permute(*torch.arange(x.ndim - 1, -1, -1))` to reverse the "
                          "dimensions of a tensor.", UserWarning, stacklevel=2)
        return self.permute(list(reversed(range(self.dim()))))

    @property
    def mT(self):
        if self.dim() < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    @property
    def mH(self):
        """The conjugate transpose of the last two dims: a view (with the conjugate bit for
        a complex tensor)."""
        if self.dim() < 2:
            raise RuntimeError("tensor.mH is only supported on matrices or batches of matrices. "
                               f"Got {self.dim()}-D tensor.")
        t = self.transpose(-2, -1)
        return t.conj() if t.is_complex() else t

    @property
    def H(self):
        if self.dim() == 0:
            warnings.warn("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().",
                          UserWarning, stacklevel=2)
            return self.conj() if self.is_complex() else self.permute([])
        if self.dim() != 2:
            hint = (" For batches of matrices, consider using tensor.mH" if self.dim() > 2
                    else "")
            raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                               f"{self.dim()}-D tensor.{hint}")
        t = self.permute([1, 0])
        return t.conj() if t.is_complex() else t

    def new_empty(self, size, *, dtype=None, device=None, requires_grad=False):
        from . import empty
        return empty(size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False):
        from . import empty_strided
        return empty_strided(size, stride, dtype=dtype or self.dtype,
                             device=device or self.device, requires_grad=requires_grad)

    def get_device(self):
        """The CUDA device index of self, -1 for a CPU tensor."""
        return -1 if self.device.type == "cpu" else self.device.index

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        from . import zeros
        size = size[0] if len(size) == 1 and not isinstance(size[0], int) else size
        return zeros(size, dtype=dtype or self.dtype, device=device or self.device,
                     requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        from . import ones
        size = size[0] if len(size) == 1 and not isinstance(size[0], int) else size
        return ones(size, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        from . import full
        return full(size, fill_value, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)

    def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
        return _C.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)

