// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "process/memread.h"
#include "cpython/objread.h"
#include "cpython/pystr.h"

#define MAX_BASES   16	/* tp_base chain */
#define MAX_MEMBERS 64	/* __slots__ of one type */
#define MAX_KEY	    256 /* longest attribute or module name compared */
#define KEY_HEAD    80	/* bytes read of each key of a dict looked up by name */

int objread_init(struct objread *r, const struct py_target *t)
{
	memset(r, 0, sizeof(*r));
	if (!t->om)
		return -ENOTSUP;
	r->pid = t->pid;
	r->version = t->version;
	r->runtime = t->proc.runtime;
	r->l = &t->proc.layout;
	r->m = t->om;
	return 0;
}

struct obj_pages *obj_pages_new(void)
{
	void *p = mmap(NULL, sizeof(struct obj_pages), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

void obj_pages_free(struct obj_pages *p)
{
	if (p)
		munmap(p, sizeof(*p));
}

static int rd(const struct objread *r, uint64_t addr, void *buf, size_t len)
{
	struct obj_pages *c = r->pages;
	uint64_t off = addr & (OBJ_PAGE - 1), page = addr - off;
	size_t k = (page / OBJ_PAGE) % OBJ_PAGES;

	if (!c || !page || off + len > OBJ_PAGE || c->addr[k] == (page | 1))
		return mem_read(r->pid, addr, buf, len);
	if (c->addr[k] != page) {
		c->misses++;
		if (mem_read(r->pid, page, c->data[k], OBJ_PAGE)) {
			c->addr[k] = page | 1;
			return mem_read(r->pid, addr, buf, len);
		}
		c->addr[k] = page;
	}
	c->reads++;
	memcpy(buf, c->data[k] + off, len);
	return 0;
}

int obj_ptr(const struct objread *r, uint64_t addr, uint64_t *out)
{
	return rd(r, addr, out, sizeof(*out));
}

static int rd_ssize(const struct objread *r, uint64_t addr, int64_t *out)
{
	return rd(r, addr, out, sizeof(*out));
}

int obj_type(const struct objread *r, uint64_t obj, uint64_t *type)
{
	if (!obj)
		return -EINVAL;
	return obj_ptr(r, obj + r->l->object_type, type);
}

int obj_type_name(const struct objread *r, uint64_t type, char *buf, size_t len)
{
	uint64_t name;
	int ret;

	if (!len)
		return -EINVAL;
	ret = obj_ptr(r, type + r->m->type_name, &name);
	if (ret)
		return ret;
	/* a C string of unknown length: read small pieces up to the first NUL */
	for (size_t off = 0; off < len - 1; off += 32) {
		size_t n = len - 1 - off < 32 ? len - 1 - off : 32;

		ret = rd(r, name + off, buf + off, n);
		if (ret)
			return ret;
		buf[off + n] = 0;
		if (memchr(buf + off, 0, n))
			return 0;
	}
	buf[len - 1] = 0;
	return 0;
}

static bool name_matches(const char *tp_name, const char *name)
{
	const char *dot = strrchr(tp_name, '.');

	return !strcmp(tp_name, name) || (dot && !strcmp(dot + 1, name));
}

/* tp_name and tp_base of type: the name in the reader's cache when it has one (*name
 * then points there, not copied: a snapshot asks this for every future it meets), else
 * read into buf. */
static int type_info(const struct objread *r, uint64_t type, char *buf, size_t len,
		     const char **name, uint64_t *base)
{
	__typeof__(&r->types->e[0]) e = r->types ? &r->types->e[(type >> 4) % OBJ_TYPES] : NULL;
	int ret;

	if (e && e->type == type) {
		*name = e->name;
		*base = e->base;
		return 0;
	}
	*name = buf;
	ret = obj_type_name(r, type, buf, len);
	if (!ret)
		ret = obj_ptr(r, type + r->m->type_base, base);
	if (!ret && e) {
		e->type = type;
		e->base = *base;
		snprintf(e->name, sizeof(e->name), "%s", buf);
	}
	return ret;
}

int obj_isinstance(const struct objread *r, uint64_t obj, const char *name)
{
	char buf[128];
	const char *tp_name;
	uint64_t type, base;
	int ret = obj_type(r, obj, &type);

	for (int i = 0; !ret && type && i < MAX_BASES; i++, type = base) {
		ret = type_info(r, type, buf, sizeof(buf), &tp_name, &base);
		if (!ret && name_matches(tp_name, name))
			return 1;
	}
	return ret < 0 ? ret : 0;
}

static int type_flags(const struct objread *r, uint64_t obj, uint64_t *type, uint64_t *flags)
{
	int ret = obj_type(r, obj, type);

	return ret ? ret : obj_ptr(r, *type + r->m->type_flags, flags);
}

int obj_str(const struct objread *r, uint64_t obj, char **out)
{
	uint64_t type, flags;
	int ret = type_flags(r, obj, &type, &flags);

	if (ret)
		return ret;
	if (!(flags & r->m->flag_unicode_subclass))
		return -EINVAL;
	return py_str_read(r->pid, r->l, obj, out);
}

int obj_long(const struct objread *r, uint64_t obj, int64_t *out)
{
	const struct py_objmodel *m = r->m;
	uint64_t type, flags, tag;
	uint32_t digits[3] = {};
	int64_t ndigits;
	uint64_t v = 0;
	int neg, ret = type_flags(r, obj, &type, &flags);

	if (ret)
		return ret;
	if (!(flags & m->flag_long_subclass))
		return -EINVAL;
	ret = obj_ptr(r, obj + m->long_size, &tag);
	if (ret)
		return ret;
	if (m->long_tagged) {
		/* 3.12+: lv_tag = ndigits << 3 | sign (0 positive, 1 zero, 2 negative) */
		ndigits = tag >> 3;
		neg = (tag & 3) == 2;
	} else {
		ndigits = (int64_t)tag < 0 ? -(int64_t)tag : (int64_t)tag;
		neg = (int64_t)tag < 0;
	}
	if (ndigits > 3 || m->long_digit_bits != 30)
		return -ERANGE;
	if (ndigits && (ret = rd(r, obj + m->long_digits, digits, ndigits * sizeof(digits[0]))))
		return ret;
	for (int64_t i = ndigits; i-- > 0;)
		v = (v << 30) | (digits[i] & ((1u << 30) - 1));
	if (v > INT64_MAX)
		return -ERANGE;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return 0;
}

static int read_array(const struct objread *r, uint64_t at, int64_t count, uint64_t *items,
		      size_t max, size_t *n)
{
	size_t want;

	*n = 0;
	if (count < 0 || count > OBJ_MAX_ITEMS)
		return -EINVAL;
	want = (size_t)count < max ? (size_t)count : max;
	if (!want)
		return 0;
	if (rd(r, at, items, want * sizeof(*items)))
		return -EFAULT;
	*n = want;
	return 0;
}

int obj_items(const struct objread *r, uint64_t obj, uint64_t *items, size_t max, size_t *n)
{
	char name[64];
	uint64_t type, arr;
	int64_t size;
	int ret = obj_type(r, obj, &type);

	if (!ret)
		ret = obj_type_name(r, type, name, sizeof(name));
	if (!ret)
		ret = rd_ssize(r, obj + r->m->var_size, &size);
	if (ret)
		return ret;
	if (!strcmp(name, "tuple"))
		return read_array(r, obj + r->m->tuple_items, size, items, max, n);
	if (!strcmp(name, "list")) {
		ret = obj_ptr(r, obj + r->m->list_items, &arr);
		return ret ? ret : read_array(r, arr, size, items, max, n);
	}
	return -EINVAL;
}

/* Keys of a set whose table has at most max_slots slots, read a chunk of the table at a
 * time; *items grows as keys come (malloc'd, *cap its size). -E2BIG for a larger table. */
static int set_keys(const struct objread *r, uint64_t set, size_t max_slots, uint64_t **items,
		    size_t *cap, size_t max, size_t *n)
{
	enum { CHUNK = 4096 }; /* slots read at once */
	const struct py_objmodel *m = r->m;
	uint64_t table, key;
	int64_t mask;
	uint8_t *buf;
	int ret;

	*n = 0;
	if ((ret = obj_ptr(r, set + m->set_table, &table)) ||
	    (ret = rd_ssize(r, set + m->set_mask, &mask)))
		return ret;
	if (mask < 0 || m->setentry_size < m->setentry_key + 8)
		return -EINVAL;
	if ((uint64_t)mask >= max_slots)
		return -E2BIG;
	buf = malloc((size_t)CHUNK * m->setentry_size);
	if (!buf)
		return -ENOMEM;
	for (int64_t at = 0; !ret && at <= mask && *n < max; at += CHUNK) {
		int64_t k = mask + 1 - at < CHUNK ? mask + 1 - at : CHUNK;

		ret = rd(r, table + at * m->setentry_size, buf, k * m->setentry_size);
		for (int64_t i = 0; !ret && i < k && *n < max; i++) {
			memcpy(&key, buf + i * m->setentry_size + m->setentry_key, sizeof(key));
			/* empty slots are NULL; deleted ones hold the dummy key, which is not a
			 * weakref or a task: callers check the type of what they get */
			if (!key)
				continue;
			if (*n == *cap) {
				size_t c = *cap ? *cap * 2 : 1024;
				uint64_t *v = realloc(*items, c * sizeof(*v));

				if (!v) {
					ret = -ENOMEM;
					break;
				}
				*items = v;
				*cap = c;
			}
			(*items)[(*n)++] = key;
		}
	}
	free(buf);
	return ret;
}

int obj_set_items(const struct objread *r, uint64_t set, uint64_t *items, size_t max, size_t *n)
{
	uint64_t *v = NULL;
	size_t cap = 0;
	int ret = set_keys(r, set, OBJ_MAX_ITEMS, &v, &cap, max, n);

	/* a table over OBJ_MAX_ITEMS is taken for bad memory, as before */
	if (ret == -E2BIG)
		ret = -EINVAL;
	if (!ret && *n)
		memcpy(items, v, *n * sizeof(*v));
	if (ret)
		*n = 0;
	free(v);
	return ret;
}

int obj_set_keys(const struct objread *r, uint64_t set, size_t max_slots, uint64_t **items,
		 size_t *n)
{
	size_t cap = 0;
	int ret;

	*items = NULL;
	ret = set_keys(r, set, max_slots, items, &cap, SIZE_MAX, n);
	if (ret) {
		free(*items);
		*items = NULL;
		*n = 0;
	}
	return ret;
}

int obj_deque_items(const struct objread *r, uint64_t dq, uint64_t *items, size_t max, size_t *n)
{
	/* collections.deque (Modules/_collectionsmodule.c, every supported version):
	 * PyObject_VAR_HEAD, leftblock, rightblock, leftindex, rightindex; a block is
	 * { leftlink, data[64], rightlink } */
	struct {
		uint64_t left, right;
		int64_t lidx, ridx;
	} d;
	int64_t size;
	int ret;

	*n = 0;
	if ((ret = rd_ssize(r, dq + r->m->var_size, &size)) ||
	    (ret = rd(r, dq + r->m->var_size + 8, &d, sizeof(d))))
		return ret;
	if (size < 0 || d.lidx < 0 || d.lidx > 63 || d.ridx < -1 || d.ridx > 63)
		return -EINVAL;
	if (d.left != d.right)
		size = 64 - d.lidx; /* spans blocks: the first one is enough to find a getter */
	return read_array(r, d.left + 8 + d.lidx * 8, size, items, max, n);
}

/* Compares a str object with a C string without allocating for mismatches of length. */
static int str_equals(const struct objread *r, uint64_t obj, const char *s)
{
	char *v = NULL;
	int ret = py_str_read(r->pid, r->l, obj, &v);

	if (ret)
		return ret;
	ret = !strcmp(v, s);
	free(v);
	return ret;
}

struct dict_view {
	uint64_t keys;	 /* PyDictKeysObject */
	uint64_t values; /* split values array, 0 if combined */
	int64_t nentries;
	uint64_t entries; /* address of the first entry */
	uint16_t esize, ekey, evalue;
};

static int keys_view(const struct objread *r, uint64_t keys, struct dict_view *v)
{
	const struct py_objmodel *m = r->m;
	int ret;

	memset(v, 0, sizeof(*v));
	v->keys = keys;
	if ((ret = rd_ssize(r, keys + m->keys_nentries, &v->nentries)))
		return ret;
	if (v->nentries < 0 || v->nentries > OBJ_MAX_ITEMS)
		return -EINVAL;
	if (m->dict_model == PY_DICT_38) {
		int64_t size;

		if ((ret = rd_ssize(r, keys + m->keys_size, &size)))
			return ret;
		if (size <= 0 || size > 4 * OBJ_MAX_ITEMS || (size & (size - 1)))
			return -EINVAL;
		v->entries = keys + m->keys_indices +
			     size * (size <= 0xff     ? 1
				     : size <= 0xffff ? 2
						      : 4);
		v->esize = m->entry_size;
		v->ekey = m->entry_key;
		v->evalue = m->entry_value;
	} else {
		uint8_t log2_index_bytes, kind;

		if ((ret = rd(r, keys + m->keys_log2_index_bytes, &log2_index_bytes, 1)) ||
		    (ret = rd(r, keys + m->keys_kind, &kind, 1)))
			return ret;
		if (log2_index_bytes > 24)
			return -EINVAL;
		v->entries = keys + m->keys_indices + (1ULL << log2_index_bytes);
		v->esize = kind ? m->uentry_size : m->entry_size;
		v->ekey = kind ? m->uentry_key : m->entry_key;
		v->evalue = kind ? m->uentry_value : m->entry_value;
	}
	if (!v->esize || v->ekey + 8 > v->esize || v->evalue + 8 > v->esize)
		return -EINVAL;
	return 0;
}

/* Calls fn(key, value) for each live entry until it returns nonzero. */
static int dict_foreach(const struct objread *r, const struct dict_view *v,
			int (*fn)(const struct objread *, uint64_t, uint64_t, void *), void *ctx)
{
	size_t len = (size_t)v->nentries * v->esize;
	uint8_t *buf;
	int ret;

	if (!v->nentries)
		return 0;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	ret = rd(r, v->entries, buf, len);
	for (int64_t i = 0; !ret && i < v->nentries; i++) {
		uint64_t key, value;

		memcpy(&key, buf + i * v->esize + v->ekey, 8);
		if (v->values)
			ret = obj_ptr(r, v->values + i * 8, &value);
		else
			memcpy(&value, buf + i * v->esize + v->evalue, 8);
		if (!ret && key && value)
			ret = fn(r, key, value, ctx);
	}
	free(buf);
	return ret < 0 ? ret : 0;
}

static int dict_view(const struct objread *r, uint64_t dict, struct dict_view *v)
{
	const struct py_objmodel *m = r->m;
	uint64_t keys, values;
	int ret;

	if ((ret = obj_ptr(r, dict + m->dict_keys, &keys)) ||
	    (ret = obj_ptr(r, dict + m->dict_values, &values)) || (ret = keys_view(r, keys, v)))
		return ret;
	if (values)
		v->values = values + m->values_values;
	return 0;
}

/* 0 when the head of a str object (read in one piece with the others) shows it is not
 * key, 2 when it shows it is (a compact ASCII str that fits in the head), 1 when it may
 * be (the full string then decides). */
static int head_may_match(const struct objread *r, const uint8_t *head, const char *key,
			  size_t klen)
{
	const struct py_layout *l = r->l;
	size_t hlen = l->unicode_ascii_size;
	uint32_t state;
	int64_t len;

	if (hlen + klen > KEY_HEAD || l->unicode_state + 4u > hlen || l->unicode_length + 8u > hlen)
		return 1;
	memcpy(&state, head + l->unicode_state, 4);
	memcpy(&len, head + l->unicode_length, 8);
	if (!(state >> l->unicode_compact_bit & 1) || !(state >> l->unicode_ascii_bit & 1))
		return 1;
	return len == (int64_t)klen && !memcmp(head + hlen, key, klen) ? 2 : 0;
}

/* Module and instance dicts are looked up by name on every task snapshot: the heads of
 * all keys come in one batched read, and only a key whose head may match is read whole.
 * *at (when at) gets the address the value was read from. */
static int view_get(const struct objread *r, const struct dict_view *v, const char *key,
		    uint64_t *value, uint64_t *at)
{
	size_t n = (size_t)v->nentries, klen = strlen(key);
	uint8_t *buf, *heads = NULL, *ok = NULL;
	uint64_t *keys = NULL, val = 0, where = 0;
	int ret = -ENOMEM;

	if (!n)
		return -ENOENT;
	buf = malloc(n * v->esize);
	keys = malloc(n * sizeof(*keys));
	heads = malloc(n * KEY_HEAD);
	ok = malloc(n);
	if (!buf || !keys || !heads || !ok)
		goto out;
	if ((ret = rd(r, v->entries, buf, n * v->esize)))
		goto out;
	for (size_t i = 0; i < n; i++)
		memcpy(&keys[i], buf + i * v->esize + v->ekey, 8);
	if ((ret = mem_read_many(r->pid, keys, n, KEY_HEAD, heads, ok)))
		goto out;
	ret = -ENOENT;
	for (size_t i = 0; i < n && ret == -ENOENT; i++) {
		int head = ok[i] ? head_may_match(r, heads + i * KEY_HEAD, key, klen) : 1;

		/* non-str keys and unreadable ones are simply not it */
		if (!keys[i] || !head || (head == 1 && str_equals(r, keys[i], key) != 1))
			continue;
		if (v->values) {
			where = v->values + i * 8;
			ret = obj_ptr(r, where, &val);
		} else {
			where = v->entries + i * v->esize + v->evalue;
			memcpy(&val, buf + i * v->esize + v->evalue, 8);
			ret = 0;
		}
		if (!ret && !val)
			ret = -ENOENT; /* a deleted entry */
	}
	if (!ret) {
		*value = val;
		if (at)
			*at = where;
	}
out:
	free(buf);
	free(keys);
	free(heads);
	free(ok);
	return ret;
}

static int dict_get_at(const struct objread *r, uint64_t dict, const char *key, uint64_t *value,
		       uint64_t *at)
{
	struct dict_view v;
	int ret = dict_view(r, dict, &v);

	return ret ? ret : view_get(r, &v, key, value, at);
}

int obj_dict_get(const struct objread *r, uint64_t dict, const char *key, uint64_t *value)
{
	return dict_get_at(r, dict, key, value, NULL);
}

struct items_ctx {
	uint64_t *keys, *values;
	size_t max, n;
};

static int add_item(const struct objread *r, uint64_t key, uint64_t value, void *ctx)
{
	struct items_ctx *c = ctx;

	(void)r;
	if (c->n == c->max)
		return 1;
	if (c->keys)
		c->keys[c->n] = key;
	if (c->values)
		c->values[c->n] = value;
	c->n++;
	return 0;
}

int obj_dict_items(const struct objread *r, uint64_t dict, uint64_t *keys, uint64_t *values,
		   size_t max, size_t *n)
{
	struct items_ctx c = { .keys = keys, .values = values, .max = max };
	struct dict_view v;
	int ret = dict_view(r, dict, &v);

	if (!ret)
		ret = dict_foreach(r, &v, add_item, &c);
	*n = c.n;
	return ret;
}

/* An instance's attributes that live in values shared-key style (3.11+ without a
 * materialised dict): keys in the heap type's cached keys. */
static int split_get(const struct objread *r, uint64_t type, uint64_t values, const char *name,
		     uint64_t *value, uint64_t *at)
{
	struct dict_view v;
	uint64_t keys;
	int ret = obj_ptr(r, type + r->m->heaptype_cached_keys, &keys);

	if (!ret && !keys)
		return -ENOENT;
	if (!ret)
		ret = keys_view(r, keys, &v);
	if (ret)
		return ret;
	v.values = values + r->m->values_values;
	return view_get(r, &v, name, value, at);
}

static int instdict_get(const struct objread *r, uint64_t obj, uint64_t type, uint64_t flags,
			const char *name, uint64_t *value, uint64_t *at)
{
	const struct py_objmodel *m = r->m;
	uint64_t dict = 0, values = 0;
	int64_t off, basicsize;
	int ret;

	switch (m->instdict_model) {
	case PY_INSTDICT_OFFSET:
		if ((ret = rd_ssize(r, type + m->type_dictoffset, &off)))
			return ret;
		if (off <= 0) /* none, or after a variable-size body: not for our objects */
			return -ENOENT;
		ret = obj_ptr(r, obj + off, &dict);
		break;
	case PY_INSTDICT_MANAGED:
		if (!(flags & m->flag_managed_dict))
			return -ENOENT;
		ret = obj_ptr(r, obj - 3 * 8, &dict);
		if (!ret && !dict && !(ret = obj_ptr(r, obj - 4 * 8, &values)) && values)
			return split_get(r, type, values, name, value, at);
		break;
	case PY_INSTDICT_TAGGED:
		if (!(flags & m->flag_managed_dict))
			return -ENOENT;
		ret = obj_ptr(r, obj - 3 * 8, &dict);
		/* the values pointer is stored minus one, which sets the tag bit */
		if (!ret && (dict & 1))
			return split_get(r, type, dict + 1, name, value, at);
		break;
	case PY_INSTDICT_INLINE:
		if (!(flags & m->flag_managed_dict))
			return -ENOENT;
		ret = obj_ptr(r, obj - 3 * 8, &dict);
		if (!ret && !dict && (flags & m->flag_inline_values)) {
			uint8_t valid = 0;

			if ((ret = rd_ssize(r, type + m->type_basicsize, &basicsize)))
				return ret;
			if (basicsize <= 0 || basicsize > 65536)
				return -EINVAL;
			/* PyDictValues header: capacity, size, embedded, valid */
			if ((ret = rd(r, obj + basicsize + 3, &valid, 1)))
				return ret;
			if (valid)
				return split_get(r, type, obj + basicsize, name, value, at);
		}
		break;
	default:
		return -ENOTSUP;
	}
	if (ret)
		return ret;
	if (!dict)
		return -ENOENT;
	return dict_get_at(r, dict, name, value, at);
}

static int slots_get(const struct objread *r, uint64_t obj, uint64_t type, const char *name,
		     uint64_t *value, uint64_t *where)
{
	const struct py_objmodel *m = r->m;

	for (int b = 0; type && b < MAX_BASES; b++) {
		uint64_t members;
		int ret = obj_ptr(r, type + m->type_members, &members);

		for (int i = 0; !ret && members && i < MAX_MEMBERS; i++) {
			uint64_t at = members + (uint64_t)i * m->memberdef_size, nameptr;
			char buf[MAX_KEY];
			int64_t off;

			if ((ret = obj_ptr(r, at + m->memberdef_name, &nameptr)) || !nameptr)
				break;
			if (rd(r, nameptr, buf, strlen(name) + 1) ||
			    memcmp(buf, name, strlen(name) + 1))
				continue;
			if ((ret = rd_ssize(r, at + m->memberdef_offset, &off)))
				break;
			if (off <= 0 || off > 65536)
				return -EINVAL;
			if (where)
				*where = obj + off;
			ret = obj_ptr(r, obj + off, value);
			if (!ret && !*value)
				return -ENOENT; /* unset slot */
			return ret;
		}
		if (obj_ptr(r, type + m->type_base, &type))
			break;
	}
	return -ENOENT;
}

int obj_getattr_at(const struct objread *r, uint64_t obj, const char *name, uint64_t *value,
		   uint64_t *at)
{
	uint64_t type, flags;
	int ret;

	if (strlen(name) >= MAX_KEY)
		return -EINVAL;
	ret = type_flags(r, obj, &type, &flags);
	if (ret)
		return ret;
	ret = instdict_get(r, obj, type, flags, name, value, at);
	if (ret != -ENOENT)
		return ret;
	return slots_get(r, obj, type, name, value, at);
}

/* The index of name among the keys type's instances share (ht_cached_keys). */
static int shared_index(const struct objread *r, uint64_t type, const char *name, size_t *index)
{
	struct dict_view v;
	uint64_t keys, key;
	uint8_t *buf;
	int ret = obj_ptr(r, type + r->m->heaptype_cached_keys, &keys);

	if (!ret && !keys)
		return -ENOENT;
	if (ret || (ret = keys_view(r, keys, &v)))
		return ret;
	if (v.nentries <= 0 || v.nentries > 4096)
		return -ENOENT;
	buf = malloc((size_t)v.nentries * v.esize);
	if (!buf)
		return -ENOMEM;
	ret = rd(r, v.entries, buf, (size_t)v.nentries * v.esize);
	for (int64_t i = 0; !ret && i < v.nentries; i++) {
		memcpy(&key, buf + i * v.esize + v.ekey, 8);
		if (key && str_equals(r, key, name) == 1) {
			*index = (size_t)i;
			free(buf);
			return 0;
		}
	}
	free(buf);
	return ret ? ret : -ENOENT;
}

int obj_attr_place(const struct objread *r, uint64_t type, const char *name, struct py_attr *a)
{
	const struct py_objmodel *m = r->m;
	uint64_t flags;
	int64_t off;
	size_t i;
	int ret = shared_index(r, type, name, &i);

	if (!ret)
		ret = obj_ptr(r, type + m->type_flags, &flags);
	if (ret)
		return ret;
	if (m->values_values + 8 * i > 0xffff)
		return -ERANGE;
	memset(a, 0, sizeof(*a));
	a->slot = (uint16_t)(m->values_values + 8 * i);
	switch (m->instdict_model) {
	case PY_INSTDICT_OFFSET:
		if ((ret = rd_ssize(r, type + m->type_dictoffset, &off)))
			return ret;
		if (off <= 0 || off > 0x7fff)
			return -ENOTSUP;
		a->model = PY_ATTR_DICT;
		a->at = (int16_t)off;
		a->values = m->dict_values;
		return 0;
	case PY_INSTDICT_MANAGED:
		a->model = PY_ATTR_VALUES;
		a->at = -4 * 8;
		break;
	case PY_INSTDICT_TAGGED:
		a->model = PY_ATTR_TAGGED;
		a->at = -3 * 8;
		break;
	case PY_INSTDICT_INLINE:
		if (!(flags & m->flag_inline_values))
			return -ENOTSUP;
		if ((ret = rd_ssize(r, type + m->type_basicsize, &off)))
			return ret;
		if (off <= 0 || off > 0x7fff)
			return -EINVAL;
		a->model = PY_ATTR_INLINE;
		a->at = (int16_t)off;
		return 0;
	default:
		return -ENOTSUP;
	}
	return flags & m->flag_managed_dict ? 0 : -ENOTSUP;
}

int obj_getattr(const struct objread *r, uint64_t obj, const char *name, uint64_t *value)
{
	return obj_getattr_at(r, obj, name, value, NULL);
}

static int sys_modules(const struct objread *r, uint64_t *modules)
{
	uint64_t interp;
	int ret = obj_ptr(r, r->runtime + r->l->runtime_interp_head, &interp);

	if (!ret && !interp)
		return -EAGAIN;
	if (!ret)
		ret = obj_ptr(r, interp + r->m->interp_modules, modules);
	if (!ret && !*modules)
		return -EAGAIN;
	return ret;
}

int obj_module(const struct objread *r, const char *name, uint64_t *module)
{
	uint64_t modules;
	int ret = sys_modules(r, &modules);

	return ret ? ret : obj_dict_get(r, modules, name, module);
}

int obj_modules_count(const struct objread *r, int64_t *n)
{
	uint64_t modules;
	int ret = sys_modules(r, &modules);

	return ret ? ret : rd_ssize(r, modules + r->m->dict_used, n);
}

int obj_module_attr(const struct objread *r, uint64_t module, const char *name, uint64_t *value)
{
	uint64_t dict;
	int ret = obj_ptr(r, module + r->m->module_dict, &dict);

	if (!ret && !dict)
		return -ENOENT;
	return ret ? ret : obj_dict_get(r, dict, name, value);
}

int obj_weakref_target(const struct objread *r, uint64_t ref, uint64_t *target)
{
	return obj_ptr(r, ref + r->m->weakref_object, target);
}

int obj_cell(const struct objread *r, uint64_t cell, uint64_t *value)
{
	return obj_ptr(r, cell + r->m->cell_ref, value);
}

int obj_closure(const struct objread *r, uint64_t func, uint64_t *values, size_t max, size_t *n)
{
	uint64_t closure;
	int ret = obj_ptr(r, func + r->m->func_closure, &closure);

	*n = 0;
	if (ret || !closure)
		return ret;
	ret = obj_items(r, closure, values, max, n);
	for (size_t i = 0; !ret && i < *n; i++)
		if (obj_cell(r, values[i], &values[i]))
			values[i] = 0;
	return ret;
}
