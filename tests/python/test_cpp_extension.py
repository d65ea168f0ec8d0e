"""pytorchlite.utils.cpp_extension and the C ABI it compiles against (include/pytorchlite/
ptl_api.h): bindings of C functions, tensors made and inspected from C, operators called by
name, kernels and fallbacks registered per key, errors with PyTorch's exception types, the
ABI version check, and the build cache (hits, locks, failed builds)."""
import fcntl
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite.utils import cpp_extension
from helpers import ROOT, assert_close, assert_no_leak, make, to_numpy


@pytest.fixture(scope="module", autouse=True)
def extensions_dir(tmp_path_factory):
    """Every build of this module goes to a fresh cache."""
    path = str(tmp_path_factory.mktemp("extensions"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PTL_EXTENSIONS_DIR", path)
        yield path


def run_python(code, env_dir):
    env = dict(os.environ, PYTHONPATH=ROOT, PTL_EXTENSIONS_DIR=env_dir)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=240, env=env, cwd=ROOT)


TENSOR_FUNCTIONS = r"""
#include <string.h>

/* x * k + c, elementwise, through aten::mul.Tensor / aten::add.Tensor called by name (the
 * defaulted alpha of add left out) */
PtlApiTensor *
scale_shift(PtlApiTensor *x, double k, int64_t c)
{
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *kt = ptl_api_from_data(&k, 0, NULL, NULL, PTL_API_FLOAT64);
    PtlApiTensor *ct = ptl_api_from_data(&c, 0, NULL, NULL, PTL_API_INT64), *r = NULL;
    if (s != NULL && kt != NULL && ct != NULL && ptl_api_push_tensor(s, x) == 0 &&
        ptl_api_push_tensor(s, kt) == 0 && ptl_api_call("aten::mul.Tensor", s) == 0 &&
        ptl_api_push_tensor(s, ct) == 0 && ptl_api_call("aten::add.Tensor", s) == 0) {
        r = ptl_api_pop_tensor(s);
    }
    ptl_api_release(kt);
    ptl_api_release(ct);
    ptl_api_stack_free(s);
    return r;
}

/* sizes, strides, dtype, device, contiguity and numel as a float64 vector */
PtlApiTensor *
describe(PtlApiTensor *t)
{
    double v[2 * 16 + 5];
    int64_t n = 0, d = ptl_api_dim(t);
    for (int64_t i = 0; i < d; i++) {
        v[n++] = (double)ptl_api_sizes(t)[i];
    }
    for (int64_t i = 0; i < d; i++) {
        v[n++] = (double)ptl_api_strides(t)[i];
    }
    v[n++] = ptl_api_dtype(t);
    v[n++] = ptl_api_device_type(t);
    v[n++] = ptl_api_is_contiguous(t);
    v[n++] = (double)ptl_api_numel(t);
    v[n++] = (double)ptl_api_element_size(t);
    return ptl_api_from_data(v, 1, &n, NULL, PTL_API_FLOAT64);
}

/* a 2x3 int64 tensor read from a buffer through strides (the transpose of 3x2 data) */
PtlApiTensor *
strided_copy(void)
{
    int64_t data[6] = {0, 1, 2, 3, 4, 5}, sizes[2] = {2, 3}, strides[2] = {1, 2};
    return ptl_api_from_data(data, 2, sizes, strides, PTL_API_INT64);
}

PtlApiTensor *
zeros(int64_t n, int dtype)
{
    return ptl_api_zeros(1, &n, (PtlApiDtype)dtype, PTL_API_CPU, -1);
}

double
first_element(PtlApiTensor *t)
{
    if (ptl_api_dtype(t) != PTL_API_FLOAT64 || ptl_api_numel(t) == 0) {
        ptl_api_set_error(PTL_API_VALUE_ERROR, "first_element: expected a non-empty float64 "
                          "tensor");
        return 0;
    }
    return *(const double *)ptl_api_data_ptr(t);
}

void
fail(int64_t kind)
{
    ptl_api_set_error((PtlApiErrorKind)kind, "failed with kind %lld", (long long)kind);
}

/* aten::mul.Tensor(x, 2): an int where the schema wants a Tensor */
PtlApiTensor *
mul_by_int(PtlApiTensor *x)
{
    PtlApiStack *s = ptl_api_stack_new();
    ptl_api_push_tensor(s, x);
    ptl_api_push_int(s, 2);
    ptl_api_call("aten::mul.Tensor", s);
    ptl_api_stack_free(s);
    return NULL;
}

/* aten::neg(x, x, x) */
PtlApiTensor *
too_many(PtlApiTensor *x)
{
    PtlApiStack *s = ptl_api_stack_new();
    ptl_api_push_tensor(s, x);
    ptl_api_push_tensor(s, x);
    ptl_api_push_tensor(s, x);
    ptl_api_call("aten::neg", s);
    ptl_api_stack_free(s);
    return NULL;
}

PtlApiTensor *
call_unknown(PtlApiTensor *t)
{
    PtlApiStack *s = ptl_api_stack_new();
    ptl_api_push_tensor(s, t);
    ptl_api_call("aten::no_such_op", s);
    ptl_api_stack_free(s);
    return NULL;
}
"""


@pytest.fixture(scope="module")
def functions_module(extensions_dir):
    return cpp_extension.load_inline(
        "cext_test_functions", TENSOR_FUNCTIONS,
        functions={"scale_shift": "x * k + c", "describe": None, "strided_copy": None,
                   "zeros": None, "first_element": None, "fail": None, "call_unknown": None,
                   "mul_by_int": None, "too_many": None})


def test_include_paths_hold_the_header():
    paths = cpp_extension.include_paths()
    assert any(os.path.exists(os.path.join(p, "pytorchlite", "ptl_api.h")) for p in paths)
    assert cpp_extension.library_paths() == []


def test_header_ships_with_the_package():
    # a wheel carries every file under pytorchlite/ (tools/build_backend.py), an editable
    # install imports the checkout: both have the header where include_paths() looks
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import build_backend
    finally:
        sys.path.remove(os.path.join(ROOT, "tools"))
    header = os.path.join("pytorchlite", "include", "pytorchlite", "ptl_api.h")
    assert header in build_backend._package_files()
    assert cpp_extension.include_paths()[0] == os.path.join(os.path.dirname(ptl.__file__),
                                                            "include")


@pytest.mark.parametrize("compiler,lang,std", [("gcc", "c", "-std=c99"),
                                                ("g++", "c++", "-std=c++17")])
def test_header_is_valid_c_and_cpp(compiler, lang, std, tmp_path):
    if shutil.which(compiler) is None:
        pytest.skip(f"{compiler} not installed")
    src = tmp_path / "use.txt"
    src.write_text("#include <pytorchlite/ptl_api.h>\n"
                   "static int k(const PtlApiOperator *o, PtlApiStack *s, void *d)\n"
                   "{ (void)o; (void)s; (void)d; return 0; }\n"
                   "PTL_LIBRARY_IMPL(ns, CPU, m) { ptl_api_impl(m, \"f\", k, 0); }\n")
    done = subprocess.run([compiler, "-x", lang, std, "-Wall", "-Wextra", "-Werror",
                           "-fsyntax-only", f"-I{cpp_extension.include_paths()[0]}", str(src)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_functions_are_bound(functions_module):
    m = functions_module
    assert m.__ptl_api_version__ == "%d.%d" % cpp_extension._api_version()
    assert m.scale_shift.__doc__ == "x * k + c"
    for shape in [(), (0,), (3, 4)]:
        for layout in ["contiguous", "transposed", "expanded"]:
            if layout != "contiguous" and len(shape) < 2:
                continue
            x, a = make(shape, ptl.float64, layout, seed=1)
            assert_close(m.scale_shift(x, 2.5, 3), a * 2.5 + 3)
    assert m.first_element(ptl.tensor([7.5, 1.0], dtype=ptl.float64)) == 7.5


def test_tensor_inspection_and_creation(functions_module):
    m = functions_module
    x = ptl.zeros(3, 4).t()
    assert m.describe(x).tolist() == [4, 3, 1, 4, 6, 0, 0, 12, 4]
    y = ptl.zeros((), dtype=ptl.int64)
    assert m.describe(y).tolist() == [4, 0, 1, 1, 8]
    assert m.strided_copy().tolist() == [[0, 2, 4], [1, 3, 5]]
    z = m.zeros(5, 7)
    assert z.dtype == ptl.float64 and z.tolist() == [0.0] * 5


@pytest.mark.parametrize("kind,exc", [(1, RuntimeError), (2, IndexError), (3, TypeError),
                                      (4, ValueError), (5, NotImplementedError)])
def test_error_kinds_become_pytorch_exceptions(functions_module, kind, exc):
    with pytest.raises(exc, match=f"^failed with kind {kind}$"):
        functions_module.fail(kind)


def test_binding_errors(functions_module):
    m = functions_module
    with pytest.raises(TypeError, match=re.escape("scale_shift() takes 3 positional arguments "
                                                  "but 1 were given")):
        m.scale_shift(ptl.zeros(2))
    with pytest.raises(TypeError, match=re.escape("scale_shift(): argument 1 must be Tensor, "
                                                  "not list")):
        m.scale_shift([1.0], 1.0, 1)
    with pytest.raises(ValueError, match="expected a non-empty float64 tensor"):
        m.first_element(ptl.zeros(2))
    with pytest.raises(RuntimeError, match="^No such operator aten::no_such_op$"):
        m.call_unknown(ptl.zeros(2))
    with pytest.raises(RuntimeError, match=re.escape(
            "aten::mul.Tensor() Expected a value of type 'Tensor' for argument 'other' but "
            "instead found type 'int'.")):
        m.mul_by_int(ptl.zeros(2))
    with pytest.raises(TypeError, match=re.escape("aten::neg() takes 1 arguments but 3 were "
                                                  "given")):
        m.too_many(ptl.zeros(2))


def test_unsupported_binding_type_is_named(extensions_dir):
    with pytest.raises(ValueError, match=re.escape("function 'f' has parameter type 'char *'")):
        cpp_extension.load_inline("cext_test_badtype", "int f(char *s) { return s[0]; }",
                                  functions=["f"])
    with pytest.raises(ValueError, match="no declaration of function 'g'"):
        cpp_extension.load_inline("cext_test_nodecl", "int f(void) { return 0; }",
                                  functions=["g"])


def test_no_leaks(functions_module):
    x = ptl.ones(3, dtype=ptl.float64)
    assert_no_leak(lambda: (functions_module.scale_shift(x, 2.0, 1),
                            functions_module.describe(x)))


OPS_SOURCE = r"""
/* cext_ops::twice(Tensor x, int k=2) -> Tensor: x * k through the dispatcher */
/* A kernel's return: the stack becomes r alone (r's reference is released); -1 when r
 * is NULL (its error is set). */
static int
return_tensor(PtlApiStack *stack, PtlApiTensor *r)
{
    if (r == NULL) {
        return -1;
    }
    ptl_api_stack_clear(stack);
    int rc = ptl_api_push_tensor(stack, r);
    ptl_api_release(r);
    return rc;
}

static int
twice_cpu(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0);
    int64_t k = ptl_api_stack_int(stack, 1);
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *kt = ptl_api_from_data(&k, 0, NULL, NULL, PTL_API_INT64), *r = NULL;
    if (kt != NULL && ptl_api_push_tensor(s, x) == 0 && ptl_api_push_tensor(s, kt) == 0 &&
        ptl_api_call("aten::mul.Tensor", s) == 0) {
        r = ptl_api_pop_tensor(s);
    }
    ptl_api_release(kt);
    ptl_api_stack_free(s);
    return return_tensor(stack, r);
}

static int
index_fail(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)stack;
    (void)data;
    return ptl_api_set_error(PTL_API_INDEX_ERROR, "%s: index out of range",
                             ptl_api_operator_name(op));
}

/* returns its first argument as it came */
static int
identity(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0);
    ptl_api_stack_clear(stack);
    return ptl_api_push_tensor(stack, x);
}

static int
leaves_two(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    return ptl_api_push_none(stack);
}

/* written with other operators: autograd differentiates through them */
static int
double_it(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0);
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *r = NULL;
    if (ptl_api_push_tensor(s, x) == 0 && ptl_api_push_tensor(s, x) == 0 &&
        ptl_api_call("aten::add.Tensor", s) == 0) {
        r = ptl_api_pop_tensor(s);
    }
    ptl_api_stack_free(s);
    return return_tensor(stack, r);
}

/* x ** a through aten::pow.Tensor_Scalar, a pushed back as it came: complex (1j) or real */
static int
power(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    double re, im;
    int is_complex = ptl_api_stack_is_complex(stack, 1);
    if (is_complex < 0 || ptl_api_stack_complex(stack, 1, &re, &im) < 0) {
        return -1;
    }
    PtlApiTensor *x = ptl_api_stack_tensor(stack, 0);
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *r = NULL;
    if (ptl_api_push_tensor(s, x) == 0 &&
        (is_complex ? ptl_api_push_complex(s, re, im) : ptl_api_push_double(s, re)) == 0 &&
        ptl_api_call("aten::pow.Tensor_Scalar", s) == 0) {
        r = ptl_api_pop_tensor(s);
    }
    ptl_api_stack_free(s);
    return return_tensor(stack, r);
}

/* reads its Scalar as a double: a complex one is refused */
static int
real_only(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    double a = ptl_api_stack_double(stack, 1);
    if (a == -1 && ptl_api_stack_is_complex(stack, 1) == 1) {
        return -1;
    }
    return identity(op, stack, data);
}

/* its one Scalar argument, popped with ptl_api_pop_complex, as a float64 tensor [re, im] */
static int
parts(const PtlApiOperator *op, PtlApiStack *stack, void *data)
{
    (void)op;
    (void)data;
    double v[2];
    int64_t two = 2;
    if (ptl_api_pop_complex(stack, &v[0], &v[1]) < 0) {
        return -1;
    }
    return return_tensor(stack, ptl_api_from_data(v, 1, &two, NULL, PTL_API_FLOAT64));
}

PTL_LIBRARY(cext_ops, m)
{
    ptl_api_def(m, "power(Tensor x, Scalar a) -> Tensor");
    ptl_api_def(m, "real_only(Tensor x, Scalar a) -> Tensor");
    ptl_api_def(m, "parts(Scalar a) -> Tensor");
    ptl_api_def(m, "double_it(Tensor x) -> Tensor");
    ptl_api_def(m, "twice(Tensor x, int k=2) -> Tensor");
    ptl_api_def(m, "fails(Tensor x) -> Tensor");
    ptl_api_def(m, "same(Tensor x) -> Tensor");
    ptl_api_def(m, "nokernel(Tensor x) -> Tensor");
    ptl_api_def(m, "badkernel(Tensor x) -> Tensor");
}

PTL_LIBRARY_IMPL(cext_ops, CPU, m)
{
    ptl_api_impl(m, "twice", twice_cpu, NULL);
    ptl_api_impl(m, "fails", index_fail, NULL);
    ptl_api_impl(m, "same", identity, NULL);
    ptl_api_impl(m, "badkernel", leaves_two, NULL);
    ptl_api_impl(m, "power", power, NULL);
    ptl_api_impl(m, "real_only", real_only, NULL);
    ptl_api_impl(m, "parts", parts, NULL);
}

PTL_LIBRARY_IMPL(cext_ops, CompositeImplicitAutograd, m)
{
    ptl_api_impl(m, "double_it", double_it, NULL);
}

void
reregister(void)
{
    ptl_api_register_kernel("cext_ops::same", "CPU", identity, NULL);
}
"""


@pytest.fixture(scope="module")
def ops_module(extensions_dir):
    return cpp_extension.load_inline("cext_test_ops", OPS_SOURCE, functions=["reregister"])


def test_registered_kernels_run_through_the_dispatcher(ops_module, capfd):
    x = ptl.arange(6, dtype=ptl.float64).reshape(2, 3).t()
    assert_close(ptl.ops.cext_ops.twice(x), to_numpy(x) * 2)
    assert_close(ptl.ops.cext_ops.twice(x, 5), to_numpy(x) * 5)
    assert_close(ptl.ops.cext_ops.twice(ptl.tensor(1.5)), np.float32(3.0))
    assert ptl.ops.cext_ops.same(x) is x
    dump = ptl._C._dispatch_dump("cext_ops::twice")
    assert re.search(r"CPU: kernel registered at .*main\.c:\d+  \[calls: 3\]", dump), dump
    with ptl.dispatch_trace():
        ptl.ops.cext_ops.twice(x)
    err = capfd.readouterr().err
    assert "[dispatch] cext_ops::twice  keys={Autograd, CPU}  -> Autograd fallback" in err
    assert "[dispatch] cext_ops::twice  keys={CPU}  -> CPU kernel" in err
    assert "[dispatch] aten::mul.Tensor" in err


def test_composite_kernel_is_differentiated_through_its_ops(ops_module):
    x = ptl.tensor([1.0, -2.0], dtype=ptl.float64, requires_grad=True)
    y = ptl.ops.cext_ops.double_it(x)
    assert y.tolist() == [2.0, -4.0] and y.grad_fn.name() == "AddBackward0"
    assert ptl.autograd.gradcheck(ptl.ops.cext_ops.double_it, (x,))
    assert "CompositeImplicitAutograd: kernel registered at main.c:" in \
        ptl._C._dispatch_dump("cext_ops::double_it")


def test_kernel_errors(ops_module):
    x = ptl.ones(2)
    with pytest.raises(IndexError, match="^cext_ops::fails: index out of range$"):
        ptl.ops.cext_ops.fails(x)
    with pytest.raises(RuntimeError, match=re.escape(
            "the kernel of cext_ops::badkernel left 2 values on the stack; its schema returns 1")):
        ptl.ops.cext_ops.badkernel(x)
    with pytest.raises(NotImplementedError, match=re.escape(
            "Could not run 'cext_ops::nokernel' with arguments from the 'CPU' backend. "
            "'cext_ops::nokernel' is only available for these backends: [].")):
        ptl.ops.cext_ops.nokernel(x)
    assert_no_leak(lambda: pytest.raises(IndexError, ptl.ops.cext_ops.fails, x))


def test_complex_scalars_cross_the_c_abi(ops_module):
    """A Scalar argument holding Python's 1j reaches a C kernel as a complex number
    (ptl_api_stack_is_complex / ptl_api_stack_complex), goes back into an aten call
    (ptl_api_push_complex), and ptl_api_pop_complex reads any number.  The
    operator is a library's: complex tensors reach its kernel, as in PyTorch."""
    z = ptl.tensor([1 + 2j, -3j, 0.5], dtype=ptl.complex128)
    assert_close(ptl.ops.cext_ops.power(z, 2 - 1j), to_numpy(z) ** (2 - 1j))
    assert_close(ptl.ops.cext_ops.power(z, 3), to_numpy(z) ** 3)
    x = ptl.tensor([1.0, 2.0], dtype=ptl.float64)
    y = ptl.ops.cext_ops.power(x, 1j)
    assert y.dtype == ptl.complex128
    assert_close(y, to_numpy(x) ** 1j)
    assert_close(ptl.ops.cext_ops.power(x, 2.5), to_numpy(x) ** 2.5)
    assert ptl.ops.cext_ops.real_only(x, 2.0) is x
    with pytest.raises(TypeError, match="^stack value 1 is a complex number: read it with "
                                        "ptl_api_stack_complex$"):
        ptl.ops.cext_ops.real_only(x, 1j)
    assert ptl.ops.cext_ops.parts(2 - 5j).tolist() == [2.0, -5.0]
    assert ptl.ops.cext_ops.parts(7).tolist() == [7.0, 0.0]
    assert ptl.ops.cext_ops.parts(True).tolist() == [1.0, 0.0]
    assert_no_leak(lambda: ptl.ops.cext_ops.power(z, 1j))


def test_second_kernel_for_a_key_warns_and_overrides(ops_module):
    with pytest.warns(UserWarning, match="Overriding a previously registered kernel for the "
                                         "same operator and the same dispatch key"):
        ops_module.reregister()
    x = ptl.ones(2)
    assert ptl.ops.cext_ops.same(x) is x


def test_registration_error_is_raised_at_load(extensions_dir):
    source = 'PTL_LIBRARY(cext_bad, m) { ptl_api_def(m, "f(Tensor x -> Tensor"); }'
    with pytest.raises(RuntimeError, match=r"main\.c:\d+: .*"):
        cpp_extension.load_inline("cext_test_badschema", source)


def test_abi_major_mismatch_refuses_to_load(extensions_dir):
    source = textwrap.dedent("""
        #undef PTL_API_VERSION_MAJOR
        #define PTL_API_VERSION_MAJOR 99
        PTL_LIBRARY(cext_abi, m) { ptl_api_def(m, "f(Tensor x) -> Tensor"); }
        """)
    major, minor = cpp_extension._api_version()
    with pytest.raises(ImportError, match=re.escape(
            f"built against the pytorchlite C API version 99.{minor}, but the pytorchlite it "
            f"runs in has version {major}.{minor}")):
        cpp_extension.load_inline("cext_test_abi", source)
    with pytest.raises(RuntimeError, match="no operator named 'cext_abi::f'"):
        ptl._C._dispatch_dump("cext_abi::f")


def test_fallback_and_redispatch_run_in_a_fresh_process(extensions_dir):
    # a CPU fallback serves every operator without a CPU kernel, so it runs away from the
    # other tests' process
    code = r'''
        import pytorchlite as ptl
        from pytorchlite.utils.cpp_extension import load_inline
        SOURCE = r"""
        static int
        cpu_fallback(const PtlApiOperator *op, PtlApiStack *stack, void *data)
        {
            (void)op;
            PtlApiTensor *x = ptl_api_stack_tensor(stack, 0);
            ptl_api_stack_clear(stack);
            *(int *)data += 1;
            return ptl_api_push_tensor(stack, x);
        }
        static int calls;
        int fallback_calls(void) { return calls; }
        PTL_LIBRARY(cext_fb, m) { ptl_api_def(m, "f(Tensor x) -> Tensor"); }
        void install(void) { ptl_api_register_fallback("CPU", cpu_fallback, &calls); }
        void install_again(void) { ptl_api_register_fallback("Autograd", cpu_fallback, &calls); }
        """
        m = load_inline("cext_test_fallback", SOURCE,
                        functions=["install", "install_again", "fallback_calls"])
        m.install()
        x = ptl.ones(2)
        assert ptl.ops.cext_fb.f(x) is x
        assert m.fallback_calls() == 1
        assert "CPU: fallback" in ptl._C._dispatch_dump("cext_fb::f")
        try:
            m.install_again()
        except RuntimeError as e:
            print(e)
        '''
    done = run_python(code, extensions_dir)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ("Tried to register multiple backend fallbacks for the same "
                                   "dispatch key Autograd")


def test_cpp_source_and_plain_library(extensions_dir, tmp_path):
    src = tmp_path / "twice_cpp.cpp"
    src.write_text(textwrap.dedent("""
        #include <pytorchlite/ptl_api.h>
        #include <vector>
        static int
        negate(const PtlApiOperator *, PtlApiStack *stack, void *)
        {
            std::vector<int64_t> shape{1};
            PtlApiTensor *x = ptl_api_stack_tensor(stack, 0);
            PtlApiStack *s = ptl_api_stack_new();
            ptl_api_push_tensor(s, x);
            int rc = ptl_api_call("aten::neg", s);
            PtlApiTensor *r = rc == 0 ? ptl_api_pop_tensor(s) : nullptr;
            ptl_api_stack_free(s);
            if (r == nullptr) {
                return -1;
            }
            ptl_api_stack_clear(stack);
            rc = ptl_api_push_tensor(stack, r);
            ptl_api_release(r);
            return rc;
        }
        PTL_LIBRARY(cext_cpp, m) { ptl_api_def(m, "neg(Tensor x) -> Tensor"); }
        PTL_LIBRARY_IMPL(cext_cpp, CPU, m) { ptl_api_impl(m, "neg", negate, nullptr); }
        """))
    assert cpp_extension.load("cext_test_cpp", [str(src)], is_python_module=False) is None
    assert ptl.ops.cext_cpp.neg(ptl.tensor([1.0, -2.0])).tolist() == [-1.0, 2.0]


def test_load_inline_cpp(extensions_dir):
    source = textwrap.dedent("""
        #include <numeric>
        #include <vector>
        int64_t
        sum_of_sizes(PtlApiTensor *t)
        {
            std::vector<int64_t> s(ptl_api_sizes(t), ptl_api_sizes(t) + ptl_api_dim(t));
            return std::accumulate(s.begin(), s.end(), int64_t{0});
        }
        """)
    m = cpp_extension.load_inline("cext_test_inline_cpp", source, functions=["sum_of_sizes"],
                                  language="c++")
    assert m.sum_of_sizes(ptl.zeros(2, 3, 4)) == 9
    with pytest.raises(ValueError, match="language must be 'c' or 'c\\+\\+', not 'rust'"):
        cpp_extension.load_inline("cext_test_rust", source, language="rust")


# ---- the build cache ----

SMALL_OP = r"""
PtlApiTensor *
plus_one(PtlApiTensor *x)
{
    PtlApiStack *s = ptl_api_stack_new();
    PtlApiTensor *r = NULL;
    /* x + 1 * one: aten::add.Tensor with its alpha given */
    double one = 1.0;
    PtlApiTensor *o = ptl_api_from_data(&one, 0, NULL, NULL, PTL_API_FLOAT64);
    if (o != NULL && ptl_api_push_tensor(s, x) == 0 && ptl_api_push_tensor(s, o) == 0 &&
        ptl_api_push_double(s, 1.0) == 0 && ptl_api_call("aten::add.Tensor", s) == 0) {
        r = ptl_api_pop_tensor(s);
    }
    ptl_api_release(o);
    ptl_api_stack_free(s);
    return r;
}
"""

LOAD_SMALL = f'''
import time
t0 = time.perf_counter()
from pytorchlite.utils.cpp_extension import load_inline
import pytorchlite as ptl
m = load_inline("cext_test_cache", {SMALL_OP!r}, functions=["plus_one"], verbose=True)
print("seconds", time.perf_counter() - t0)
assert m.plus_one(ptl.ones(2)).tolist() == [2.0, 2.0]
print(m.__file__)
'''


def test_second_load_in_a_new_process_compiles_nothing(tmp_path):
    cache = str(tmp_path / "cache")
    first = run_python(LOAD_SMALL, cache)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "Building extension module cext_test_cache" in first.stdout
    path = first.stdout.strip().splitlines()[-1]
    stamp = os.stat(path)
    second = run_python(LOAD_SMALL, cache)
    assert second.returncode == 0, second.stderr
    assert "No modifications detected for re-loaded extension module cext_test_cache, " \
           "skipping build step..." in second.stdout
    assert "Building" not in second.stdout and "gcc" not in second.stdout
    assert second.stdout.strip().splitlines()[-1] == path
    again = os.stat(path)
    assert (again.st_mtime_ns, again.st_ino) == (stamp.st_mtime_ns, stamp.st_ino)
    root = os.path.dirname(os.path.dirname(path))
    assert sorted(os.listdir(root)) == sorted([os.path.basename(os.path.dirname(path)), "lock"])
    cold = float(re.search(r"seconds (\S+)", first.stdout).group(1))
    warm = float(re.search(r"seconds (\S+)", second.stdout).group(1))
    print(f"load_inline of a small C op: cold {cold:.2f} s, cached {warm:.3f} s")


def test_build_directory(tmp_path):
    m = cpp_extension.load_inline("cext_test_builddir", "int v(void) { return 6; }",
                                  functions=["v"], build_directory=str(tmp_path))
    assert m.v() == 6
    assert os.path.dirname(os.path.dirname(m.__file__)) == str(tmp_path)


def test_a_changed_source_rebuilds(extensions_dir):
    a = cpp_extension.load_inline("cext_test_rebuild", "int v(void) { return 1; }",
                                  functions=["v"])
    assert a.v() == 1
    b = cpp_extension.load_inline("cext_test_rebuild", "int v(void) { return 2; }",
                                  functions=["v"])
    assert b.v() == 2
    assert a.__file__ != b.__file__


def test_stale_lock_of_a_killed_build_is_cleared(extensions_dir):
    root = os.path.join(cpp_extension._cache_root(), "cext_test_stale")
    os.makedirs(root)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with open(os.path.join(root, "lock"), "w") as f:
        f.write(str(dead.pid))
    m = cpp_extension.load_inline("cext_test_stale", "int v(void) { return 3; }",
                                  functions=["v"], verbose=True)
    assert m.v() == 3
    with open(os.path.join(root, "lock")) as f:
        assert f.read() == ""


def test_lock_held_by_a_live_build_times_out_naming_it(extensions_dir, monkeypatch):
    root = os.path.join(cpp_extension._cache_root(), "cext_test_busy")
    os.makedirs(root)
    fd = os.open(os.path.join(root, "lock"), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, b"12345")
        monkeypatch.setattr(cpp_extension, "LOCK_TIMEOUT", 0.2)
        with pytest.raises(RuntimeError, match=r"timed out after 0 s waiting for the build of "
                                               r"extension 'cext_test_busy' by process 12345"):
            cpp_extension.load_inline("cext_test_busy", "int v(void) { return 4; }",
                                      functions=["v"])
    finally:
        os.close(fd)


def test_compile_error_shows_file_line_and_leaves_nothing(extensions_dir):
    source = "int v(void)\n{\n    return undefined_name;\n}\n"
    with pytest.raises(RuntimeError) as info:
        cpp_extension.load_inline("cext_test_broken", source, functions=["v"])
    msg = str(info.value)
    assert msg.startswith("Error building extension 'cext_test_broken':")
    assert re.search(r"main\.c:\d+:\d+: error: .undefined_name. undeclared", msg), msg
    root = os.path.join(cpp_extension._cache_root(), "cext_test_broken")
    assert os.listdir(root) == ["lock"]


def test_threads_build_without_ninja(extensions_dir, monkeypatch):
    which = shutil.which
    monkeypatch.setattr(cpp_extension.shutil, "which",
                        lambda name, *a, **k: None if name == "ninja" else which(name, *a, **k))
    m = cpp_extension.load_inline("cext_test_noninja", "int v(void) { return 5; }",
                                  functions=["v"])
    assert m.v() == 5
    with pytest.raises(RuntimeError, match=r"main\.c:\d+:\d+: error"):
        cpp_extension.load_inline("cext_test_noninja_broken", "int v(void) { return x; }",
                                  functions=["v"])


def test_cold_load_inline_is_quick(extensions_dir):
    # indicative only (the machine is shared): report, assert a generous bound
    t0 = time.perf_counter()
    m = cpp_extension.load_inline("cext_test_cold", SMALL_OP, functions=["plus_one"])
    seconds = time.perf_counter() - t0
    assert m.plus_one(ptl.zeros(1)).tolist() == [1.0]
    print(f"cold load_inline: {seconds:.2f} s")
    assert seconds < 30
