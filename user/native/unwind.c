// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include "native/unwind.h"

#include <dwarf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "native/cfirules.h"
#include "hash.h"
#include "process/procmaps.h"
#include "clock.h"

/* A frame's name by its pc (as unwound: a return address minus one), per process. */
struct pc_name_ent {
	uint64_t pc; /* 0: empty */
	char *name;
	enum native_kind kind;
};

struct nproc {
	pid_t pid;
	Dwfl *dwfl;
	double reported;      /* when its modules were last read from /proc/PID/maps */
	uint64_t read_ns;     /* the same, CLOCK_MONOTONIC ns as samples' time_ns */
	struct procmaps maps; /* as then read */
	struct pc_name_ent *names;
	size_t nnames, cap;
	size_t nunknown; /* names of pcs in no module */
	struct cfi_cache *rules;
	/* the eval loop's functions in the interpreter's ELF (its .cold parts too, where
	 * named): found once, so that its other functions need no name */
	Dwarf_Addr eval_lo[4], eval_hi[4];
	int neval; /* -1: not looked for yet */
	/* the sample being unwound, for libdw's callbacks */
	pid_t tid;
	const struct native_hdr *h;
	const uint8_t *stack;
};

struct unwinder {
	struct nproc **procs;
	size_t nprocs, cap;
	bool interp_names; /* name the interpreter's own functions (--native-all) */
	struct unwinder_stats st;
};

/* Modules are reported with their files open (report_maps): libdw never looks one up by
 * its path, which in a container names another file on the host. The vDSO is no file:
 * libdw reads it from the process's memory. */
static int find_elf(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr base,
		    char **file_name, Elf **elfp)
{
	/* libdw's name for it, with the pid whose memory holds it */
	if (!strncmp(name, "[vdso: ", 7))
		return dwfl_linux_proc_find_elf(mod, userdata, name, base, file_name, elfp);
	return dwfl_build_id_find_elf(mod, userdata, name, base, file_name, elfp);
}

static const Dwfl_Callbacks proc_callbacks = {
	.find_elf = find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct nproc *p = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = p;
	return p->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_argp)
{
	(void)dwfl;
	(void)tid;
	*thread_argp = arg;
	return true;
}

/* Only the copy: the live stack has moved on since the sample. */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct nproc *p = arg;
	uint64_t start = p->h->stack_start;

	(void)dwfl;
	if (addr < start || addr - start + sizeof(*result) > p->h->stack_len)
		return false;
	memcpy(result, p->stack + (addr - start), sizeof(*result));
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *thread_arg)
{
	struct nproc *p = thread_arg;
	Dwarf_Word regs[NATIVE_REGS];

	for (int i = 0; i < NATIVE_REGS; i++)
		regs[i] = p->h->regs[i];
	if (!dwfl_thread_state_registers(thread, 0, NATIVE_REGS, regs))
		return false;
	dwfl_thread_state_register_pc(thread, regs[NATIVE_REGS - 1]);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static void drop_names(struct nproc *p)
{
	for (size_t i = 0; i < p->cap; i++)
		free(p->names[i].name);
	free(p->names);
	p->names = NULL;
	p->nnames = p->cap = p->nunknown = 0;
}

static bool same_file(const struct procmap *a, const struct procmap *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && !strcmp(a->path, b->path);
}

/* Whether m->v[i] is the first mapping of its file in m: the one reported. */
static bool first_of_file(const struct procmaps *m, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (same_file(&m->v[j], &m->v[i]))
			return false;
	return true;
}

/* Whether old reported the module that new's mapping i begins, at the same place. */
static bool reported_in(const struct procmaps *old, const struct procmaps *new, size_t i)
{
	const struct procmap *e = &new->v[i];

	for (size_t j = 0; old && j < old->n; j++)
		if (same_file(&old->v[j], e) &&
		    old->v[j].start - old->v[j].offset == e->start - e->offset)
			return first_of_file(old, j);
	return false;
}

/* Each ELF file the process maps, from its first mapping (base: where its offset 0 is),
 * opened as the process sees it (procmap_file: map_files or its root); those in old
 * already reported. */
static void report_maps(Dwfl *d, pid_t pid, const struct procmaps *m, const struct procmaps *old)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct procmap *e = &m->v[i];
		char path[4096];
		int fd;

		if ((!strcmp(e->path, "[vdso]") || e->path[0] == '/') && reported_in(old, m, i))
			continue;

		if (!strcmp(e->path, "[vdso]")) {
			char name[32];

			snprintf(name, sizeof(name), "[vdso: %d]", (int)pid);
			dwfl_report_module(d, name, e->start, e->end);
			continue;
		}
		if (e->path[0] != '/' || !first_of_file(m, i) ||
		    procmap_file(pid, e, path, sizeof(path)))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* libdw owns fd from here, also when the file is no ELF */
		dwfl_report_elf(d, e->path, path, fd, e->start - e->offset, false);
	}
}

