// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The object model and async layout of every installed interpreter against the live
 * interpreter: py/objmodel_target.py builds objects and suspended asyncio tasks and prints
 * what Python says about them (ids, sizes, values); this test reads the same facts from
 * its memory through struct py_objmodel, and walks the suspended coroutines with
 * pw_walk_coro of bpf/pywalk.h, as the sampler does. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/memread.h"
#include "cpython/py_layouts.h"
#include "cpython/py_objmodel.h"
#include "cpython/pyproc.h"
#include "cpython/pystr.h"
#include "tests/unit/pydir.h"
#include "tests/unit/unit.h"

#include "cpython/vmwalk.h"

#define MAX_FACTS 256
#define MAX_TOK	  48

struct fact {
	char *line; /* tokens point into it */
	int n;	    /* tokens after the key */
	char *key, *s[MAX_TOK];
	uint64_t v[MAX_TOK];
	int64_t i[MAX_TOK];
};

struct target {
	const char *python;
	pid_t pid;
	int in, out;
	struct fact f[MAX_FACTS];
	int nf;
	struct py_target t;
	const struct py_objmodel *om;
	const struct py_layout *l;
	uint32_t minor;
	bool readerr;
};

static int spawn(struct target *tg)
{
	char script[PATH_MAX + 32];
	char *argv[] = { (char *)tg->python, script, NULL };
	int in[2], out[2];

	snprintf(script, sizeof(script), "%s/objmodel_target.py", pydir);
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	tg->pid = fork();
	if (tg->pid < 0)
		return -1;
	if (tg->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	tg->in = in[1];
	tg->out = out[0];
	return 0;
}

static int read_line(struct target *tg, char *buf, size_t len)
{
	struct pollfd p = { .fd = tg->out, .events = POLLIN };
	size_t n = 0;

	while (n + 1 < len) {
		if (poll(&p, 1, 20000) <= 0 || read(tg->out, buf + n, 1) != 1)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

/* Reads facts up to the next READY. */
static int read_facts(struct target *tg)
{
	char line[4096], *tok, *save;
	struct fact *f;

	for (;;) {
		if (read_line(tg, line, sizeof(line)))
			return -1;
		if (!strcmp(line, "READY"))
			return 0;
		if (tg->nf == MAX_FACTS)
			return -1;
		f = &tg->f[tg->nf++];
		f->line = strdup(line);
		if (!f->line)
			return -1;
		f->key = strtok_r(f->line, " ", &save);
		for (f->n = 0; f->n < MAX_TOK && (tok = strtok_r(NULL, " ", &save)); f->n++) {
			f->s[f->n] = tok;
			f->i[f->n] = strtoll(tok, NULL, 10);
			f->v[f->n] = strtoull(tok, NULL, 10);
		}
	}
}

static void stop(struct target *tg)
{
	int i;

	close(tg->in);
	close(tg->out);
	kill(tg->pid, SIGKILL);
	waitpid(tg->pid, NULL, 0);
	for (i = 0; i < tg->nf; i++)
		free(tg->f[i].line);
}

/* The nth fact named key (n from 0), or NULL. */
static struct fact *fact(struct target *tg, const char *key, int n)
{
	int i;

	for (i = 0; i < tg->nf; i++)
		if (!strcmp(tg->f[i].key, key) && n-- == 0)
			return &tg->f[i];
	return NULL;
}

#define FOR_FACTS(tg, key, f, k) for (k = 0; (f = fact(tg, key, k)); k++)

static uint64_t rd(struct target *tg, uint64_t addr)
{
	uint64_t v = 0;

	if (mem_read(tg->pid, addr, &v, sizeof(v)))
		tg->readerr = true;
	return v;
}

static uint32_t rd32(struct target *tg, uint64_t addr)
{
	uint32_t v = 0;

	if (mem_read(tg->pid, addr, &v, sizeof(v)))
		tg->readerr = true;
	return v;
}

static uint8_t rd8(struct target *tg, uint64_t addr)
{
	uint8_t v = 0;

	if (mem_read(tg->pid, addr, &v, sizeof(v)))
		tg->readerr = true;
	return v;
}

/* A NUL-terminated C string (tp_name, ml_name), at most len - 1 bytes. */
static void rdstr(struct target *tg, uint64_t addr, char *buf, size_t len)
{
	size_t i;

	for (i = 0; i + 1 < len; i++) {
		buf[i] = (char)rd8(tg, addr + i);
		if (!buf[i])
			return;
	}
	buf[i] = 0;
}

static bool pystr_is(struct target *tg, uint64_t addr, const char *want)
{
	char *s = NULL;
	bool eq = !py_str_read(tg->pid, tg->l, addr, &s) && !strcmp(s, want);

	free(s);
	return eq;
}

static uint64_t type_of(struct target *tg, uint64_t obj)
{
	return rd(tg, obj + tg->l->object_type);
}

/* ---- dicts ---- */

struct entries {
	uint64_t at; /* first entry */
	uint32_t stride, key, value;
	int64_t n;
};

static int keys_entries(struct target *tg, uint64_t keys, struct entries *e)
{
	const struct py_objmodel *om = tg->om;
	int64_t size;
	unsigned int width;

	e->n = (int64_t)rd(tg, keys + om->keys_nentries);
	if (om->dict_model == PY_DICT_38) {
		size = (int64_t)rd(tg, keys + om->keys_size);
		if (size <= 0 || size > 1 << 20)
			return -1;
		width = size <= 0xff ? 1 : size <= 0xffff ? 2 : 4;
		e->at = keys + om->keys_indices + (uint64_t)size * width;
		e->stride = om->entry_size;
		e->key = om->entry_key;
		e->value = om->entry_value;
	} else {
		size = (int64_t)1 << rd8(tg, keys + om->keys_size);
		e->at = keys + om->keys_indices +
			(1ull << rd8(tg, keys + om->keys_log2_index_bytes));
		if (rd8(tg, keys + om->keys_kind)) {
			e->stride = om->uentry_size;
			e->key = om->uentry_key;
			e->value = om->uentry_value;
		} else {
			e->stride = om->entry_size;
			e->key = om->entry_key;
			e->value = om->entry_value;
		}
	}
	return tg->readerr || e->n < 0 || e->n > size ? -1 : 0;
}

/* Index of the entry whose key is the object key, -1 if none. */
static int64_t entry_of(struct target *tg, const struct entries *e, uint64_t key)
{
	int64_t i;

	for (i = 0; i < e->n; i++)
		if (rd(tg, e->at + (uint64_t)i * e->stride + e->key) == key)
			return i;
	return -1;
}

/* Value for key in a combined or split dict, 0 if absent. */
static uint64_t dict_get(struct target *tg, uint64_t dict, uint64_t key, const char *keystr)
{
	const struct py_objmodel *om = tg->om;
	uint64_t keys = rd(tg, dict + om->dict_keys), values = rd(tg, dict + om->dict_values), k;
	struct entries e;
	int64_t i;

	if (keys_entries(tg, keys, &e))
		return 0;
	for (i = 0; i < e.n; i++) {
		k = rd(tg, e.at + (uint64_t)i * e.stride + e.key);
		if (!k || (key && k != key) || (!key && !pystr_is(tg, k, keystr)))
			continue;
		if (values)
			return rd(tg, values + om->values_values + (uint64_t)i * 8);
		return rd(tg, e.at + (uint64_t)i * e.stride + e.value);
	}
	return 0;
}

static void test_dicts(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f;
	int k, j;

	FOR_FACTS(tg, "DICT", f, k)
	{
		uint64_t d = f->v[0];

		CHECK(rd(tg, d + om->dict_used) == f->v[1], "%s: dict ma_used %llu, len %llu",
		      tg->python, (unsigned long long)rd(tg, d + om->dict_used),
		      (unsigned long long)f->v[1]);
		CHECK(rd(tg, d + om->dict_values) == 0, "%s: combined dict has values", tg->python);
		for (j = 2; j + 1 < f->n; j += 2)
			CHECK(dict_get(tg, d, f->v[j], NULL) == f->v[j + 1],
			      "%s: dict %d item %d: value %#llx, Python says %#llx", tg->python, k,
			      j / 2 - 1, (unsigned long long)dict_get(tg, d, f->v[j], NULL),
			      (unsigned long long)f->v[j + 1]);
	}
	CHECK(k == 2, "%s: %d DICT facts", tg->python, k);
}

/* The values array of an instance whose dict was never asked for. */
static uint64_t instance_values(struct target *tg, uint64_t obj, uint64_t type)
{
	const struct py_objmodel *om = tg->om;
	uint64_t v, dict;

	switch (om->instdict_model) {
	case PY_INSTDICT_OFFSET:
		dict = rd(tg, obj + rd(tg, type + om->type_dictoffset));
		CHECK(rd(tg, dict + om->dict_keys) == rd(tg, type + om->heaptype_cached_keys),
		      "%s: instance dict does not share the cached keys", tg->python);
		return rd(tg, dict + om->dict_values);
	case PY_INSTDICT_MANAGED:
		CHECK(rd(tg, obj - 24) == 0, "%s: instance dict materialized", tg->python);
		return rd(tg, obj - 32);
	case PY_INSTDICT_TAGGED:
		/* the values pointer is stored minus one, which sets bit 0 */
		v = rd(tg, obj - 24);
		CHECK(v & 1, "%s: instance values not tagged: %#llx", tg->python,
		      (unsigned long long)v);
		return v + 1;
	case PY_INSTDICT_INLINE:
		CHECK(rd(tg, type + om->type_flags) & om->flag_inline_values,
		      "%s: no Py_TPFLAGS_INLINE_VALUES", tg->python);
		return obj + rd(tg, type + om->type_basicsize);
	}
	return 0;
}

static void test_instance(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f = fact(tg, "PLAIN", 0);
	uint64_t obj, type, values, keys;
	struct entries e;
	int64_t ia, ib;

	if (!f || f->n < 9) {
		CHECK(0, "%s: no PLAIN fact", tg->python);
		return;
	}
	obj = f->v[0];
	type = f->v[1];
	CHECK(type_of(tg, obj) == type, "%s: ob_type", tg->python);
	CHECK(rd(tg, type + om->type_basicsize) == f->v[2], "%s: Plain tp_basicsize %llu, %llu",
	      tg->python, (unsigned long long)rd(tg, type + om->type_basicsize),
	      (unsigned long long)f->v[2]);
	CHECK((int64_t)rd(tg, type + om->type_dictoffset) == f->i[3],
	      "%s: Plain tp_dictoffset %lld, Python says %lld", tg->python,
	      (long long)rd(tg, type + om->type_dictoffset), (long long)f->i[3]);
	CHECK(rd(tg, type + om->type_flags) == f->v[4], "%s: Plain tp_flags %#llx, %#llx",
	      tg->python, (unsigned long long)rd(tg, type + om->type_flags),
	      (unsigned long long)f->v[4]);
	CHECK(om->instdict_model == PY_INSTDICT_OFFSET || (f->v[4] & om->flag_managed_dict),
	      "%s: Plain lacks Py_TPFLAGS_MANAGED_DICT %#llx", tg->python,
	      (unsigned long long)om->flag_managed_dict);
	keys = rd(tg, type + om->heaptype_cached_keys);
	if (keys_entries(tg, keys, &e)) {
		CHECK(0, "%s: cached keys of Plain unreadable", tg->python);
		return;
	}
	ia = entry_of(tg, &e, f->v[5]);
	ib = entry_of(tg, &e, f->v[7]);
	CHECK(ia >= 0 && ib >= 0, "%s: attribute names in ht_cached_keys: %lld %lld", tg->python,
	      (long long)ia, (long long)ib);
	values = instance_values(tg, obj, type);
	if (ia < 0 || ib < 0 || !values)
		return;
	values += om->values_values;
	CHECK(rd(tg, values + 8 * (uint64_t)ia) == f->v[6] &&
		      rd(tg, values + 8 * (uint64_t)ib) == f->v[8],
	      "%s: split values %#llx %#llx, Python says %#llx %#llx", tg->python,
	      (unsigned long long)rd(tg, values + 8 * (uint64_t)ia),
	      (unsigned long long)rd(tg, values + 8 * (uint64_t)ib), (unsigned long long)f->v[6],
	      (unsigned long long)f->v[8]);
}

/* ---- types ---- */

static void test_types(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f, *s;
	uint64_t members;
	char buf[64];
	int k, j;

	f = fact(tg, "TYPENAME", 0);
	if (f) {
		rdstr(tg, rd(tg, f->v[0] + om->type_name), buf, sizeof(buf));
		CHECK(!strcmp(buf, f->s[1]), "%s: tp_name '%s', Python says '%s'", tg->python, buf,
		      f->s[1]);
	}
	FOR_FACTS(tg, "TYPEINFO", f, k)
	{
		uint64_t t = f->v[0], flags = rd(tg, t + om->type_flags);
		bool is_long = k == 1 || k == 2, is_str = k == 3;

		CHECK(rd(tg, t + om->type_basicsize) == f->v[1] && flags == f->v[2] &&
			      rd(tg, t + om->type_base) == f->v[3],
		      "%s: type %d: basicsize %llu flags %#llx base %#llx", tg->python, k,
		      (unsigned long long)rd(tg, t + om->type_basicsize), (unsigned long long)flags,
		      (unsigned long long)rd(tg, t + om->type_base));
		CHECK(!!(flags & om->flag_long_subclass) == is_long &&
			      !!(flags & om->flag_unicode_subclass) == is_str,
		      "%s: type %d: subclass flags in %#llx", tg->python, k,
		      (unsigned long long)flags);
	}
	CHECK(k == 4, "%s: %d TYPEINFO facts", tg->python, k);
	f = fact(tg, "TYPE", 0);
	if (f) {
		CHECK(rd(tg, f->v[0] + om->type_base) == f->v[1], "%s: Plain tp_base", tg->python);
		CHECK(f->v[2] && rd(tg, f->v[0] + om->type_dict) == f->v[2],
		      "%s: Plain tp_dict %#llx, Python says %#llx", tg->python,
		      (unsigned long long)rd(tg, f->v[0] + om->type_dict),
		      (unsigned long long)f->v[2]);
	}
	s = fact(tg, "SLOTS", 0);
	if (!s || s->n < 6) {
		CHECK(0, "%s: no SLOTS fact", tg->python);
		return;
	}
	/* both define __init__: the same slot wrapper; dict has its own */
	f = fact(tg, "PLAIN", 0);
	if (f)
		CHECK(rd(tg, f->v[1] + om->type_init) &&
			      rd(tg, f->v[1] + om->type_init) == rd(tg, s->v[1] + om->type_init),
		      "%s: tp_init of two classes with __init__ differ", tg->python);
	members = rd(tg, s->v[1] + om->type_members);
	for (j = 0; j < 2; j++) {
		uint64_t md = members + (uint64_t)j * om->memberdef_size;

		rdstr(tg, rd(tg, md + om->memberdef_name), buf, sizeof(buf));
		CHECK(!strcmp(buf, s->s[2 + 2 * j]), "%s: member %d named '%s', Python says '%s'",
		      tg->python, j, buf, s->s[2 + 2 * j]);
		CHECK(rd(tg, s->v[0] + rd(tg, md + om->memberdef_offset)) == s->v[3 + 2 * j],
		      "%s: member %s value", tg->python, buf);
	}
}

/* ---- containers, functions, ints, modules ---- */

static void test_containers(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f;
	uint64_t items, table, mask, key;
	int k, j, found;
	int64_t n;

	f = fact(tg, "TUPLE", 0);
	if (f) {
		CHECK(rd(tg, f->v[0] + om->var_size) == f->v[1], "%s: tuple size", tg->python);
		for (j = 0; j < (int)f->v[1] && j + 2 < f->n; j++)
			CHECK(rd(tg, f->v[0] + om->tuple_items + 8 * (uint64_t)j) == f->v[j + 2],
			      "%s: tuple item %d", tg->python, j);
	}
	f = fact(tg, "LIST", 0);
	if (f) {
		CHECK(rd(tg, f->v[0] + om->var_size) == f->v[1], "%s: list size", tg->python);
		items = rd(tg, f->v[0] + om->list_items);
		for (j = 0; j < (int)f->v[1] && j + 2 < f->n; j++)
			CHECK(rd(tg, items + 8 * (uint64_t)j) == f->v[j + 2], "%s: list item %d",
			      tg->python, j);
	}
	FOR_FACTS(tg, "SET", f, k)
	{
		CHECK(rd(tg, f->v[0] + om->set_used) == f->v[1], "%s: set %d used", tg->python, k);
		table = rd(tg, f->v[0] + om->set_table);
		mask = rd(tg, f->v[0] + om->set_mask);
		if (mask > 1 << 16 || ((mask + 1) & mask)) {
			CHECK(0, "%s: set %d mask %#llx", tg->python, k, (unsigned long long)mask);
			continue;
		}
		for (found = 0, n = 0; n <= (int64_t)mask; n++) {
			key = rd(tg, table + (uint64_t)n * om->setentry_size + om->setentry_key);
			for (j = 2; key && j < f->n; j++)
				found += key == f->v[j];
		}
		CHECK(found == (int)f->v[1], "%s: set %d: %d of %llu keys found", tg->python, k,
		      found, (unsigned long long)f->v[1]);
	}
	CHECK(k == 2, "%s: %d SET facts", tg->python, k);
	f = fact(tg, "WEAKREF", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + om->weakref_object) == f->v[1], "%s: wr_object", tg->python);
}

static void test_functions(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f;
	char buf[64];
	int j;

	f = fact(tg, "FUNC", 0);
	if (f) {
		CHECK(rd(tg, f->v[0] + om->func_code) == f->v[1], "%s: func_code", tg->python);
		CHECK(rd(tg, f->v[0] + om->func_name) == f->v[2], "%s: func_name", tg->python);
		CHECK(rd(tg, f->v[0] + om->func_qualname) == f->v[3], "%s: func_qualname",
		      tg->python);
		CHECK(rd(tg, f->v[0] + om->func_closure) == f->v[4], "%s: func_closure",
		      tg->python);
		for (j = 5; j < f->n; j++)
			CHECK(rd(tg, f->v[4] + om->tuple_items + 8 * (uint64_t)(j - 5)) == f->v[j],
			      "%s: closure cell %d", tg->python, j - 5);
	}
	f = fact(tg, "CELLS", 0);
	for (j = 0; f && j + 1 < f->n; j += 2)
		CHECK(rd(tg, f->v[j] + om->cell_ref) == f->v[j + 1], "%s: cell %d ob_ref",
		      tg->python, j / 2);
	f = fact(tg, "METHOD", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + om->method_func) == f->v[1] &&
			      rd(tg, f->v[0] + om->method_self) == f->v[2],
		      "%s: bound method im_func/im_self", tg->python);
	f = fact(tg, "CMETHOD", 0);
	if (f) {
		CHECK(rd(tg, f->v[0] + om->cfunc_self) == f->v[1], "%s: m_self", tg->python);
		rdstr(tg, rd(tg, rd(tg, f->v[0] + om->cfunc_ml) + om->methoddef_name), buf,
		      sizeof(buf));
		CHECK(!strcmp(buf, f->s[2]), "%s: ml_name '%s'", tg->python, buf);
	}
	f = fact(tg, "PARTIAL", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + om->partial_fn) == f->v[1] &&
			      rd(tg, f->v[0] + om->partial_args) == f->v[2],
		      "%s: partial fn %#llx args %#llx", tg->python,
		      (unsigned long long)rd(tg, f->v[0] + om->partial_fn),
		      (unsigned long long)rd(tg, f->v[0] + om->partial_args));
}

