/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Choosing a layout from the generated table (user/cpython/py_layouts_table.c).
 *
 * For the frame, thread and code structs asyncbpf reads, the layout is constant within a
 * release line for 3.8-3.12, so one table entry serves every micro (3.10.0-3.10.5 and
 * 3.10.6+ differ only in _asyncio's FutureObj, which this table does not cover yet). 3.13+
 * take theirs from the runtime's _Py_DebugOffsets (pydebug.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cpython/py_layouts.h"
#include "cpython/py_layouts_table.h"
#include "cpython/pydebug.h"

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

	/* 3.13+ describe themselves: the newest line is that of the newest pydebug.c table */
	if (pydbg_tables_len && PYV_MINOR_OF(hi) < pydbg_tables[pydbg_tables_len - 1].minor)
		hi = pydbg_tables[pydbg_tables_len - 1].minor;
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