/* A Dwfl of the process's current modules (again after a pc fell in none). */
static int report(struct unwinder *u, struct nproc *p)
{
	struct procmaps m;
	Dwfl *d;
	int rc;

	if (p->dwfl)
		dwfl_end(p->dwfl);
	p->dwfl = NULL;
	drop_names(p);
	cfi_cache_clear(p->rules);
	procmaps_free(&p->maps);
	p->neval = -1;
	p->reported = mono_s();
	p->read_ns = mono_ns();
	u->st.reports++;
	rc = procmaps_read(p->pid, &m);
	if (rc)
		return rc == -ENOMEM ? rc : -ESRCH;
	d = dwfl_begin(&proc_callbacks);
	if (!d) {
		procmaps_free(&m);
		return -ENOMEM;
	}
	dwfl_report_begin(d);
	report_maps(d, p->pid, &m, NULL);
	if (dwfl_report_end(d, NULL, NULL) ||
	    !dwfl_attach_state(d, NULL, p->pid, &thread_callbacks, p)) {
		procmaps_free(&m);
		dwfl_end(d);
		return -ESRCH;
	}
	p->dwfl = d;
	p->maps = m;
	return 0;
}

/* A stack reached a pc outside every mapping last read: a library mapped since (dlopen,
 * an import). The maps read again and the new files reported beside the old ones, so
 * that the caches stay; from scratch if a file went away (its range may be reused). */
static int refresh(struct unwinder *u, struct nproc *p)
{
	struct procmaps m;
	uint64_t read_ns = mono_ns();
	int rc = procmaps_read(p->pid, &m);

	if (rc)
		return rc == -ENOMEM ? rc : -ESRCH;
	for (size_t i = 0; i < p->maps.n; i++) {
		const struct procmap *e = &p->maps.v[i];

		if ((e->path[0] == '/' || !strcmp(e->path, "[vdso]")) &&
		    first_of_file(&p->maps, i) && !reported_in(&m, &p->maps, i)) {
			procmaps_free(&m);
			return report(u, p);
		}
	}
	u->st.reports++;
	p->reported = mono_s();
	p->read_ns = read_ns;
	dwfl_report_begin_add(p->dwfl);
	report_maps(p->dwfl, p->pid, &m, &p->maps);
	if (dwfl_report_end(p->dwfl, NULL, NULL)) {
		procmaps_free(&m);
		return report(u, p);
	}
	procmaps_free(&p->maps);
	p->maps = m;
	/* rules and names made while those pcs had no module */
	cfi_cache_clear(p->rules);
	if (p->nunknown)
		drop_names(p);
	return 0;
}

static struct nproc *proc_of(struct unwinder *u, pid_t pid)
{
	struct nproc *p, **grown, **slot = NULL;

