// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "readers/mcshm.h"
#include "process/memread.h"
#include "process/procmaps.h"
#include "readers/ureader.h"
#include "asyncio/taskwalk.h"
#include "clock.h"

#define THREAD_RESCAN_NS 200000000ULL /* new threads are found this often */

struct uthread {
	pid_t tid;
	int stat_fd;
	__u64 thread_id; /* vmreadv: its pthread_self(), 0 unknown */
	__u64 ts;	 /* vmreadv: cached thread state, revalidated on use */
	char comm[TASK_COMM_LEN];
	int seen;
};

struct utarget {
	pid_t pid;
	struct py_proc proc;
	struct taskmaps *maps; /* vmreadv: owned; memcpy: in shm */
	struct mc_shm *shm;
	uint64_t tail; /* memcpy: next ring position to read */
	struct uthread *th;
	size_t nth;
	uint64_t next_rescan, next_idmap;
	int tid_off_ok; /* vmreadv: PTHREAD_TID_OFF holds for this process */
};

/* The timer runs in its own thread so that the profiler's other work (task snapshots,
 * symbolization) does not delay samples; records reach the main thread through a ring
 * (vmreadv: this one; memcpy: the target's). lock guards the targets and their threads. */
struct ureader {
	struct ureader_opts o;
	pthread_mutex_t lock;
	pthread_t thread;
	int running, stop;
	struct utarget *t;
	size_t nt;
	uint64_t period_ns;
	struct ureader_stats st;
	struct pw_scratch pw;	/* vmreadv walk scratch */
	struct pw_reader rd;	/* and its page cache */
	uint64_t head, tail;	/* vmreadv ring positions */
	struct py_sample *ring; /* MC_SLOTS records */
};

struct ureader *ureader_new(const struct ureader_opts *o)
{
	struct ureader *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->o = *o;
	u->period_ns = 1000000000ULL / (o->freq ? o->freq : 1);
	u->ring = calloc(MC_SLOTS, sizeof(*u->ring));
	if (!u->ring || pthread_mutex_init(&u->lock, NULL)) {
		free(u->ring);
		free(u);
		return NULL;
	}
	return u;
}

/* The memcpy reader's counts, kept by the target's handler in the shared memory. */
static void add_shm_stats(struct ureader_stats *st, const struct mc_shm *m)
{
	st->read_ns += __atomic_load_n(&m->handler_ns, __ATOMIC_RELAXED);
	st->read_cnt += __atomic_load_n(&m->handled, __ATOMIC_RELAXED);
	st->lost += __atomic_load_n(&m->lost, __ATOMIC_RELAXED);
	st->faults += __atomic_load_n(&m->faults, __ATOMIC_RELAXED);
	st->idle += __atomic_load_n(&m->idle, __ATOMIC_RELAXED);
	st->mem_reads += __atomic_load_n(&m->mem_reads, __ATOMIC_RELAXED);
	st->mem_bytes += __atomic_load_n(&m->mem_bytes, __ATOMIC_RELAXED);
	for (int k = 0; k < COST_BUCKETS; k++)
		st->cost_hist[k] += __atomic_load_n(&m->cost_hist[k], __ATOMIC_RELAXED);
}

static void drop_threads(struct utarget *t)
{
	for (size_t i = 0; i < t->nth; i++)
		close(t->th[i].stat_fd);
	free(t->th);
	t->th = NULL;
	t->nth = 0;
}

static void drop_target(struct utarget *t)
{
	drop_threads(t);
	if (t->shm) {
		__atomic_store_n(&t->shm->proc_ready, 0, __ATOMIC_RELEASE);
		munmap(t->shm, sizeof(*t->shm));
	} else {
		free(t->maps);
	}
}

void ureader_stop(struct ureader *u)
{
	__atomic_store_n(&u->stop, 1, __ATOMIC_RELEASE);
	if (u->running) {
		pthread_join(u->thread, NULL);
		u->running = 0;
	}
}

void ureader_free(struct ureader *u)
{
	if (!u)
		return;
	ureader_stop(u);
	for (size_t i = 0; i < u->nt; i++)
		drop_target(&u->t[i]);
	pthread_mutex_destroy(&u->lock);
	free(u->ring);
	free(u->t);
	free(u);
}

