// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process/procfs.h"

ssize_t proc_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = 0;
	close(fd);
	return n;
}

int proc_start_time(pid_t pid, unsigned long long *out)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ESRCH ? -ENOENT : (int)n;
	/* comm may hold spaces and parentheses: fields resume after the last ')' */
	p = strrchr(buf, ')');
	if (!p || !p[1] || !p[2])
		return -EINVAL;
	/* a zombie has exited: only its exit status is left to collect */
	if (p[2] == 'Z' || p[2] == 'X')
		return -ENOENT;
	for (field = 2; field < 22 && p; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return -EINVAL;
	*out = strtoull(p + 1, NULL, 10);
	return 0;
}

int proc_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	n = proc_read(path, buf, len);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}
