// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "asyncio/threadwork.h"
#include "cpython/objread.h"

#define MAX_LOCALS 64

/* The index of the local named want in a code object's names (co_varnames before 3.11,
 * co_localsplusnames since: the frame's localsplus order). */
static int slot_of(const struct objread *r, uint64_t names, const char *want, __u16 *slot)
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
			*slot = (__u16)i;
			return 0;
		}
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

int threadwork_find(const struct py_target *t, struct py_work *out)
{
	uint64_t mod, cls, dict, fn, code, names;
	struct objread r;
	int ret = objread_init(&r, t);

	if (ret)
		return ret;
	if (!r.m->code_varnames)
		return -ENOTSUP;
	ret = obj_module(&r, "anyio._backends._asyncio", &mod);
	if (ret)
		return ret;
	if ((ret = obj_module_attr(&r, mod, "WorkerThread", &cls)) ||
	    (ret = obj_ptr(&r, cls + r.m->type_dict, &dict)) ||
	    (ret = obj_dict_get(&r, dict, "run", &fn)))
		return ret;
	if (!is_type(&r, fn, "function"))
		return -EINVAL;
	if ((ret = obj_ptr(&r, fn + r.m->func_code, &code)))
		return ret;
	if (!is_type(&r, code, "code"))
		return -EINVAL;
	if ((ret = obj_ptr(&r, code + r.m->code_varnames, &names)) ||
	    (ret = slot_of(&r, names, "future", &out->future)) ||
	    (ret = slot_of(&r, names, "context", &out->context)))
		return ret;
	out->code = code;
	out->pad = 0;
	return 0;
}
