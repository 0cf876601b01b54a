// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>

#include "outfile.h"
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

int writer_write(const char *path, enum out_format fmt, struct profile *prof, mode_t mode,
		 char *why, size_t whylen)
{
	struct outfile o;

	if (!path || !strcmp(path, "-")) {
		if (write_format(stdout, fmt, prof) || fflush(stdout)) {
			snprintf(why, whylen, "writing to stdout: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (outfile_open(&o, path, mode, why, whylen))
		return -1;
	if (write_format(o.f, fmt, prof)) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o, why, whylen);
}