	for (size_t i = 0; i < u->nprocs; i++) {
		if (u->procs[i]->pid == pid)
			return u->procs[i];
		if (!u->procs[i]->pid && !slot)
			slot = &u->procs[i];
	}
	if (slot) {
		(*slot)->pid = pid;
		(*slot)->neval = -1;
		return *slot;
	}
	if (u->nprocs == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 16;

		grown = realloc(u->procs, cap * sizeof(*grown));
		if (!grown)
			return NULL;
		u->procs = grown;
		u->cap = cap;
	}
	/* each apart: libdw keeps a pointer to it as its callbacks' argument */
	p = calloc(1, sizeof(*p));
	if (p)
		p->neval = -1;
	if (p && !(p->rules = cfi_cache_new())) {
		free(p);
		p = NULL;
	}
	if (!p)
		return NULL;
	p->pid = pid;
	u->procs[u->nprocs++] = p;
	return p;
}

static struct pc_name_ent *name_slot(struct nproc *p, uint64_t pc)
{
	size_t m = p->cap - 1, i = hash_u64(pc) & m;

	while (p->names[i].pc && p->names[i].pc != pc)
		i = (i + 1) & m;
	return &p->names[i];
}

static int grow_names(struct nproc *p)
{
	struct pc_name_ent *old = p->names;
	size_t ocap = p->cap, cap = ocap ? 2 * ocap : 256;

	p->names = calloc(cap, sizeof(*p->names));
	if (!p->names) {
		p->names = old;
		return -ENOMEM;
	}
	p->cap = cap;
	for (size_t i = 0; i < ocap; i++)
		if (old[i].pc)
			*name_slot(p, old[i].pc) = old[i];
	free(old);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* The start of the function holding pc, from its FDE (ELF address), 0 if none. */
static Dwarf_Addr fde_start(Dwfl_Module *mod, Dwarf_Addr pc)
{
	Dwarf_Addr bias, start = 0, end;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(mod, &bias);
	Dwarf_Frame *fr;

	if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &fr)) {
		cfi = dwfl_module_dwarf_cfi(mod, &bias);
		if (!cfi || dwarf_cfi_addrframe(cfi, pc - bias, &fr))
			return 0;
	}
	if (dwarf_frame_info(fr, &start, &end, NULL) < 0)
		start = 0;
	free(fr);
	return start;
}

static bool is_eval(const char *name)
{
	static const char eval[] = "_PyEval_EvalFrameDefault";

	/* GCC moves its rare paths to a .cold part, named so where symbols are kept */
	return !strncmp(name, eval, sizeof(eval) - 1) &&
	       (!name[sizeof(eval) - 1] || name[sizeof(eval) - 1] == '.');
}

/* Where the eval loop's functions are in the interpreter's module: one pass over its
 * symbols, instead of a name for each of its pcs (libdw looks a name up by a pass over
 * all symbols). */
static void find_eval(struct nproc *p, Dwfl_Module *mod)
{
	int n = dwfl_module_getsymtab(mod);

	p->neval = 0;
	for (int i = 1; i < n && p->neval < 4; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		const char *name = dwfl_module_getsym_info(mod, i, &s, &addr, NULL, NULL, NULL);

		if (name && s.st_size && GELF_ST_TYPE(s.st_info) == STT_FUNC && is_eval(name)) {
			p->eval_lo[p->neval] = addr;
			p->eval_hi[p->neval++] = addr + s.st_size;
		}
	}
}

/* "symbol" when a symbol covers pc, else "module+0xSTART" of its FDE's function: never the
 * nearest symbol before it, which names another function in a stripped file. */
static int name_pc(struct nproc *p, const char *interp, bool interp_names, uint64_t pc,
		   struct pc_name_ent *e)
{
	Dwfl_Module *mod = cfi_module(p->dwfl, pc);
	const char *modname, *sym;
	Dwarf_Addr bias = 0, start;
	GElf_Sym s;
	GElf_Off off;
	char *name = NULL;

