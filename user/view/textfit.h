/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A line of terminal text built piece by piece, each fitted to a number of columns by
 * its display width: UTF-8 decoded by hand (an invalid byte is one '?'), widths from
 * wcwidth() (the caller's locale), control characters and, in ASCII mode, everything
 * beyond ASCII shown as '?'. What does not fit ends (or, fitted from the left, starts)
 * with an ellipsis. */
#ifndef ASYNCBPF_TEXTFIT_H
#define ASYNCBPF_TEXTFIT_H

#include <stdbool.h>
#include <stddef.h>

#define TEXT_MAX_COLS 4000

struct textline {
	char buf[TEXT_MAX_COLS * 4 + 8];
	size_t len;
	int width; /* columns used */
	int cols;  /* the line's width */
	bool utf8;
};

void text_init(struct textline *l, int cols, bool utf8);
/* Display width of s as text_put would show it. */
int text_width(const char *s, bool utf8);
/* s in at most w columns (and what is left of the line); from the left: its end kept. */
void text_put(struct textline *l, const char *s, int w, bool from_left);
/* s as it is, as far as the line has room. */
void text_add(struct textline *l, const char *s);
/* Spaces up to column col. */
void text_pad(struct textline *l, int col);

#endif
