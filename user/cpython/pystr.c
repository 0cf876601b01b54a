/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/memread.h"
#include "cpython/pystr.h"

#define HDR_MAX 256

static size_t put_utf8(char *p, uint32_t c)
{
	if (!c || (c >= 0xd800 && c <= 0xdfff) || c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x80) {
		p[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		p[0] = (char)(0xc0 | c >> 6);
		p[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		p[0] = (char)(0xe0 | c >> 12);
		p[1] = (char)(0x80 | (c >> 6 & 0x3f));
		p[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	p[0] = (char)(0xf0 | c >> 18);
	p[1] = (char)(0x80 | (c >> 12 & 0x3f));
	p[2] = (char)(0x80 | (c >> 6 & 0x3f));
	p[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

size_t py_chars_utf8(const uint8_t *data, size_t n, int width, int ascii, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t c;

		if (width == 1) {
			c = data[i];
			if (ascii && c >= 0x80)
				c = 0xfffd;
		} else if (width == 2) {
			uint16_t u;

			memcpy(&u, data + 2 * i, 2);
			c = u;
		} else {
			memcpy(&c, data + 4 * i, 4);
		}
		o += put_utf8(out + o, c);
	}
	out[o] = 0;
	return o;
}

int py_str_chars(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max, uint8_t *data,
		 int *width, int *ascii, size_t *n, int64_t *len)
{
	uint8_t hdr[HDR_MAX];
	size_t hlen = l->unicode_ascii_size;
	uint32_t state;
	int kind, err;

	/* state and length are in the PyASCIIObject head every str starts with */
	if (hlen > HDR_MAX || l->unicode_state + 4u > hlen || l->unicode_length + 8u > hlen ||
	    l->unicode_compact_size < hlen)
		return -EINVAL;
	err = mem_read(pid, addr, hdr, hlen);
	if (err)
		return err;
	memcpy(&state, hdr + l->unicode_state, 4);
	memcpy(len, hdr + l->unicode_length, 8);
	kind = state >> l->unicode_kind_shift & 7;
	*ascii = state >> l->unicode_ascii_bit & 1;
	if (!(state >> l->unicode_compact_bit & 1) || *len < 0 || *len > PYSTR_MAX_LEN)
		return -EINVAL;
	if ((kind != 1 && kind != 2 && kind != 4) || (*ascii && kind != 1))
		return -EINVAL;
	*width = kind;
	*n = (uint64_t)*len > max ? max : (size_t)*len;
	return mem_read(pid, addr + (*ascii ? hlen : l->unicode_compact_size), data, *n * kind);
}

int py_str_read_max(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max,
		    const char *cut, char **out)
{
	uint8_t *data = malloc(max * 4 + 1);
	char *s = malloc(max * 4 + strlen(cut) + 1);
	int width, ascii, err;
	int64_t len;
	size_t n, o;

	*out = NULL;
	if (!data || !s) {
		free(data);
		free(s);
		return -ENOMEM;
	}
	err = py_str_chars(pid, l, addr, max, data, &width, &ascii, &n, &len);
	if (err) {
		free(data);
		free(s);
		return err;
	}
	o = py_chars_utf8(data, n, width, ascii, s);
	if ((uint64_t)len > n)
		strcpy(s + o, cut);
	free(data);
	/* callers keep the text (the symbol cache, for the process's life): not the
	 * room for max characters of four bytes */
	*out = realloc(s, strlen(s) + 1);
	if (!*out)
		*out = s;
	return 0;
}

int py_str_read(pid_t pid, const struct py_layout *l, uint64_t addr, char **out)
{
	return py_str_read_max(pid, l, addr, PYSTR_MAX_CHARS, PYSTR_CUT, out);
}

int py_bytes_read(pid_t pid, const struct py_layout *l, uint64_t addr, size_t max, uint8_t **out,
		  size_t *len)
{
	int64_t size;
	uint8_t *b;
	int err;

	*out = NULL;
	*len = 0;
	err = mem_read(pid, addr + l->bytes_size, &size, 8);
	if (err)
		return err;
	if (size < 0)
		return -EINVAL;
	if ((uint64_t)size > max)
		return -E2BIG;
	b = malloc((size_t)size + 1);
	if (!b)
		return -ENOMEM;
	err = mem_read(pid, addr + l->bytes_sval, b, (size_t)size);
	if (err) {
		free(b);
		return err;
	}
	b[size] = 0;
	*out = b;
	*len = (size_t)size;
	return 0;
}
