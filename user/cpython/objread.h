/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Reading Python objects of another process: types, strings, ints, containers, dicts,
 * instance attributes and modules, bounded and checked; every call can fail cleanly on
 * memory that changes or was never an object. */
#ifndef ASYNCBPF_OBJREAD_H
#define ASYNCBPF_OBJREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cpython/py_objmodel.h"
#include "cpython/pyproc.h"

#define OBJ_MAX_ITEMS 65536 /* largest container walked */
/* Largest table of a set read whole by obj_set_keys: asyncio's task set, which a process
 * with a million tasks grows to 2^21 or 2^22 slots. */
#define OBJ_MAX_SET_SLOTS (1u << 23)

/* Names and bases of the types a reader met: a snapshot asks the same few types again
 * for every task and callback, and they outlive the objects it reads. */
#define OBJ_TYPES 64
struct obj_types {
	struct {
		uint64_t type, base;
		char name[128];
	} e[OBJ_TYPES];
};

/* Pages of the target read whole, for one snapshot: the objects a snapshot walks (tasks,
 * their coroutines, futures and callbacks) lie close together, and a read costs by its
 * system call, not by its bytes. Direct-mapped by page number. */
#define OBJ_PAGE  4096
#define OBJ_PAGES 1024
struct obj_pages {
	uint64_t addr[OBJ_PAGES]; /* the page held; bit 0: unreadable, read directly; 0: none */
	uint8_t data[OBJ_PAGES][OBJ_PAGE];
	uint64_t reads, misses; /* reads served from pages, pages read */
};

/* A zeroed set of pages, or NULL. Mapped apart from the heap: 4 MiB taken and given
 * back at every snapshot would otherwise leave the heap holding what it touched. */
struct obj_pages *obj_pages_new(void);
void obj_pages_free(struct obj_pages *p);

struct objread {
	pid_t pid;
	uint32_t version;
	uint64_t runtime;
	const struct py_layout *l;
	const struct py_objmodel *m;
	struct obj_types *types; /* optional cache, for one snapshot */
	struct obj_pages *pages; /* optional: pages kept, for one snapshot */
};

/* Sets up a reader for a discovered target; -ENOTSUP when no object model is known. */
int objread_init(struct objread *r, const struct py_target *t);

int obj_ptr(const struct objread *r, uint64_t addr, uint64_t *out);
int obj_type(const struct objread *r, uint64_t obj, uint64_t *type);
/* tp_name of a type ("_asyncio.Task", "TaskGroup"). */
int obj_type_name(const struct objread *r, uint64_t type, char *buf, size_t len);
/* 1 when obj's type or one of its bases (tp_base chain) is named name, else 0; <0 on error.
 * name matches the whole tp_name or the part after its last dot. */
int obj_isinstance(const struct objread *r, uint64_t obj, const char *name);

int obj_str(const struct objread *r, uint64_t obj, char **out); /* malloc'd UTF-8 */
int obj_long(const struct objread *r, uint64_t obj, int64_t *out);

/* Items of a tuple or list, at most max; *n gets how many were stored. */
int obj_items(const struct objread *r, uint64_t obj, uint64_t *items, size_t max, size_t *n);
/* Keys of a set (or frozenset), at most max. */
int obj_set_items(const struct objread *r, uint64_t set, uint64_t *items, size_t max, size_t *n);
/* Keys of a set whose table has at most max_slots slots (-E2BIG for more), every one:
 * *items is malloc'd (NULL when none), to be freed. */
int obj_set_keys(const struct objread *r, uint64_t set, size_t max_slots, uint64_t **items,
		 size_t *n);
/* Items of a collections.deque (its first block only: up to 64), at most max. */
int obj_deque_items(const struct objread *r, uint64_t dq, uint64_t *items, size_t max, size_t *n);

/* Value for a str key in a dict; -ENOENT if absent. */
int obj_dict_get(const struct objread *r, uint64_t dict, const char *key, uint64_t *value);
/* Key/value pairs of a dict, at most max. */
int obj_dict_items(const struct objread *r, uint64_t dict, uint64_t *keys, uint64_t *values,
		   size_t max, size_t *n);

/* An instance attribute: the instance dict (whatever the version keeps it as), then
 * __slots__ members along the type's bases. -ENOENT if absent. */
int obj_getattr(const struct objread *r, uint64_t obj, const char *name, uint64_t *value);
/* Where instances of type keep attribute name while they share their keys with it (as
 * objects __init__ made do), for the walker (struct py_attr); -ENOENT while the type has
 * no shared keys (no instance made yet) or they lack name. */
int obj_attr_place(const struct objread *r, uint64_t type, const char *name, struct py_attr *a);
/* The same, and *at the address the value was read from (to read it again, live). */
int obj_getattr_at(const struct objread *r, uint64_t obj, const char *name, uint64_t *value,
		   uint64_t *at);

/* sys.modules[name] of the main interpreter, and a module's global. */
int obj_module(const struct objread *r, const char *name, uint64_t *module);
/* len(sys.modules): a cheap way to tell that nothing was imported since last asked. */
int obj_modules_count(const struct objread *r, int64_t *n);
int obj_module_attr(const struct objread *r, uint64_t module, const char *name, uint64_t *value);

int obj_weakref_target(const struct objread *r, uint64_t ref, uint64_t *target);
int obj_cell(const struct objread *r, uint64_t cell, uint64_t *value);
/* A function's closure cells' contents, at most max. */
int obj_closure(const struct objread *r, uint64_t func, uint64_t *values, size_t max, size_t *n);

#endif
