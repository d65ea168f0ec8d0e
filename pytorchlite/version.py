"""torch.version: what this build of pytorchlite is and was compiled with.

`torch.version.cuda` is the CUDA version the extension was compiled against ("13.0"), None
when it was built without nvcc, whether or not a GPU is present (torch.cuda.is_available()
answers that); `debug` is True for a build with PTL_DEBUG.  pytorchlite embeds no commit
hash, so git_version is "Unknown", as a PyTorch built outside a git checkout reports.  HIP,
ROCm and XPU are never built: None."""
from . import _C
from .torch_version import __version__

__all__ = ["__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]


def _cuda_version(config):
    v = config["cuda_runtime_version"]
    if not config["cuda_built"] or v <= 0:
        return None
    return f"{v // 1000}.{v % 1000 // 10}"


_config = _C._config()
cuda = _cuda_version(_config)
debug = bool(_config["debug"])
git_version = "Unknown"
hip = None
rocm = None
xpu = None
del _config
