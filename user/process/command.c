// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "process/command.h"
#include "hash.h"
#include "process/procfs.h"
#include "clock.h"

/* A process of the last /proc scan. */
struct pinfo {
	pid_t pid, ppid;
	unsigned long long start;
	uint64_t image;	  /* changes when the process execs */
	signed char desc; /* descends from the profiler: -1 not known yet, -2 being decided */
};

/* A descendant: its incarnation, its image, and whether that image has a verdict. */
struct known {
	pid_t pid;
	unsigned long long start;
	uint64_t image;
	bool done, reported;
	unsigned int scan;
};

struct command {
	char *const *argv;
	pid_t pid, self;
	int release_fd; /* the child execs once it reads a byte; EOF makes it exit */
	int status_fd;	/* the child writes errno here if exec fails; EOF once it succeeded */
	bool released, exited;
	int status; /* wait status, once exited */
	struct pinfo *procs;
	size_t nprocs, capprocs;
	struct known *known;
	size_t nknown, capknown;
	unsigned int scan;
	double next_scan;
	unsigned int pythons; /* descendants found running a supported Python */
};

char **command_split(int *argc, char **argv)
{
	for (int i = 1; i < *argc; i++) {
		if (!strcmp(argv[i], "--")) {
			*argc = i;
			return argv + i + 1;
		}
	}
	return NULL;
}