static void test_ints(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f;
	int64_t size, sign, ndigits;
	uint64_t tag;
	int k, j;

	FOR_FACTS(tg, "INT", f, k)
	{
		if (om->long_tagged) {
			tag = rd(tg, f->v[0] + om->long_size);
			ndigits = (int64_t)(tag >> 3);
			sign = 1 - (int64_t)(tag & 3);
		} else {
			size = (int64_t)rd(tg, f->v[0] + om->long_size);
			ndigits = size < 0 ? -size : size;
			sign = size < 0 ? -1 : size > 0;
		}
		CHECK(sign == f->i[1] && ndigits == f->i[2], "%s: int %d: sign %lld digits %lld",
		      tg->python, k, (long long)sign, (long long)ndigits);
		for (j = 0; j < ndigits && j + 3 < f->n; j++)
			CHECK(rd32(tg, f->v[0] + om->long_digits + 4 * (uint64_t)j) == f->v[j + 3],
			      "%s: int %d digit %d", tg->python, k, j);
		CHECK(!ndigits || (2 + ndigits < f->n &&
				   f->v[2 + ndigits] < (1ull << om->long_digit_bits)),
		      "%s: int %d: digit wider than %u bits", tg->python, k, om->long_digit_bits);
	}
	CHECK(k == 6, "%s: %d INT facts", tg->python, k);
}

