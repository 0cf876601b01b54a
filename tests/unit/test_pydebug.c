// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The _Py_DebugOffsets tables (user/pydebug.c) against the bytes real interpreters carry
 * (pydebug_fixtures.h): each line's slots land where that line keeps them, the layouts
 * built from them are those CPython's headers give, and what cannot be read right is
 * refused with one line. */
#include <string.h>

#include "cpython/py_layouts.h"
#include "cpython/py_objmodel.h"
#include "cpython/pydebug.h"
#include "tests/unit/pydebug_fixtures.h"
#include "tests/unit/unit.h"

#define N(a) (sizeof(a) / sizeof(a[0]))

struct fixture {
	const char *name;
	uint32_t version;
	const uint64_t *slots;
	size_t nslots;
};

static const struct fixture fixtures[] = {
	{ "3.13.0", 0x030d00f0, dbg_3_13_0, N(dbg_3_13_0) },
	{ "3.13.18", 0x030d12f0, dbg_3_13_18, N(dbg_3_13_18) },
	{ "3.14.10", 0x030e0af0, dbg_3_14_10, N(dbg_3_14_10) },
	{ "3.15.2", 0x030f02f0, dbg_3_15_2, N(dbg_3_15_2) },
};

static const struct fixture *fx(const char *name)
{
	for (size_t i = 0; i < N(fixtures); i++)
		if (!strcmp(fixtures[i].name, name))
			return &fixtures[i];
	return NULL;
}

static int decode(const struct fixture *f, struct pydbg *d, char *why, size_t len)
{
	return pydbg_decode(f->slots, f->nslots * 8, f->version, d, why, len);
}

/* Each table starts with the head every line shares, names each slot once, and is as
 * long as the line's struct (CPython's own reader checks 3.15's 888 bytes). */
static void test_tables(void)
{
	static const struct {
		uint32_t minor;
		size_t size;
	} sizes[] = { { PYV(3, 13), 584 }, { PYV(3, 14), 760 }, { PYV(3, 15), 888 } };

	CHECK(pydbg_tables_len == N(sizes), "%u tables", pydbg_tables_len);
	for (size_t i = 0; i < N(sizes); i++) {
		const struct pydbg_table *t = pydbg_table_find(sizes[i].minor | 0x0af0);

		CHECK(t && t->minor == sizes[i].minor && pydbg_size(t) == sizes[i].size,
		      "3.%u: table of %zu bytes", PYV_MINOR(sizes[i].minor), t ? pydbg_size(t) : 0);
		if (!t)
			continue;
		CHECK(pydbg_slot(t, "cookie") == 0 && pydbg_slot(t, "version") == 8 &&
			      pydbg_slot(t, "free_threaded") == 16,
		      "3.%u: head", PYV_MINOR(t->minor));
		const char *twice = NULL;

		for (unsigned int a = 0; a < t->nslots; a++)
			for (unsigned int b = a + 1; b < t->nslots; b++)
				if (!strcmp(t->slots[a], t->slots[b]))
					twice = t->slots[a];
		CHECK(!twice, "3.%u: %s twice", PYV_MINOR(t->minor), twice);
	}
	CHECK(!pydbg_table_find(0x031000f0) && !pydbg_table_find(0x030c01f0), "3.16 or 3.12 table");
}

/* Every line: the fixture's own cookie and version decode, and each sub-struct's size slot
 * (sizeof of the CPython struct) is where the table says, which a shifted table misses. */
