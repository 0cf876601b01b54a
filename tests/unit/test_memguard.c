// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The memcpy reader's library (build/libasyncbpf-memcpy.so) in this process: a walk that
 * reads unmapped memory (SIGSEGV) or a truncated file mapping (SIGBUS) is ended and
 * counted, the process lives on; a fault outside a walk reaches the handler the program
 * installed after the library, and with the default disposition kills the process with
 * SIGSEGV as usual. The test re-executes itself with LD_PRELOAD set. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "readers/mcshm.h"
#include "tests/unit/unit.h"

static struct mc_shm *shm;
static sigjmp_buf own_jmp;
static volatile int *volatile bad_ptr = (volatile int *)(uintptr_t)8;
static volatile sig_atomic_t own_calls;

static void own_handler(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	own_calls++;
	siglongjmp(own_jmp, sig);
}

static struct mc_shm *open_own_shm(void)
{
	char path[64];
	struct mc_shm *m;
	int fd;

	snprintf(path, sizeof(path), MC_PATH, getpid());
	fd = open(path, O_RDWR);
	if (fd < 0)
		return NULL;
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return m == MAP_FAILED ? NULL : m;
}

/* One profiling signal with the process record pointing the runtime at addr: the walk's
 * first read is there. Returns the faults counted. */
static uint64_t walk_at(uint64_t addr)
{
	shm->proc.runtime = addr;
	__atomic_store_n(&shm->proc_ready, 1, __ATOMIC_RELEASE);
	raise(shm->signo);
	return shm->faults;
}

static int child_segfaults(void)
{
	pid_t pid = fork();
	int st;

	if (!pid) {
		*bad_ptr = 1;
		_exit(0);
	}
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

int main(int argc, char **argv)
{
	const char *lib = "build/libasyncbpf-memcpy.so";
	long page = sysconf(_SC_PAGESIZE);
	struct sigaction own = { .sa_sigaction = own_handler, .sa_flags = SA_SIGINFO }, seen;
	char tmpl[] = "/tmp/memguard.XXXXXX";
	void *none, *trunc;
	int fd, sig;

	(void)argc;
	if (!getenv("LD_PRELOAD")) {
		if (access(lib, R_OK)) {
			printf("SKIP %s not built\n", lib);
			return 77;
		}
		setenv("LD_PRELOAD", lib, 1);
		execv("/proc/self/exe", argv);
		printf("FAIL cannot re-execute: %s\n", strerror(errno));
		return 1;
	}
	shm = open_own_shm();
	CHECK(shm != NULL, "the library created its shared memory");
	if (!shm)
		return 1;
	CHECK(shm->magic == MC_MAGIC && shm->pid == getpid(), "the shared memory is ready");

	none = mmap(NULL, page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(walk_at((uint64_t)(uintptr_t)none) == 1, "a walk into PROT_NONE memory is caught");
	CHECK(shm->handled == 1, "the handler completed");
	CHECK(shm->ring[0].ready == 1 && (shm->ring[0].s.hdr.flags & SAMPLE_READ_ERR),
	      "the caught walk left a record marked read error");

	fd = mkstemp(tmpl);
	CHECK(fd >= 0 && !ftruncate(fd, page), "a file to map");
	trunc = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(trunc != MAP_FAILED && !ftruncate(fd, 0), "a mapping past the end of its file");
	CHECK(walk_at((uint64_t)(uintptr_t)trunc) == 2, "a walk into a truncated mapping (SIGBUS) "
							"is caught");
	close(fd);
	unlink(tmpl);

	/* a handler installed after the library's is the program's handler */
	sigemptyset(&own.sa_mask);
	CHECK(!sigaction(SIGSEGV, &own, NULL), "the program installs its own SIGSEGV handler");
	CHECK(!sigaction(SIGSEGV, NULL, &seen) && seen.sa_sigaction == own_handler,
	      "the program sees its own handler installed");
	CHECK(walk_at((uint64_t)(uintptr_t)none) == 3 && own_calls == 0,
	      "a walk's fault is still the library's, the program's handler is not called");
	sig = sigsetjmp(own_jmp, 1);
	if (!sig)
		*bad_ptr = 1;
	CHECK(sig == SIGSEGV && own_calls == 1, "a real fault reaches the program's handler");
	CHECK(walk_at((uint64_t)(uintptr_t)none) == 4, "and walks are guarded after that");

	/* back to the default: a real fault kills, as without the library */
	seen.sa_handler = SIG_DFL;
	seen.sa_flags = 0;
	CHECK(!sigaction(SIGSEGV, &seen, NULL), "the program restores the default");
	CHECK(child_segfaults(), "a real fault with the default disposition ends in SIGSEGV");
	CHECK(walk_at((uint64_t)(uintptr_t)none) == 5, "walks are still guarded");
	return unit_exit();
}
