// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "process/container.h"
#include "process/procfs.h"

/* Path components that carry a 64-hex container id, after one of these prefixes and
 * before an optional ".scope": systemd's docker-ID.scope, cri-containerd-ID.scope,
 * crio-ID.scope, libpod-ID.scope; cgroupfs drivers use a bare ID
 * (/docker/ID, /kubepods/.../ID) or libpod-ID. */
static const struct {
	const char *prefix;
	const char *runtime;
} forms[] = {
	{ "docker-", "docker" },	 { "cri-containerd-", "containerd" },
	{ "containerd-", "containerd" }, { "crio-", "cri-o" },
	{ "libpod-", "podman" },	 { "", NULL },
};

static bool hex64(const char *s, size_t n)
{
	if (n != CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* The runtime a bare id belongs to, from the components above it. */
static const char *bare_runtime(const char *path, const char *comp)
{
	if (strstr(path, "/docker/") && strstr(path, "/docker/") < comp)
		return "docker";
	if (strstr(path, "/libpod_parent/") && strstr(path, "/libpod_parent/") < comp)
		return "podman";
	if (strstr(path, "kubepods") && strstr(path, "kubepods") < comp)
		return "containerd"; /* or cri-o: the cgroupfs form does not say */
	return NULL;
}

bool container_id(const char *path, char *id, size_t len, const char **runtime)
{
	const char *end = path + strlen(path);

	/* innermost first: a container may run below another's cgroup */
	while (end > path) {
		const char *comp = end, *stop = end;
		size_t n;

		while (comp > path && comp[-1] != '/')
			comp--;
		n = (size_t)(stop - comp);
		if (n > 6 && !strncmp(stop - 6, ".scope", 6))
			stop -= 6;
		for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
			size_t pl = strlen(forms[f].prefix);

			if (strncmp(comp, forms[f].prefix, pl) ||
			    !hex64(comp + pl, stop - comp - pl))
				continue;
			snprintf(id, len, "%.*s", CONTAINER_ID_LEN, comp + pl);
			*runtime = forms[f].runtime ? forms[f].runtime : bare_runtime(path, comp);
			return true;
		}
		end = comp > path ? comp - 1 : path;
	}
	return false;
}

void cgroup_parse(const char *text, struct proc_place *pl)
{
	const char *line = text;
	bool have_v2 = false, have_sd = false;

	pl->cgroup[0] = 0;
	pl->id[0] = 0;
	pl->runtime = NULL;
	while (*line) {
		const char *nl = strchr(line, '\n'), *c1, *c2;
		char path[CGROUP_PATH_LEN];
		size_t n = nl ? (size_t)(nl - line) : strlen(line);

		/* hierarchy-ID:controllers:path */
		c1 = memchr(line, ':', n);
		c2 = c1 ? memchr(c1 + 1, ':', n - (c1 + 1 - line)) : NULL;
		if (c2) {
			snprintf(path, sizeof(path), "%.*s", (int)(n - (c2 + 1 - line)), c2 + 1);
			if (!pl->id[0])
				container_id(path, pl->id, sizeof(pl->id), &pl->runtime);
			if (!strncmp(line, "0::", 3)) {
				snprintf(pl->cgroup, sizeof(pl->cgroup), "%s", path);
				have_v2 = true;
			} else if (!have_v2 && c2 - c1 == 13 &&
				   !strncmp(c1 + 1, "name=systemd", 12)) {
				snprintf(pl->cgroup, sizeof(pl->cgroup), "%s", path);
				have_sd = true;
			} else if (!have_v2 && !have_sd && !pl->cgroup[0]) {
				snprintf(pl->cgroup, sizeof(pl->cgroup), "%s", path);
			}
		}
		line = nl ? nl + 1 : line + n;
	}
}

/* The last pid of the NSpid line: the one the process has in its own namespace. */
static int ns_pid(pid_t pid, pid_t *out, bool *nested)
{
	char path[64], buf[4096], *p, *end;
	ssize_t n;
	int count = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strstr(buf, "\nNSpid:");
	*out = pid;
	*nested = false;
	if (!p)
		return 0; /* kernels before 4.1: no namespaces to tell */
	p += 7;
	for (;;) {
		long v = strtol(p, &end, 10);

		if (end == p)
			break;
		*out = (pid_t)v;
		count++;
		p = end;
	}
	*nested = count > 1;
	return 0;
}

int proc_place_read(pid_t pid, struct proc_place *pl)
{
	char path[64], buf[8192];
	struct stat self, other;
	bool nested = false;
	ssize_t n;
	int err;

	memset(pl, 0, sizeof(*pl));
	err = ns_pid(pid, &pl->ns_pid, &nested);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	/* NSpid lists the namespaces below the reader's: a process in a namespace above
	 * ours (the profiler in a container) is told apart by the inode */
	pl->other_pidns = nested || (!stat(path, &other) && !stat("/proc/self/ns/pid", &self) &&
				     other.st_ino != self.st_ino);
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	n = proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	cgroup_parse(buf, pl);
	if (pl->id[0])
		snprintf(pl->label, sizeof(pl->label), "%.12s", pl->id);
	else if (pl->other_pidns)
		snprintf(pl->label, sizeof(pl->label), "%s", pl->cgroup[0] ? pl->cgroup : "?");
	return 0;
}

void cgroup_normalize(const char *arg, char *out, size_t len)
{
	static const char *const mounts[] = { "/sys/fs/cgroup/unified", "/sys/fs/cgroup" };
	size_t n;

	for (size_t i = 0; i < sizeof(mounts) / sizeof(mounts[0]); i++) {
		n = strlen(mounts[i]);
		if (!strncmp(arg, mounts[i], n) && (arg[n] == '/' || !arg[n])) {
			arg += n;
			break;
		}
	}
	snprintf(out, len, "%s%s", arg[0] == '/' ? "" : "/", arg);
	n = strlen(out);
	while (n > 1 && out[n - 1] == '/')
		out[--n] = 0;
}

bool cgroup_under(const char *cgroup, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(cgroup, dir, n) && (cgroup[n] == '/' || !cgroup[n]);
}