static struct utarget *find(struct ureader *u, pid_t pid)
{
	for (size_t i = 0; i < u->nt; i++)
		if (u->t[i].pid == pid)
			return &u->t[i];
	return NULL;
}

/* Opens the library's memory file that pid maps: that very file, not a stale one of an
 * earlier process with the same pid (a process without the library's handler would be
 * killed by the profiling signal). Through the mapping, so that it is found whatever
 * mount namespace and root the process has. -1 and errno when it maps none. */
static int open_mapped(pid_t pid, const char *name)
{
	char path[PATH_MAX + 64];
	struct procmaps maps;
	size_t nl = strlen(name);
	int err, fd = -1;

	if ((err = procmaps_read(pid, &maps))) {
		errno = -err;
		return -1;
	}
	err = -ENOENT;
	for (size_t i = 0; i < maps.n && err == -ENOENT; i++) {
		const char *p = maps.v[i].path;
		size_t l = strlen(p);

		if (maps.v[i].deleted || l < nl || strcmp(p + l - nl, name))
			continue;
		err = procmap_file(pid, &maps.v[i], path, sizeof(path));
	}
	procmaps_free(&maps);
	if (err) {
		errno = -err;
		return -1;
	}
	/* /dev/shm is anyone's: no symlink there, but map_files' entries are links */
	fd = open(path, O_RDWR | O_CLOEXEC | (strstr(path, "/map_files/") ? 0 : O_NOFOLLOW));
	return fd;
}

/* Removes the memory files of processes that are gone (killed before their exit). */
static void remove_stale(void)
{
	DIR *d = opendir("/dev/shm");
	struct dirent *de;
	int pid;

	if (!d)
		return;
	while ((de = readdir(d))) {
		char path[300], proc[64];

		if (sscanf(de->d_name, "asyncbpf-memcpy.%d", &pid) != 1 || pid <= 0)
			continue;
		snprintf(proc, sizeof(proc), "/proc/%d", pid);
		snprintf(path, sizeof(path), "/dev/shm/%s", de->d_name);
		if (access(proc, F_OK) && errno == ENOENT)
			unlink(path);
	}
	closedir(d);
}

