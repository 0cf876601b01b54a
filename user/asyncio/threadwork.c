// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio/threadwork.h"
#include "cpython/objread.h"
#include "process/memread.h"

#define MAX_LOCALS 64

/* The index of want in a tuple of str. */
static int index_of(const struct objread *r, uint64_t names, const char *want, __u16 *index)
{
	uint64_t items[MAX_LOCALS];
	size_t n = 0;

	if (obj_items(r, names, items, MAX_LOCALS, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char *s = NULL;
		int same;

		if (obj_str(r, items[i], &s))
			continue;
		same = !strcmp(s, want);
		free(s);
		if (same) {
			*index = (__u16)i;
			return 0;
		}
	}
	return -ENOENT;
}

/* The frame slot of code's local want (co_varnames before 3.11, co_localsplusnames
 * since: the frame's localsplus order). */
static int local_slot(const struct objread *r, uint64_t code, const char *want, __u16 *slot)
{
	uint64_t names;
	int ret = obj_ptr(r, code + r->m->code_varnames, &names);

	return ret ? ret : index_of(r, names, want, slot);
}

/* The index of code's free variable want in a closure: co_freevars' order before 3.11,
 * since then that of the CO_FAST_FREE entries of co_localsplusnames. */
static int free_index(const struct objread *r, uint64_t code, const char *want, __u16 *index)
{
	const struct py_objmodel *m = r->m;
	uint64_t names, kinds_obj, items[MAX_LOCALS];
	uint8_t kinds[MAX_LOCALS];
	size_t n = 0;
	__u16 k = 0;
	int ret;

	if (m->code_freevars)
		return (ret = obj_ptr(r, code + m->code_freevars, &names))
			       ? ret
			       : index_of(r, names, want, index);
	if (!m->code_localspluskinds || !m->fast_free)
		return -ENOTSUP;
	if ((ret = obj_ptr(r, code + m->code_varnames, &names)) ||
	    (ret = obj_ptr(r, code + m->code_localspluskinds, &kinds_obj)) ||
	    (ret = obj_items(r, names, items, MAX_LOCALS, &n)))
		return ret;
	if (n && (ret = mem_read(r->pid, kinds_obj + r->l->bytes_sval, kinds, n)))
		return ret;
	for (size_t i = 0; i < n; i++) {
		char *s = NULL;
		int same;

		if (!(kinds[i] & m->fast_free))
			continue;
		if (obj_str(r, items[i], &s))
			return -EINVAL;
		same = !strcmp(s, want);
		free(s);
		if (same) {
			*index = k;
			return 0;
		}
		k++;
	}
	return -ENOENT;
}

static int is_type(const struct objread *r, uint64_t obj, const char *name)
{
	uint64_t type;
	char buf[32];

	return !obj_type(r, obj, &type) && !obj_type_name(r, type, buf, sizeof(buf)) &&
	       !strcmp(buf, name);
}

/* The code object of a module's function, or of a method of one of its classes (cls
 * not NULL). */
static int code_of(const struct objread *r, const char *module, const char *cls, const char *fn,
		   uint64_t *code)
{
	uint64_t mod, obj, dict;
	int ret = obj_module(r, module, &mod);

	if (ret)
		return ret;
	if (cls && ((ret = obj_module_attr(r, mod, cls, &obj)) ||
		    (ret = obj_ptr(r, obj + r->m->type_dict, &dict)) ||
		    (ret = obj_dict_get(r, dict, fn, &obj))))
		return ret;
	if (!cls && (ret = obj_module_attr(r, mod, fn, &obj)))
		return ret;
	if (!is_type(r, obj, "function"))
		return -EINVAL;
	if ((ret = obj_ptr(r, obj + r->m->func_code, code)))
		return ret;
	return is_type(r, *code, "code") ? 0 : -EINVAL;
}

/* The code object named name among code's constants (a nested function's). */
static int nested_code(const struct objread *r, uint64_t code, const char *name, uint64_t *out)
{
	uint64_t consts, items[MAX_LOCALS], at;
	size_t n = 0;
	int ret;

	if (!r->m->code_consts)
		return -ENOTSUP;
	if ((ret = obj_ptr(r, code + r->m->code_consts, &consts)) ||
	    (ret = obj_items(r, consts, items, MAX_LOCALS, &n)))
		return ret;
	for (size_t i = 0; i < n; i++) {
		char *s = NULL;
		int same;

		if (!is_type(r, items[i], "code") || obj_ptr(r, items[i] + r->l->code_name, &at) ||
		    obj_str(r, at, &s))
			continue;
		same = !strcmp(s, name);
		free(s);
		if (same) {
			*out = items[i];
			return 0;
		}
	}
	return -ENOENT;
}

static int find_anyio(const struct objread *r, struct py_work *w)
{
	uint64_t code;
	int ret = code_of(r, "anyio._backends._asyncio", "WorkerThread", "run", &code);

	if (!ret && !(ret = local_slot(r, code, "future", &w->anyio_future)) &&
	    !(ret = local_slot(r, code, "context", &w->anyio_context)))
		w->code[WORK_ANYIO] = code;
	return ret;
}

/* What tells a job queued in a pool from one running (wall mode's marker): optional, the
 * pool link works without it. */
static void find_queued(const struct objread *r, uint64_t chain, uint64_t future_type,
			struct py_work *w)
{
	uint64_t check, mod, pending;

	if (nested_code(r, chain, "_call_check_cancel", &check) ||
	    free_index(r, check, "source", &w->check_cell) ||
	    obj_attr_place(r, future_type, "_state", &w->future_state) ||
	    obj_module(r, "concurrent.futures._base", &mod) ||
	    obj_module_attr(r, mod, "PENDING", &pending))
		return;
	w->pending_state = pending;
	w->check_cancel_code = check;
}

static int find_pool(const struct objread *r, struct py_work *w)
{
	const struct py_objmodel *m = r->m;
	uint64_t code, chain, mod, item_type, future_type, set_state, inner;
	int ret;

	if ((ret = code_of(r, "concurrent.futures.thread", "_WorkItem", "run", &code)) ||
	    (ret = local_slot(r, code, "self", &w->pool_self)) ||
	    (ret = code_of(r, "asyncio.futures", NULL, "_chain_future", &chain)) ||
	    (ret = nested_code(r, chain, "_call_set_state", &set_state)) ||
	    (ret = free_index(r, set_state, "destination", &w->pool_cell)))
		return ret;
	/* the classes' shared keys exist once an instance was made: until then, not found
	 * (-EAGAIN: made later, with nothing imported meanwhile) */
	if ((ret = obj_module(r, "concurrent.futures.thread", &mod)) ||
	    (ret = obj_module_attr(r, mod, "_WorkItem", &item_type)) ||
	    (ret = obj_module(r, "concurrent.futures._base", &mod)) ||
	    (ret = obj_module_attr(r, mod, "Future", &future_type)))
		return ret;
	if (obj_attr_place(r, item_type, "future", &w->item_future) ||
	    obj_attr_place(r, future_type, "_done_callbacks", &w->done_callbacks))
		return -EAGAIN;
	/* 3.14+ */
	w->pool_inner =
		code_of(r, "concurrent.futures.thread", "WorkerContext", "run", &inner) ? 0 : inner;
	w->set_state_code = set_state;
	w->list_size = m->var_size;
	w->list_items = m->list_items;
	w->func_code = m->func_code;
	w->func_closure = m->func_closure;
	w->cell_ref = m->cell_ref;
	w->code[WORK_POOL] = code;
	find_queued(r, chain, future_type, w);
	return 0;
}

int threadwork_find(const struct py_target *t, struct py_work *w)
{
	struct objread r;
	int ret = objread_init(&r, t);

	if (ret)
		return ret;
	if (!r.m->code_varnames)
		return -ENOTSUP;
	if (!w->code[WORK_ANYIO])
		find_anyio(&r, w);
	if (!w->code[WORK_POOL] && find_pool(&r, w) == -EAGAIN)
		return 1;
	return 0;
}
