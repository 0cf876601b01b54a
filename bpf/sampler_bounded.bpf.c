// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#define PW_BOUNDED_LOOPS
#include "sampler.bpf.c"