static int open_shm(struct utarget *t, char *why, size_t len)
{
	char path[64];
	struct stat st;
	struct mc_shm *m;
	int fd;

	remove_stale();
	snprintf(path, sizeof(path), MC_PATH, t->pid);
	fd = open_mapped(t->pid, path);
	if (fd < 0) {
		snprintf(why, len,
			 "pid %d: no memcpy reader in it (%s: %s); start it with "
			 "LD_PRELOAD=libasyncbpf-memcpy.so",
			 t->pid, path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || (size_t)st.st_size != sizeof(*m)) {
		snprintf(why, len, "pid %d: %s is not this version's memcpy reader memory", t->pid,
			 path);
		close(fd);
		return -1;
	}
	m = mmap(NULL, sizeof(*m), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED) {
		snprintf(why, len, "pid %d: cannot map %s: %s", t->pid, path, strerror(errno));
		return -1;
	}
	if (__atomic_load_n(&m->magic, __ATOMIC_ACQUIRE) != MC_MAGIC || m->version != MC_VERSION ||
	    m->size != sizeof(*m) || m->pid != t->pid || m->signo < SIGRTMIN ||
	    m->signo > SIGRTMAX) {
		snprintf(why, len, "pid %d: %s is not a ready memcpy reader of this process",
			 t->pid, path);
		munmap(m, sizeof(*m));
		return -1;
	}
	__atomic_store_n(&m->proc_ready, 0, __ATOMIC_RELEASE);
	m->proc = t->proc;
	tm_forget(&m->maps, t->pid); /* what an earlier recording left */
	t->tail = __atomic_load_n(&m->head, __ATOMIC_ACQUIRE);
	__atomic_store_n(&m->tail, t->tail, __ATOMIC_RELEASE);
	__atomic_store_n(&m->proc_ready, 1, __ATOMIC_RELEASE);
	t->shm = m;
	t->maps = &m->maps;
	return 0;
}

int ureader_add_proc(struct ureader *u, const struct py_target *pt, char *why, size_t len)
{
	struct utarget *t, *n;

	struct utarget nt = { .pid = pt->pid, .proc = pt->proc };

	if (find(u, pt->pid))
		return 0;
	if (u->o.kind == READER_MEMCPY) {
		if (open_shm(&nt, why, len))
			return -1;
	} else {
		nt.maps = malloc(sizeof(*nt.maps));
		if (!nt.maps) {
			snprintf(why, len, "out of memory");
			return -1;
		}
		tm_init(nt.maps);
	}
	pthread_mutex_lock(&u->lock);
	n = realloc(u->t, (u->nt + 1) * sizeof(*n));
	if (n) {
		u->t = n;
		t = &u->t[u->nt++];
		*t = nt;
	}
	pthread_mutex_unlock(&u->lock);
	if (!n) {
		drop_target(&nt);
		snprintf(why, len, "out of memory");
		return -1;
	}
	return 0;
}

void ureader_del_proc(struct ureader *u, pid_t pid)
{
	struct utarget *t = find(u, pid);

	if (!t)
		return;
	pthread_mutex_lock(&u->lock);
	/* kept: a target that exits before the recording ends still counts in --stats */
	if (t->shm)
		add_shm_stats(&u->st, t->shm);
	drop_target(t);
	*t = u->t[--u->nt];
	pthread_mutex_unlock(&u->lock);
}

/* Keeps the thread list of t in step with /proc/PID/task: stat files stay open. */
static void rescan_threads(struct utarget *t)
{
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", t->pid);
	d = opendir(path);
	if (!d)
		return;
	for (size_t i = 0; i < t->nth; i++)
		t->th[i].seen = 0;
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);
		struct uthread *n;
		size_t i;

		if (tid <= 0)
			continue;
		for (i = 0; i < t->nth && t->th[i].tid != tid; i++)
			;
		if (i < t->nth) {
			t->th[i].seen = 1;
			continue;
		}
		n = realloc(t->th, (t->nth + 1) * sizeof(*n));
		if (!n)
			break;
		t->th = n;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", t->pid, tid);
		n = &t->th[t->nth];
		memset(n, 0, sizeof(*n));
		n->tid = tid;
		n->seen = 1;
		n->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (n->stat_fd >= 0)
			t->nth++;
	}
	closedir(d);
	for (size_t i = 0; i < t->nth;) {
		if (t->th[i].seen) {
			i++;
			continue;
		}
		close(t->th[i].stat_fd);
		t->th[i] = t->th[--t->nth];
	}
}

/* Is the thread on a CPU or waiting for one? Notes its name on the way. */
static int running(struct uthread *th)
{
	char buf[512], *open_p, *close_p;
	ssize_t n = pread(th->stat_fd, buf, sizeof(buf) - 1, 0);
	size_t len;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	open_p = strchr(buf, '(');
	close_p = strrchr(buf, ')');
	if (!open_p || !close_p || close_p < open_p || close_p[1] != ' ')
		return 0;
	len = close_p - open_p - 1;
	if (len >= TASK_COMM_LEN)
		len = TASK_COMM_LEN - 1;
	memset(th->comm, 0, sizeof(th->comm));
	memcpy(th->comm, open_p + 1, len);
	return close_p[2] == 'R';
}

/* vmreadv: the pthread_self() of each thread with a thread state, from the states'
 * thread_id and the tid glibc keeps in the struct pthread it points to. */
static void map_thread_ids(struct utarget *t)
{
	const struct py_layout *l = &t->proc.layout;
	__u64 interp = 0, ts = 0, id;
	int32_t tid;

	if (mem_read(t->pid, t->proc.runtime + l->runtime_interp_head, &interp, 8))
		return;
	for (int steps = 0; interp && steps < MAX_THREADS; steps++) {
		if (!ts) {
			if (mem_read(t->pid, interp + l->interp_tstate_head, &ts, 8))
				return;
			if (!ts && mem_read(t->pid, interp + l->interp_next, &interp, 8))
				return;
			continue;
		}
		if (!mem_read(t->pid, ts + l->tstate_thread_id, &id, 8) && id &&
		    !mem_read(t->pid, id + PTHREAD_TID_OFF, &tid, 4)) {
			if (tid == t->pid)
				t->tid_off_ok = 1;
			for (size_t i = 0; i < t->nth; i++)
				if (t->th[i].tid == tid)
					t->th[i].thread_id = id;
		}
		if (mem_read(t->pid, ts + l->tstate_next, &ts, 8))
			return;
		if (!ts && mem_read(t->pid, interp + l->interp_next, &interp, 8))
			return;
	}
}

