// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The object model of a release: the generated table (py_objmodel_table.c) completed with what
 * no installed header declares, transcribed from each version's sources. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "process/memread.h"
#include "cpython/py_layouts.h"
#include "cpython/py_objmodel_table.h"

/*
 * FutureObj / TaskObj of Modules/_asynciomodule.c, by the first release that has the
 * layout. All fields are pointers after PyObject_HEAD unless noted:
 *   3.8   loop cb0 ctx0 callbacks exception result source_tb int:state log_tb blocking
 *         dict weakreflist | fut_waiter coro name context int:must_cancel log_destroy
 *   3.9   source_tb is followed by cancel_msg; _PyErr_StackItem cancelled_exc_state (32)
 *         ends the future
 *   3.10.6 exception_tb after exception (bpo-45924; 3.10.0-3.10.5 are laid out as 3.9)
 *   3.11  cancelled_exc (a pointer) replaces cancelled_exc_state; tasks end with
 *         int num_cancels_requested
 *   3.12  as 3.11
 *   3.13  cancelled_exc moves before state, log_tb and blocking become bitfields, dict
 *         and weakreflist go (managed); tasks start with the must_cancel and
 *         log_destroy_pending bitfields and num_cancels_requested, then fut_waiter
 *   3.14  awaited_by before state, then the chars is_task and awaited_by_is_set; tasks
 *         end with their llist_node (3.15 as 3.14; .AsyncioDebug checks both)
 * FutureIter is {PyObject_HEAD; FutureObj *future;} in every version. The task wakeup
 * callback is TaskWakeupMethWrapper {PyObject_HEAD; TaskObj *ww_task;} in 3.8-3.9, a
 * builtin method bound to the task (m_self, generated) from 3.10 on.
 */
struct asyncio_layout {
	uint32_t since; /* PY_VERSION_HEX of the first release with this layout */
	__u16 fut_state, fut_size, task_fut_waiter, task_coro, task_name, task_size;
	__u16 wakeup_task; /* 0: keep the generated value */
};

static const struct asyncio_layout asyncio_layouts[] = {
	{
		/* 3.8 */
		.since = 0x030800f0,
		.fut_state = 72,
		.fut_size = 104,
		.task_fut_waiter = 104,
		.task_coro = 112,
		.task_name = 120,
		.task_size = 144,
		.wakeup_task = 16,
	},
	{
		/* 3.9 */
		.since = 0x030900f0,
		.fut_state = 80,
		.fut_size = 144,
		.task_fut_waiter = 144,
		.task_coro = 152,
		.task_name = 160,
		.task_size = 184,
		.wakeup_task = 16,
	},
	{
		/* 3.10 */
		.since = 0x030a00f0,
		.fut_state = 80,
		.fut_size = 144,
		.task_fut_waiter = 144,
		.task_coro = 152,
		.task_name = 160,
		.task_size = 184,
	},
	{
		/* 3.10.6 */
		.since = 0x030a06f0,
		.fut_state = 88,
		.fut_size = 152,
		.task_fut_waiter = 152,
		.task_coro = 160,
		.task_name = 168,
		.task_size = 192,
	},
	{
		/* 3.11 */
		.since = 0x030b00f0,
		.fut_state = 88,
		.fut_size = 128,
		.task_fut_waiter = 128,
		.task_coro = 136,
		.task_name = 144,
		.task_size = 176,
	},
	{
		/* 3.12 */
		.since = 0x030c00f0,
		.fut_state = 88,
		.fut_size = 128,
		.task_fut_waiter = 128,
		.task_coro = 136,
		.task_name = 144,
		.task_size = 176,
	},
	{
		/* 3.13 */
		.since = 0x030d00f0,
		.fut_state = 96,
		.fut_size = 104,
		.task_fut_waiter = 112,
		.task_coro = 120,
		.task_name = 128,
		.task_size = 144,
	},
	{
		/* 3.14 */
		.since = 0x030e00f0,
		.fut_state = 104,
		.fut_size = 112,
		.task_fut_waiter = 120,
		.task_coro = 128,
		.task_name = 136,
		.task_size = 168,
	},
	{
		/* 3.15 */
		.since = 0x030f00f0,
		.fut_state = 104,
		.fut_size = 112,
		.task_fut_waiter = 120,
		.task_coro = 128,
		.task_name = 136,
		.task_size = 168,
	},
};

#define NLAYOUTS (sizeof(asyncio_layouts) / sizeof(asyncio_layouts[0]))

/* Same in every version: the future's loop, first callback and callback list. */
#define FUT_LOOP	  16
#define FUT_CALLBACK0	  24
#define FUT_CALLBACKS	  40
#define FUTUREITER_FUTURE 16

/* functools.partial (Modules/_functoolsmodule.c): {PyObject_HEAD; fn; args; kw; ...} in
 * 3.8-3.15. */
#define PARTIAL_FN   16
#define PARTIAL_ARGS 24

/* models: one per pair of an asyncio layout and a generated model of the same line whose
 * ranges meet; more than enough for the tables */
#define MAX_MODELS 64
static struct py_objmodel models[MAX_MODELS];
static uint32_t models_since[MAX_MODELS];
static unsigned int nmodels;
static pthread_once_t once = PTHREAD_ONCE_INIT;

#define LINE_START(v)  (((v)&0xffff0000u) | 0xf0u)
#define MICRO_START(v) (((v)&0xffffff00u) | 0xf0u)

