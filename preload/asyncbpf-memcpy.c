// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The memcpy reader, loaded into a Python process with LD_PRELOAD. It creates the shared
 * memory of user/readers/mcshm.h and handles the profiling signal (SIGRTMIN+7): the signalled
 * thread walks its own Python state with bpf/pywalk.h, reading with plain memcpy, and
 * writes the record into the ring. A read that faults (the target changed under the
 * walk) is caught by this library's SIGSEGV/SIGBUS handler and ends the walk with
 * siglongjmp. Faults that are not the walk's go to the handler the program installed:
 * the library keeps its handler installed and answers the program's sigaction() and
 * signal() calls for SIGSEGV and SIGBUS itself, so faulthandler and the program's own
 * handlers see and chain to what they expect. A handler installed with a raw
 * rt_sigaction system call bypasses this and is not supported. Everything the handlers
 * do is async-signal-safe: loads, stores, atomics and clock_gettime. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "readers/mcshm.h"

#define TLS __thread __attribute__((tls_model("initial-exec")))

struct pw_reader;
static int pw_read(struct pw_reader *r, void *dst, __u32 len, __u64 addr);
static const struct task_id *pw_coro_task(__u32 pid, __u64 coro);
static int pw_task_serial(__u32 pid, __u64 task, __u64 *serial);
static const struct task_link *pw_task_link(__u32 pid, __u64 task);

#include "bpf/pywalk.h"
#include "clock.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static struct mc_shm *shm;
static char shm_path[64];
static pid_t own_pid;
static sigaction_fn real_sigaction;
static volatile int installed; /* our fault handlers are in place */
/* what the program believes is installed for SIGSEGV and SIGBUS */
static struct sigaction app_act[2];

static TLS sigjmp_buf guard_jmp;
static TLS volatile sig_atomic_t in_guard;
static TLS struct pw_scratch scratch;
static TLS struct task_id tl_id;
static TLS struct task_link tl_link;
static TLS __u64 cached_ts;
static TLS pid_t own_tid;
static TLS uint64_t walk_reads, walk_bytes; /* this handler run's */

/* this process's own memory: no reader handle (NULL) */
static int pw_read(struct pw_reader *r, void *dst, __u32 len, __u64 addr)
{
	(void)r;
	if (addr < 4096)
		return -1;
	walk_reads++;
	walk_bytes += len;
	/* a fault here ends the walk in on_fault */
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}

static const struct task_id *pw_coro_task(__u32 pid, __u64 coro)
{
	return tm_get_coro_task(&shm->maps, pid, coro, &tl_id) ? NULL : &tl_id;
}

static int pw_task_serial(__u32 pid, __u64 task, __u64 *serial)
{
	return tm_get_serial(&shm->maps, pid, task, serial);
}

static const struct task_link *pw_task_link(__u32 pid, __u64 task)
{
	return tm_get_link(&shm->maps, pid, task, &tl_link) ? NULL : &tl_link;
}

static void walk(const struct py_proc *p, struct py_sample *s)
{
	__u64 self = (__u64)pthread_self(), ts = cached_ts;

	/* the same thread-state cache as the BPF sampler's, per thread */
	if (!ts || !pw_tstate_owned_by(NULL, p, ts, self))
		ts = pw_find_tstate(NULL, p, self, 0);
	cached_ts = ts;
	if (!pw_walk_thread(NULL, p, ts, s, &scratch) && !(s->hdr.flags & SAMPLE_READ_ERR))
		cached_ts = 0;
	pw_walk_tasks(NULL, p, own_pid, s, &scratch);
}

static void on_profile(int sig, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	uint64_t t0 = mono_ns(), head, tail;
	struct mc_slot *slot;
	struct py_sample *s;

	(void)sig;
	(void)si;
	(void)uc;
	if (!__atomic_load_n(&shm->proc_ready, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&shm->idle, 1, __ATOMIC_RELAXED);
		goto out;
	}
	head = __atomic_load_n(&shm->head, __ATOMIC_RELAXED);
	do {
		tail = __atomic_load_n(&shm->tail, __ATOMIC_ACQUIRE);
		if (head - tail >= MC_SLOTS) {
			__atomic_fetch_add(&shm->lost, 1, __ATOMIC_RELAXED);
			goto out;
		}
	} while (!__atomic_compare_exchange_n(&shm->head, &head, head + 1, 1, __ATOMIC_ACQ_REL,
					      __ATOMIC_RELAXED));
	slot = &shm->ring[head % MC_SLOTS];
	s = &slot->s;
	if (!own_tid)
		own_tid = syscall(SYS_gettid);
	s->hdr.time_ns = t0;
	s->hdr.pid = own_pid;
	s->hdr.tid = own_tid;
	memset(s->hdr.comm, 0, sizeof(s->hdr.comm)); /* the profiler knows the thread's name */
	walk_reads = walk_bytes = 0;
	if (!sigsetjmp(guard_jmp, 0)) {
		in_guard = 1;
		walk(&shm->proc, s);
		in_guard = 0;
	} else {
		__atomic_fetch_add(&shm->faults, 1, __ATOMIC_RELAXED);
		cached_ts = 0;
		s->hdr.tstate = 0;
		s->hdr.flags = SAMPLE_READ_ERR;
		s->hdr.nframes = s->hdr.ncoro = 0;
		s->hdr.ntasks = 0;
		s->hdr.running_idx = RUNNING_NONE;
	}
	__atomic_store_n(&slot->ready, head + 1, __ATOMIC_RELEASE);
	t0 = mono_ns() - t0;
	__atomic_fetch_add(&shm->handler_ns, t0, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->cost_hist[cost_bucket(t0)], 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->mem_reads, walk_reads, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->mem_bytes, walk_bytes, __ATOMIC_RELAXED);
	__atomic_fetch_add(&shm->handled, 1, __ATOMIC_RELAXED);
out:
	errno = saved_errno;
}

