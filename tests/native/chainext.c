// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The --native tests' C extension: the same chain as chain.c, called the way CPython calls
 * an extension's functions (its own C-call path, not ctypes'): ext_outer -> ext_mid ->
 * ext_leaf, and ext_cb_outer -> ext_cb_mid -> a Python callable. Written against the
 * stable ABI with its few declarations spelled out here, so that one build imports into
 * every interpreter of the suite, Debian's trees included, which have no Python headers.
 * Built without frame pointers and without sibling calls. */
#include <stddef.h>
#include <stdint.h>

typedef struct _object {
	ptrdiff_t ob_refcnt;
	void *ob_type;
} PyObject;

typedef PyObject *(*PyCFunction)(PyObject *, PyObject *);

typedef struct {
	const char *ml_name;
	PyCFunction ml_meth;
	int ml_flags;
	const char *ml_doc;
} PyMethodDef;

typedef struct {
	PyObject ob_base;
	PyObject *(*m_init)(void);
	ptrdiff_t m_index;
	PyObject *m_copy;
} PyModuleDef_Base;

typedef struct {
	PyModuleDef_Base m_base;
	const char *m_name;
	const char *m_doc;
	ptrdiff_t m_size;
	PyMethodDef *m_methods;
	void *m_slots, *m_traverse, *m_clear, *m_free;
} PyModuleDef;

#define METH_O		   0x0008
#define PYTHON_API_VERSION 1013

PyObject *PyModule_Create2(PyModuleDef *, int);
unsigned long long PyLong_AsUnsignedLongLong(PyObject *);
PyObject *PyObject_CallObject(PyObject *, PyObject *);
PyObject *Py_BuildValue(const char *, ...);
void Py_DecRef(PyObject *);

volatile uint64_t ext_sink;

__attribute__((noinline)) void ext_leaf(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		ext_sink += i * 2654435761u;
}

__attribute__((noinline)) void ext_mid(uint64_t n)
{
	ext_leaf(n);
	ext_sink++;
}

__attribute__((noinline)) static PyObject *ext_outer(PyObject *self, PyObject *n)
{
	(void)self;
	ext_mid(PyLong_AsUnsignedLongLong(n));
	ext_sink++;
	return Py_BuildValue("");
}

__attribute__((noinline)) int ext_cb_mid(PyObject *cb)
{
	PyObject *r = PyObject_CallObject(cb, NULL);

	ext_sink++;
	if (!r)
		return -1;
	Py_DecRef(r);
	return 0;
}

__attribute__((noinline)) static PyObject *ext_cb_outer(PyObject *self, PyObject *cb)
{
	int rc;

	(void)self;
	rc = ext_cb_mid(cb);
	ext_sink++;
	return rc ? NULL : Py_BuildValue("");
}

static PyMethodDef methods[] = {
	{ "ext_outer", ext_outer, METH_O, NULL },
	{ "ext_cb_outer", ext_cb_outer, METH_O, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyModuleDef module = {
	.m_base = { .ob_base = { 1, NULL } },
	.m_name = "chainext",
	.m_size = -1,
	.m_methods = methods,
};

PyObject *PyInit_chainext(void)
{
	return PyModule_Create2(&module, PYTHON_API_VERSION);
}
