// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Rotating pprof files in a directory; see filesink.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ship/filesink.h"
#include "profile/outfile.h"

#define PREFIX "asyncbpf-"
#define SUFFIX ".pb.gz"
/* outfile.c's temporary name: "." NAME ".tmp." PID */
#define TMP_PREFIX "." PREFIX
#define TMP_INFIX  SUFFIX ".tmp."

struct filesink {
	char *dir;
	unsigned int keep;
};

void filesink_name(char *buf, size_t len, uint64_t from_ns)
{
	time_t t = (time_t)(from_ns / 1000000000ull);
	struct tm tm;

	gmtime_r(&t, &tm);
	snprintf(buf, len, PREFIX "%04d%02d%02dT%02d%02d%02d.%03uZ" SUFFIX, tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(from_ns / 1000000 % 1000));
}

static bool ours(const char *name)
{
	size_t n = strlen(name), p = strlen(PREFIX), s = strlen(SUFFIX);

	return n > p + s && !strncmp(name, PREFIX, p) && !strcmp(name + n - s, SUFFIX);
}

/* A temporary file of a process that is gone (killed while writing). */
static bool stale_tmp(const char *name)
{
	const char *infix = strstr(name, TMP_INFIX);
	char *end;
	long pid;

	if (strncmp(name, TMP_PREFIX, strlen(TMP_PREFIX)) || !infix)
		return false;
	pid = strtol(infix + strlen(TMP_INFIX), &end, 10);
	return !*end && pid > 0 && pid != getpid() && kill((pid_t)pid, 0) && errno == ESRCH;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Removes our files beyond the newest keep, and stale temporary files. */
static int prune(struct filesink *f, char *why, size_t whylen)
{
	int fd = outfile_opendir(f->dir, why, whylen);
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		snprintf(why, whylen, "%s: %s", f->dir, strerror(errno));
		close(fd);
		return -1;
	}
	while ((e = readdir(d))) {
		if (stale_tmp(e->d_name)) {
			unlinkat(fd, e->d_name, 0);
			continue;
		}
		/* a symlink or anything but a file under our name is left alone */
		if (!ours(e->d_name) || fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode))
			continue;
		if (n == cap) {
			char **v = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!v)
				break;
			names = v;
		}
		if (!(names[n] = strdup(e->d_name)))
			break;
		n++;
	}
	if (n) /* qsort(NULL, 0) is undefined */
		qsort(names, n, sizeof(*names), name_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i + f->keep < n)
			unlinkat(fd, names[i], 0);
		free(names[i]);
	}
	free(names);
	closedir(d);
	return 0;
}

struct filesink *filesink_new(const char *dir, unsigned int keep, char *why, size_t whylen)
{
	struct filesink *f = calloc(1, sizeof(*f));
	char *probe = NULL;
	int fd;

	if (!f || !(f->dir = strdup(dir)) ||
	    asprintf(&probe, "%s/.asyncbpf-agent-check", dir) < 0) {
		snprintf(why, whylen, "out of memory");
		free(f ? f->dir : NULL);
		free(f);
		return NULL;
	}
	f->keep = keep;
	fd = outfile_opendir(dir, why, whylen);
	if (fd < 0 || outfile_check(probe, why, whylen) || prune(f, why, whylen)) {
		if (fd >= 0)
			close(fd);
		free(probe);
		free(f->dir);
		free(f);
		return NULL;
	}
	close(fd);
	free(probe);
	return f;
}

static enum deliver filesink_deliver(void *impl, const struct ship_item *it, atomic_bool *abort,
				     struct deliver_info *di)
{
	struct filesink *f = impl;
	struct outfile o;
	char path[PATH_MAX];

	(void)abort;
	snprintf(path, sizeof(path), "%s/%s", f->dir, it->name);
	if (outfile_open(&o, path, OUTFILE_MODE, di->what, sizeof(di->what))) {
		di->kind = errno;
		return DELIVER_RETRY;
	}
	if (fwrite(it->data, 1, it->len, o.f) != it->len) {
		di->kind = errno;
		snprintf(di->what, sizeof(di->what), "cannot write %.200s: %s", path,
			 strerror(errno));
		outfile_abort(&o);
		return DELIVER_RETRY;
	}
	if (outfile_commit(&o, di->what, sizeof(di->what))) {
		di->kind = errno;
		return DELIVER_RETRY;
	}
	if (prune(f, di->what, sizeof(di->what)))
		di->what[0] = 0; /* written all the same; the next prune tries again */
	return DELIVER_OK;
}

static void filesink_free(void *impl)
{
	struct filesink *f = impl;

	if (f)
		free(f->dir);
	free(f);
}

const struct sink_ops filesink_ops = {
	.name = "files",
	.deliver = filesink_deliver,
	.free = filesink_free,
};
