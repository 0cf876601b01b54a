// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writers.h"

static const struct {
	const char *name;
	enum out_format fmt;
} formats[] = {
	{ "collapsed", OUT_COLLAPSED },
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
	return "collapsed";
}

static int write_format(FILE *f, enum out_format fmt, struct profile *prof)
{
	switch (fmt) {
	case OUT_COLLAPSED:
		return write_collapsed(f, prof);
	}
	return -1;
}

/* Writes to an existing file that is not a regular one, without creating or renaming. */
static int write_stream(const char *path, enum out_format fmt, struct profile *prof, char *why,
			size_t whylen)
{
	int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f;

	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (write_format(f, fmt, prof) || fflush(f)) {
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
	char tmp[4096];
	struct stat st;
	FILE *f;
	int fd;

	if (!path || !strcmp(path, "-")) {
		if (write_format(stdout, fmt, prof) || fflush(stdout)) {
			snprintf(why, whylen, "writing to stdout: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	/* A device or FIFO (/dev/null, a pipe) is written in place: renaming over it would
	 * replace the device node with a regular file. */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		if (S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "cannot write %s: %s", path, strerror(EISDIR));
			return -1;
		}
		return write_stream(path, fmt, prof, why, whylen);
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
	if (write_format(f, fmt, prof) || fflush(f) || fsync(fd)) {
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
