/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Counters the BPF programs keep: per-CPU arrays summed over CPUs, and the kernel's run
 * time of a program (bpf_stats, when enabled). */
#ifndef ASYNCBPF_BPFSTATS_H
#define ASYNCBPF_BPFSTATS_H

#include <stdint.h>

#include <bpf/libbpf.h>

/* out[k] += the sum over CPUs of key k, for k < nkeys. 0 or -errno. */
int bpfstats_sum_percpu(const struct bpf_map *m, uint32_t nkeys, uint64_t *out);
/* Run time and count of prog so far; both 0 when unknown. */
void bpfstats_prog_run(const struct bpf_program *prog, uint64_t *ns, uint64_t *cnt);

#endif