static void child(struct command *c, int release_rd, int status_wr)
{
	sigset_t none;
	ssize_t n;
	char b;
	int e;

	do
		n = read(release_rd, &b, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127);
	/* ignored signals stay ignored across exec, handlers do not: start from defaults */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execvp(c->argv[0], c->argv);
	e = errno;
	if (write(status_wr, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

int command_spawn(struct command **out, char *const argv[], char *why, size_t whylen)
{
	struct command *c = calloc(1, sizeof(*c));
	int rel[2], st[2], e;

	*out = NULL;
	if (!c) {
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	c->argv = argv;
	c->self = getpid();
	/* orphaned descendants are re-parented to us rather than to init: they stay in the
	 * tree, and we collect them when they exit */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) {
		e = errno;
		snprintf(why, whylen, "cannot become a subreaper: %s", strerror(e));
		free(c);
		return -e;
	}
	if (pipe2(rel, O_CLOEXEC)) {
		e = errno;
		goto fail;
	}
	if (pipe2(st, O_CLOEXEC)) {
		e = errno;
		close(rel[0]);
		close(rel[1]);
		goto fail;
	}
	fflush(NULL);
	c->pid = fork();
	if (c->pid < 0) {
		e = errno;
		close(rel[0]);
		close(rel[1]);
		close(st[0]);
		close(st[1]);
		goto fail;
	}
	if (!c->pid) {
		close(rel[1]);
		close(st[0]);
		child(c, rel[0], st[1]);
	}
	close(rel[0]);
	close(st[1]);
	c->release_fd = rel[1];
	c->status_fd = st[0];
	*out = c;
	return 0;
fail:
	snprintf(why, whylen, "cannot start '%s': %s", argv[0], strerror(e));
	free(c);
	return -e;
}

int command_release(struct command *c, char *why, size_t whylen)
{
	ssize_t n;
	int e = 0;

	do
		n = write(c->release_fd, "x", 1);
	while (n < 0 && errno == EINTR);
	close(c->release_fd);
	c->release_fd = -1;
	c->released = true;
	do
		n = read(c->status_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(c->status_fd);
	c->status_fd = -1;
	if (n == 0)
		return 0;
	if (n != sizeof(e))
		e = EIO;
	while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
		;
	c->exited = true;
	if (e == ENOENT && !strchr(c->argv[0], '/'))
		snprintf(why, whylen, "%s: command not found", c->argv[0]);
	else
		snprintf(why, whylen, "cannot run '%s': %s", c->argv[0], strerror(e));
	return -e;
}

pid_t command_pid(const struct command *c)
{
	return c->pid;
}

unsigned int command_pythons(const struct command *c)
{
	return c->pythons;
}

/* Reads what a scan needs from /proc/PID/stat. -ENOENT for an exited process (zombies
 * included). */
static int read_pinfo(pid_t pid, struct pinfo *pi)
{
	unsigned long long f[53] = { 0 };
	char path[64], buf[2048], *p, *end;
	ssize_t n;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* comm may hold spaces and parentheses: fields resume after the last ')' */
	p = strrchr(buf, ')');
	if (!p || !p[1] || !p[2])
		return -EINVAL;
	if (p[2] == 'Z' || p[2] == 'X')
		return -ENOENT;
	p = strchr(p + 2, ' ');
	for (i = 4; p && i < 53; i++) {
		f[i] = strtoull(p + 1, &end, 10);
		p = strchr(p + 1, ' ');
	}
	if (i <= 28)
		return -EINVAL;
	pi->pid = pid;
	pi->ppid = (pid_t)f[4];
	pi->start = f[22];
	/* exec maps a new stack, heap, argument and environment area: where they start
	 * (randomised) tells the images of one process apart */
	pi->image =
		hash_u64(f[28]) ^ hash_u64(f[47] + 1) ^ hash_u64(f[48] + 2) ^ hash_u64(f[51] + 3);
	pi->desc = -1;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct pinfo *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static struct pinfo *find_proc(struct command *c, pid_t pid)
{
	struct pinfo key = { .pid = pid };

	return bsearch(&key, c->procs, c->nprocs, sizeof(key), cmp_pid);
}

/* Whether pi descends from the profiler, following parents through the snapshot. */
static bool descends(struct command *c, struct pinfo *pi)
{
	struct pinfo *parent;

	if (pi->desc >= 0)
		return pi->desc;
	if (pi->desc == -2)
		return false; /* a loop: the snapshot mixes two moments */
	pi->desc = -2;
	if (pi->ppid == c->self)
		pi->desc = 1;
	else
		pi->desc = (parent = find_proc(c, pi->ppid)) && descends(c, parent);
	return pi->desc;
}

static int snapshot(struct command *c)
{
	DIR *dir = opendir("/proc");
	struct dirent *de;

	if (!dir)
		return -errno;
	c->nprocs = 0;
	while ((de = readdir(dir))) {
		pid_t pid;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		pid = atoi(de->d_name);
		if (pid <= 0 || pid == c->self)
			continue;
		if (c->nprocs == c->capprocs) {
			size_t cap = c->capprocs ? c->capprocs * 2 : 512;
			struct pinfo *n = realloc(c->procs, cap * sizeof(*n));

			if (!n) {
				closedir(dir);
				return -ENOMEM;
			}
			c->procs = n;
			c->capprocs = cap;
		}
		if (!read_pinfo(pid, &c->procs[c->nprocs]))
			c->nprocs++;
	}
	closedir(dir);
	qsort(c->procs, c->nprocs, sizeof(*c->procs), cmp_pid);
	return 0;
}

static struct known *find_known(struct command *c, pid_t pid)
{
	for (size_t i = 0; i < c->nknown; i++)
		if (c->known[i].pid == pid)
			return &c->known[i];
	return NULL;
}

static struct known *add_known(struct command *c, const struct pinfo *pi)
{
	struct known *k;

	if (c->nknown == c->capknown) {
		size_t cap = c->capknown ? c->capknown * 2 : 64;
		struct known *n = realloc(c->known, cap * sizeof(*n));

		if (!n)
			return NULL;
		c->known = n;
		c->capknown = cap;
	}
	k = &c->known[c->nknown++];
	*k = (struct known){ .pid = pi->pid, .start = pi->start, .image = pi->image };
	return k;
}

int command_scan(struct command *c, unsigned int interval_ms, examine_fn examine,
		 command_exec_cb execd, void *ctx)
{
	double t = mono_s();
	int ret;

	if (t < c->next_scan)
		return 0;
	c->next_scan = t + interval_ms / 1000.0;
	ret = snapshot(c);
	if (ret)
		return ret;
	c->scan++;
	for (size_t i = 0; i < c->nprocs; i++) {
		struct pinfo *pi = &c->procs[i];
		enum pyproc_status st;
		struct known *k;

		if (!descends(c, pi))
			continue;
		k = find_known(c, pi->pid);
		if (k && (k->start != pi->start || k->image != pi->image)) {
			/* exec'd, or the pid now names another process */
			if (k->reported)
				execd(ctx, pi->pid);
			*k = (struct known){ .pid = pi->pid,
					     .start = pi->start,
					     .image = pi->image };
		}
		if (!k && !(k = add_known(c, pi)))
			return -ENOMEM;
		k->scan = c->scan;
		if (k->done)
			continue;
		st = examine(ctx, pi->pid);
		if (st == PYPROC_NOT_READY || st == PYPROC_GONE)
			continue;
		k->done = true;
		if (st == PYPROC_NOT_PYTHON)
			continue;
		k->reported = true;
		if (st == PYPROC_OK)
			c->pythons++;
	}
	for (size_t i = 0; i < c->nknown;) {
		if (c->known[i].scan != c->scan)
			c->known[i] = c->known[--c->nknown];
		else
			i++;
	}
	return 0;
}

bool command_exited(struct command *c)
{
	pid_t p;
	int st;

	while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
		if (p == c->pid) {
			c->status = st;
			c->exited = true;
		}
	}
	return c->exited;
}

static bool wait_exit(struct command *c, double seconds)
{
	double until = mono_s() + seconds;

	while (!command_exited(c)) {
		if (mono_s() >= until)
			return false;
		nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000 * 1000 }, NULL);
	}
	return true;
}

int command_finish(struct command *c, double grace)
{
	if (!c->released) {
		close(c->release_fd); /* the child exits without running the command */
		close(c->status_fd);
		c->released = true;
		while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
			;
		return -1;
	}
	if (!c->exited && !wait_exit(c, grace)) {
		kill(c->pid, SIGTERM);
		if (!wait_exit(c, 5)) {
			kill(c->pid, SIGKILL);
			while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
				;
			c->exited = true;
		}
	}
	command_exited(c); /* descendants that exited meanwhile */
	if (WIFSIGNALED(c->status))
		return 128 + WTERMSIG(c->status);
	return WEXITSTATUS(c->status);
}

void command_free(struct command *c)
{
	if (!c)
		return;
	if (!c->released) {
		close(c->release_fd);
		close(c->status_fd);
		while (waitpid(c->pid, &c->status, 0) < 0 && errno == EINTR)
			;
	}
	free(c->procs);
	free(c->known);
	free(c);
}