static void test_module(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f = fact(tg, "MODULE", 0);
	uint64_t interp = rd(tg, tg->t.proc.runtime + tg->l->runtime_interp_head);

	if (!f)
		return;
	CHECK(rd(tg, interp + om->interp_modules) == f->v[0],
	      "%s: interp modules %#llx, sys.modules %#llx", tg->python,
	      (unsigned long long)rd(tg, interp + om->interp_modules), (unsigned long long)f->v[0]);
	CHECK(rd(tg, f->v[1] + om->module_dict) == f->v[2], "%s: md_dict", tg->python);
}

/* ---- asyncio ---- */

static void test_loop(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f = fact(tg, "LOOP", 0), *ty = fact(tg, "TYPES", 0);
	uint64_t ts, holder, loop;
	char why[256], n1[32], n2[32];

	if (!f || f->n < 6 || !ty || ty->n < 6) {
		CHECK(0, "%s: no LOOP or TYPES fact", tg->python);
		return;
	}
	CHECK(om->async.fut_size == f->v[4] && om->async.task_size == f->v[5],
	      "%s: Future/Task basicsize %u/%u, Python says %llu/%llu", tg->python,
	      om->async.fut_size, om->async.task_size, (unsigned long long)f->v[4],
	      (unsigned long long)f->v[5]);
	CHECK(!py_objmodel_check_asyncio(om, tg->pid, f->v[2], f->v[3], why, sizeof(why)),
	      "%s: check_asyncio: %s", tg->python, why);
	snprintf(n1, sizeof(n1), "%llu", (unsigned long long)f->v[5]);
	snprintf(n2, sizeof(n2), "%u", om->async.fut_size);
	CHECK(py_objmodel_check_asyncio(om, tg->pid, f->v[3], f->v[3], why, sizeof(why)) == -1 &&
		      strstr(why, n1) && strstr(why, n2) && !strchr(why, '\n'),
	      "%s: check_asyncio with Task as Future: '%s'", tg->python, why);
	CHECK(py_objmodel_check_asyncio(om, tg->pid, 8, f->v[3], why, sizeof(why)) == -1,
	      "%s: check_asyncio on unmapped memory", tg->python);

	CHECK(tg->t.proc.coro_type == ty->v[0] && tg->t.proc.gen_type == ty->v[1] &&
		      tg->t.proc.asend_type == ty->v[2] && tg->t.proc.corowrapper_type == ty->v[3],
	      "%s: type addresses coro %#llx gen %#llx asend %#llx wrapper %#llx", tg->python,
	      (unsigned long long)tg->t.proc.coro_type, (unsigned long long)tg->t.proc.gen_type,
	      (unsigned long long)tg->t.proc.asend_type,
	      (unsigned long long)tg->t.proc.corowrapper_type);

	/* the running loop of the thread: tstate dict (3.8-3.12) or right after it (3.13) */
	vmwalk_target(tg->pid);
	ts = pw_find_tstate(NULL, &tg->t.proc, f->v[1], 0);
	CHECK(ts, "%s: no thread state for thread %#llx", tg->python, (unsigned long long)f->v[1]);
	if (!ts)
		return;
	if (tg->minor >= PYV(3, 13)) {
		loop = rd(tg, ts + om->tstate_size);
	} else {
		holder = dict_get(tg, rd(tg, ts + om->tstate_dict), 0,
				  "__asyncio_running_event_loop__");
		loop = tg->minor >= PYV(3, 12) ? holder : rd(tg, holder + 16);
	}
	CHECK(loop == f->v[0], "%s: running loop %#llx, Python says %#llx", tg->python,
	      (unsigned long long)loop, (unsigned long long)f->v[0]);
}

