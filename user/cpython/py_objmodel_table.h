/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Between the generated table (user/cpython/py_objmodel_table.c) and the hand-written code that
 * completes it (user/cpython/py_objmodel_find.c); no one else needs it. */
#ifndef ASYNCBPF_PY_OBJMODEL_TABLE_H
#define ASYNCBPF_PY_OBJMODEL_TABLE_H

#include "cpython/py_objmodel.h"

/* One per release line, every field measured from headers except partial_* and the
 * _asyncio part of async (fut_*, task_*, futureiter_future, and wakeup_task before 3.10). */
extern const struct py_objmodel py_objmodel_gen[];
extern const unsigned int py_objmodel_gen_len;

#endif
