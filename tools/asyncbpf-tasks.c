// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* asyncbpf-tasks: print the asyncio tasks of a process and who awaits whom, in the
 * format of CPython 3.14's `python -m asyncio pstree`, for 3.8-3.13. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atasks.h"
#include "pstree.h"
#include "pyproc.h"
#include "symbolize.h"

#define EXIT_USAGE 1
#define EXIT_ENV 2
#define EXIT_TARGET 3

static const char usage[] = "usage: asyncbpf-tasks PID\n"
			    "\n"
			    "Prints the asyncio tasks of a Python process (CPython 3.8-3.13) as a tree of\n"
			    "who awaits whom, read from its memory without stopping it.\n"
			    "\n"
			    "Exit status: 0 done, 1 usage error or a cycle in the await graph (reported\n"
			    "on stderr), 2 not root or the memory could not be read, 3 PID cannot be\n"
			    "examined (does not exist, not Python, unsupported version).\n";

int main(int argc, char **argv)
{
	struct py_target t;
	struct atasks a;
	struct symtab *st;
	char why[512], *end;
	long pid;
	int ret;

	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "asyncbpf-tasks: expected one PID (see --help)\n");
		return EXIT_USAGE;
	}
	errno = 0;
	pid = strtol(argv[1], &end, 10);
	if (*end || end == argv[1] || errno || pid <= 0 || pid > INT_MAX) {
		fprintf(stderr, "asyncbpf-tasks: invalid pid '%s'\n", argv[1]);
		return EXIT_USAGE;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "asyncbpf-tasks: must run as root (reads another process's "
				"memory)\n");
		return EXIT_ENV;
	}
	if (pyproc_inspect((pid_t)pid, &t, why, sizeof(why)) != PYPROC_OK) {
		fprintf(stderr, "asyncbpf-tasks: %s\n", why);
		return EXIT_TARGET;
	}
	if (atasks_snapshot(&t, &a, why, sizeof(why))) {
		fprintf(stderr, "asyncbpf-tasks: %s\n", why);
		return EXIT_ENV;
	}
	st = symtab_new();
	if (!st) {
		atasks_free(&a);
		fprintf(stderr, "asyncbpf-tasks: out of memory\n");
		return EXIT_ENV;
	}
	ret = pstree_print(stdout, stderr, &a, &t, st);
	if (ret < 0)
		fprintf(stderr, "asyncbpf-tasks: out of memory\n");
	if (!ret && a.unreadable)
		fprintf(stderr, "asyncbpf-tasks: warning: %zu task%s changed while being read\n",
			a.unreadable, a.unreadable > 1 ? "s" : "");
	symtab_free(st);
	atasks_free(&a);
	return ret < 0 ? EXIT_ENV : ret ? 1 : 0;
}