static void test_decode_real(void)
{
	char why[256];
	struct pydbg d;

	for (size_t i = 0; i < N(fixtures); i++) {
		const struct fixture *f = &fixtures[i];
		int rc = decode(f, &d, why, sizeof(why));

		CHECK(!rc && d.table && d.version == f->version, "%s: %s", f->name, why);
		if (rc)
			continue;
		CHECK(pydbg_size(d.table) == f->nslots * 8, "%s: %zu bytes", f->name,
		      pydbg_size(d.table));
		CHECK(f->slots[pydbg_slot(d.table, "pyobject.size") / 8] == 16 &&
			      f->slots[pydbg_slot(d.table, "pyobject.ob_type") / 8] == 8 &&
			      f->slots[pydbg_slot(d.table, "interpreter_frame.previous") / 8] == 8,
		      "%s: pyobject and frame slots", f->name);
		CHECK(d.v[PD_CODE_FILENAME] == 112 && d.v[PD_CODE_QUALNAME] == 128 &&
			      d.v[PD_TSTATE_CURRENT_FRAME] == 72 && d.v[PD_BYTES_SVAL] == 32,
		      "%s: code filename %llu qualname %llu current_frame %llu", f->name,
		      (unsigned long long)d.v[PD_CODE_FILENAME],
		      (unsigned long long)d.v[PD_CODE_QUALNAME],
		      (unsigned long long)d.v[PD_TSTATE_CURRENT_FRAME]);
	}
}

/* 3.13: the layout from its _Py_DebugOffsets equals the one generated with offsetof from its
 * headers (py_layouts_table.c), and the generator part of the async layout that of its object
 * model. */
static void test_313_as_generated(void)
{
	const struct py_layout *gen;
	const struct py_objmodel *om;
	struct py_async_layout a;
	struct py_layout l;
	struct pydbg d;
	char why[256];

	gen = py_layout_find(0x030d00f0, why, sizeof(why));
	om = py_objmodel_find(0x030d00f0);
	if (!gen || !om) {
		SKIP("no generated 3.13 layout to compare with");
		return;
	}
	/* 3.13.18's PyThreadState is 8 bytes larger than 3.13.0's; no offset read moved */
	for (int i = 0; i < 2; i++) {
		const struct fixture *f = fx(i ? "3.13.18" : "3.13.0");

		CHECK(!decode(f, &d, why, sizeof(why)) &&
			      !pydbg_layout(&d, &l, &a, why, sizeof(why)),
		      "%s: %s", f->name, why);
		l.py_version = gen->py_version; /* the fixture's micro vs the headers' */
		CHECK(!memcmp(&l, gen, sizeof(l)),
		      "%s: decoded layout differs from the generated one", f->name);
		CHECK(a.yf_kind == om->async.yf_kind &&
			      a.gen_suspended == om->async.gen_suspended &&
			      a.gen_frame == om->async.gen_frame &&
			      a.gen_frame_state == om->async.gen_frame_state &&
			      a.frame_stack == om->async.frame_stack &&
			      a.frame_stackdepth == om->async.frame_stackdepth &&
			      a.frame_localsplus == om->async.frame_localsplus &&
			      a.frame_localsplus == 72 && !a.tstate_context && a.gen_executing == 0,
		      "%s: generator layout differs from the object model's", f->name);
		CHECK(!pydbg_check_objmodel(&d, om, why, sizeof(why)), "%s: %s", f->name, why);
	}
	CHECK(d.v[PD_TSTATE_SIZE] == 312, "3.13.18: thread_state.size %llu",
	      (unsigned long long)d.v[PD_TSTATE_SIZE]);
}

/* 3.14 and 3.15 as Debian builds them: the offsets their headers give (offsetof against
 * libpython3.X-dev), and the facts of each line. */