	e->kind = NATIVE_OTHER;
	if (!mod) {
		const struct procmap *m = procmaps_find(&p->maps, pc);
		int rc;

		/* code of no ELF file: by its mapping, without an address if anonymous */
		if (m && m->perms[2] == 'x' && m->path[0] == '/')
			rc = asprintf(&name, "%s+0x%llx", base_name(m->path),
				      (unsigned long long)(pc - m->start + m->offset));
		else if (m && m->perms[2] == 'x')
			rc = (name = strdup(ANON_CODE)) ? 0 : -1;
		else
			rc = asprintf(&name, "[unknown native 0x%llx]", (unsigned long long)pc);
		if (rc < 0)
			return -ENOMEM;
		e->name = name;
		return 0;
	}
	modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	if (!modname)
		modname = "?";
	if (interp && !strcmp(modname, interp)) {
		if (p->neval < 0)
			find_eval(p, mod);
		e->kind = NATIVE_INTERP;
		for (int i = 0; i < p->neval; i++)
			if (pc >= p->eval_lo[i] && pc < p->eval_hi[i])
				e->kind = NATIVE_EVAL;
		if (!interp_names) {
			e->name = strdup("[interpreter]");
			return e->name ? 0 : -ENOMEM;
		}
	}
	sym = dwfl_module_addrinfo(mod, pc, &off, &s, NULL, NULL, NULL);
	dwfl_module_getelf(mod, &bias);
	/* the FDE only where the symbol does not settle it: a symbol of no size names pc
	 * only if it starts pc's function. "@VERSION" dropped. */
	start = sym && s.st_size && off < s.st_size ? 0 : fde_start(mod, pc);
	if (sym && (s.st_size ? off < s.st_size : start && s.st_value - bias == start))
		name = strndup(sym, strcspn(sym, "@"));
	else if (asprintf(&name, "%s+0x%llx",
			  !strncmp(modname, "[vdso: ", 7) ? "[vdso]" : base_name(modname),
			  (unsigned long long)(start ? start : pc - bias)) < 0)
		name = NULL;
	if (!name)
		return -ENOMEM;
	e->name = name;
	return 0;
}

static const struct pc_name_ent *lookup(struct nproc *p, const char *interp, bool interp_names,
					uint64_t pc, bool *named)
{
	struct pc_name_ent *e, tmp = { 0 };

	if ((p->nnames + 1) * 2 > p->cap && grow_names(p))
		return NULL;
	e = name_slot(p, pc);
	if (e->pc)
		return e;
	*named = true;
	if (name_pc(p, interp, interp_names, pc, &tmp))
		return NULL;
	if (!cfi_module(p->dwfl, pc))
		p->nunknown++;
	tmp.pc = pc;
	*e = tmp;
	p->nnames++;
	return e;
}

struct walk {
	struct nproc *p;
	uint64_t pcs[NATIVE_MAX_FRAMES], sps[NATIVE_MAX_FRAMES];
	unsigned int n;
	bool no_module;
};

static int on_frame(Dwfl_Frame *state, void *arg)
{
	struct walk *w = arg;
	Dwarf_Addr pc;
	bool activation;

	if (!dwfl_frame_pc(state, &pc, &activation))
		return DWARF_CB_ABORT;
	if (w->n >= NATIVE_MAX_FRAMES)
		return DWARF_CB_ABORT;
	/* a return address is past its call: look the call up */
	if (!activation)
		pc--;
	if (!cfi_module(w->p->dwfl, pc))
		w->no_module = true;
	/* x86-64's DWARF register 7: rsp */
	if (dwfl_frame_reg(state, 7, &w->sps[w->n]))
		w->sps[w->n] = 0;
	w->pcs[w->n++] = pc;
	return DWARF_CB_OK;
}

/* libdw's own unwinder: the fallback, and the check of the fast path. */
static enum native_end slow_walk(struct nproc *p, struct walk *w)
{
	int rc;