static int fault_idx(int sig)
{
	return sig == SIGSEGV ? 0 : sig == SIGBUS ? 1 : -1;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	struct sigaction *a;

	if (in_guard) {
		in_guard = 0;
		siglongjmp(guard_jmp, 1);
	}
	a = &app_act[fault_idx(sig)];
	if (a->sa_flags & SA_SIGINFO) {
		void (*h)(int, siginfo_t *, void *) = a->sa_sigaction;

		if (a->sa_flags & SA_RESETHAND)
			a->sa_handler = SIG_DFL, a->sa_flags &= ~SA_SIGINFO;
		h(sig, si, uc);
		return;
	}
	if (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN) {
		void (*h)(int) = a->sa_handler;

		if (a->sa_flags & SA_RESETHAND)
			a->sa_handler = SIG_DFL;
		h(sig);
		return;
	}
	/* the default action (a fault cannot be ignored): with our handler gone, the
	 * faulting instruction faults again, or a sent signal is sent again */
	{
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		real_sigaction(sig, &dfl, NULL);
		if (si->si_code <= 0)
			raise(sig);
	}
}

int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	int i = fault_idx(sig);

	if (!real_sigaction)
		real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (i < 0 || !installed)
		return real_sigaction(sig, act, old);
	if (old)
		*old = app_act[i];
	if (act)
		app_act[i] = *act;
	return 0;
}

static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
	struct sigaction act = { .sa_handler = h, .sa_flags = flags }, old;

	if (fault_idx(sig) < 0 || !installed) {
		sigemptyset(&act.sa_mask);
		if (!real_sigaction)
			real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
		if (real_sigaction(sig, &act, &old))
			return SIG_ERR;
		return old.sa_handler;
	}
	sigaction(sig, &act, &old);
	return old.sa_handler;
}

sighandler_t signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}

__attribute__((constructor)) static void mc_init(void)
{
	struct sigaction prof = { .sa_sigaction = on_profile, .sa_flags = SA_SIGINFO | SA_RESTART };
	/* SA_NODEFER: after a siglongjmp out of it, faults are not left blocked; SA_ONSTACK:
	 * use the program's alternate stack (faulthandler's) for a stack overflow */
	struct sigaction fault = { .sa_sigaction = on_fault,
				   .sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK };
	int fd;

	real_sigaction = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
	if (!real_sigaction)
		return;
	own_pid = getpid();
	snprintf(shm_path, sizeof(shm_path), MC_PATH, own_pid);
	fd = open(shm_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	if (ftruncate(fd, sizeof(struct mc_shm))) {
		close(fd);
		unlink(shm_path);
		return;
	}
	shm = mmap(NULL, sizeof(struct mc_shm), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (shm == MAP_FAILED) {
		shm = NULL;
		unlink(shm_path);
		return;
	}
	sigemptyset(&prof.sa_mask);
	sigemptyset(&fault.sa_mask);
	if (real_sigaction(SIGSEGV, &fault, &app_act[0]) ||
	    real_sigaction(SIGBUS, &fault, &app_act[1]) ||
	    real_sigaction(SIGRTMIN + MC_SIGNAL_OFFSET, &prof, NULL)) {
		unlink(shm_path);
		return;
	}
	installed = 1;
	shm->pid = own_pid;
	shm->signo = SIGRTMIN + MC_SIGNAL_OFFSET;
	shm->version = MC_VERSION;
	shm->size = sizeof(struct mc_shm);
	/* last: the profiler signals only a process whose magic is set */
	__atomic_store_n(&shm->magic, MC_MAGIC, __ATOMIC_RELEASE);
}

__attribute__((destructor)) static void mc_fini(void)
{
	if (shm && getpid() == own_pid)
		unlink(shm_path);
}
