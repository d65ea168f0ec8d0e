"""Builds pytorchlite._C from src/**/*.c (and src/cuda/*.cu with nvcc when it is found).

Switches (environment):
  PTL_CUDA=0|1        force the CPU-only build / require the CUDA build (default: CUDA when
                      nvcc is found)
  PTL_DEBUG=1         -O0 -g, PTL_DEBUG defined (internal asserts abort)
  PTL_SANITIZE=address,undefined   compile and link with -fsanitize=...

Objects live in build/<flavour>-<python>/, one directory per flavour (release or debug,
sanitized or not, with or without CUDA), so that switching flavours reuses nothing.  An object
is rebuilt when its source, any header or .def under src/, or this file is newer: a second
`pip install -e .` compiles nothing.  The compiles run in parallel on every core (or -j N),
nvcc's alongside gcc's, through ccache when it is installed.
"""
import os
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import partial
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
CCACHE = shutil.which("ccache")
FLAVOUR = "-".join(["debug" if DEBUG else "release"] +
                   (["sanitize", re.sub(r"\W+", "-", SANITIZE)] if SANITIZE else []) +
                   ([] if NVCC else ["cpu"]))
BUILD_DIR = os.path.join(ROOT, "build", f"{FLAVOUR}-{sys.implementation.cache_tag}")

cflags = ["-std=c11", "-Wall", "-Wextra", "-fvisibility=hidden", "-fno-strict-aliasing"]
# Python's CFLAGS carry -g: a release build drops it (a quarter of the compile time); debug
# and sanitizer builds keep it, for gdb and for the line numbers in sanitizer reports
cflags += ["-O0", "-g", "-DPTL_DEBUG"] if DEBUG else ["-O3"] if SANITIZE else ["-O3", "-g0"]
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
    """Compiles into BUILD_DIR on every core and skips what is up to date (module docstring):
    one job per stale object, nvcc's among them, the longest first; links when an object is
    newer than the last link, then copies the library where setuptools expects it."""

    def build_extensions(self):
        # C11, not the C++ flags setuptools may add for mixed builds
        cc = [f for f in self.compiler.compiler_so if f != "-Wstrict-prototypes"]
        if CCACHE and os.path.basename(cc[0]) != "ccache":
            cc.insert(0, CCACHE)
        self.compiler.compiler_so = cc
        super().build_extensions()

    def build_extension(self, ext):
        headers = max(os.path.getmtime(p) for p in ext.depends + [__file__])
        jobs, objects = [], []
        for src in ext.sources:
            obj = self.compiler.object_filenames([src], output_dir=BUILD_DIR)[0]
            objects.append(obj)
            if self.force or older_than(obj, max(os.path.getmtime(src), headers)):
                jobs.append((os.path.getsize(src), partial(
                    self.compiler.compile, [src], output_dir=BUILD_DIR,
                    extra_postargs=ext.extra_compile_args)))
        for cu in cuda_sources if NVCC else []:
            obj = os.path.join(BUILD_DIR, cu + ".o")
            objects.append(obj)
            if self.force or older_than(obj, max(os.path.getmtime(cu), headers)):
                jobs.append((float("inf"), partial(self.compile_cu, cu, obj)))
        jobs.sort(key=lambda job: -job[0])
        workers = self.parallel if type(self.parallel) is int else os.cpu_count()
        with ThreadPoolExecutor(max_workers=workers or 1) as pool:
            for future in [pool.submit(job) for _, job in jobs]:
                future.result()

        target = self.get_ext_fullpath(ext.name)
        linked = os.path.join(BUILD_DIR, os.path.basename(target))
        if self.force or older_than(linked, max(map(os.path.getmtime, objects))):
            self.compiler.link_shared_object(
                objects, linked, libraries=self.get_libraries(ext),
                library_dirs=ext.library_dirs, extra_postargs=ext.extra_link_args,
                export_symbols=self.get_export_symbols(ext), target_lang="c")
        self.mkpath(os.path.dirname(target))
        self.copy_file(linked, target)

    def compile_cu(self, cu, obj):
        self.mkpath(os.path.dirname(obj))
        self.spawn([NVCC, "-c", cu, "-o", obj, "-O3", "-std=c++17",
                    "-Xcompiler", "-fPIC,-fvisibility=hidden", "-DPTL_WITH_CUDA",
                    "-gencode", "arch=compute_80,code=sm_80",
                    "-gencode", "arch=compute_90,code=sm_90",
                    "-gencode", "arch=compute_90,code=compute_90"])


def older_than(target, mtime):
    """True when target is missing or was written before mtime."""
    return not os.path.exists(target) or os.path.getmtime(target) < mtime


sources = sorted(os.path.relpath(p, ROOT) for p in glob(os.path.join(ROOT, "src", "**", "*.c"),
                                                          recursive=True))
cuda_sources = sorted(os.path.relpath(p, ROOT)
                      for p in glob(os.path.join(ROOT, "src", "cuda", "*.cu")))
depends = sorted(os.path.relpath(p, ROOT) for p in
                 glob(os.path.join(ROOT, "src", "**", "*.h"), recursive=True) +
                 glob(os.path.join(ROOT, "src", "**", "*.def"), recursive=True))

setup(
    ext_modules=[Extension("pytorchlite._C", sources=sources, depends=depends,
                           extra_compile_args=cflags, extra_link_args=ldflags,
                           libraries=libraries, library_dirs=library_dirs)],
    cmdclass={"build_ext": BuildExt},
)
