"""Builds the C extension of sigmoid_add.c (and sigmoid_add_cuda.cu when nvcc is found):

    python setup.py build_ext --inplace
    python -c "import pytorchlite, sigmoid_add_ext; print(pytorchlite.ops.myops.sigmoid_add)"

Import pytorchlite before the extension: the extension binds to its C API."""
import os

from setuptools import setup

from pytorchlite.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

HERE = os.path.dirname(os.path.abspath(__file__))
modules = [CppExtension("sigmoid_add_ext", [os.path.join(HERE, "sigmoid_add.c")])]
if CUDA_HOME is not None and os.environ.get("PTL_CUDA", "1") != "0":
    modules.append(CUDAExtension("sigmoid_add_cuda_ext",
                                 [os.path.join(HERE, "sigmoid_add_cuda.cu")]))

setup(name="sigmoid_add_ext", ext_modules=modules, cmdclass={"build_ext": BuildExtension})