	w->n = 0;
	w->no_module = false;
	rc = dwfl_getthread_frames(p->dwfl, p->tid, on_frame, w);
	if (rc == 0)
		return NATIVE_END_ROOT;
	/* libdw stops where a read misses the copy or a CFA rule cannot be evaluated */
	return w->n && !w->no_module ? NATIVE_END_COPY : NATIVE_END_ERROR;
}

/* The cached rules (cfirules.c); -1 where a frame needs libdw. */
static int fast_walk(struct nproc *p, struct walk *w, enum native_end *end)
{
	struct cfi_regs r = { .valid = (1u << NATIVE_REGS) - 1 };
	uint64_t pc;

	memcpy(r.r, p->h->regs, sizeof(r.r));
	w->n = 0;
	for (pc = r.r[NATIVE_REGS - 1];; pc = r.r[NATIVE_REGS - 1] - 1) {
		if (w->n == NATIVE_MAX_FRAMES) {
			*end = NATIVE_END_COPY;
			return 0;
		}
		w->pcs[w->n] = pc;
		w->sps[w->n++] = r.r[7];
		switch (cfi_step(p->rules, p->dwfl, pc, &r, p->h, p->stack)) {
		case CFI_STEP_OK:
			continue;
		case CFI_STEP_ROOT:
			*end = NATIVE_END_ROOT;
			return 0;
		case CFI_STEP_COPY:
			*end = NATIVE_END_COPY;
			return 0;
		case CFI_STEP_SLOW:
			return -1;
		}
	}
}

/* ASYNCBPF_NATIVE_CHECK=1: each stack unwound both ways, differences counted (=2: and
 * printed) */
static int check_fast = -1;

static void print_mismatch(const struct walk *a, enum native_end ea, const struct walk *b,
			   enum native_end eb)
{
	fprintf(stderr, "asyncbpf: native check: fast path %u frames (end %d), libdw %u (end %d)\n",
		a->n, ea, b->n, eb);
	for (unsigned int i = 0; i < a->n || i < b->n; i++)
		fprintf(stderr, "  %2u %#18llx %#18llx\n", i,
			(unsigned long long)(i < a->n ? a->pcs[i] : 0),
			(unsigned long long)(i < b->n ? b->pcs[i] : 0));
}

/* The fast path, libdw's unwinder where it cannot go on (or to check it). */
static int walk_stack(struct unwinder *u, struct nproc *p, struct walk *w, enum native_end *end)
{
	if (check_fast < 0)
		check_fast =
			getenv("ASYNCBPF_NATIVE_CHECK") ? atoi(getenv("ASYNCBPF_NATIVE_CHECK")) : 0;
	w->no_module = false;
	if (fast_walk(p, w, end)) {
		u->st.slow++;
		*end = slow_walk(p, w);
	} else if (check_fast) {
		struct walk *ref = malloc(sizeof(*ref));
		enum native_end ref_end;

		if (!ref)
			return -ENOMEM;
		*ref = (struct walk){ .p = p };
		ref_end = slow_walk(p, ref);
		u->st.checked++;
		if (ref_end != *end || ref->n != w->n ||
		    memcmp(ref->pcs, w->pcs, w->n * sizeof(w->pcs[0]))) {
			u->st.mismatches++;
			if (check_fast > 1)
				print_mismatch(w, *end, ref, ref_end);
		}
		free(ref);
	}
	return 0;
}

static bool executable(const struct procmaps *m, uint64_t pc)
{
	const struct procmap *e = procmaps_find(m, pc);

	return e && e->perms[2] == 'x';
}

/* The walk of a stack interrupted in code that no ELF file's unwind table covers (a
 * libffi closure's trampoline in anonymous memory, which libdw's fallback unwound into
 * garbage): such a stub jumps on without touching the stack, so its return address is
 * at rsp. The rest is walked from there if that returns into a module's code; else the
 * stack ends at the stub. */
