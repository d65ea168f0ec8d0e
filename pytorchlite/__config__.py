"""pytorchlite.__config__.show(): how this build was made and what it found."""
from . import _C


def show():
    c = _C._config()
    from .torch_version import API_VERSION, internal_version
    lines = [
        f"pytorchlite {internal_version} (PyTorch API {API_VERSION})",
        f"  - C compiler: {c['compiler']}",
        f"  - CPU capability usage: {c['cpu_capability']}",
        f"  - intra-op threads: {c['num_threads']}",
        f"  - CUDA built: {c['cuda_built']}"
        + (f" (runtime {c['cuda_runtime_version'] // 1000}.{c['cuda_runtime_version'] % 1000 // 10})"
           if c['cuda_built'] else ""),
        f"  - CUDA available: {c['cuda_available']}"
        + (f" ({c['cuda_device_count']} device(s))" if c['cuda_available'] else
           f" ({c['cuda_unavailable_reason']})"),
        f"  - debug build: {c['debug']}, sanitizers: {c['sanitize']}",
    ]
    return "\n".join(lines)
