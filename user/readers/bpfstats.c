// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>

#include "readers/bpfstats.h"

int bpfstats_sum_percpu(const struct bpf_map *m, uint32_t nkeys, uint64_t *out)
{
	int ncpus = libbpf_num_possible_cpus();
	uint64_t *vals;

	if (ncpus <= 0)
		return ncpus ? ncpus : -EINVAL;
	vals = calloc(ncpus, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (uint32_t k = 0; k < nkeys; k++) {
		if (bpf_map__lookup_elem(m, &k, sizeof(k), vals, ncpus * sizeof(*vals), 0))
			continue;
		for (int c = 0; c < ncpus; c++)
			out[k] += vals[c];
	}
	free(vals);
	return 0;
}

void bpfstats_prog_run(const struct bpf_program *prog, uint64_t *ns, uint64_t *cnt)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	*ns = *cnt = 0;
	if (!bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len)) {
		*ns = info.run_time_ns;
		*cnt = info.run_cnt;
	}
}