static int walk_from_stub(struct unwinder *u, struct nproc *p, struct walk *w, enum native_end *end)
{
	const struct native_hdr *h = p->h;
	struct native_hdr from = *h;
	struct walk *rest;
	uint64_t ra;

	w->n = 1;
	*end = NATIVE_END_ERROR;
	if (h->stack_len < 8 || h->stack_start != h->regs[7])
		return 0;
	memcpy(&ra, p->stack, 8);
	if (!ra || !cfi_module(p->dwfl, ra - 1) || !executable(&p->maps, ra - 1))
		return 0;
	rest = malloc(sizeof(*rest));
	if (!rest)
		return -ENOMEM;
	/* at the call that returns there, as libdw takes a caller's pc */
	from.regs[NATIVE_REGS - 1] = ra - 1;
	from.regs[7] += 8;
	p->h = &from;
	*rest = (struct walk){ .p = p };
	if (walk_stack(u, p, rest, end)) {
		p->h = h;
		free(rest);
		return -ENOMEM;
	}
	p->h = h;
	for (unsigned int i = 0; i < rest->n && w->n < NATIVE_MAX_FRAMES; i++, w->n++) {
		w->pcs[w->n] = rest->pcs[i];
		w->sps[w->n] = rest->sps[i];
	}
	w->no_module = rest->no_module;
	u->st.stubs++;
	free(rest);
	return 0;
}

/* Whether a pc of the walk in no module calls for the maps to be read again: only for a
 * sample taken after they were last read. The interrupted pc ran, so a mapping of its
 * code that the last read lacks (or had as data: ld.so maps a library wherever memory
 * was just unmapped) is new, even if it was named from that read. A return address
 * named before stays so; in no mapping, it is a library mapped since; in data, mostly
 * an unwinding gone wrong, so that reads again at most every 0.1 s. */
static bool unmapped_pc(struct nproc *p, const struct walk *w, uint64_t time_ns)
{
	if (time_ns <= p->read_ns)
		return false;
	for (unsigned int i = 0; i < w->n; i++) {
		uint64_t pc = w->pcs[i];

		if (cfi_module(p->dwfl, pc) || executable(&p->maps, pc))
			continue;
		if (i == 0)
			return true;
		if (p->cap && name_slot(p, pc)->pc)
			continue;
		if (!procmaps_find(&p->maps, pc) || mono_s() - p->reported > 0.1)
			return true;
	}
	return false;
}