static void test_314_315(void)
{
	struct py_async_layout a;
	struct py_layout l;
	struct pydbg d;
	char why[256];

	CHECK(!decode(fx("3.14.10"), &d, why, sizeof(why)) &&
		      !pydbg_layout(&d, &l, &a, why, sizeof(why)),
	      "3.14.10: %s", why);
	CHECK(l.runtime_interp_head == 808 && l.interp_tstate_head == 7344 &&
		      l.tstate_thread_id == 152 && l.tstate_native_id == 160 &&
		      l.frame_owner == 74 && l.frame_lasti == 56 && l.code_code == 208 &&
		      l.unicode_compact_size == 56 && l.ref_tag_bits == 2 && l.owner_cstack == 3 &&
		      !l.tstate_base_frame,
	      "3.14: thread_id %u native %u owner %u", l.tstate_thread_id, l.tstate_native_id,
	      l.frame_owner);
	CHECK(a.yf_kind == PY_YF_STACKPTR && a.frame_stack == 64 && a.yf_slots == 1 &&
		      a.gen_executing == 0 && a.gen_suspended == -1 && a.gen_frame == 72 &&
		      a.gen_frame_state == 67 && a.tuple_items == 32 && a.frame_localsplus == 80,
	      "3.14: generator layout");
	CHECK(d.has[PD_LLIST_NEXT] && d.has[PD_SET_TABLE] && !d.has[PD_TSTATE_BASE_FRAME],
	      "3.14: llist, set, no base_frame");

	CHECK(!decode(fx("3.15.2"), &d, why, sizeof(why)) &&
		      !pydbg_layout(&d, &l, &a, why, sizeof(why)),
	      "3.15.2: %s", why);
	CHECK(l.runtime_interp_head == 936 && l.interp_tstate_head == 7336 &&
		      l.tstate_thread_id == 176 && l.tstate_native_id == 184 &&
		      l.tstate_frame == 72 && l.frame_back == 8 && l.frame_code == 0 &&
		      l.frame_owner == 74 && l.unicode_compact_size == 56 && l.ref_tag_bits == 2 &&
		      l.tstate_base_frame == 80,
	      "3.15: thread_id %u native %u", l.tstate_thread_id, l.tstate_native_id);
	CHECK(a.yf_kind == PY_YF_STACKPTR && a.frame_stack == 64 && a.yf_slots == 2 &&
		      a.gen_executing == 4 && a.gen_suspended == 2 && a.gen_frame == 72 &&
		      a.gen_frame_state == 67 && a.frame_localsplus == 80,
	      "3.15: generator layout: executing %d yield-from %d slots %u", a.gen_executing,
	      a.gen_suspended, a.yf_slots);
	CHECK(d.has[PD_TSTATE_BASE_FRAME] && d.v[PD_TSTATE_BASE_FRAME] == 80 &&
		      d.v[PD_HEAPTYPE_CACHED_KEYS] == 888 && d.v[PD_TYPE_BASICSIZE] == 32,
	      "3.15: base_frame %llu", (unsigned long long)d.v[PD_TSTATE_BASE_FRAME]);
}

/* The object model of the line's headers must say what the runtime says. */
static void test_objmodel_check(void)
{
	for (size_t i = 2; i < N(fixtures); i++) {
		const struct fixture *f = &fixtures[i];
		const struct py_objmodel *om = py_objmodel_find(f->version);
		struct py_objmodel bad;
		struct pydbg d;
		char why[256] = "";

		if (!om) {
			SKIP("%s: no object model generated", f->name);
			continue;
		}
		CHECK(!decode(f, &d, why, sizeof(why)) &&
			      !pydbg_check_objmodel(&d, om, why, sizeof(why)),
		      "%s: %s", f->name, why);
		bad = *om;
		bad.tuple_items = 24; /* 3.13's: 3.14 added ob_hash */
		CHECK(pydbg_check_objmodel(&d, &bad, why, sizeof(why)) &&
			      strstr(why, "tuple_object.ob_item is 32"),
		      "%s: a wrong tuple offset not caught: '%s'", f->name, why);
		bad = *om;
		bad.code_varnames = 72; /* 3.8-3.10's co_varnames */
		CHECK(pydbg_check_objmodel(&d, &bad, why, sizeof(why)) &&
			      strstr(why, "code_object.localsplusnames is 96"),
		      "%s: a wrong co_localsplusnames offset not caught: '%s'", f->name, why);
		bad = *om;
		bad.code_localspluskinds = 0; /* what the model of 3.8-3.10 has */
		CHECK(d.has[PD_CODE_LOCALSPLUSKINDS] &&
			      pydbg_check_objmodel(&d, &bad, why, sizeof(why)) &&
			      strstr(why, "code_object.localspluskinds is 104"),
		      "%s: a wrong co_localspluskinds offset not caught: '%s'", f->name, why);
		bad = *om;
		bad.async.frame_localsplus += 8;
		CHECK(pydbg_check_objmodel(&d, &bad, why, sizeof(why)) &&
			      strstr(why, "interpreter_frame.localsplus is"),
		      "%s: a wrong localsplus offset not caught: '%s'", f->name, why);
		/* the code-version fields: no offsets of their own in _Py_DebugOffsets, so the
		 * structs that hold them must be of the headers' sizes */
		CHECK(!pydbg_check_versions(&d, om, why, sizeof(why)), "%s: %s", f->name, why);
		bad = *om;
		bad.interp_size += 8;
		CHECK(pydbg_check_versions(&d, &bad, why, sizeof(why)) &&
			      strstr(why, "interpreter_state.size is"),
		      "%s: an interpreter of another size not caught: '%s'", f->name, why);
	}
}

