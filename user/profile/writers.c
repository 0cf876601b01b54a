// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/outfile.h"
#include "profile/writers.h"

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
		else if ((s->kind == FRAME_THREAD || s->kind == FRAME_WORKER) && !l->thread)
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
	/* control characters too: a name read from a process as it changes may hold any */
	for (char *p = buf; *p; p++)
		if (*p == ';' || (unsigned char)*p < 0x20 || *p == 0x7f)
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

/* Writes to an existing file that is not a regular one, without creating or renaming. */
static int write_stream(const char *path, enum out_format fmt, struct profile *prof,
			const struct writer_meta *meta, char *why, size_t whylen)
{
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f;

	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (write_format(f, fmt, prof, meta) || fflush(f)) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		fclose(f);
		return -1;
	}
	if (fclose(f)) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int writer_write(const char *path, enum out_format fmt, struct profile *prof, char *why,
		 size_t whylen)
{
	return writer_write_meta(path, fmt, prof, NULL, why, whylen);
}

int writer_write_meta(const char *path, enum out_format fmt, struct profile *prof,
		      const struct writer_meta *meta, char *why, size_t whylen)
{
	struct outfile o;
	struct stat st;

	if (!path || !strcmp(path, "-")) {
		if (write_format(stdout, fmt, prof, meta) || fflush(stdout)) {
			snprintf(why, whylen, "writing to stdout: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	/* A device or FIFO (/dev/null, a pipe) is written in place: renaming over it would
	 * replace the device node with a regular file. */
	if (!lstat(path, &st) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "cannot write %s: %s", path, strerror(EISDIR));
			return -1;
		}
		return write_stream(path, fmt, prof, meta, why, whylen);
	}
	if (outfile_open(&o, path, meta && meta->has_mode ? meta->mode : OUTFILE_MODE, why, whylen))
		return -1;
	if (write_format(o.f, fmt, prof, meta)) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o, why, whylen);
}