static void test_futures(struct target *tg)
{
	const struct py_async_layout *a = &tg->om->async;
	const struct py_objmodel *om = tg->om;
	struct fact *f, *ty = fact(tg, "TYPES", 0);
	uint64_t cbs, w;
	char buf[64];
	int k, j;

	FOR_FACTS(tg, "FUTURE", f, k)
	CHECK(rd32(tg, f->v[0] + a->fut_state) == f->v[1] &&
		      rd(tg, f->v[0] + a->fut_loop) == f->v[2],
	      "%s: future %d: state %u loop %#llx", tg->python, k, rd32(tg, f->v[0] + a->fut_state),
	      (unsigned long long)rd(tg, f->v[0] + a->fut_loop));
	CHECK(k == 3, "%s: %d FUTURE facts", tg->python, k);
	f = fact(tg, "CALLBACKS", 0);
	if (f) {
		CHECK(rd(tg, f->v[0] + a->fut_callback0) == f->v[1], "%s: fut_callback0",
		      tg->python);
		cbs = rd(tg, f->v[0] + a->fut_callbacks);
		CHECK(cbs && rd(tg, cbs + om->var_size) == f->v[2], "%s: fut_callbacks size",
		      tg->python);
		for (j = 0; cbs && j < (int)f->v[2] && j + 3 < f->n; j++)
			CHECK(rd(tg, rd(tg, rd(tg, cbs + om->list_items) + 8 * (uint64_t)j) +
					     om->tuple_items) == f->v[3 + j],
			      "%s: callback %d", tg->python, j);
	}
	f = fact(tg, "FUTUREITER", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + a->futureiter_future) == f->v[1], "%s: FutureIter future",
		      tg->python);
	FOR_FACTS(tg, "TASK", f, k)
	{
		CHECK(rd(tg, f->v[0] + a->task_coro) == f->v[1], "%s: task %s coro", tg->python,
		      f->s[3]);
		CHECK(rd(tg, f->v[0] + a->task_name) == f->v[2] &&
			      pystr_is(tg, rd(tg, f->v[0] + a->task_name), f->s[3]),
		      "%s: task %s name", tg->python, f->s[3]);
	}
	CHECK(k == 5, "%s: %d TASK facts", tg->python, k);
	f = fact(tg, "AWAITS", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + a->task_fut_waiter) == f->v[1],
		      "%s: fut_waiter %#llx, Python says %#llx", tg->python,
		      (unsigned long long)rd(tg, f->v[0] + a->task_fut_waiter),
		      (unsigned long long)f->v[1]);
	f = fact(tg, "WAKEUP", 0);
	if (f && ty) {
		w = rd(tg, f->v[0] + a->fut_callback0);
		CHECK(w == f->v[1], "%s: wakeup callback %#llx, Python says %#llx", tg->python,
		      (unsigned long long)w, (unsigned long long)f->v[1]);
		CHECK(rd(tg, w + a->wakeup_task) == f->v[2], "%s: wakeup of %#llx, want %#llx",
		      tg->python, (unsigned long long)rd(tg, w + a->wakeup_task),
		      (unsigned long long)f->v[2]);
		if (tg->minor >= PYV(3, 10)) {
			CHECK(type_of(tg, w) == ty->v[5] && f->v[3] == f->v[2],
			      "%s: wakeup is not a builtin bound to the task", tg->python);
			rdstr(tg, rd(tg, rd(tg, w + om->cfunc_ml) + om->methoddef_name), buf,
			      sizeof(buf));
			CHECK(!strcmp(buf, "task_wakeup"), "%s: wakeup named '%s'", tg->python,
			      buf);
		} else {
			rdstr(tg, rd(tg, type_of(tg, w) + om->type_name), buf, sizeof(buf));
			CHECK(strstr(buf, f->s[4]), "%s: wakeup type '%s', Python says '%s'",
			      tg->python, buf, f->s[4]);
		}
	}
	f = fact(tg, "ASEND", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + a->asend_gen) == f->v[1], "%s: ags_gen", tg->python);
	f = fact(tg, "COROWRAPPER", 0);
	if (f)
		CHECK(rd(tg, f->v[0] + a->corowrapper_coro) == f->v[1], "%s: cw_coroutine",
		      tg->python);
}

/* Top of a suspended coroutine's value stack, read field by field. */
static uint64_t stack_top(struct target *tg, uint64_t frame)
{
	const struct py_async_layout *a = &tg->om->async;
	int32_t depth;

	switch (a->yf_kind) {
	case PY_YF_LASTI_BYTES:
		return rd(tg, rd(tg, frame + a->frame_stack) - 8);
	case PY_YF_LASTI_UNITS:
		depth = (int32_t)rd32(tg, frame + a->frame_stackdepth);
		return depth < 1
			       ? 0
			       : rd(tg, rd(tg, frame + a->frame_stack) + 8 * (uint64_t)(depth - 1));
	default:
		depth = (int32_t)rd32(tg, frame + a->frame_stackdepth);
		return depth < 1 ? 0 : rd(tg, frame + a->frame_stack + 8 * (uint64_t)(depth - 1));
	}
}

