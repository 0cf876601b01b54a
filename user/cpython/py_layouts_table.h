/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Between the generated table (user/cpython/py_layouts_table.c) and the hand-written code that uses
 * it (user/cpython/py_runtime_check.c); no one else needs it. */
#ifndef ASYNCBPF_PY_LAYOUTS_TABLE_H
#define ASYNCBPF_PY_LAYOUTS_TABLE_H

#include "cpython/py_layouts.h"

extern const struct py_layout py_layout_table[];
extern const unsigned int py_layout_table_len;

#endif
