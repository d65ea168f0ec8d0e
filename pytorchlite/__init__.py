"""pytorchlite: a small, fast, readable PyTorch.

`import pytorchlite as torch` runs ordinary PyTorch code that stays inside the implemented
surface.  The C core lives in pytorchlite._C; this package adds the Python half of Tensor,
the schema-driven functions, and the pure-Python modules (nn, optim, utils.data, ...).
"""
import builtins
import sys as _sys
import types as _types

from . import _C
from ._native_signature import native as _native
from ._C import (  # noqa: F401  (dtype objects and C functions re-exported)
    bfloat16, bool, can_cast, cdouble, cfloat, complex64, complex128, device, double, dtype, float, float16, float32, float64,
    from_numpy, get_default_device, get_default_dtype, get_num_threads, half, int, int8, int16, int32, int64,
    long, promote_types, result_type, set_default_device, set_num_threads, short, tensor,
    as_tensor, uint8,
)
from ._size import Size
from ._tensor import Tensor, from_dlpack  # noqa: F401
from ._tensor_types import *  # noqa: F401,F403  (FloatTensor, ..., BoolTensor)
from . import _ops_namespace
from ._dispatch import dispatch_stats, dispatch_trace  # noqa: F401
from ._functions import *  # noqa: F401,F403
from . import _functions
from ._functions import __all__ as _function_names
from ._indexing import (  # noqa: F401
    index_reduce, isin, nonzero, nonzero_static, put, unique,
    unique_consecutive, unravel_index)
from ._reductions import (  # noqa: F401
    corrcoef, cov, cumulative_trapezoid, gradient, histogram, histogramdd, nanmean,
    native_norm, segment_reduce, trapezoid, trapz)
from .functional import (  # noqa: F401
    addr, cdist, chain_matmul, cholesky, cholesky_inverse, cholesky_solve, dist, einsum,
    frobenius_norm, geqrf, inner, logdet, lu, lu_solve, lu_unpack, norm, nuclear_norm, orgqr,
    ormqr, pinverse, qr,
    tensordot, triangular_solve, vander)
from . import functional, linalg  # noqa: F401
matrix_exp, matrix_power = (_native(f) for f in linalg._TWINS)
from ._lobpcg import lobpcg  # noqa: F401
from ._linalg_utils import eig, lstsq, matrix_rank, solve, symeig  # noqa: F401
from ._lowrank import pca_lowrank, svd_lowrank  # noqa: F401
from . import _indexing, _pointwise, _shape_functions
from ._pointwise import (  # noqa: F401
    copysign, deg2rad, fill, float_power, frexp, heaviside, isneginf, isposinf, isreal, ldexp,
    logaddexp, logaddexp2, mvlgamma, positive, rad2deg, sgn, signbit)
from ._shape_functions import (  # noqa: F401,E402
    atleast_1d, atleast_2d, atleast_3d, block_diag, broadcast_shapes, broadcast_tensors,
    cartesian_prod, column_stack, combinations, diagflat, dsplit, dstack, hsplit, meshgrid,
    narrow_copy, ravel, vsplit)
from ._shape_functions import (  # noqa: F401,E402  (the view-copy and view-scatter functions)
    alias_copy, as_strided_copy, as_strided_scatter, detach_copy, diagonal_copy,
    diagonal_scatter, expand_copy, indices_copy, permute_copy, select_copy, select_scatter,
    slice_copy, slice_scatter, split_copy, split_with_sizes_copy, squeeze_copy, t_copy,
    transpose_copy, unbind_copy, unfold_copy, unsqueeze_copy, unsafe_chunk, unsafe_split,
    unsafe_split_with_sizes, values_copy, view_as_complex_copy, view_as_real_copy, view_copy)
from ._creation import (  # noqa: F401,E402,A004
    asarray, empty_permuted, frombuffer, range)