/* From which release py_objmodel_gen[j] stands: the line's first model from the line's
 * start (pyenv's headers, of the newest micro installed), a later one (a distribution's
 * micro, whose runtime structs may differ in size) from its own micro on. */
static uint32_t gen_since(unsigned int j)
{
	for (unsigned int k = 0; k < j; k++)
		if (PYV_MINOR_OF(py_objmodel_gen[k].py_version) ==
		    PYV_MINOR_OF(py_objmodel_gen[j].py_version))
			return MICRO_START(py_objmodel_gen[j].py_version);
	return LINE_START(py_objmodel_gen[j].py_version);
}

/* The release the next model of since's line starts at, or the line's end. */
static uint32_t gen_until(unsigned int j)
{
	for (unsigned int k = j + 1; k < py_objmodel_gen_len; k++)
		if (PYV_MINOR_OF(py_objmodel_gen[k].py_version) ==
		    PYV_MINOR_OF(py_objmodel_gen[j].py_version))
			return gen_since(k);
	return LINE_START(py_objmodel_gen[j].py_version) + 0x10000u;
}

static uint32_t asyncio_until(unsigned int i)
{
	if (i + 1 < NLAYOUTS &&
	    PYV_MINOR_OF(asyncio_layouts[i + 1].since) == PYV_MINOR_OF(asyncio_layouts[i].since))
		return asyncio_layouts[i + 1].since;
	return LINE_START(asyncio_layouts[i].since) + 0x10000u;
}

static void add_model(const struct asyncio_layout *a, const struct py_objmodel *gen, uint32_t since)
{
	struct py_objmodel *om;
	unsigned int at = nmodels;

	if (nmodels == MAX_MODELS)
		return;
	/* kept in order of since: py_objmodel_find takes the last that starts in time */
	while (at > 0 && models_since[at - 1] > since) {
		models[at] = models[at - 1];
		models_since[at] = models_since[at - 1];
		at--;
	}
	nmodels++;
	models_since[at] = since;
	om = &models[at];
	*om = *gen;
	om->partial_fn = PARTIAL_FN;
	om->partial_args = PARTIAL_ARGS;
	om->async.fut_loop = FUT_LOOP;
	om->async.fut_callback0 = FUT_CALLBACK0;
	om->async.fut_callbacks = FUT_CALLBACKS;
	om->async.fut_state = a->fut_state;
	om->async.fut_size = a->fut_size;
	om->async.task_fut_waiter = a->task_fut_waiter;
	om->async.task_coro = a->task_coro;
	om->async.task_name = a->task_name;
	om->async.task_size = a->task_size;
	om->async.futureiter_future = FUTUREITER_FUTURE;
	om->async.tuple_items = om->tuple_items;
	if (a->wakeup_task)
		om->async.wakeup_task = a->wakeup_task;
}

static void build(void)
{
	for (unsigned int i = 0; i < NLAYOUTS; i++) {
		const struct asyncio_layout *a = &asyncio_layouts[i];

		for (unsigned int j = 0; j < py_objmodel_gen_len; j++) {
			uint32_t from = gen_since(j), to = gen_until(j);

			if (PYV_MINOR_OF(py_objmodel_gen[j].py_version) != PYV_MINOR_OF(a->since) ||
			    to <= a->since || from >= asyncio_until(i))
				continue;
			add_model(a, &py_objmodel_gen[j], from > a->since ? from : a->since);
		}
	}
}

/* Final releases only, as py_layout_find: the last layout of the line that starts at or
 * before version_hex. */
const struct py_objmodel *py_objmodel_find(uint32_t version_hex)
{
	const struct py_objmodel *found = NULL;
	unsigned int i;

	if (PYV_LEVEL(version_hex) != 0xF)
		return NULL;
	pthread_once(&once, build);
	for (i = 0; i < nmodels; i++)
		if (PYV_MINOR_OF(models_since[i]) == PYV_MINOR_OF(version_hex) &&
		    models_since[i] <= version_hex)
			found = &models[i];
	return found;
}

static int basicsize(const struct py_objmodel *om, pid_t pid, uint64_t type, int64_t *size)
{
	return mem_read(pid, type + om->type_basicsize, size, sizeof(*size));
}

int py_objmodel_check_asyncio(const struct py_objmodel *om, pid_t pid, uint64_t future_type,
			      uint64_t task_type, char *why, size_t len)
{
	static const char *const names[2] = { "_asyncio.Future", "_asyncio.Task" };
	uint64_t types[2] = { future_type, task_type };
	int64_t want[2] = { om->async.fut_size, om->async.task_size }, got;
	int i, err;

	for (i = 0; i < 2; i++) {
		err = basicsize(om, pid, types[i], &got);
		if (err) {
			snprintf(why, len, "pid %d: reading tp_basicsize of %s at %#llx: %s",
				 (int)pid, names[i], (unsigned long long)types[i], strerror(-err));
			return -1;
		}
		if (got != want[i]) {
			snprintf(why, len,
				 "pid %d: %s has tp_basicsize %lld, the layout for Python %u.%u "
				 "expects %lld",
				 (int)pid, names[i], (long long)got, PYV_MAJOR(om->py_version),
				 PYV_MINOR(om->py_version), (long long)want[i]);
			return -1;
		}
	}
	return 0;
}