static void expect_refused(const uint64_t *slots, size_t n, uint32_t version, const char *what,
			   const char *expect)
{
	struct pydbg d;
	char why[256] = "";

	CHECK(pydbg_decode(slots, n, version, &d, why, sizeof(why)) == -1 && strstr(why, expect) &&
		      !strchr(why, '\n'),
	      "%s: '%s', want '%s'", what, why, expect);
}

static void test_refused(void)
{
	uint64_t b[N(dbg_3_15_2)];
	struct py_async_layout a;
	struct py_layout l;
	struct pydbg d;
	char why[256] = "";
	int pos;

	memcpy(b, dbg_3_15_2, sizeof(b));
	expect_refused(b, sizeof(b), 0x030f03f0, "another micro", "version is 0x30f02f0");
	expect_refused(b, 16, 0x030f02f0, "short head", "without _Py_DebugOffsets");
	expect_refused(b, sizeof(b) - 8, 0x030f02f0, "cut short", "cut short (880 of 888");
	b[0] ^= 1;
	expect_refused(b, sizeof(b), 0x030f02f0, "no cookie", "3.15.2 without _Py_DebugOffsets");
	b[0] ^= 1;
	b[2] = 1;
	expect_refused(b, sizeof(b), 0x030f02f0, "free-threaded 3.15",
		       "3.15.2 is a free-threaded build, not supported");
	b[2] = 0;
	b[1] = 0x031000f0;
	expect_refused(b, sizeof(b), 0x031000f0, "3.16",
		       "3.16.0 is not supported: no table for its _Py_DebugOffsets (version "
		       "0x031000f0; tables for 3.13, 3.14, 3.15)");
	/* the head alone tells a line without a table */
	expect_refused(b, PYDBG_HEAD, 0x031000f0, "3.16 head", "no table");
	b[1] = 0x030f02f0;
	pos = pydbg_slot(pydbg_table_find(0x030f02f0), "interpreter_frame.instr_ptr");
	b[pos / 8] = 200;
	CHECK(!pydbg_decode(b, sizeof(b), 0x030f02f0, &d, why, sizeof(why)) &&
		      pydbg_layout(&d, &l, &a, why, sizeof(why)) == -1 &&
		      strstr(why, "implausible interpreter_frame"),
	      "a frame field past the bytes read per frame: '%s'", why);
	CHECK(!pydbg_decode(dbg_3_14_10, PYDBG_HEAD, 0x030e0af0, &d, why, sizeof(why)) && d.table,
	      "3.14 head alone: %s", why);
}

int main(void)
{
	test_tables();
	test_decode_real();
	test_313_as_generated();
	test_314_315();
	test_objmodel_check();
	test_refused();
	return unit_exit();
}