from ._settings import *  # noqa: F401,F403,E402  (set_warn_always, ..., set_anomaly_enabled)
from ._tensor_str import set_printoptions  # noqa: F401
from ._windows import *  # noqa: F401,F403  (hann_window, ..., kaiser_window)
from . import return_types  # noqa: F401
from . import cpu, cuda, mps, xpu  # noqa: F401
from . import hub  # noqa: F401
from ._C import OutOfMemoryError  # noqa: F401
from . import accelerator  # noqa: F401
from . import autograd  # noqa: F401
from .autograd import (  # noqa: F401
    enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled, no_grad, set_grad_enabled,
)
from . import __config__  # noqa: F401
# What this build has, as PyTorch reports it (docs/handbook: has_lapack): linear algebra (its
# own kernels stand in for LAPACK's) and FFTs, but neither MKL nor OpenMP (threads are its
# own pthread pool)
has_lapack = True
has_spectral = True
has_mkl = False
has_openmp = False
from . import amp  # noqa: F401
from . import futures  # noqa: F401
from .amp import autocast, get_autocast_dtype, is_autocast_enabled  # noqa: F401
from .amp import GradScaler  # noqa: F401
from .amp.autocast_mode import (  # noqa: F401
    autocast_decrement_nesting, autocast_increment_nesting, clear_autocast_cache,
    get_autocast_cpu_dtype, get_autocast_gpu_dtype, is_autocast_cache_enabled,
    is_autocast_cpu_enabled, set_autocast_cache_enabled, set_autocast_cpu_dtype,
    set_autocast_cpu_enabled, set_autocast_dtype, set_autocast_enabled, set_autocast_gpu_dtype)
from . import __future__  # noqa: F401
from . import backends  # noqa: F401
from .backends import (  # noqa: F401
    are_deterministic_algorithms_enabled, get_float32_matmul_precision,
    is_deterministic_algorithms_warn_only_enabled, set_float32_matmul_precision,
    use_deterministic_algorithms)
from ._type_info import finfo, iinfo  # noqa: F401
from math import e, inf, nan, pi  # noqa: F401,E402  (torch.pi and friends are Python floats)

newaxis = None

ops = _ops_namespace.ops
from . import nn  # noqa: E402,F401  (after `ops`: nn.functional looks operators up there)
from . import optim  # noqa: E402,F401
from . import _nn_ops  # noqa: E402
from ._nn_ops import *  # noqa: E402,F401,F403  (torch.conv2d, torch.dropout, ...)
from . import multiprocessing  # noqa: E402,F401
from . import distributed  # noqa: E402,F401  (does not start MPI: init_process_group does)
from . import utils  # noqa: E402,F401
from ._control_flow import cond, while_loop  # noqa: E402,F401
from .utils.dlpack import to_dlpack  # noqa: E402,F401
from . import special  # noqa: E402,F401
from . import fft  # noqa: E402,F401
from . import signal  # noqa: E402,F401
from ._stft import istft, stft  # noqa: E402,F401
from ._sym import *  # noqa: E402,F401,F403  (torch.sym_int, sym_max, ...)
logit, xlogy, sinc = (_native(f) for f in special._TWINS)
from . import distributions  # noqa: E402,F401
from . import library  # noqa: E402,F401
from . import profiler  # noqa: E402,F401
from . import testing  # noqa: E402,F401
from . import _dynamo, compiler  # noqa: E402,F401
from .compiler import compile  # noqa: E402,F401,A004  (torch.compile, as PyTorch's)
from . import func  # noqa: E402,F401
from .func import vmap  # noqa: E402,F401
from .torch_version import __version__  # noqa: E402,F401
from . import version  # noqa: E402,F401
from . import overrides  # noqa: E402,F401
from ._C import DisableTorchFunction, DisableTorchFunctionSubclass  # noqa: E402,F401

_C._set_tensor_class(Tensor)
_indexing._install(Tensor)
_functions._install(Tensor)
_shape_functions._install(Tensor)
_pointwise._install(Tensor)
functional._install(Tensor)
special._install(Tensor)
_stft._install(Tensor)
_nn_ops._install(Tensor)
_linalg_utils._install(Tensor)
Tensor.histogram = histogram
# in-place functions whose methods are composites (PyTorch has them as torch.NAME_ too)
for _name in ("ldexp_", "xlogy_", "logit_", "sinc_", "deg2rad_", "rad2deg_", "clamp_min_",
              "clamp_max_"):
    globals()[_name] = _functions._method_function(_name)
del _name


def set_default_dtype(d):
    """Sets the default floating point dtype (float32 unless changed)."""
    _C.set_default_dtype(d)


def is_tensor(obj):
    return isinstance(obj, Tensor)


@_native
def is_floating_point(input):
    return input.is_floating_point()


@_native
def is_complex(input):
    return input.is_complex()


@_native
def resolve_conj(input):
    return input.resolve_conj()


@_native
def resolve_neg(input):
    return input.resolve_neg()


@_native
def numel(input):
    return input.numel()


