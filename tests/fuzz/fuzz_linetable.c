// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* libFuzzer target: line-table decoding of every format (3.8-3.9 lnotab, 3.10
 * linetable, 3.11+ location table). Input: firstlineno (4 bytes), offset (4 bytes),
 * then the table. */
#include <stdlib.h>
#include <string.h>

#include "cpython/linetable.h"
#include "cpython/py_layouts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int32_t first, off;
	const uint8_t *tab;
	size_t len;

	if (size < 8)
		return 0;
	memcpy(&first, data, 4);
	memcpy(&off, data + 4, 4);
	tab = data + 8;
	len = size - 8;
	/* Before the first instruction every format answers firstlineno. */
	if (lnotab_line(tab, len, first, -1) != first ||
	    linetable310_line(tab, len, first, -1) != first ||
	    locations_line(tab, len, first, -1) != first)
		abort();
	lnotab_line(tab, len, first, off);
	linetable310_line(tab, len, first, off);
	locations_line(tab, len, first, off);
	for (int minor = 7; minor <= 14; minor++)
		linetable_line(PYV(3, minor) | 0xf0, tab, len, first, off);
	return 0;
}
