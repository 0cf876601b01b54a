// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/procmaps.h"

#define MAX_LINE      (PATH_MAX + 128)
#define MAX_MAPS_SIZE (256u << 20)

static const char *parse_hex(const char *s, uint64_t *v)
{
	const char *p = s;
	unsigned int d;

	*v = 0;
	for (;; p++) {
		if (*p >= '0' && *p <= '9')
			d = (unsigned int)(*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			d = (unsigned int)(*p - 'a' + 10);
		else
			break;
		if (*v >> 60)
			return NULL;
		*v = *v << 4 | d;
	}
	return p == s ? NULL : p;
}

static const char *parse_dec(const char *s, uint64_t *v)
{
	const char *p = s;

	*v = 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (__builtin_mul_overflow(*v, 10, v) ||
		    __builtin_add_overflow(*v, (uint64_t)(*p - '0'), v))
			return NULL;
	}
	return p == s ? NULL : p;
}

/* One NUL-terminated line: "start-end perms offset maj:min inode   path". */
static int parse_line(char *line, struct procmap *e)
{
	static const char deleted[] = " (deleted)";
	const char *p = line;
	uint64_t maj, min;
	size_t n;

	if (!(p = parse_hex(p, &e->start)) || *p++ != '-' || !(p = parse_hex(p, &e->end)) ||
	    *p++ != ' ' || e->end < e->start)
		return -EINVAL;
	if (strlen(p) < 5 || p[4] != ' ')
		return -EINVAL;
	memcpy(e->perms, p, 4);
	e->perms[4] = '\0';
	p += 5;
	if (!(p = parse_hex(p, &e->offset)) || *p++ != ' ' || !(p = parse_hex(p, &maj)) ||
	    *p++ != ':' || !(p = parse_hex(p, &min)) || *p++ != ' ' ||
	    !(p = parse_dec(p, &e->inode)) || maj > UINT_MAX || min > UINT_MAX)
		return -EINVAL;
	e->dev_major = (unsigned int)maj;
	e->dev_minor = (unsigned int)min;
	if (*p && *p != ' ')
		return -EINVAL;
	while (*p == ' ')
		p++;
	e->path = p;
	e->deleted = false;
	n = strlen(p);
	if (n > sizeof(deleted) - 1 && !strcmp(p + n - (sizeof(deleted) - 1), deleted)) {
		line[p - line + n - (sizeof(deleted) - 1)] = '\0';
		e->deleted = true;
	}
	return 0;
}

int procmaps_parse(const char *buf, size_t len, struct procmaps *m)
{
	size_t lines = 0, i, cap;
	char *p, *end, *nl;
	int err;

	memset(m, 0, sizeof(*m));
	for (i = 0; i < len; i++)
		lines += buf[i] == '\n';
	cap = lines + 1;
	m->text = malloc(len + 1);
	m->v = calloc(cap, sizeof(*m->v));
	if (!m->text || !m->v) {
		procmaps_free(m);
		return -ENOMEM;
	}
	memcpy(m->text, buf, len);
	m->text[len] = '\0';
	for (p = m->text, end = m->text + len; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		*nl = '\0';
		err = -EINVAL;
		if (nl - p > MAX_LINE || memchr(p, '\0', (size_t)(nl - p)) || m->n == cap)
			goto fail;
		err = parse_line(p, &m->v[m->n]);
		if (err)
			goto fail;
		m->n++;
	}
	return 0;
fail:
	procmaps_free(m);
	return err;
}

int procmaps_read(pid_t pid, struct procmaps *m)
{
	size_t len = 0, cap = 64 << 10;
	char path[64], *buf, *nb;
	ssize_t n;
	int fd, err;

	memset(m, 0, sizeof(*m));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len == cap) {
			err = -EFBIG;
			if (cap >= MAX_MAPS_SIZE)
				goto out;
			err = -ENOMEM;
			nb = realloc(buf, cap * 2);
			if (!nb)
				goto out;
			buf = nb;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	err = procmaps_parse(buf, len, m);
out:
	free(buf);
	close(fd);
	return err;
}

void procmaps_free(struct procmaps *m)
{
	free(m->v);
	free(m->text);
	memset(m, 0, sizeof(*m));
}

const struct procmap *procmaps_find(const struct procmaps *m, uint64_t addr)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (addr >= m->v[i].start && addr < m->v[i].end)
			return &m->v[i];
	return NULL;
}

/* The first mapping in m whose path is path, or if path is NULL the lowest file-backed
 * one; NULL if none. */
static const struct procmap *first_map(const struct procmaps *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (path ? !strcmp(m->v[i].path, path) : m->v[i].path[0] == '/')
			return &m->v[i];
	return NULL;
}

static bool same_map(const struct procmap *a, const struct procmap *b)
{
	return a == b || (a && b && a->start == b->start && a->inode == b->inode &&
			  !strcmp(a->path, b->path));
}

int procmaps_exec_since(pid_t pid, const struct procmaps *then)
{
	struct procmaps now;
	int rc = procmaps_read(pid, &now), changed;

	if (rc)
		return rc;
	changed = !same_map(first_map(then, "[vdso]"), first_map(&now, "[vdso]")) ||
		  !same_map(first_map(then, NULL), first_map(&now, NULL));
	procmaps_free(&now);
	return changed;
}

/* A process under chroot in our mount namespace (or in its own mount namespace, made
 * from a copy of ours) has maps paths that start with its root directory as we see it. */
static const char *under_root(pid_t pid, const char *mapped)
{
	char link[64], root[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/%d/root", (int)pid);
	n = readlink(link, root, sizeof(root) - 1);
	if (n <= 1 || root[0] != '/')
		return mapped;
	root[n] = '\0';
	if (!strncmp(mapped, root, (size_t)n) && mapped[n] == '/')
		return mapped + n;
	return mapped;
}

int procmap_file(pid_t pid, const struct procmap *m, char *path, size_t len)
{
	if (m->path[0] != '/')
		return -ENOENT;
	if (snprintf(path, len, "/proc/%d/map_files/%llx-%llx", (int)pid,
		     (unsigned long long)m->start, (unsigned long long)m->end) >= (int)len)
		return -ENAMETOOLONG;
	if (!faccessat(AT_FDCWD, path, R_OK, AT_EACCESS))
		return 0;
	if (errno != EPERM && errno != EACCES)
		return -errno;
	if (m->deleted)
		return -ENOENT;
	if (snprintf(path, len, "/proc/%d/root%s", (int)pid, under_root(pid, m->path)) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}
