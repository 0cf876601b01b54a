/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Where a process runs: its pid in its own pid namespace, its cgroup, and the container
 * id a runtime (docker, containerd, cri-o, podman) encodes in the cgroup path. */
#ifndef ASYNCBPF_CONTAINER_H
#define ASYNCBPF_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CONTAINER_ID_LEN 64
#define CGROUP_PATH_LEN	 512

struct proc_place {
	pid_t ns_pid;		      /* pid in the process's innermost pid namespace */
	bool other_pidns;	      /* that namespace is not the profiler's */
	char cgroup[CGROUP_PATH_LEN]; /* cgroup v2 path ("0::"), else name=systemd's, else the first
				       */
	char id[CONTAINER_ID_LEN + 1]; /* container id from the cgroup path, "" if none */
	const char *runtime;	       /* "docker", "containerd", "cri-o", "podman" or NULL */
	/* in a container (a runtime's cgroup or another pid namespace): the id's first 12
	 * characters, else the cgroup path; "" on the host */
	char label[CGROUP_PATH_LEN];
};

/* Reads /proc/PID/status and /proc/PID/cgroup. 0 or -errno. */
int proc_place_read(pid_t pid, struct proc_place *pl);

/* The container id in one cgroup path, and which runtime's form it has. true if found. */
bool container_id(const char *path, char *id, size_t len, const char **runtime);

/* The contents of a /proc/PID/cgroup file -> the path described for proc_place.cgroup,
 * and the container id found on any of its lines. */
void cgroup_parse(const char *text, struct proc_place *pl);

/* A --cgroup argument as a path in the hierarchy: /sys/fs/cgroup/unified/x and
 * /sys/fs/cgroup/x are /x; a trailing '/' goes. */
void cgroup_normalize(const char *arg, char *out, size_t len);

/* Whether cgroup is dir or below it. */
bool cgroup_under(const char *cgroup, const char *dir);

#endif
