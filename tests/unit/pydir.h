/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the unit tests need to find interpreters and their helper scripts. */
#ifndef ASYNCBPF_PYDIR_H
#define ASYNCBPF_PYDIR_H

#include <libgen.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char pydir[PATH_MAX];

/* The helper scripts: next to this source, or found from the test binary (build/tests/)
 * when the tree moved. */
static __attribute__((unused)) int find_pydir(void)
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

/* pyenv's root: `pyenv root`, else $PYENV_ROOT, else ~/.pyenv. */
static __attribute__((unused)) void pyenv_root(char *root, size_t len)
{
	const char *env = getenv("PYENV_ROOT"), *home = getenv("HOME");
	FILE *p = popen("pyenv root 2>/dev/null", "r");

	root[0] = '\0';
	if (p) {
		if (!fgets(root, (int)len, p))
			root[0] = '\0';
		root[strcspn(root, "\n")] = '\0';
		pclose(p);
	}
	if (!root[0] && env)
		snprintf(root, len, "%s", env);
	if (!root[0])
		snprintf(root, len, "%s/.pyenv", home ? home : "/root");
}

/* The interpreter's sys.hexversion, 0 if it does not run. */
static __attribute__((unused)) uint32_t py_hexversion(const char *py)
{
	char cmd[PATH_MAX + 64];
	unsigned long v = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' -c 'import sys; print(sys.hexversion)' 2>/dev/null", py);
	f = popen(cmd, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &v) != 1)
		v = 0;
	pclose(f);
	return (uint32_t)v;
}

#endif
