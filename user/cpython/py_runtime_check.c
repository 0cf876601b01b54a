/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Choosing a layout from the generated table (user/cpython/py_layouts.c) and checking it against
 * what a live 3.13+ runtime says about itself in _Py_DebugOffsets.
 *
 * For the frame, thread and code structs asyncbpf reads, the layout is constant within a
 * release line for 3.8-3.12, so one table entry serves every micro (3.10.0-3.10.5 and
 * 3.10.6+ differ only in _asyncio's FutureObj, which this table does not cover yet). 3.13
 * is verified against _Py_DebugOffsets at attach time. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "memread.h"
#include "py_layouts.h"
#include "py_layouts_table.h"

#define DEBUG_COOKIE "xdebugpy"
#define DEBUG_MAX    4096 /* larger than any _Py_DebugOffsets so far (584 in 3.13) */

static void version_str(uint32_t v, char *buf, size_t len)
{
	static const char *const level[16] = { [0xA] = "a", [0xB] = "b", [0xC] = "rc" };
	unsigned int lv = PYV_LEVEL(v);

	if (lv == 0xF)
		snprintf(buf, len, "%u.%u.%u", PYV_MAJOR(v), PYV_MINOR(v), PYV_MICRO(v));
	else
		snprintf(buf, len, "%u.%u.%u%s%u", PYV_MAJOR(v), PYV_MINOR(v), PYV_MICRO(v),
			 level[lv] ? level[lv] : "?", v & 0xf);
}

static void supported_range(char *buf, size_t len)
{
	uint32_t lo = py_layout_table[0].py_version;
	uint32_t hi = py_layout_table[py_layout_table_len - 1].py_version;

	/* 3.14 needs no table entry: it describes itself (py314.c) */
	if (PYV_MINOR_OF(hi) < PYV(3, 14))
		hi = PYV(3, 14);
	snprintf(buf, len, "%u.%u\u2013%u.%u", PYV_MAJOR(lo), PYV_MINOR(lo), PYV_MAJOR(hi),
		 PYV_MINOR(hi));
}

const struct py_layout *py_layout_find(uint32_t version_hex, char *why, size_t whylen)
{
	char ver[32], range[32];
	unsigned int i;

	version_str(version_hex, ver, sizeof(ver));
	if (!py_layout_table_len) {
		snprintf(why, whylen, "Python %s is not supported (no layouts generated)", ver);
		return NULL;
	}
	supported_range(range, sizeof(range));
	if (PYV_LEVEL(version_hex) != 0xF) {
		snprintf(why, whylen,
			 "Python %s is a pre-release, not supported (supported: final releases "
			 "of %s)",
			 ver, range);
		return NULL;
	}
	for (i = 0; i < py_layout_table_len; i++)
		if (PYV_MINOR_OF(py_layout_table[i].py_version) == PYV_MINOR_OF(version_hex))
			return &py_layout_table[i];
	snprintf(why, whylen, "Python %s is not supported (supported: %s)", ver, range);
	return NULL;
}

static const struct py_debug_desc *debug_desc(uint32_t version_hex)
{
	unsigned int i;

	for (i = 0; i < py_debug_descs_len; i++)
		if (py_debug_descs[i].minor == PYV_MINOR_OF(version_hex))
			return &py_debug_descs[i];
	return NULL;
}

static uint64_t u64_at(const unsigned char *buf, size_t pos)
{
	uint64_t v;

	memcpy(&v, buf + pos, sizeof(v));
	return v;
}

static int layout_value(const struct py_layout *l, const struct py_debug_field *f, uint64_t *v)
{
	const unsigned char *p = (const unsigned char *)l + f->field;
	__u16 v16;

	if (f->field + f->width > sizeof(*l))
		return -1;
	switch (f->width) {
	case 1:
		*v = *p;
		return 0;
	case 2:
		memcpy(&v16, p, sizeof(v16));
		*v = v16;
		return 0;
	default:
		return -1;
	}
}

int py_layout_check_runtime(const struct py_layout *l, uint32_t version_hex, pid_t pid,
			    uint64_t runtime_addr, char *why, size_t whylen)
{
	unsigned char buf[DEBUG_MAX];
	const struct py_debug_desc *d;
	char ver[32];
	uint64_t found, want;
	unsigned int i;
	int err;

	version_str(version_hex, ver, sizeof(ver));
	if (!l || PYV_MINOR_OF(l->py_version) != PYV_MINOR_OF(version_hex)) {
		snprintf(why, whylen, "pid %d: no layout for Python %s", (int)pid, ver);
		return -1;
	}
	if (PYV_MINOR_OF(version_hex) < PYV(3, 13))
		return 0;
	d = debug_desc(version_hex);
	if (!d || d->size > sizeof(buf) || d->cookie_pos + 8 > d->size ||
	    d->version_pos + 8 > d->size || d->free_threaded_pos + 8 > d->size) {
		snprintf(why, whylen, "pid %d: no _Py_DebugOffsets description for Python %s",
			 (int)pid, ver);
		return -1;
	}
	err = mem_read(pid, runtime_addr, buf, d->size);
	if (err) {
		snprintf(why, whylen, "pid %d: cannot read _Py_DebugOffsets at 0x%llx: %s",
			 (int)pid, (unsigned long long)runtime_addr, strerror(-err));
		return -1;
	}
	if (memcmp(buf + d->cookie_pos, DEBUG_COOKIE, 8)) {
		snprintf(why, whylen, "pid %d: no \"%s\" cookie at _PyRuntime 0x%llx", (int)pid,
			 DEBUG_COOKIE, (unsigned long long)runtime_addr);
		return -1;
	}
	found = u64_at(buf, d->version_pos);
	if (found != version_hex) {
		snprintf(why, whylen,
			 "pid %d: _Py_DebugOffsets.version is 0x%llx, expected 0x%08x (%s)",
			 (int)pid, (unsigned long long)found, version_hex, ver);
		return -1;
	}
	if (u64_at(buf, d->free_threaded_pos)) {
		snprintf(why, whylen, "pid %d: Python %s is a free-threaded build, not supported",
			 (int)pid, ver);
		return -1;
	}
	for (i = 0; i < d->nfields; i++) {
		const struct py_debug_field *f = &d->fields[i];

		if (f->pos + 8 > d->size || layout_value(l, f, &want)) {
			snprintf(why, whylen, "_Py_DebugOffsets.%s: bad description", f->name);
			return -1;
		}
		found = u64_at(buf, f->pos);
		if (found != want) {
			snprintf(why, whylen,
				 "pid %d: _Py_DebugOffsets.%s is %llu, layout for %s has %llu",
				 (int)pid, f->name, (unsigned long long)found, ver,
				 (unsigned long long)want);
			return -1;
		}
	}
	return 0;
}
