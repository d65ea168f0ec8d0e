/* module_getattr.c -- attribute lookup of nn.Module instances in C.
 *
 * Note [Module attribute lookup]
 * ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
 * A module's parameters, buffers and submodules live in its _parameters, _buffers and
 * _modules tables, not in its __dict__, so `self.weight` misses the ordinary lookup and
 * reaches Module.__getattr__ (pytorchlite/nn/modules/module.py), as in PyTorch.  Through
 * Python's own hook that miss costs an AttributeError, formatted and thrown away, and a Python
 * call: about 550 ns against 50 for an attribute in __dict__ (Python 3.11), paid for every
 * parameter every forward.  module_getattro gives the same answers without either: the
 * ordinary lookup with its "not found" suppressed, then the three tables (plain or ordered
 * dicts) read in C, and only when all miss (or a table is some other mapping) the class's
 * __getattr__, which raises Module's message or does what an override does.
 * _module_getattr_slot(cls) installs it on a class whose __getattr__ is Module's and whose
 * __getattribute__ is object's (Module.__init_subclass__ asks for every subclass): a class
 * that defines either keeps Python's hook, and assigning either later makes Python recompute
 * the slot, back to the hook. */
#include "ptlpy.h"

static PyObject *s_parameters, *s_buffers, *s_modules, *s_getattr, *s_getattribute;

/* The ordinary lookup, NULL without an exception when nothing is found */
static PyObject *
generic_getattr_quiet(PyObject *self, PyObject *name)
{
#if PY_VERSION_HEX < 0x030D0000
    return _PyObject_GenericGetAttrWithDict(self, name, NULL, 1);
#else
    PyObject *r = PyObject_GenericGetAttr(self, name);
    if (r == NULL && PyErr_ExceptionMatches(PyExc_AttributeError)) {
        PyErr_Clear();
    }
    return r;
#endif
}

/* self.<name> from the table `key` of self's __dict__: a new reference, NULL without an
 * exception when it is absent, -1 in *other when the table is not a plain or ordered dict */
static PyObject *
table_item(PyObject *dict, PyObject *key, PyObject *name, int *other)
{
    PyObject *table = PyDict_GetItemWithError(dict, key);
    if (table == NULL) {
        return NULL;
    }
    if (!PyDict_CheckExact(table) && !Py_IS_TYPE(table, &PyODict_Type)) {
        *other = -1;
        return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(table, name);
    Py_XINCREF(v);
    return v;
}

static PyObject *
module_getattro(PyObject *self, PyObject *name)
{
    PyObject *r = generic_getattr_quiet(self, name);
    if (r != NULL) {
        return r;
    }
    if (PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError)) {
            return NULL;
        }
        PyErr_Clear();   /* a property raised it: Python's hook calls __getattr__ then too */
    }
    PyObject *dict = PyObject_GenericGetDict(self, NULL);
    if (dict == NULL) {
        return NULL;
    }
    int other = 0;
    PyObject *const keys[] = {s_parameters, s_buffers, s_modules};
    for (int i = 0; i < 3 && r == NULL && other == 0 && !PyErr_Occurred(); i++) {
        r = table_item(dict, keys[i], name, &other);
    }
    Py_DECREF(dict);
    if (r != NULL || PyErr_Occurred()) {
        return r;
    }
    PyObject *getattr = _PyType_Lookup(Py_TYPE(self), s_getattr);
    if (getattr == NULL) {
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%U'", Py_TYPE(self)->tp_name, name);
        return NULL;
    }
    return PyObject_CallFunctionObjArgs(getattr, self, name, NULL);
}

/* _module_getattr_slot(cls, module_getattr): module_getattro becomes cls's lookup when cls's
 * __getattr__ is module_getattr (Module's) and its __getattribute__ object's; True if so */
static PyObject *
py_module_getattr_slot(PyObject *m, PyObject *args)
{
    (void)m;
    PyObject *cls, *module_getattr;
    if (!PyArg_ParseTuple(args, "O!O:_module_getattr_slot", &PyType_Type, &cls, &module_getattr)) {
        return NULL;
    }
    PyTypeObject *t = (PyTypeObject *)cls;
    PyObject *getattribute = _PyType_Lookup(t, s_getattribute);
    if (_PyType_Lookup(t, s_getattr) != module_getattr ||
        getattribute != _PyType_Lookup(&PyBaseObject_Type, s_getattribute)) {
        Py_RETURN_FALSE;
    }
    t->tp_getattro = module_getattro;
    Py_RETURN_TRUE;
}

static PyMethodDef module_getattr_functions[] = {
    {"_module_getattr_slot", py_module_getattr_slot, METH_VARARGS,
     "_module_getattr_slot(cls, module_getattr) -> bool: Note [Module attribute lookup]"},
    {NULL, NULL, 0, NULL},
};

int
ptlpy_module_getattr_init(PyObject *module)
{
    if ((s_parameters = PyUnicode_InternFromString("_parameters")) == NULL ||
        (s_buffers = PyUnicode_InternFromString("_buffers")) == NULL ||
        (s_modules = PyUnicode_InternFromString("_modules")) == NULL ||
        (s_getattr = PyUnicode_InternFromString("__getattr__")) == NULL ||
        (s_getattribute = PyUnicode_InternFromString("__getattribute__")) == NULL) {
        return -1;
    }
    return PyModule_AddFunctions(module, module_getattr_functions);
}