static void deliver(struct ureader *u, const struct py_sample *s)
{
	const struct sample_hdr *h = &s->hdr;

	if (h->flags & SAMPLE_NO_TSTATE)
		u->st.no_tstate++;
	if (h->flags & SAMPLE_TRUNCATED)
		u->st.truncated++;
	if (h->flags & SAMPLE_READ_ERR)
		u->st.read_err++;
	if (h->ntasks)
		u->st.in_task++;
	u->st.records++;
	u->o.cb(u->o.ctx, s,
		offsetof(struct py_sample, frames) +
			(h->nframes + h->ncoro) * sizeof(struct frame_rec));
}

/* The same walk as the BPF sampler's sample_cpu, over process_vm_readv. */
static void vm_sample(struct ureader *u, struct utarget *t, struct uthread *th, uint64_t now)
{
	uint64_t head = u->head;
	struct py_sample *s = &u->ring[head % MC_SLOTS];
	const struct py_proc *p = &t->proc;
	uint64_t t0 = mono_ns(), dt;
	__u64 ts = th->ts, native = p->layout.tstate_native_id ? (__u64)th->tid : 0;

	if (!th->thread_id && now >= t->next_idmap) {
		map_thread_ids(t);
		t->next_idmap = now + THREAD_RESCAN_NS;
	}
	vmwalk_target(t->pid);
	vmwalk_taskmaps(t->maps);
	pw_pages_reset(&u->rd.pages);
	if (th->thread_id && t->tid_off_ok) {
		if (!ts || !pw_tstate_owned_by(&u->rd, p, ts, th->thread_id))
			ts = pw_find_tstate(&u->rd, p, th->thread_id, 0);
	} else if (native) {
		ts = pw_find_tstate(&u->rd, p, 0, native); /* no thread pointer known: 3.11+ only */
	} else {
		ts = 0;
	}
	if (head - __atomic_load_n(&u->tail, __ATOMIC_ACQUIRE) >= MC_SLOTS) {
		u->st.lost++;
		return;
	}
	th->ts = ts;
	if (!pw_walk_thread(&u->rd, p, ts, s, &u->pw) && ts && !(s->hdr.flags & SAMPLE_READ_ERR))
		th->ts = 0;
	pw_walk_tasks(&u->rd, p, t->pid, s, &u->pw);
	dt = mono_ns() - t0;
	u->st.read_ns += dt;
	u->st.read_cnt++;
	u->st.mem_reads += u->rd.pages.reads;
	u->st.mem_bytes += u->rd.pages.bytes;
	u->st.cost_hist[cost_bucket(dt)]++;
	s->hdr.time_ns = t0;
	s->hdr.pid = t->pid;
	s->hdr.tid = th->tid;
	memcpy(s->hdr.comm, th->comm, TASK_COMM_LEN);
	__atomic_store_n(&u->head, head + 1, __ATOMIC_RELEASE);
}

static void drain(struct ureader *u, struct utarget *t)
{
	struct mc_shm *m = t->shm;

	for (;;) {
		struct mc_slot *slot = &m->ring[t->tail % MC_SLOTS];
		struct py_sample *s = &slot->s;
		const struct sample_hdr *h = &s->hdr;

		if (__atomic_load_n(&slot->ready, __ATOMIC_ACQUIRE) != t->tail + 1)
			break;
		if (h->nframes > MAX_FRAMES || h->ncoro > MAX_CORO_FRAMES ||
		    h->nframes + h->ncoro > MAX_FRAMES + MAX_CORO_FRAMES || h->ntasks > MAX_TASKS ||
		    (uint32_t)h->pid != (uint32_t)t->pid) {
			u->st.lost++;
		} else {
			pthread_mutex_lock(&u->lock);
			for (size_t i = 0; i < t->nth; i++)
				if ((uint32_t)t->th[i].tid == h->tid)
					memcpy(s->hdr.comm, t->th[i].comm, TASK_COMM_LEN);
			pthread_mutex_unlock(&u->lock);
			deliver(u, s);
		}
		t->tail++;
		__atomic_store_n(&m->tail, t->tail, __ATOMIC_RELEASE);
	}
}