static void test_frames(struct target *tg)
{
	const struct py_async_layout *a = &tg->om->async;
	const struct py_layout *l = tg->l;
	struct fact *f, *tos = fact(tg, "TOS", 0);
	uint64_t coro, frame;
	int k;

	FOR_FACTS(tg, "FRAME", f, k)
	{
		coro = f->v[0];
		CHECK(rd(tg, coro + a->gen_qualname) == f->v[4], "%s: gi_qualname", tg->python);
		if (a->gen_code)
			CHECK(rd(tg, coro + a->gen_code) == f->v[2], "%s: gi_code", tg->python);
		if (l->frame_kind == PY_FRAMES_OBJECT) {
			frame = rd(tg, coro + a->gen_frame);
			CHECK(frame == f->v[1], "%s: gi_frame", tg->python);
			CHECK(rd(tg, frame + a->frame_gen) == coro, "%s: f_gen", tg->python);
			if (a->frame_state)
				CHECK((int8_t)rd8(tg, frame + a->frame_state) < 0,
				      "%s: f_state %d of a suspended frame", tg->python,
				      (int8_t)rd8(tg, frame + a->frame_state));
		} else {
			frame = coro + a->gen_frame;
			CHECK((int8_t)rd8(tg, coro + a->gen_frame_state) == a->gen_suspended,
			      "%s: gi_frame_state %d, want %d", tg->python,
			      (int8_t)rd8(tg, coro + a->gen_frame_state), a->gen_suspended);
		}
		CHECK(rd(tg, frame + l->frame_code) == f->v[2], "%s: frame %d code", tg->python, k);
		if (k == 0 && tos)
			CHECK(stack_top(tg, frame) == tos->v[1],
			      "%s: stack top %#llx, the awaited coroutine is %#llx", tg->python,
			      (unsigned long long)stack_top(tg, frame),
			      (unsigned long long)tos->v[1]);
	}
	CHECK(k == 2, "%s: %d FRAME facts", tg->python, k);
}

/* pw_walk_coro on each suspended task's coroutine, as the sampler runs it. */
static void test_walk(struct target *tg)
{
	struct fact *f, *ty = fact(tg, "TYPES", 0), *fr;
	struct frame_rec out[PW_FRAMES_CAP];
	static struct pw_scratch s;
	__u64 awaited;
	__u32 flags, n;
	int k, j;

	if (!ty)
		return;
	vmwalk_target(tg->pid);
	FOR_FACTS(tg, "CHAIN", f, k)
	{
		flags = 0;
		awaited = 0;
		memset(out, 0, sizeof(out));
		n = pw_walk_coro(NULL, &tg->t.proc, f->v[0], out, 0, PW_FRAMES_CAP, &s, &awaited,
				 &flags);
		CHECK(n == (uint32_t)(f->n - 2) && !flags,
		      "%s: chain %d: %u frames (want %d), "
		      "flags %#x",
		      tg->python, k, n, f->n - 2, flags);
		for (j = 0; j < (int)n && j + 2 < f->n; j++)
			CHECK(out[j].code == f->v[j + 2] && out[j].fp != FP_INVALID,
			      "%s: chain %d frame %d: code %#llx, Python says %#llx", tg->python, k,
			      j, (unsigned long long)out[j].code, (unsigned long long)f->v[j + 2]);
		CHECK(awaited && type_of(tg, awaited) == ty->v[4] &&
			      rd(tg, awaited + tg->om->async.futureiter_future) == f->v[1],
		      "%s: chain %d awaits %#llx (a FutureIter of %#llx?)", tg->python, k,
		      (unsigned long long)awaited, (unsigned long long)f->v[1]);
		/* the first chain is the one FRAME facts describe */
		for (j = 0; k == 0 && j < (int)n && (fr = fact(tg, "FRAME", j)); j++)
			CHECK(out[j].instr == (int32_t)fr->i[3],
			      "%s: frame %d instr %d, f_lasti %lld", tg->python, j, out[j].instr,
			      (long long)fr->i[3]);
	}
	CHECK(k == 5, "%s: %d CHAIN facts", tg->python, k);
}

/* A walk reads each code object once; pw_scratch_reset forgets what it read. */
static void test_code_cache(struct target *tg)
{
	struct fact *f = fact(tg, "CHAIN", 0);
	static struct pw_scratch s, fresh;
	__u32 fp, k;
	__u64 code;

	if (!f || f->n < 3)
		return;
	code = f->v[2];
	vmwalk_target(tg->pid);
	pw_scratch_reset(&s);
	fp = pw_code_fp_cached(NULL, &tg->t.proc, code, &s, 0);
	CHECK(fp != FP_INVALID && fp == pw_code_fp(NULL, &tg->t.proc, code, &fresh),
	      "%s: cached fingerprint %#x of %#llx, uncached %#x", tg->python, fp,
	      (unsigned long long)code, pw_code_fp(NULL, &tg->t.proc, code, &fresh));
	for (k = 0; k < PW_CODE_SLOTS && s.code_addr[k] != code; k++)
		;
	CHECK(k < PW_CODE_SLOTS, "%s: code object %#llx not remembered", tg->python,
	      (unsigned long long)code);
	if (k == PW_CODE_SLOTS)
		return;
	s.code_fp[k] = fp ^ 1;
	CHECK(pw_code_fp_cached(NULL, &tg->t.proc, code, &s, 0) == (fp ^ 1),
	      "%s: second lookup of %#llx read the target again", tg->python,
	      (unsigned long long)code);
	pw_scratch_reset(&s);
	CHECK(pw_code_fp_cached(NULL, &tg->t.proc, code, &s, 0) == fp,
	      "%s: a reset walk still used the last walk's fingerprint", tg->python);
}

/* ---- what links a thread's work to its task: context, locals, their names ---- */

/* A _PyStackRef (3.14+) or PyObject * without its tag bits. */
static uint64_t untag(struct target *tg, uint64_t ref)
{
	return ref & ~((1ull << tg->l->ref_tag_bits) - 1);
}

/* Local slot i of a frame (PyFrameObject 3.8-3.10, _PyInterpreterFrame 3.11+). */
static uint64_t local_slot(struct target *tg, uint64_t frame, unsigned int i)
{
	return untag(tg, rd(tg, frame + tg->om->async.frame_localsplus + 8 * (uint64_t)i));
}

/* The thread's innermost frame, as the walker finds it. */
static uint64_t current_frame(struct target *tg, uint64_t ts)
{
	const struct py_layout *l = tg->l;
	uint64_t f = rd(tg, ts + l->tstate_frame);

	return l->frame_kind == PY_FRAMES_CFRAME && f ? rd(tg, f + l->cframe_current) : f;
}

/* The tuple at code + code_varnames names its slots as co_varnames does. */
static void check_varnames(struct target *tg, const struct fact *f)
{
	uint64_t names = rd(tg, f->v[0] + tg->om->code_varnames);
	int j, n = f->n - 2;

	CHECK(names && type_of(tg, names) == f->v[1] &&
		      (int64_t)rd(tg, names + tg->om->var_size) >= n,
	      "%s: code %#llx: co_varnames %#llx is no tuple of at least %d", tg->python,
	      (unsigned long long)f->v[0], (unsigned long long)names, n);
	for (j = 0; names && j < n; j++)
		CHECK(pystr_is(tg, rd(tg, names + tg->om->tuple_items + 8 * (uint64_t)j),
			       f->s[j + 2]),
		      "%s: code %#llx: local %d is not named '%s'", tg->python,
		      (unsigned long long)f->v[0], j, f->s[j + 2]);
}

