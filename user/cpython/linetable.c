/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include <limits.h>

#include "cpython/linetable.h"

/* Lines are summed in 64 bits so that garbage deltas cannot overflow. */
static int clamp_line(int64_t line)
{
	return line < INT_MIN || line > INT_MAX ? -1 : (int)line;
}

int lnotab_line(const uint8_t *tab, size_t len, int firstlineno, int32_t off)
{
	int64_t addr = 0, line = firstlineno;
	size_t i;

	/* An odd trailing byte is ignored, as PyCode_Addr2Line does. */
	for (i = 0; i + 1 < len; i += 2) {
		addr += tab[i];
		if (addr > off)
			break;
		line += (int8_t)tab[i + 1];
	}
	return clamp_line(line);
}

int linetable310_line(const uint8_t *tab, size_t len, int firstlineno, int32_t off)
{
	int64_t end = 0, line = firstlineno;
	size_t i;

	if (off < 0)
		return firstlineno;
	/* Zero-width entries only carry line deltas too large for one byte. */
	for (i = 0; i + 1 < len; i += 2) {
		int8_t ldelta = (int8_t)tab[i + 1];

		end += tab[i];
		if (ldelta != -128)
			line += ldelta;
		if (tab[i] && end > off)
			return ldelta == -128 ? -1 : clamp_line(line);
	}
	return -1;
}

/* Unsigned varint (6-bit groups, low first, bit 6 = more) at tab[i]; -1 if truncated. */
static int scan_varint(const uint8_t *tab, size_t len, size_t i, uint32_t *val)
{
	unsigned int shift = 0;
	uint8_t b;

	*val = 0;
	do {
		if (i >= len)
			return -1;
		b = tab[i++];
		if (shift < 32)
			*val |= (uint32_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return 0;
}

int locations_line(const uint8_t *tab, size_t len, int firstlineno, int32_t off)
{
	int64_t end = 0, line = firstlineno;
	size_t i = 0;

	if (off < 0)
		return firstlineno;
	while (i < len) {
		int kind = tab[i] >> 3 & 15;
		uint32_t v;

		switch (kind) {
		case 13: /* no column: signed varint line delta */
		case 14: /* long form: signed varint line delta, then end line and columns */
			if (scan_varint(tab, len, i + 1, &v))
				return -1;
			line += v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
			break;
		case 10:
		case 11:
		case 12: /* one-line forms: line delta 0-2 */
			line += kind - 10;
			break;
		default: /* short forms (0-9) and no location (15): same line */
			break;
		}
		end += ((tab[i] & 7) + 1) * 2;
		if (end > off)
			return kind == 15 ? -1 : clamp_line(line);
		/* The next entry starts at the next byte with the top bit set. */
		do
			i++;
		while (i < len && !(tab[i] & 128));
	}
	return -1;
}

int linetable_line(uint32_t version, const uint8_t *tab, size_t len, int firstlineno, int32_t off)
{
	uint32_t mm = version >> 16;

	if (mm < 0x0308)
		return -1;
	if (mm < 0x030a)
		return lnotab_line(tab, len, firstlineno, off);
	if (mm == 0x030a)
		return linetable310_line(tab, len, firstlineno, off);
	return locations_line(tab, len, firstlineno, off);
}
