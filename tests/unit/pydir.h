/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Where the unit tests' Python helper scripts are: next to this source, or found from the
 * test binary (build/tests/) when the tree moved. */
#ifndef ASYNCBPF_PYDIR_H
#define ASYNCBPF_PYDIR_H

#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

static char pydir[PATH_MAX];

static int find_pydir(void)
{
	char buf[PATH_MAX], exe[PATH_MAX];
	ssize_t n;

	snprintf(buf, sizeof(buf), "%s", __FILE__);
	snprintf(pydir, sizeof(pydir), "%s/py", dirname(buf));
	if (!access(pydir, R_OK))
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0)
		return -1;
	exe[n] = 0;
	snprintf(pydir, sizeof(pydir), "%s/../../tests/unit/py", dirname(exe));
	return access(pydir, R_OK);
}

#endif