static void test_contexts(struct target *tg)
{
	const struct py_async_layout *a = &tg->t.proc.async;
	struct fact *c = fact(tg, "CONTEXT", 0), *r = fact(tg, "RUNNING", 0),
		    *lo = fact(tg, "LOCALS", 0), *f;
	uint64_t ts, ctx, frame, coro;
	char buf[64];
	int k;

	if (!c || c->n < 4 || !r || r->n < 3 || !lo || lo->n < 3) {
		CHECK(0, "%s: no CONTEXT, RUNNING or LOCALS fact", tg->python);
		return;
	}
	CHECK(a->tstate_context && a->frame_localsplus && tg->om->code_varnames,
	      "%s: context %u localsplus %u varnames %u", tg->python, a->tstate_context,
	      a->frame_localsplus, tg->om->code_varnames);
	vmwalk_target(tg->pid);
	ts = pw_find_tstate(NULL, &tg->t.proc, c->v[0], 0);
	CHECK(ts, "%s: no thread state for thread %#llx", tg->python, (unsigned long long)c->v[0]);
	if (!ts)
		return;

	/* blocked inside ctx.run(): the thread state's context is ctx, a Context */
	ctx = rd(tg, ts + a->tstate_context);
	CHECK(ctx == c->v[1], "%s: tstate context %#llx, Python says %#llx", tg->python,
	      (unsigned long long)ctx, (unsigned long long)c->v[1]);
	CHECK(type_of(tg, ctx) == c->v[2], "%s: context's type %#llx, Context is %#llx", tg->python,
	      (unsigned long long)type_of(tg, ctx), (unsigned long long)c->v[2]);
	rdstr(tg, rd(tg, type_of(tg, ctx) + tg->om->type_name), buf, sizeof(buf));
	CHECK(!strcmp(buf, c->s[3]), "%s: context's tp_name '%s', Python says '%s'", tg->python,
	      buf, c->s[3]);

	/* the running frame's slots: report_blocked(ctx, lazy) */
	frame = current_frame(tg, ts);
	CHECK(frame && untag(tg, rd(tg, frame + tg->l->frame_code)) == r->v[0],
	      "%s: innermost frame %#llx runs %#llx, not report_blocked's code %#llx", tg->python,
	      (unsigned long long)frame, (unsigned long long)rd(tg, frame + tg->l->frame_code),
	      (unsigned long long)r->v[0]);
	CHECK(local_slot(tg, frame, 0) == r->v[1] && local_slot(tg, frame, 1) == r->v[2],
	      "%s: running frame's locals %#llx %#llx, Python says %#llx %#llx", tg->python,
	      (unsigned long long)local_slot(tg, frame, 0),
	      (unsigned long long)local_slot(tg, frame, 1), (unsigned long long)r->v[1],
	      (unsigned long long)r->v[2]);

	/* a suspended coroutine's slots: inner_a(fut), then its local b */
	coro = lo->v[0];
	frame = tg->l->frame_kind == PY_FRAMES_OBJECT ? rd(tg, coro + a->gen_frame)
						      : coro + a->gen_frame;
	CHECK(local_slot(tg, frame, 0) == lo->v[1] && local_slot(tg, frame, 1) == lo->v[2],
	      "%s: suspended frame's locals %#llx %#llx, Python says %#llx %#llx", tg->python,
	      (unsigned long long)local_slot(tg, frame, 0),
	      (unsigned long long)local_slot(tg, frame, 1), (unsigned long long)lo->v[1],
	      (unsigned long long)lo->v[2]);

	FOR_FACTS(tg, "VARNAMES", f, k)
	check_varnames(tg, f);
	CHECK(k == 2, "%s: %d VARNAMES facts", tg->python, k);
}

/* ---- closures: a free variable's cell by name, a nested function's code ---- */

#define MAX_FREE 16

/* Item i of a tuple. */
static uint64_t tuple_item(struct target *tg, uint64_t tuple, int64_t i)
{
	return rd(tg, tuple + tg->om->tuple_items + 8 * (uint64_t)i);
}

/* The names of a code object's free variables in closure order: co_freevars (3.8-3.10),
 * the entries of co_localsplusnames whose kind has CO_FAST_FREE (3.11+). Their count, or
 * -1 when the tuples do not read as such. */
static int free_names(struct target *tg, uint64_t code, uint64_t *names, int max)
{
	const struct py_objmodel *om = tg->om;
	uint64_t tuple, kinds;
	int64_t i, n;
	int k = 0;

	if (!om->code_localspluskinds) {
		tuple = rd(tg, code + om->code_freevars);
		n = (int64_t)rd(tg, tuple + om->var_size);
		if (!tuple || n < 0 || n > max)
			return -1;
		for (i = 0; i < n; i++)
			names[i] = tuple_item(tg, tuple, i);
		return (int)n;
	}
	tuple = rd(tg, code + om->code_varnames);
	kinds = rd(tg, code + om->code_localspluskinds);
	n = (int64_t)rd(tg, tuple + om->var_size);
	/* one kind byte per name */
	if (!tuple || !kinds || n < 0 || n > 256 || (int64_t)rd(tg, kinds + tg->l->bytes_size) != n)
		return -1;
	for (i = 0; i < n; i++) {
		if (!(rd8(tg, kinds + tg->l->bytes_sval + (uint64_t)i) & om->fast_free))
			continue;
		if (k == max)
			return -1;
		names[k++] = tuple_item(tg, tuple, i);
	}
	return k;
}

/* Index in the closure tuple of the free variable name, -1 if it is none. */
static int free_index(struct target *tg, uint64_t code, const char *name)
{
	uint64_t names[MAX_FREE];
	int i, n = free_names(tg, code, names, MAX_FREE);

	for (i = 0; i < n; i++)
		if (pystr_is(tg, names[i], name))
			return i;
	return -1;
}

