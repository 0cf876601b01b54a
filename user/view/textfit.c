// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Terminal text fitted by display width; see textfit.h. */
#include <stdint.h>
#include <string.h>
#include <wchar.h>

#include "view/textfit.h"

struct glyph {
	char bytes[4];
	unsigned int len; /* of bytes */
	int w;
};

/* The code point at s (n bytes of it valid), its length in *len; -1 when invalid. */
static long decode(const unsigned char *s, size_t *len)
{
	unsigned int need;
	long cp;

	if (s[0] < 0x80) {
		*len = 1;
		return s[0];
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		need = 1, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		need = 2, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		need = 3, cp = s[0] & 0x07;
	else
		return -1;
	for (unsigned int i = 1; i <= need; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates and beyond Unicode */
	if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*len = need + 1;
	return cp;
}

/* The glyph at s as shown; returns the bytes of s it stands for. */
static size_t next_glyph(const char *s, bool utf8, struct glyph *g)
{
	size_t len = 1;
	long cp = utf8 ? decode((const unsigned char *)s, &len) : (unsigned char)*s;
	int w = cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0) ? -1 : 1;

	if (w > 0 && cp >= 0x80)
		w = utf8 ? wcwidth((wchar_t)cp) : -1;
	if (cp < 0 || w < 0) {
		g->bytes[0] = '?';
		g->len = 1;
		g->w = 1;
		return len;
	}
	memcpy(g->bytes, s, len);
	g->len = len;
	g->w = w;
	return len;
}

void text_init(struct textline *l, int cols, bool utf8)
{
	l->len = 0;
	l->buf[0] = 0;
	l->width = 0;
	l->cols = cols < 0 ? 0 : cols > TEXT_MAX_COLS ? TEXT_MAX_COLS : cols;
	l->utf8 = utf8;
}

int text_width(const char *s, bool utf8)
{
	struct glyph g;
	int w = 0;

	while (*s) {
		s += next_glyph(s, utf8, &g);
		w += g.w;
	}
	return w;
}

static void put_glyph(struct textline *l, const struct glyph *g)
{
	/* zero-width glyphs (combining marks) take bytes and no column */
	if (l->len + g->len >= sizeof(l->buf))
		return;
	memcpy(l->buf + l->len, g->bytes, g->len);
	l->len += g->len;
	l->buf[l->len] = 0;
	l->width += g->w;
}

static void ellipsis(struct textline *l)
{
	struct glyph g = { "~", 1, 1 };

	if (l->utf8)
		g = (struct glyph){ "\xe2\x80\xa6", 3, 1 };
	put_glyph(l, &g);
}

/* The glyphs of s from column skip on, while they fit in w columns. */
static void put_span(struct textline *l, const char *s, int skip, int w)
{
	struct glyph g;
	int col = 0, used = 0;

	while (*s) {
		s += next_glyph(s, l->utf8, &g);
		col += g.w;
		if (col - g.w < skip) {
			/* a wide glyph cut by the start: a space for its part */
			if (col > skip && used < w) {
				put_glyph(l, &(struct glyph){ " ", 1, 1 });
				used++;
			}
			continue;
		}
		if (used + g.w > w)
			break;
		put_glyph(l, &g);
		used += g.w;
	}
}

void text_put(struct textline *l, const char *s, int w, bool from_left)
{
	int room = l->cols - l->width, full;

	if (w > room)
		w = room;
	if (w <= 0)
		return;
	full = text_width(s, l->utf8);
	if (full <= w) {
		put_span(l, s, 0, w);
	} else if (from_left) {
		ellipsis(l);
		put_span(l, s, full - (w - 1), w - 1);
	} else {
		put_span(l, s, 0, w - 1);
		ellipsis(l);
	}
}

void text_add(struct textline *l, const char *s)
{
	text_put(l, s, l->cols, false);
}

void text_pad(struct textline *l, int col)
{
	static const struct glyph sp = { " ", 1, 1 };

	if (col > l->cols)
		col = l->cols;
	while (l->width < col)
		put_glyph(l, &sp);
}
