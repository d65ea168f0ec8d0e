/* default_device.c -- the default device of factory functions: torch.set_default_device,
 * torch.get_default_device and `with torch.device(...)`.  Plays the role of
 * torch/utils/_device.py's DeviceContext, without a TorchFunctionMode: the argument parser
 * asks for the default when it fills a factory's missing `device` argument.
 *
 * Note [The default device]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~
 * The default belongs to the thread, as PyTorch's does (a thread started inside
 * `with torch.device("meta")` or after set_default_device creates CPU tensors).  It applies
 * to the factories PyTorch names in _device_constructors(): here, every operator whose schema
 * has a `Device? device` argument and no tensor argument (empty, zeros, ones, full, arange,
 * linspace, logspace, eye, scalar_tensor, rand, randn, randint, randperm), minus
 * normal(float, float, size), which PyTorch leaves out, plus tensor() and as_tensor().  The
 * *_like factories, Tensor.new_* and from_numpy follow their input, as in PyTorch.  An
 * explicit device argument always wins.  `with device:` saves the thread's default on a stack
 * and restores it at exit, so contexts nest and one device object can be entered twice. */
#include <stdlib.h>

#include "ptlpy.h"

typedef struct DefaultDevice {
    int set;
    PtlDevice device;
} DefaultDevice;

static _Thread_local DefaultDevice current;
static _Thread_local DefaultDevice *saved;     /* the `with` stack; freed when it empties */
static _Thread_local size_t nsaved, capacity;

int
ptlpy_default_device(PtlDevice *out)
{
    if (current.set) {
        *out = current.device;
    }
    return current.set;
}

PyObject *
ptlpy_device_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    if (nsaved == capacity) {
        size_t n = capacity ? 2 * capacity : 8;
        DefaultDevice *grown = realloc(saved, n * sizeof(*grown));
        if (grown == NULL) {
            return PyErr_NoMemory();
        }
        saved = grown;
        capacity = n;
    }
    saved[nsaved++] = current;
    current.set = 1;
    current.device = ((PtlPyDevice *)self)->device;
    Py_INCREF(self);
    return self;
}

PyObject *
ptlpy_device_exit(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (nsaved == 0) {
        PyErr_SetString(PyExc_RuntimeError,
                        "device.__exit__ called without a matching device.__enter__");
        return NULL;
    }
    current = saved[--nsaved];
    if (nsaved == 0) {
        free(saved);
        saved = NULL;
        capacity = 0;
    }
    Py_RETURN_FALSE;
}

/* set_default_device(device): None returns factories to the CPU. */
PyObject *
ptlpy_set_default_device(PyObject *module, PyObject *arg)
{
    (void)module;
    if (arg == Py_None) {
        current.set = 0;
        Py_RETURN_NONE;
    }
    PtlDevice d;
    if (!Py_IS_TYPE(arg, &PtlPyDevice_Type) && !PyUnicode_Check(arg) && !PyLong_Check(arg)) {
        PyErr_Format(PyExc_TypeError,
                     "set_default_device(): expected a device, a string or an int, got %.100s",
                     Py_TYPE(arg)->tp_name);
        return NULL;
    }
    if (ptlpy_parse_device(arg, &d, 1) < 0) {
        return NULL;
    }
    current.set = 1;
    current.device = d;
    Py_RETURN_NONE;
}

PyObject *
ptlpy_get_default_device(PyObject *module, PyObject *unused)
{
    (void)module;
    (void)unused;
    return ptlpy_device_object(current.set ? current.device : ptl_device_cpu());
}
