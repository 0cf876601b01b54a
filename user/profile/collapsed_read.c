// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/readers.h"
#include "profile/writers.h"

#define MAX_FRAMES 65536

/* Parses "digits" of s[0..len) into *v (0 <= v <= max). */
static int number(const char *s, size_t len, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;

	if (!len || len > 20)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (x > (max - (s[i] - '0')) / 10)
			return -1;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return 0;
}

/* s ends with " (PREFIX N)": the name before it, and N. */
static int suffix_num(const char *s, size_t len, const char *prefix, size_t *name_len, int *num)
{
	size_t k = strlen(prefix);
	const char *open;
	uint64_t v;

	if (len < k + 4 || s[len - 1] != ')')
		return -1;
	for (open = s + len - 2; open > s && *open != '('; open--)
		;
	if (open == s || open[-1] != ' ' || (size_t)(s + len - 1 - open) < k + 1 ||
	    memcmp(open + 1, prefix, k))
		return -1;
	if (number(open + 1 + k, s + len - 1 - (open + 1 + k), INT32_MAX, &v))
		return -1;
	*name_len = open - 1 - s;
	*num = (int)v;
	return 0;
}

static uint32_t intern(struct profile *p, enum frame_kind kind, const char *name, size_t nlen,
		       const char *file, size_t flen, int line)
{
	char *n = strndup(name, nlen), *f = file ? strndup(file, flen) : NULL;
	uint32_t id = UINT32_MAX;

	if (n && (!file || f))
		id = profile_frame(p, kind, n, f, line);
	free(n);
	free(f);
	return id;
}

uint32_t profile_frame_parse(struct profile *p, const char *s, size_t len)
{
	size_t nlen;
	int num;

	if (!suffix_num(s, len, "pid ", &nlen, &num))
		return intern(p, FRAME_PROCESS, s, nlen, NULL, 0, num);
	if (!suffix_num(s, len, "tid ", &nlen, &num))
		return intern(p, FRAME_THREAD, s, nlen, NULL, 0, num);
	if (len >= 7 && !memcmp(s, "<task ", 6) && s[len - 1] == '>')
		return intern(p, FRAME_TASK, s + 6, len - 7, NULL, 0, 0);
	if (len >= 9 && !memcmp(s, "<thread ", 8) && s[len - 1] == '>')
		return intern(p, FRAME_WORKER, s + 8, len - 9, NULL, 0, 0);
	if (len >= 6 && s[len - 1] == ')') {
		/* "qualname (file:line)": the last ':' before the ')' ends the file */
		const char *colon = memrchr(s, ':', len - 1), *open;
		uint64_t line;

		if (colon && !number(colon + 1, s + len - 1 - (colon + 1), INT32_MAX, &line)) {
			for (open = colon; open > s && !(open[0] == '(' && open[-1] == ' '); open--)
				;
			if (open > s)
				return intern(p, FRAME_PYTHON, s, open - 1 - s, open + 1,
					      colon - open - 1, (int)line);
		}
	}
	/* markers are bracketed ([truncated], [container ...]); a bare name is a native frame */
	if (len && s[0] != '[')
		return intern(p, FRAME_NATIVE, s, len, NULL, 0, 0);
	return intern(p, FRAME_SPECIAL, s, len, NULL, 0, 0);
}

int collapsed_read(const char *buf, size_t len, struct profile *p, char *why, size_t whylen)
{
	uint32_t *ids = malloc(MAX_FRAMES * sizeof(*ids));
	const char *end = buf + len, *line = buf;
	size_t lineno = 0;
	int ret = -1;

	if (!ids) {
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	while (line < end) {
		const char *eol = memchr(line, '\n', end - line), *sp, *f;
		uint64_t count;
		uint32_t n = 0;

		if (!eol)
			eol = end;
		lineno++;
		sp = eol;
		if (sp > line && sp[-1] == '\r')
			sp--;
		if (sp == line) {
			line = eol + 1;
			continue;
		}
		if (memchr(line, 0, sp - line)) {
			snprintf(why, whylen, "line %zu: a NUL byte", lineno);
			goto out;
		}
		{
			const char *cnt = memrchr(line, ' ', sp - line);

			if (!cnt || number(cnt + 1, sp - cnt - 1, UINT64_MAX, &count)) {
				snprintf(why, whylen, "line %zu: no sample count at the end",
					 lineno);
				goto out;
			}
			sp = cnt;
		}
		/* the writer's count of samples lost, not a stack */
		if ((size_t)(sp - line) == strlen(COLLAPSED_LOST) &&
		    !memcmp(line, COLLAPSED_LOST, sp - line)) {
			profile_set_lost(p, profile_lost(p) + count);
			line = eol + 1;
			continue;
		}
		for (f = line; f <= sp;) {
			const char *semi = memchr(f, ';', sp - f);

			if (!semi)
				semi = sp;
			if (semi == f) {
				snprintf(why, whylen, "line %zu: an empty frame", lineno);
				goto out;
			}
			if (n == MAX_FRAMES) {
				snprintf(why, whylen, "line %zu: more than %d frames", lineno,
					 MAX_FRAMES);
				goto out;
			}
			ids[n] = profile_frame_parse(p, f, semi - f);
			if (ids[n++] == UINT32_MAX) {
				snprintf(why, whylen, "out of memory");
				goto out;
			}
			f = semi + 1;
		}
		if (count && profile_add(p, ids, n, count)) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		line = eol + 1;
	}
	ret = 0;
out:
	free(ids);
	return ret;
}