static void test_closures(struct target *tg)
{
	const struct py_objmodel *om = tg->om;
	struct fact *f = fact(tg, "CLOSURE", 0);
	uint64_t outer, code_type, tuple_type, fn, code, consts, found = 0, names[MAX_FREE];
	uint64_t closure, cell;
	/* not closure order: each looked up by name */
	static const char *const lookups[] = { "zeta", "alpha", "mid", "arg" };
	char want[64];
	int64_t i, n;
	int nfree, j, k, idx;

	CHECK(om->code_consts, "%s: no code_consts", tg->python);
	if (tg->minor < PYV(3, 11))
		CHECK(om->code_freevars && !om->code_localspluskinds && !om->fast_free,
		      "%s: freevars %u kinds %u fast_free %#x", tg->python, om->code_freevars,
		      om->code_localspluskinds, om->fast_free);
	else
		CHECK(!om->code_freevars && om->code_localspluskinds && om->fast_free == 0x80,
		      "%s: freevars %u kinds %u fast_free %#x", tg->python, om->code_freevars,
		      om->code_localspluskinds, om->fast_free);
	if (!f || f->n < 7 || f->i[6] < 1 || f->i[6] > MAX_FREE || f->n != 7 + 2 * f->i[6]) {
		CHECK(0, "%s: no CLOSURE fact, or a malformed one", tg->python);
		return;
	}
	outer = f->v[0];
	code_type = f->v[1];
	tuple_type = f->v[2];
	fn = f->v[3];
	code = f->v[4];
	nfree = (int)f->i[6];

	/* (a) the inner function's code is among the outer's constants, found by its name */
	consts = rd(tg, outer + om->code_consts);
	n = (int64_t)rd(tg, consts + om->var_size);
	CHECK(consts && type_of(tg, consts) == tuple_type && n > 0 && n < 256,
	      "%s: co_consts %#llx is no tuple (%lld items)", tg->python,
	      (unsigned long long)consts, (long long)n);
	for (i = 0; consts && n > 0 && n < 256 && i < n; i++) {
		uint64_t c = tuple_item(tg, consts, i);

		if (type_of(tg, c) == code_type &&
		    pystr_is(tg, rd(tg, c + tg->l->code_name), f->s[5]))
			found = found ? 1 : c; /* two of that name: found no longer matches */
	}
	CHECK(found == code, "%s: code '%s' in co_consts is %#llx, Python says %#llx", tg->python,
	      f->s[5], (unsigned long long)found, (unsigned long long)code);

	/* (b) the free variables' names, in closure order, are Python's co_freevars */
	k = free_names(tg, code, names, MAX_FREE);
	CHECK(k == nfree, "%s: %d free variables read, Python says %d", tg->python, k, nfree);
	for (j = 0; j < k && j < nfree; j++)
		CHECK(pystr_is(tg, names[j], f->s[7 + 2 * j]),
		      "%s: free variable %d is not named '%s'", tg->python, j, f->s[7 + 2 * j]);

	/* (c) by name, the index into the live function's closure gives that variable's cell */
	closure = rd(tg, fn + om->func_closure);
	CHECK(closure && type_of(tg, closure) == tuple_type &&
		      (int64_t)rd(tg, closure + om->var_size) == nfree,
	      "%s: func_closure %#llx is no tuple of %d", tg->python, (unsigned long long)closure,
	      nfree);
	for (j = 0; closure && j < (int)(sizeof(lookups) / sizeof(lookups[0])); j++) {
		uint64_t expect = 0;

		for (k = 0; k < nfree; k++)
			if (!strcmp(f->s[7 + 2 * k], lookups[j]))
				expect = f->v[8 + 2 * k];
		idx = free_index(tg, code, lookups[j]);
		CHECK(expect && idx >= 0 && idx < nfree, "%s: free variable '%s' at index %d",
		      tg->python, lookups[j], idx);
		if (!expect || idx < 0 || idx >= nfree)
			continue;
		cell = tuple_item(tg, closure, idx);
		snprintf(want, sizeof(want), "%s-value", lookups[j]);
		CHECK(rd(tg, cell + om->cell_ref) == expect &&
			      pystr_is(tg, rd(tg, cell + om->cell_ref), want),
		      "%s: closure[%d] ('%s') holds %#llx, Python says %#llx ('%s')", tg->python,
		      idx, lookups[j], (unsigned long long)rd(tg, cell + om->cell_ref),
		      (unsigned long long)expect, want);
	}
	CHECK(free_index(tg, code, "y") < 0 && free_index(tg, code, "x") < 0 &&
		      free_index(tg, code, "innermost") < 0,
	      "%s: a local or cell of inner_closure taken for a free variable", tg->python);
}

/* 3.12+ name a task lazily: an int until get_name() makes it "Task-N". */
static void test_lazy_name(struct target *tg)
{
	const struct py_async_layout *a = &tg->om->async;
	struct fact *f = fact(tg, "LAZY", 0), *ti = fact(tg, "TYPEINFO", 1), *g;
	uint64_t name, digit = 0;
	char want[32];
	int64_t before = -1;
	char *s = NULL;

	if (!f || !ti)
		return;
	name = rd(tg, f->v[0] + a->task_name);
	if (type_of(tg, name) == ti->v[0]) { /* int */
		CHECK(tg->minor >= PYV(3, 12), "%s: int task name before 3.12", tg->python);
		digit = rd32(tg, name + tg->om->long_digits);
		before = (int64_t)digit;
	} else if (!py_str_read(tg->pid, tg->l, name, &s) && !strncmp(s, "Task-", 5)) {
		CHECK(tg->minor < PYV(3, 12), "%s: str task name '%s' on 3.12+", tg->python, s);
		before = strtoll(s + 5, NULL, 10);
	}
	free(s);
	CHECK(before > 0, "%s: unnamed task's name is neither an int nor 'Task-N'", tg->python);
	if (write(tg->in, "names\n", 6) != 6 || read_facts(tg)) {
		CHECK(0, "%s: no second report", tg->python);
		return;
	}
	g = fact(tg, "LAZYNAME", 0);
	if (!g || g->n < 3) {
		CHECK(0, "%s: no LAZYNAME fact", tg->python);
		return;
	}
	snprintf(want, sizeof(want), "Task-%lld", (long long)before);
	CHECK(!strcmp(g->s[2], want), "%s: name was %lld, get_name() says %s", tg->python,
	      (long long)before, g->s[2]);
	CHECK(rd(tg, f->v[0] + a->task_name) == g->v[1], "%s: task_name after get_name()",
	      tg->python);
}

static void run_target(struct target *tg)
{
	char why[512];
	enum pyproc_status st;

	if (spawn(tg) || read_facts(tg)) {
		CHECK(0, "%s: %s did not report", tg->python, "objmodel_target.py");
		if (tg->pid > 0)
			stop(tg);
		return;
	}
	st = pyproc_inspect(tg->pid, &tg->t, why, sizeof(why));
	CHECK(st == PYPROC_OK && tg->t.om, "%s: pyproc: %d %s", tg->python, st, why);
	if (st != PYPROC_OK || !tg->t.om) {
		stop(tg);
		return;
	}
	tg->om = tg->t.om;
	tg->l = &tg->t.proc.layout;
	tg->minor = PYV_MINOR_OF(tg->t.version);
	CHECK(tg->om == py_objmodel_find(tg->t.version) &&
		      PYV_MINOR_OF(tg->om->py_version) == tg->minor &&
		      !memcmp(&tg->t.proc.async, &tg->om->async, sizeof(tg->om->async)),
	      "%s: object model of %#x", tg->python, tg->t.version);
	test_types(tg);
	test_dicts(tg);
	test_instance(tg);
	test_containers(tg);
	test_functions(tg);
	test_ints(tg);
	test_module(tg);
	test_loop(tg);
	test_futures(tg);
	test_frames(tg);
	test_walk(tg);
	test_code_cache(tg);
	test_contexts(tg);
	test_closures(tg);
	test_lazy_name(tg);
	CHECK(!tg->readerr, "%s: a read of the target failed", tg->python);
	fprintf(stderr, "ran %s (%s)\n", tg->python, tg->t.version_str);
	stop(tg);
}

/* ---- the table itself ---- */

/* A distribution's micro has a model of its own (Debian's 3.13.5 and 3.13.18: runtime
 * structs of other sizes than pyenv's 3.13.0), standing from that micro to the next
 * model's, with the line's asyncio layout. */
