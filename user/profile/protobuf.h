/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The few protobuf wire-format pieces profile.proto needs: varints and length-delimited
 * fields, written to a growing buffer and read with bounds checks. */
#ifndef ASYNCBPF_PROTOBUF_H
#define ASYNCBPF_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pb_wire {
	PB_VARINT = 0,
	PB_I64 = 1,
	PB_LEN = 2,
	PB_I32 = 5,
};

struct pb_buf {
	uint8_t *data;
	size_t len, cap;
	bool nomem; /* an append failed: the buffer is incomplete */
};

void pb_buf_free(struct pb_buf *b);
void pb_raw(struct pb_buf *b, const void *data, size_t len);
void pb_varint(struct pb_buf *b, uint64_t v);
/* A varint field; zero is written too (callers skip defaults where they mean to). */
void pb_field_varint(struct pb_buf *b, uint32_t field, uint64_t v);
void pb_field_bytes(struct pb_buf *b, uint32_t field, const void *data, size_t len);
/* Appends sub as a length-delimited field of b. */
void pb_field_msg(struct pb_buf *b, uint32_t field, const struct pb_buf *sub);

struct pb_reader {
	const uint8_t *p, *end;
};

struct pb_field {
	uint32_t num;
	enum pb_wire wire;
	uint64_t v;	     /* PB_VARINT, PB_I64, PB_I32 */
	const uint8_t *data; /* PB_LEN */
	size_t len;
};

/* Next field: 1 read, 0 at the end, -1 malformed. */
int pb_next(struct pb_reader *r, struct pb_field *f);
/* Reads one varint of a packed field's bytes: 1 read, 0 at the end, -1 malformed. */
int pb_packed_next(struct pb_reader *r, uint64_t *v);

#endif
