// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include "profile/protobuf.h"

void pb_buf_free(struct pb_buf *b)
{
	free(b->data);
	*b = (struct pb_buf){};
}

static bool reserve(struct pb_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 256;
	uint8_t *d;

	if (b->nomem)
		return false;
	if (more <= b->cap - b->len)
		return true;
	while (cap - b->len < more) {
		if (cap > SIZE_MAX / 2) {
			b->nomem = true;
			return false;
		}
		cap *= 2;
	}
	d = realloc(b->data, cap);
	if (!d) {
		b->nomem = true;
		return false;
	}
	b->data = d;
	b->cap = cap;
	return true;
}

void pb_raw(struct pb_buf *b, const void *data, size_t len)
{
	if (!len || !reserve(b, len))
		return;
	memcpy(b->data + b->len, data, len);
	b->len += len;
}

void pb_varint(struct pb_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;

	do {
		tmp[n] = v & 0x7f;
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	pb_raw(b, tmp, n);
}

void pb_field_varint(struct pb_buf *b, uint32_t field, uint64_t v)
{
	pb_varint(b, (uint64_t)field << 3 | PB_VARINT);
	pb_varint(b, v);
}

void pb_field_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len)
{
	pb_varint(b, (uint64_t)field << 3 | PB_LEN);
	pb_varint(b, len);
	pb_raw(b, data, len);
}

void pb_field_msg(struct pb_buf *b, uint32_t field, const struct pb_buf *sub)
{
	if (sub->nomem)
		b->nomem = true;
	pb_field_bytes(b, field, sub->data, sub->len);
}

static int varint(struct pb_reader *r, uint64_t *v)
{
	uint64_t x = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c;

		if (r->p >= r->end)
			return -1;
		c = *r->p++;
		if (shift == 63 && c > 1)
			return -1;
		x |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1;
}

static int fixed(struct pb_reader *r, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if ((size_t)(r->end - r->p) < n)
		return -1;
	for (size_t i = 0; i < n; i++)
		x |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	*v = x;
	return 0;
}

int pb_next(struct pb_reader *r, struct pb_field *f)
{
	uint64_t key, len;

	if (r->p >= r->end)
		return 0;
	if (varint(r, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
		return -1;
	f->num = key >> 3;
	f->wire = key & 7;
	f->data = NULL;
	f->len = 0;
	f->v = 0;
	switch (f->wire) {
	case PB_VARINT:
		return varint(r, &f->v) ? -1 : 1;
	case PB_I64:
		return fixed(r, 8, &f->v) ? -1 : 1;
	case PB_I32:
		return fixed(r, 4, &f->v) ? -1 : 1;
	case PB_LEN:
		if (varint(r, &len) || len > (uint64_t)(r->end - r->p))
			return -1;
		f->data = r->p;
		f->len = len;
		r->p += len;
		return 1;
	}
	return -1; /* groups (3, 4) are not used by profile.proto */
}

int pb_packed_next(struct pb_reader *r, uint64_t *v)
{
	if (r->p >= r->end)
		return 0;
	return varint(r, v) ? -1 : 1;
}
