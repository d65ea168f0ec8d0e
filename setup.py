"""Builds pytorchlite._C from src/**/*.c (and src/cuda/*.cu with nvcc when it is found).

Switches (environment):
  PTL_CUDA=0|1        force the CPU-only build / require the CUDA build (default: CUDA when
                      nvcc is found)
  PTL_DEBUG=1         -O0 -g, PTL_DEBUG defined (internal asserts abort)
  PTL_SANITIZE=address,undefined   compile and link with -fsanitize=...
"""
import os
import shutil
import subprocess
import sys
from glob import glob

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))
DEBUG = os.environ.get("PTL_DEBUG", "0") not in ("", "0")
SANITIZE = os.environ.get("PTL_SANITIZE", "")


def find_nvcc():
    want = os.environ.get("PTL_CUDA")
    if want == "0":
        return None
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
            if home and os.path.exists(os.path.join(home, "bin", "nvcc")):
                nvcc = os.path.join(home, "bin", "nvcc")
                break
    if nvcc is None and want == "1":
        sys.exit("PTL_CUDA=1 but nvcc was not found (set CUDA_HOME or PATH)")
    return nvcc


NVCC = find_nvcc()


def find_cuda_home():
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda",
                 os.path.dirname(os.path.dirname(os.path.realpath(NVCC)))):
        if home and os.path.exists(os.path.join(home, "lib64", "libcudart_static.a")):
            return home
    sys.exit(f"nvcc found at {NVCC} but no lib64/libcudart_static.a next to it; set CUDA_HOME "
             "or build CPU-only with PTL_CUDA=0")


CUDA_HOME = find_cuda_home() if NVCC else None

cflags = ["-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden", "-fno-strict-aliasing"]
cflags += ["-O0", "-g", "-DPTL_DEBUG"] if DEBUG else ["-O3"]
ldflags = []
if SANITIZE:
    cflags += [f"-fsanitize={SANITIZE}", "-fno-omit-frame-pointer", "-DPTL_SANITIZE"]
    ldflags += [f"-fsanitize={SANITIZE}"]
libraries, library_dirs = ["pthread"], []
if NVCC:
    cflags.append("-DPTL_WITH_CUDA")
    library_dirs.append(os.path.join(CUDA_HOME, "lib64"))
    libraries += ["cudart_static", "dl", "rt"]


class BuildExt(build_ext):
    """Compiles src/cuda/*.cu with nvcc into objects linked into _C (when nvcc exists)."""

    def build_extension(self, ext):
        if NVCC:
            objs = []
            out_dir = os.path.join(self.build_temp, "cuda")
            os.makedirs(out_dir, exist_ok=True)
            for cu in sorted(glob(os.path.join(ROOT, "src", "cuda", "*.cu"))):
                obj = os.path.join(out_dir, os.path.basename(cu) + ".o")
                if not os.path.exists(obj) or os.path.getmtime(obj) < newest_source():
                    cmd = [NVCC, "-c", cu, "-I", os.path.join(ROOT, "src", "cuda"), "-o", obj, "-O3", "-std=c++17",
                           "-Xcompiler", "-fPIC,-fvisibility=hidden", "-DPTL_WITH_CUDA",
                           "-gencode", "arch=compute_80,code=sm_80",
                           "-gencode", "arch=compute_90,code=sm_90",
                           "-gencode", "arch=compute_90,code=compute_90"]
                    print(" ".join(cmd))
                    subprocess.check_call(cmd)
                objs.append(obj)
            ext.extra_objects = list(ext.extra_objects or []) + objs
        # C11, not the C++ flags setuptools may add for mixed builds
        self.compiler.compiler_so = [f for f in self.compiler.compiler_so
                                     if f not in ("-Wstrict-prototypes",)]
        super().build_extension(ext)


def newest_source():
    files = glob(os.path.join(ROOT, "src", "**", "*"), recursive=True)
    return max(os.path.getmtime(f) for f in files)


sources = sorted(os.path.relpath(p, ROOT) for p in glob(os.path.join(ROOT, "src", "**", "*.c"),
                                                          recursive=True))
depends = sorted(os.path.relpath(p, ROOT) for p in
                 glob(os.path.join(ROOT, "src", "**", "*.h"), recursive=True) +
                 glob(os.path.join(ROOT, "src", "**", "*.def"), recursive=True))

setup(
    ext_modules=[Extension("pytorchlite._C", sources=sources, depends=depends,
                           extra_compile_args=cflags, extra_link_args=ldflags,
                           libraries=libraries, library_dirs=library_dirs)],
    cmdclass={"build_ext": BuildExt},
)
