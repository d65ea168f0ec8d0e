"""torch.backends: the switches PyTorch programs set for their backends.  pytorchlite has no
cuDNN, MPS, oneDNN or TF32 hardware path, so the switches keep PyTorch's defaults and whatever
a program sets (they change nothing here), and the availability queries say False.  Each
backend is a module object (`import torch.backends.cudnn as cudnn` works) registered under its
path."""
import sys
import types

from .. import _C


class _MatmulFlags:
    """torch.backends.cuda.matmul: TF32 and reduced-precision reduction switches."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


# The scaled_dot_product_attention backends a program allows (torch.backends.cuda's
# enable_*_sdp switches, which PyTorch applies on the CPU too).  On the CPU only "flash" (the
# fused kernel, for the inputs PyTorch's CPU flash kernel takes) and "math" (the composite)
# compute anything; see F.scaled_dot_product_attention.
_sdp_enabled = {"cudnn": True, "flash": True, "mem_efficient": True, "math": True,
                "overrideable": True}


def _sdp_switches(name):
    def enable(enabled):
        _sdp_enabled[name] = bool(enabled)

    def query():
        return _sdp_enabled[name]
    return staticmethod(enable), staticmethod(query)


class _CudaBackend(types.ModuleType):
    enable_math_sdp, math_sdp_enabled = _sdp_switches("math")
    enable_flash_sdp, flash_sdp_enabled = _sdp_switches("flash")
    enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _sdp_switches("mem_efficient")
    enable_cudnn_sdp, cudnn_sdp_enabled = _sdp_switches("cudnn")

    def __init__(self, name):
        super().__init__(name)
        self.matmul = _MatmulFlags()

    @staticmethod
    def is_built():
        """Whether the CUDA sources were compiled in (pytorchlite.cuda.is_built())."""
        return bool(_C._config()["cuda_built"])


class _CudnnBackend(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.enabled = True
        self.benchmark = False
        self.deterministic = False
        self.allow_tf32 = True

    @staticmethod
    def is_available():
        return False

    @staticmethod
    def version():
        return None


class _MpsBackend(types.ModuleType):
    @staticmethod
    def is_available():
        return False

    @staticmethod
    def is_built():
        return False


class _CpuBackend(types.ModuleType):
    @staticmethod
    def get_cpu_capability():
        """The SIMD level the CPU kernels use: "AVX2" or "DEFAULT", as PyTorch names them."""
        return _C._config()["cpu_capability"]


class _OptEinsumBackend(types.ModuleType):
    def __init__(self, name):
        super().__init__(name)
        self.enabled = False
        self.strategy = None

    @staticmethod
    def is_available():
        return False


class _MkldnnBackend(types.ModuleType):
    """torch.backends.mkldnn: PyTorch's oneDNN switch; pytorchlite's kernels are its own."""

    def __init__(self, name):
        super().__init__(name)
        self.enabled = True
        self.deterministic = False

    @staticmethod
    def is_available():
        return False


def _backend(kind, name):
    module = kind(f"{__name__}.{name}")
    sys.modules[module.__name__] = module
    return module


cuda = _backend(_CudaBackend, "cuda")
cudnn = _backend(_CudnnBackend, "cudnn")
mps = _backend(_MpsBackend, "mps")
cpu = _backend(_CpuBackend, "cpu")
opt_einsum = _backend(_OptEinsumBackend, "opt_einsum")
mkldnn = _backend(_MkldnnBackend, "mkldnn")

_MATMUL_PRECISIONS = ("highest", "high", "medium")
_matmul_precision = "highest"
_deterministic = False
_deterministic_warn_only = False


def set_float32_matmul_precision(precision):
    """'highest' (float32 everywhere), 'high' or 'medium' (TF32 or bfloat16 allowed where the
    hardware has them; pytorchlite computes in float32 either way)."""
    global _matmul_precision
    if precision not in _MATMUL_PRECISIONS:
        raise RuntimeError(f"Invalid precision {precision}; expected one of "
                           f"{', '.join(_MATMUL_PRECISIONS)}")
    _matmul_precision = precision
    cuda.matmul.allow_tf32 = precision != "highest"


def get_float32_matmul_precision():
    return _matmul_precision


def use_deterministic_algorithms(mode, *, warn_only=False):
    """Records the switch (every pytorchlite CPU kernel is deterministic already)."""
    global _deterministic, _deterministic_warn_only
    if not isinstance(mode, bool):
        raise TypeError("_set_deterministic_algorithms(): argument 'mode' (position 1) must be "
                        f"bool, not {type(mode).__name__}")
    _deterministic, _deterministic_warn_only = mode, bool(warn_only)


def are_deterministic_algorithms_enabled():
    return _deterministic


def is_deterministic_algorithms_warn_only_enabled():
    return _deterministic_warn_only