int unwinder_unwind(struct unwinder *u, pid_t pid, pid_t tid, const char *interp, uint64_t time_ns,
		    const struct native_hdr *h, const uint8_t *stack, struct native_stack *out)
{
	double t0 = mono_s();
	struct nproc *p = proc_of(u, pid);
	struct walk w = { .p = p };
	bool named = false;
	uint64_t ns;
	int rc;

	out->n = 0;
	out->end = NATIVE_END_ERROR;
	u->st.stacks++;
	if (!p)
		return -ENOMEM;
	if (h->flags & NATIVE_NO_REGS)
		goto done;
	/* a process whose maps could not be read: again once a second at most */
	if (!p->dwfl && (p->reported == 0 || t0 - p->reported > 1)) {
		rc = report(u, p);
		u->st.report_ns += (uint64_t)((mono_s() - t0) * 1e9);
		t0 = mono_s();
		if (rc == -ENOMEM)
			return -ENOMEM;
	}
	if (!p->dwfl)
		goto done;
	p->tid = tid;
	p->h = h;
	p->stack = stack;
	if (walk_stack(u, p, &w, &out->end))
		return -ENOMEM;
	if (w.no_module && unmapped_pc(p, &w, time_ns)) {
		double t1 = mono_s();

		rc = refresh(u, p);
		u->st.report_ns += (uint64_t)((mono_s() - t1) * 1e9);
		if (rc == -ENOMEM)
			return -ENOMEM;
		if (!p->dwfl)
			goto done;
		if (!rc && walk_stack(u, p, &w, &out->end))
			return -ENOMEM;
	}
	if (w.n && w.no_module && !cfi_module(p->dwfl, w.pcs[0]) &&
	    executable(&p->maps, w.pcs[0]) && walk_from_stub(u, p, &w, &out->end))
		return -ENOMEM;
	/* a return address outside executable memory (in no mapping even read again, or in
	 * data: the heap, the stack) is an unwinding gone wrong, not a frame: the stack ends
	 * before it. Only libdw's walk goes wrong so (its fallback where no table covers a
	 * pc), and it says when it met a pc in no module. */
	for (unsigned int i = 1; w.no_module && i < w.n && p->dwfl; i++)
		if (!executable(&p->maps, w.pcs[i])) {
			/* named all the same: known, it makes no more reads of the maps */
			if (!lookup(p, interp, u->interp_names, w.pcs[i], &named))
				return -ENOMEM;
			w.n = i;
			out->end = NATIVE_END_ERROR;
			u->st.bad_returns++;
			break;
		}
	for (unsigned int i = 0; i < w.n && p->dwfl; i++) {
		const struct pc_name_ent *e = lookup(p, interp, u->interp_names, w.pcs[i], &named);

		if (!e)
			return -ENOMEM;
		out->f[out->n++] =
			(struct native_frame){ .name = e->name, .kind = e->kind, .shim = -1 };
	}
	/* a frame's locals lie between its rsp and its caller's */
	out->nshims = h->nshims < NATIVE_MAX_SHIMS ? h->nshims : NATIVE_MAX_SHIMS;
	for (unsigned int i = 0; i < out->nshims; i++)
		for (unsigned int j = 0; j < out->n; j++)
			if (w.sps[j] && h->shim[i] >= w.sps[j] &&
			    (j + 1 == out->n || h->shim[i] < w.sps[j + 1])) {
				out->f[j].shim = (int)i;
				break;
			}
done:
	if (out->end == NATIVE_END_COPY)
		u->st.ended_copy++;
	else if (out->end == NATIVE_END_ERROR)
		u->st.ended_error++;
	u->st.frames += out->n;
	ns = (uint64_t)((mono_s() - t0) * 1e9);
	u->st.ns += ns;
	if (!named) {
		u->st.warm++;
		u->st.warm_ns += ns;
	}
	return 0;
}

const struct native_hdr *native_of(const struct py_sample *s, size_t size)
{
	size_t at = offsetof(struct py_sample, frames) +
		    (s->hdr.nframes + s->hdr.ncoro) * sizeof(struct frame_rec);

	if (!(s->hdr.flags & SAMPLE_NATIVE) || size < at + sizeof(struct native_hdr))
		return NULL;
	return (const void *)((const char *)s + at);
}

struct unwinder *unwinder_new(bool interp_names)
{
	struct unwinder *u = calloc(1, sizeof(struct unwinder));

	if (u)
		u->interp_names = interp_names;
	return u;
}

void unwinder_forget(struct unwinder *u, pid_t pid)
{
	for (size_t i = 0; i < u->nprocs; i++) {
		struct nproc *p = u->procs[i];

		if (p->pid != pid)
			continue;
		if (p->dwfl)
			dwfl_end(p->dwfl);
		p->dwfl = NULL;
		drop_names(p);
		cfi_cache_clear(p->rules);
		procmaps_free(&p->maps);
		p->pid = 0;
		p->reported = 0;
	}
}

void unwinder_free(struct unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->nprocs; i++) {
		if (u->procs[i]->dwfl)
			dwfl_end(u->procs[i]->dwfl);
		drop_names(u->procs[i]);
		procmaps_free(&u->procs[i]->maps);
		cfi_cache_free(u->procs[i]->rules);
		free(u->procs[i]);
	}
	free(u->procs);
	free(u);
}

void unwinder_stats(const struct unwinder *u, struct unwinder_stats *st)
{
	*st = u->st;
}
