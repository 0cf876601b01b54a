/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Process lifecycle events sent by lifecycle.bpf.c to userspace. */
#ifndef ASYNCBPF_LCEVENT_H
#define ASYNCBPF_LCEVENT_H

enum lc_kind {
	LC_EXEC = 1, /* pid ran execve: a new image, maybe Python */
	LC_EXIT = 2, /* the last thread of a profiled process exited */
	LC_FORK = 3, /* a profiled process forked a new process (pid; parent in ppid) */
};

struct lc_event {
	__u32 kind;
	__u32 pid;     /* host tgid */
	__u32 ppid;    /* LC_FORK: the profiled parent */
	__u32 tracked; /* LC_EXEC: the pid was profiled before (exec in place) */
	char comm[16];
};

#endif
