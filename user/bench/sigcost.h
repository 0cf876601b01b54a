/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What a profiling signal costs the thread it interrupts, apart from the handler's own
 * work: the memcpy reader's handler time leaves it out. */
#ifndef ASYNCBPF_SIGCOST_H
#define ASYNCBPF_SIGCOST_H

/* The median, over n rounds in the calling thread, of tgkill to itself with a signal
 * whose handler returns at once (the kernel's delivery: the signal frame built, the
 * handler entered, rt_sigreturn) less that of tgkill with signal 0 (the same system call
 * without a signal), in ns. NAN if a signal could not be installed or sent. Not counted:
 * the interrupt that makes a thread running on another CPU enter the kernel, which the
 * BPF reader's cpu-clock tick takes as well. */
double bench_signal_ns(int n);

#endif