static void tick(struct ureader *u, uint64_t now)
{
	for (size_t i = 0; i < u->nt; i++) {
		struct utarget *t = &u->t[i];

		if (now >= t->next_rescan) {
			rescan_threads(t);
			t->next_rescan = now + THREAD_RESCAN_NS;
		}
		for (size_t j = 0; j < t->nth; j++) {
			struct uthread *th = &t->th[j];

			if (!running(th))
				continue;
			u->st.samples++;
			if (t->shm)
				syscall(SYS_tgkill, t->pid, th->tid, t->shm->signo);
			else
				vm_sample(u, t, th, now);
		}
	}
	u->st.ticks++;
}

static void *timer_main(void *arg)
{
	struct ureader *u = arg;
	uint64_t next = mono_ns() + u->period_ns, now;

	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts = { .tv_sec = next / 1000000000ULL,
				       .tv_nsec = next % 1000000000ULL };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
		now = mono_ns();
		pthread_mutex_lock(&u->lock);
		tick(u, now);
		pthread_mutex_unlock(&u->lock);
		next += u->period_ns;
		if (next + u->period_ns < now) {
			uint64_t behind = (now - next) / u->period_ns;

			u->st.missed_ticks += behind;
			next += behind * u->period_ns;
		}
	}
	return NULL;
}

static void drain_all(struct ureader *u)
{
	uint64_t head = __atomic_load_n(&u->head, __ATOMIC_ACQUIRE);

	for (uint64_t t = u->tail; t < head; t++) {
		deliver(u, &u->ring[t % MC_SLOTS]);
		__atomic_store_n(&u->tail, t + 1, __ATOMIC_RELEASE);
	}
	for (size_t i = 0; i < u->nt; i++)
		if (u->t[i].shm)
			drain(u, &u->t[i]);
}

int ureader_poll(struct ureader *u, int timeout_ms)
{
	uint64_t end = mono_ns() + (uint64_t)timeout_ms * 1000000ULL, now;

	if (!u->running && !u->stop) {
		int ret = pthread_create(&u->thread, NULL, timer_main, u);

		if (ret)
			return -ret;
		u->running = 1;
	}
	for (;;) {
		drain_all(u);
		now = mono_ns();
		if (now >= end)
			return 0;
		/* records are drained every 10 ms, as the BPF ring is */
		struct timespec ts = { .tv_nsec = end - now < 10000000 ? end - now : 10000000 };

		nanosleep(&ts, NULL);
	}
}

void ureader_read_stats(struct ureader *u, struct ureader_stats *st)
{
	pthread_mutex_lock(&u->lock);
	*st = u->st;
	pthread_mutex_unlock(&u->lock);
	for (size_t i = 0; i < u->nt; i++)
		if (u->t[i].shm)
			add_shm_stats(st, u->t[i].shm);
}

static struct taskmaps *maps_of(void *ctx, pid_t pid)
{
	struct utarget *t = find(ctx, pid);

	return t ? t->maps : NULL;
}

#define U_OP(op, ...)                                                                              \
	static int u_##op(void *ctx, pid_t pid, uint64_t addr, __VA_ARGS__)                        \
	{                                                                                          \
		struct taskmaps *m = maps_of(ctx, pid);                                            \
		return m ? taskmaps_ops.op(m, pid, addr, v) : -ENOENT;                             \
	}
U_OP(set_coro_task, const struct task_id *v)
U_OP(get_coro_task, struct task_id *v)
U_OP(set_serial, uint64_t v)
U_OP(get_serial, uint64_t *v)
U_OP(set_link, const struct task_link *v)
U_OP(get_link, struct task_link *v)

#define U_DEL(op)                                                                                  \
	static int u_##op(void *ctx, pid_t pid, uint64_t addr)                                     \
	{                                                                                          \
		struct taskmaps *m = maps_of(ctx, pid);                                            \
		return m ? taskmaps_ops.op(m, pid, addr) : -ENOENT;                                \
	}
U_DEL(del_coro_task)
U_DEL(del_serial)
U_DEL(del_link)

const struct taskmaps_ops ureader_taskmaps_ops = {
	.set_coro_task = u_set_coro_task,
	.get_coro_task = u_get_coro_task,
	.del_coro_task = u_del_coro_task,
	.set_serial = u_set_serial,
	.get_serial = u_get_serial,
	.del_serial = u_del_serial,
	.set_link = u_set_link,
	.get_link = u_get_link,
	.del_link = u_del_link,
};