static void test_find_micros(void)
{
	const struct py_objmodel *m0 = py_objmodel_find(0x030d00f0),
				 *m4 = py_objmodel_find(0x030d04f0),
				 *m5 = py_objmodel_find(0x030d05f0),
				 *m17 = py_objmodel_find(0x030d11f0),
				 *m18 = py_objmodel_find(0x030d12f0),
				 *m30 = py_objmodel_find(0x030d1ef0);

	if (!m0 || m0 == m30) {
		SKIP("one object model for 3.13 (no HEADER_TREES when generated)");
		return;
	}
	CHECK(m0 == m4 && m0->py_version == 0x030d00f0, "3.13.4: model %#x",
	      m4 ? m4->py_version : 0);
	CHECK(m5 == m17 && m5->py_version == 0x030d05f0 && m5->runtime_size == 283376 &&
		      m5->interp_size == 194976,
	      "3.13.5-3.13.17: model %#x runtime %u interp %u", m5 ? m5->py_version : 0,
	      m5 ? m5->runtime_size : 0, m5 ? m5->interp_size : 0);
	CHECK(m18 == m30 && m18->py_version == 0x030d12f0 && m18->runtime_size == 283408 &&
		      m18->interp_size == 194984,
	      "3.13.18 on: model %#x runtime %u interp %u", m18 ? m18->py_version : 0,
	      m18 ? m18->runtime_size : 0, m18 ? m18->interp_size : 0);
	/* the offsets the walk and the proof use are the line's */
	CHECK(m5->async.task_size == m0->async.task_size &&
		      m18->async.task_coro == m0->async.task_coro &&
		      m5->code_version == m0->code_version &&
		      m18->runtime_interp_main == m0->runtime_interp_main &&
		      m18->interp_code_counter == m0->interp_code_counter &&
		      m5->partial_fn == m0->partial_fn,
	      "3.13 micros: offsets differ from 3.13.0's");
}

static void test_find(void)
{
	const struct py_objmodel *a = py_objmodel_find(0x030a05f0),
				 *b = py_objmodel_find(0x030a06f0),
				 *c = py_objmodel_find(0x030a00f0);
	uint32_t minor;

	CHECK(!py_objmodel_find(0x030700f0) && !py_objmodel_find(0x031000f0) &&
		      !py_objmodel_find(0x030c00b1) && !py_objmodel_find(0),
	      "versions without a model");
	/* the walker reads a task's fut_waiter, coroutine and name at once (pw_task_fields) */
	for (minor = 8; minor <= 15; minor++) {
		const struct py_objmodel *m = py_objmodel_find(PYV(3, minor) | 0xf0);
		const struct py_async_layout *y = m ? &m->async : NULL;

		if (!m)
			continue;
		CHECK(y->task_coro && y->task_name && y->task_fut_waiter &&
			      y->task_coro + 8 == y->task_name &&
			      y->task_fut_waiter + 8 == y->task_coro &&
			      y->task_name + 8 - y->task_fut_waiter <= PW_PAIR_SPAN,
		      "3.%u: task fut_waiter %u coro %u name %u not in one span", minor,
		      y->task_fut_waiter, y->task_coro, y->task_name);
	}
	for (minor = 14; minor <= 15; minor++) {
		const struct py_objmodel *m = py_objmodel_find(PYV(3, minor) | 0xf0);

		if (!m) {
			SKIP("no object model for 3.%u (no HEADER_TREES when generated)", minor);
			continue;
		}
		/* frames and generators come from the runtime (pydebug.c), not the model */
		CHECK(PYV_MINOR_OF(m->py_version) == PYV(3, minor) && !m->async.yf_kind &&
			      m->async.task_size == 168 && m->async.fut_size == 112 &&
			      m->tuple_items == 32 && m->partial_fn,
		      "3.%u: model %#x", minor, m->py_version);
		/* no live 3.14+ here: the offsets measured on Debian's 3.14.10 and 3.15.2 */
		CHECK(m->async.tstate_context == (minor == 14 ? 208 : 232) &&
			      m->async.frame_localsplus == 80 && m->code_varnames == 96,
		      "3.%u: context %u localsplus %u varnames %u", minor, m->async.tstate_context,
		      m->async.frame_localsplus, m->code_varnames);
		CHECK(m->code_consts == 24 && !m->code_freevars && m->code_localspluskinds == 104 &&
			      m->fast_free == 0x80,
		      "3.%u: consts %u freevars %u kinds %u fast_free %#x", minor, m->code_consts,
		      m->code_freevars, m->code_localspluskinds, m->fast_free);
	}
	for (minor = 8; minor <= 13; minor++) {
		const struct py_objmodel *m = py_objmodel_find(PYV(3, minor) | 0xf0);

		if (!m) {
			SKIP("no object model for 3.%u (no headers when generated)", minor);
			continue;
		}
		CHECK(PYV_MINOR_OF(m->py_version) == PYV(3, minor) &&
			      PYV_MINOR_OF(py_objmodel_find(PYV(3, minor) | 0x3ff0)->py_version) ==
				      PYV(3, minor) &&
			      m->async.yf_kind && m->async.fut_size && m->partial_fn,
		      "3.%u: model %#x", minor, m->py_version);
	}
	test_find_micros();
	if (!a || !b) {
		SKIP("no object model for 3.10");
		return;
	}
	/* 3.10.6 added one pointer, fut_exception_tb, after fut_exception */
	CHECK(a == c && a != b && a->async.fut_loop == b->async.fut_loop &&
		      a->async.fut_callback0 == b->async.fut_callback0 &&
		      a->async.fut_callbacks == b->async.fut_callbacks &&
		      a->async.fut_state + 8 == b->async.fut_state &&
		      a->async.fut_size + 8 == b->async.fut_size &&
		      a->async.task_fut_waiter + 8 == b->async.task_fut_waiter &&
		      a->async.task_coro + 8 == b->async.task_coro &&
		      a->async.task_name + 8 == b->async.task_name &&
		      a->async.task_size + 8 == b->async.task_size &&
		      !memcmp(&a->async, &b->async, offsetof(struct py_async_layout, fut_loop)),
	      "3.10.5 vs 3.10.6 asyncio layouts");
}

static unsigned int hexversion_of(const char *python)
{
	char cmd[PATH_MAX + 64], buf[32];
	unsigned int v = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' -c 'import sys; print(sys.hexversion)' 2>/dev/null",
		 python);
	p = popen(cmd, "r");
	if (!p)
		return 0;
	if (fgets(buf, sizeof(buf), p))
		v = (unsigned int)strtoul(buf, NULL, 10);
	pclose(p);
	return v;
}

int main(void)
{
	static const char *const pats[] = { "%s/versions/*/bin/python[0-9].[0-9]",
					    "%s/versions/*/bin/python[0-9].[0-9][0-9]",
					    "/usr/bin/python[0-9].[0-9]%.0s",
					    "/usr/bin/python[0-9].[0-9][0-9]%.0s" };
	char root[PATH_MAX], pat[PATH_MAX + 64];
	static struct target tg;
	int seen[16] = { 0 }, minor;
	unsigned int v;
	size_t i, j;
	glob_t g;

	signal(SIGPIPE, SIG_IGN);
	test_find();
	if (find_pydir()) {
		SKIP("tests/unit/py not found: no live interpreter checks");
		return unit_exit();
	}
	pyenv_root(root, sizeof(root));
	for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		snprintf(pat, sizeof(pat), pats[i], root);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++) {
			v = hexversion_of(g.gl_pathv[j]);
			if (v < 0x03080000 || v >= 0x030e0000)
				continue; /* not a version asyncbpf supports */
			seen[v >> 16 & 0xff]++;
			memset(&tg, 0, sizeof(tg));
			tg.python = g.gl_pathv[j];
			run_target(&tg);
		}
		globfree(&g);
	}
	for (minor = 8; minor <= 13; minor++)
		if (!seen[minor])
			SKIP("no Python 3.%d installed (pyenv root %s, /usr/bin)", minor, root);
	return unit_exit();
}
