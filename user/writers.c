// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "writers.h"

static const struct {
	const char *name;
	enum out_format fmt;
} formats[] = {
	{ "collapsed", OUT_COLLAPSED },
	{ "pprof", OUT_PPROF },
	{ "speedscope", OUT_SPEEDSCOPE },
	{ "html", OUT_HTML },
};

int writer_format(const char *name, enum out_format *out)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(name, formats[i].name)) {
			*out = formats[i].fmt;
			return 0;
		}
	return -1;
}

const char *writer_formats(void)
{
	return "collapsed, pprof, speedscope, html";
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcasecmp(s + n - k, suffix);
}

enum out_format writer_guess(const char *path)
{
	if (!path)
		return OUT_COLLAPSED;
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof"))
		return OUT_PPROF;
	if (ends_with(path, ".json"))
		return OUT_SPEEDSCOPE;
	if (ends_with(path, ".html") || ends_with(path, ".htm"))
		return OUT_HTML;
	return OUT_COLLAPSED;
}

void stack_labels(const struct profile *prof, const struct stack_ent *st, struct stack_labels *l)
{
	*l = (struct stack_labels){};
	for (uint32_t i = 0; i < st->n; i++) {
		const struct frame_sym *s = profile_frame_sym(prof, st->ids[i]);

		if (s->kind == FRAME_PROCESS && !l->process)
			l->process = s;
		else if (s->kind == FRAME_THREAD && !l->thread)
			l->thread = s;
		else if (s->kind == FRAME_TASK)
			l->task = s;
	}
}

void frame_text(const struct frame_sym *s, char *buf, size_t len)
{
	FILE *m = fmemopen(buf, len, "w");
	size_t n;

	buf[0] = 0;
	if (!m)
		return;
	profile_print_frame(m, s);
	n = ftell(m);
	fclose(m);
	if (n >= len)
		n = len - 1;
	buf[n] = 0;
	for (char *p = buf; *p; p++)
		if (*p == ';' || *p == '\n' || *p == '\r')
			*p = '_';
}

static int write_format(FILE *f, enum out_format fmt, struct profile *prof,
			const struct writer_meta *meta)
{
	switch (fmt) {
	case OUT_COLLAPSED:
		return write_collapsed(f, prof);
	case OUT_PPROF:
		return write_pprof(f, prof, meta);
	case OUT_SPEEDSCOPE:
		return write_speedscope(f, prof, meta);
	case OUT_HTML:
		return write_flamehtml(f, prof, meta);
	}
	return -1;
}

int writer_write(const char *path, enum out_format fmt, struct profile *prof, char *why,
		 size_t whylen)
{
	return writer_write_meta(path, fmt, prof, NULL, why, whylen);
}

int writer_write_meta(const char *path, enum out_format fmt, struct profile *prof,
		      const struct writer_meta *meta, char *why, size_t whylen)
{
	char tmp[4096];
	FILE *f;
	int fd;

	if (!path || !strcmp(path, "-")) {
		if (write_format(stdout, fmt, prof, meta) || fflush(stdout)) {
			snprintf(why, whylen, "writing to stdout: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, getpid()) >= (int)sizeof(tmp)) {
		snprintf(why, whylen, "output path too long");
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create %s: %s", tmp, strerror(errno));
		return -1;
	}
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		snprintf(why, whylen, "cannot write %s: %s", tmp, strerror(errno));
		return -1;
	}
	if (write_format(f, fmt, prof, meta) || fflush(f) || fsync(fd)) {
		snprintf(why, whylen, "cannot write %s: %s", tmp, strerror(errno));
		fclose(f);
		unlink(tmp);
		return -1;
	}
	if (fclose(f) || rename(tmp, path)) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}
