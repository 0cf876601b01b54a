// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdint.h>

#include "profile/json.h"

/* Length of the valid UTF-8 sequence at s, 0 if it is not one. */
static int utf8_len(const unsigned char *s)
{
	int n;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		n = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void json_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		int n = utf8_len(s);

		if (!n) {
			fputs("\\ufffd", f);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fputc('\\', f);
			fputc(*s++, f);
		} else if (*s < 0x20 || *s == '<' || *s == '>' || *s == '&' || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	fputc('"', f);
}