@_native
def is_nonzero(input):
    """The truth of a one-element tensor."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return builtins.bool(input.item())


@_native
def is_same_size(input, other):
    return input.shape == other.shape


@_native
def is_signed(input):
    return input.dtype.is_signed


@_native
def is_conj(input):
    return input.is_conj()


def is_inference(input):
    """Whether input was made in inference mode (Tensor.is_inference)."""
    if not isinstance(input, Tensor):
        raise TypeError("is_inference(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input.is_inference()


@_native
def is_neg(input):
    return input.is_neg()


@_native
def get_device(input):
    """-1 for a CPU tensor, the device index for a CUDA one."""
    return input.get_device()


def get_device_module(device=None):
    """The module of a device type (pytorchlite.cpu, pytorchlite.cuda): of `device` (a
    torch.device or its string), or of the current accelerator when it is available, else
    the CPU's."""
    if isinstance(device, _C.device):
        name = device.type
    elif isinstance(device, str):
        name = _C.device(device).type
    elif device is None:
        found = accelerator.current_accelerator(check_available=True)
        name = "cpu" if found is None else found.type
    else:
        raise RuntimeError(f"Invalid value of device '{device}', expect torch.device, str, or "
                           "None")
    module = _sys.modules[__name__].__dict__.get(name)
    if not isinstance(module, _types.ModuleType):
        raise RuntimeError(f"Device '{name}' does not have a corresponding module registered as "
                           f"'torch.{name}'.")
    return module


@_native
def is_distributed(input):
    """False: a tensor here is never spread over processes (PyTorch's answer for every
    tensor outside its deprecated THD backend)."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError("is_distributed(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return False


def init_num_threads():
    """Sets up the calling thread's intra-op thread count: pytorchlite's pool reads the
    count at each parallel region, so there is nothing to set up."""


def is_storage(obj):
    return isinstance(obj, (TypedStorage, UntypedStorage))


def typename(obj):
    """'torch.FloatTensor' for a tensor (Tensor.type()); module.qualname for other objects,
    the bare name for builtins."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module = obj.__class__.__module__ or ""
        qualname = obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


from ._layout import layout, sparse_coo, strided  # noqa: E402,F401
from .storage import TypedStorage, UntypedStorage  # noqa: E402,F401
from ._C import (channels_last, channels_last_3d, contiguous_format,  # noqa: E402,F401
                 memory_format, preserve_format)


# the function forms of in-place methods that PyTorch also has in its namespace
@_native
def adjoint(input):
    return input.adjoint()


@_native
def detach_(input):
    return input.detach_()


@_native
def as_strided_(input, size, stride, storage_offset=None):
    return input.as_strided_(size, stride, storage_offset)


@_native
def conj_physical_(input):
    return input.conj_physical_()


@_native
def resize_as_(input, the_template, *, memory_format=None):
    """input.resize_as_(the_template): see Tensor.resize_."""
    return input.resize_as_(the_template, memory_format=memory_format)


from . import serialization  # noqa: E402
from .serialization import load, save  # noqa: E402,F401
from . import random  # noqa: E402
from . import jit  # noqa: E402,F401
from . import onnx  # noqa: E402,F401
from .random import (  # noqa: E402,F401
    Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state,
)
from . import sparse  # noqa: E402


def spmm(input, mat2):
    """Sparse COO input @ dense mat2 (torch.sparse.mm)."""
    return sparse.mm(input, mat2)


def _assert(condition, message):
    """assert condition, message, as a function that a symbolic trace (torch.fx) can
    record: a Proxy condition reaches __torch_function__."""
    assert condition, message


# each function above and each Python method of Tensor goes to __torch_function__ first (Note
# [Torch function]), but those PyTorch does not route and the helpers of the class
overrides._route_functions(globals(), names=(
    "_assert", "adjoint", "as_strided_", "clamp_max_", "clamp_min_", "conj_physical_",
    "deg2rad_", "detach_", "get_device", "is_complex", "is_conj", "is_floating_point", "is_neg",
    "is_nonzero", "is_same_size", "is_signed", "ldexp_", "logit", "logit_", "matrix_exp",
    "matrix_power", "numel", "rad2deg_", "resize_as_", "resolve_conj", "resolve_neg", "sinc",
    "sinc_", "spmm", "xlogy", "xlogy_"))
overrides._route_functions(Tensor, skip=(
    "__iter__", "__new__", "__reduce_ex__", "__deepcopy__",
    "_cast", "_map_elements", "_reduce_values", "_take_geometry"))
_nn_ops._present_torch_names(_sys.modules[__name__])


def __getattr__(name):
    """pytorchlite.fx is imported on first use (torch.fx, `import pytorchlite.fx`): few
    programs trace, and it costs every import time (docs/performance.md)."""
    if name == "fx":
        import importlib
        return importlib.import_module(".fx", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
