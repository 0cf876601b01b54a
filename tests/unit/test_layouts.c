/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The layout table against reality: each installed interpreter is started, tells what it
 * knows about itself (runtime address, thread ids, code object ids, bytecode offsets), and
 * the test finds the same facts in its memory by walking the layout. */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/unit.h"
#include "process/memread.h"
#include "cpython/py_layouts.h"

/* Prints one line of facts from inside marker_\u00e9 (name Latin-1, qualname
 * outer_\u03a9.<locals>.marker_\u00e9 UCS-2, file <gen-layouts-test> ASCII), then sleeps
 * in time.sleep called from it, with a second thread and a subinterpreter also alive. */
static const char script[] =
	"import ctypes, dis, sys, threading, time\n"
	"ev = threading.Event()\n"
	"def bg():\n"
	"    ev.set()\n"
	"    time.sleep(3600)\n"
	"threading.Thread(target=bg, daemon=True).start()\n"
	"ev.wait()\n"
	"try:\n"
	"    import _xxsubinterpreters as si\n"
	"except ImportError:\n"
	"    import _interpreters as si\n"
	"sub = si.create()\n"
	"src = ('def outer_\\u03a9():\\n'\n"
	"       '    def marker_\\u00e9():\\n'\n"
	"       '        report(sys._getframe())\\n'\n"
	"       '        time.sleep(3600)\\n'\n"
	"       '    return marker_\\u00e9\\n')\n"
	"exec(compile(src, '<gen-layouts-test>', 'exec'))\n"
	"def report(f):\n"
	"    c, m = f.f_code, f.f_back.f_code\n"
	"    lt = c.co_linetable if sys.version_info >= (3, 10) else c.co_lnotab\n"
	"    call = max(i.offset for i in dis.get_instructions(c) if i.opname.startswith('CALL'))\n"
	"    rt = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, '_PyRuntime'))\n"
	"    print(sys.hexversion, rt, threading.get_ident(), threading.get_native_id(),\n"
	"          id(c), id(m), id(type(c)), id(str), id(bytes), c.co_firstlineno,\n"
	"          len(c.co_code), call, c.co_code[call], len(lt), len(si.list_all()),\n"
	"          type(c).__basicsize__, bytes.__basicsize__, lt[:16].hex() or '-',\n"
	"          flush=True)\n"
	"globals()['outer_\\u03a9']()()\n";

struct facts {
	unsigned long long version, runtime, tid, native, code, mod_code, code_type, str_type,
		bytes_type, firstlineno, co_code_len, call_off, call_op, lt_len, ninterp,
		code_basicsize, bytes_basicsize;
	char lt_hex[40];
};

struct child {
	pid_t pid;
	int fd;
};

static int start_python(const char *python, struct child *c)
{
	int p[2];

	if (pipe(p))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (!c->pid) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl(python, python, "-c", script, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	c->fd = p[0];
	return 0;
}

static void stop_python(struct child *c)
{
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
	close(c->fd);
}

static int read_line(int fd, char *buf, size_t len, int timeout_ms)
{
	size_t n = 0;

	while (n + 1 < len) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&pfd, 1, timeout_ms) <= 0)
			return -1;
		r = read(fd, buf + n, 1);
		if (r <= 0)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = 0;
	return 0;
}

static int parse_facts(const char *line, struct facts *f)
{
	return sscanf(line,
		      "%llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu "
		      "%llu %llu %39s",
		      &f->version, &f->runtime, &f->tid, &f->native, &f->code, &f->mod_code,
		      &f->code_type, &f->str_type, &f->bytes_type, &f->firstlineno, &f->co_code_len,
		      &f->call_off, &f->call_op, &f->lt_len, &f->ninterp, &f->code_basicsize,
		      &f->bytes_basicsize, f->lt_hex) == 18
		       ? 0
		       : -1;
}

static uint64_t rd64(pid_t pid, uint64_t addr)
{
	uint64_t v = 0;

	return mem_read(pid, addr, &v, sizeof(v)) ? 0 : v;
}

static void utf8_put(char **o, unsigned int cp)
{
	if (cp < 0x80) {
		*(*o)++ = cp;
	} else if (cp < 0x800) {
		*(*o)++ = 0xc0 | cp >> 6;
		*(*o)++ = 0x80 | (cp & 0x3f);
	} else if (cp < 0x10000) {
		*(*o)++ = 0xe0 | cp >> 12;
		*(*o)++ = 0x80 | (cp >> 6 & 0x3f);
		*(*o)++ = 0x80 | (cp & 0x3f);
	} else {
		*(*o)++ = 0xf0 | cp >> 18;
		*(*o)++ = 0x80 | (cp >> 12 & 0x3f);
		*(*o)++ = 0x80 | (cp >> 6 & 0x3f);
		*(*o)++ = 0x80 | (cp & 0x3f);
	}
}

/* Decodes the compact str at addr into UTF-8 with the layout's unicode fields; checks
 * its type is str. */
static int read_str(pid_t pid, const struct py_layout *l, const struct facts *f, uint64_t addr,
		    char *out, size_t outlen)
{
	unsigned char data[256];
	uint32_t state;
	uint64_t len;
	unsigned int kind, i;
	char *o = out;

	if (!addr || rd64(pid, addr + l->object_type) != f->str_type)
		return -1;
	if (mem_read(pid, addr + l->unicode_state, &state, sizeof(state)) ||
	    mem_read(pid, addr + l->unicode_length, &len, sizeof(len)))
		return -1;
	kind = state >> l->unicode_kind_shift & 7;
	if (!(state >> l->unicode_compact_bit & 1) || (kind != 1 && kind != 2 && kind != 4) ||
	    len * kind > sizeof(data) || len * 4 + 1 > outlen)
		return -1;
	if (mem_read(pid,
		     addr + ((state >> l->unicode_ascii_bit & 1) ? l->unicode_ascii_size
								 : l->unicode_compact_size),
		     data, len * kind))
		return -1;
	for (i = 0; i < len; i++) {
		unsigned int cp = kind == 1   ? data[i]
				  : kind == 2 ? (unsigned int)(data[2 * i] | data[2 * i + 1] << 8)
					      : (unsigned int)(data[4 * i] | data[4 * i + 1] << 8 |
							       data[4 * i + 2] << 16 |
							       (unsigned int)data[4 * i + 3] << 24);
		utf8_put(&o, cp);
	}
	*o = 0;
	return 0;
}

/* Size of the bytes object at addr, -1 if it is not a bytes object. */
static long long bytes_len(pid_t pid, const struct py_layout *l, const struct facts *f,
			   uint64_t addr)
{
	if (!addr || rd64(pid, addr + l->object_type) != f->bytes_type)
		return -1;
	return (long long)rd64(pid, addr + l->bytes_size);
}

#define MAX_TS 8

/* Thread states of thread tid in every interpreter: a subinterpreter created from a thread
 * keeps a state owned by that thread too. */
static int find_tstates(pid_t pid, const struct py_layout *l, uint64_t runtime, uint64_t tid,
			uint64_t *out, int *ninterp, int *nthreads)
{
	uint64_t interp = rd64(pid, runtime + l->runtime_interp_head), ts;
	int ni, nt, n = 0;

	*nthreads = 0;
	*ninterp = 0;
	for (ni = 0; interp && ni < 16; ni++) {
		ts = rd64(pid, interp + l->interp_tstate_head);
		for (nt = 0; ts && nt < 256; nt++) {
			(*nthreads)++;
			if (rd64(pid, ts + l->tstate_thread_id) == tid && n < MAX_TS)
				out[n++] = ts;
			ts = rd64(pid, ts + l->tstate_next);
		}
		interp = rd64(pid, interp + l->interp_next);
		(*ninterp)++;
	}
	return n;
}

static uint64_t current_frame(pid_t pid, const struct py_layout *l, uint64_t ts)
{
	uint64_t f = rd64(pid, ts + l->tstate_frame);

	if (l->frame_kind == PY_FRAMES_CFRAME && f)
		f = rd64(pid, f + l->cframe_current);
	return f;
}

/* Byte offset of the frame's instruction in its code, as pw_instr computes it. */
static long long frame_instr(pid_t pid, const struct py_layout *l, uint64_t frame, uint64_t code)
{
	int32_t lasti;

	switch (l->lasti_kind) {
	case PY_LASTI_BYTES:
		return mem_read(pid, frame + l->frame_lasti, &lasti, 4) ? -1 : lasti;
	case PY_LASTI_UNITS:
		return mem_read(pid, frame + l->frame_lasti, &lasti, 4) ? -1 : 2LL * lasti;
	default:
		return (long long)(rd64(pid, frame + l->frame_lasti) - (code + l->code_code));
	}
}

static uint8_t frame_owner(pid_t pid, const struct py_layout *l, uint64_t frame)
{
	uint8_t o = 0;

	mem_read(pid, frame + l->frame_owner, &o, 1);
	return o;
}

static void check_str(pid_t pid, const struct py_layout *l, const struct facts *f, uint64_t obj,
		      __u16 off, const char *want, const char *what, const char *py)
{
	char s[128] = "";

	CHECK(!read_str(pid, l, f, rd64(pid, obj + off), s, sizeof(s)) && !strcmp(s, want),
	      "%s: %s reads \"%s\", want \"%s\"", py, what, s, want);
}

static void check_strings(pid_t pid, const struct py_layout *l, const struct facts *f,
			  const char *py)
{
	check_str(pid, l, f, f->code, l->code_name, "marker_\xc3\xa9", "co_name (Latin-1)", py);
	check_str(pid, l, f, f->code, l->code_filename, "<gen-layouts-test>", "co_filename (ASCII)",
		  py);
	if (l->code_qualname)
		check_str(pid, l, f, f->code, l->code_qualname,
			  "outer_\xce\xa9.<locals>.marker_\xc3\xa9", "co_qualname (UCS-2)", py);
	check_str(pid, l, f, f->mod_code, l->code_name, "<module>", "module co_name", py);
}

static void check_code(pid_t pid, const struct py_layout *l, const struct facts *f, const char *py)
{
	unsigned char lt[16], op = 0;
	char hex[40] = "";
	int32_t firstlineno = 0;
	uint64_t lt_obj, cc;
	long long n;
	unsigned int i;

	CHECK(rd64(pid, f->code + l->object_type) == f->code_type,
	      "%s: ob_type of the code object is not the code type", py);
	mem_read(pid, f->code + l->code_firstlineno, &firstlineno, sizeof(firstlineno));
	CHECK((unsigned long long)firstlineno == f->firstlineno, "%s: co_firstlineno %d, want %llu",
	      py, firstlineno, f->firstlineno);
	check_strings(pid, l, f, py);

	lt_obj = rd64(pid, f->code + l->code_linetable);
	n = bytes_len(pid, l, f, lt_obj);
	CHECK(n >= 0 && (unsigned long long)n == f->lt_len, "%s: line table size %lld, want %llu",
	      py, n, f->lt_len);
	if (n > 0 && !mem_read(pid, lt_obj + l->bytes_sval, lt, n < 16 ? n : 16))
		for (i = 0; i < (n < 16 ? n : 16); i++)
			snprintf(hex + 2 * i, 3, "%02x", lt[i]);
	CHECK(!strcmp(hex, f->lt_hex), "%s: line table starts %s, want %s", py, hex, f->lt_hex);

	/* tp_basicsize: sizeof(PyCodeObject) up to 3.10, then up to co_code_adaptive[] */
	CHECK(f->code_basicsize == (l->lasti_kind == PY_LASTI_PTR ? l->code_code : l->code_size),
	      "%s: code type basicsize %llu, layout code_code %u code_size %u", py,
	      f->code_basicsize, l->code_code, l->code_size);
	CHECK(l->code_size >= f->code_basicsize, "%s: code_size %u < basicsize %llu", py,
	      l->code_size, f->code_basicsize);
	CHECK(f->bytes_basicsize == l->bytes_sval + 1u, "%s: bytes basicsize %llu, ob_sval %u", py,
	      f->bytes_basicsize, l->bytes_sval);
	if (l->lasti_kind == PY_LASTI_PTR) {
		cc = f->code + l->code_code;
	} else {
		cc = rd64(pid, f->code + l->code_code);
		n = bytes_len(pid, l, f, cc);
		CHECK(n >= 0 && (unsigned long long)n == f->co_code_len,
		      "%s: co_code size %lld, want %llu", py, n, f->co_code_len);
		cc += l->bytes_sval;
	}
	mem_read(pid, cc + f->call_off, &op, 1);
	CHECK(op == f->call_op, "%s: opcode at the sleep call is %u, want %llu", py, op,
	      f->call_op);
}

/* Walks like pw_walk_frames: marker_\u00e9, then the module, then (3.12+) the C-stack
 * shim frame that _PyEval_EvalFrameDefault pushes on entry, then nothing. */
static void check_chain(pid_t pid, const struct py_layout *l, const struct facts *f, uint64_t frame,
			const char *py)
{
	uint64_t codes[8];
	int n = 0, shims = 0, steps;

	for (steps = 0; frame && steps < 8; steps++) {
		if (l->owner_cstack != PY_NO_OWNER && frame_owner(pid, l, frame) == l->owner_cstack)
			shims++;
		else if (n < 8)
			codes[n++] = rd64(pid, frame + l->frame_code);
		frame = rd64(pid, frame + l->frame_back);
	}
	CHECK(n == 2 && codes[0] == f->code && codes[1] == f->mod_code,
	      "%s: %d Python frames, want marker and module", py, n);
	CHECK(shims == (l->owner_cstack != PY_NO_OWNER), "%s: %d C-stack shim frames, want %d", py,
	      shims, l->owner_cstack != PY_NO_OWNER);
}

static void run_case(const char *py)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	const struct py_layout *l;
	struct child c;
	struct facts f;
	char line[512], why[256];
	uint64_t tss[MAX_TS], ts = 0, frame = 0, code = 0;
	long long instr = -1;
	int ninterp, nthreads, nts, tries, i;

	if (start_python(py, &c)) {
		CHECK(0, "%s: cannot start: %s", py, strerror(errno));
		return;
	}
	if (read_line(c.fd, line, sizeof(line), 20000) || parse_facts(line, &f)) {
		CHECK(0, "%s: no facts from the interpreter", py);
		stop_python(&c);
		return;
	}
	l = py_layout_find(f.version, why, sizeof(why));
	CHECK(l, "%s: no layout: %s", py, why);
	if (!l) {
		stop_python(&c);
		return;
	}

	nts = find_tstates(c.pid, l, f.runtime, f.tid, tss, &ninterp, &nthreads);
	CHECK((unsigned long long)ninterp == f.ninterp, "%s: %d interpreters, want %llu", py,
	      ninterp, f.ninterp);
	CHECK(nts, "%s: no thread state with thread_id %llu among %d", py, f.tid, nthreads);
	CHECK(nthreads >= 2, "%s: %d thread states, the script runs two threads", py, nthreads);
	fprintf(stderr,
		"     %s: 0x%llx with table entry 0x%x; %d interpreters, %d thread states, %d of "
		"them the main thread's\n",
		py, f.version, l->py_version, ninterp, nthreads, nts);

	/* The line comes from report(); wait until marker_\u00e9 sits in time.sleep. */
	for (tries = 0; nts && tries < 250; tries++) {
		for (i = 0; i < nts; i++) {
			ts = tss[i];
			frame = current_frame(c.pid, l, ts);
			code = frame ? rd64(c.pid, frame + l->frame_code) : 0;
			instr = frame ? frame_instr(c.pid, l, frame, code) : -1;
			if (code == f.code)
				break;
		}
		if (code == f.code && instr == (long long)f.call_off)
			break;
		nanosleep(&nap, NULL);
	}
	if (nts && l->tstate_native_id)
		CHECK(rd64(c.pid, ts + l->tstate_native_id) == f.native,
		      "%s: native_thread_id %llu, want %llu", py,
		      (unsigned long long)rd64(c.pid, ts + l->tstate_native_id), f.native);
	CHECK(code == f.code, "%s: current frame's code 0x%llx, want 0x%llx", py,
	      (unsigned long long)code, f.code);
	CHECK(instr == (long long)f.call_off, "%s: instruction offset %lld, want %llu", py, instr,
	      f.call_off);
	CHECK(l->frame_read <= 128, "%s: frame_read %u", py, l->frame_read);

	if (code == f.code) {
		check_code(c.pid, l, &f, py);
		check_chain(c.pid, l, &f, frame, py);
	}
	stop_python(&c);
}

static void test_find(void)
{
	static const uint32_t bad[] = { 0x030710f0, 0x030e00f0, 0x030d00c1,
					0x020712f0, 0x030c00b4, 0x030800a1 };
	static const char *const bad_str[] = { "3.7.16", "3.14.0",   "3.13.0rc1",
					       "2.7.18", "3.12.0b4", "3.8.0a1" };
	static const unsigned int micros[] = { 0, 1, 6, 18, 40 };
	const struct py_layout *l;
	char why[256];
	unsigned int minor, i;

	for (minor = 8; minor <= 13; minor++) {
		for (i = 0; i < sizeof(micros) / sizeof(micros[0]); i++) {
			uint32_t v = PYV(3, minor) | micros[i] << 8 | 0xf0;

			why[0] = 0;
			l = py_layout_find(v, why, sizeof(why));
			CHECK(l && PYV_MINOR_OF(l->py_version) == PYV(3, minor) &&
				      PYV_LEVEL(l->py_version) == 0xF,
			      "3.%u.%u refused: %s", minor, micros[i], why);
			if (!l)
				continue;
			CHECK(l->frame_kind == (minor <= 10   ? PY_FRAMES_OBJECT
						: minor <= 12 ? PY_FRAMES_CFRAME
							      : PY_FRAMES_DIRECT),
			      "3.%u: frame_kind %u", minor, l->frame_kind);
			CHECK(l->lasti_kind == (minor <= 9    ? PY_LASTI_BYTES
						: minor == 10 ? PY_LASTI_UNITS
							      : PY_LASTI_PTR),
			      "3.%u: lasti_kind %u", minor, l->lasti_kind);
			CHECK(l->owner_cstack == (minor >= 12 ? 3 : PY_NO_OWNER),
			      "3.%u: owner_cstack %u", minor, l->owner_cstack);
		}
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		l = py_layout_find(bad[i], why, sizeof(why));
		CHECK(!l && strstr(why, "not supported") && strstr(why, bad_str[i]) &&
			      !strchr(why, '\n'),
		      "0x%08x: accepted or bad reason \"%s\"", bad[i], why);
	}
}

static int newest_micro(const char *versions, unsigned int minor, char *out, size_t len)
{
	DIR *d = opendir(versions);
	struct dirent *e;
	unsigned int maj, min, mic, best = 0;
	int found = 0;
	char tail;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (sscanf(e->d_name, "%u.%u.%u%c", &maj, &min, &mic, &tail) != 3 || maj != 3 ||
		    min != minor || (found && mic < best))
			continue;
		best = mic;
		found = 1;
		snprintf(out, len, "%s/%s/bin/python3.%u", versions, e->d_name, minor);
	}
	closedir(d);
	return found && !access(out, X_OK);
}

static void pyenv_versions(char *out, size_t len)
{
	const char *env = getenv("PYENV_ROOT"), *home = getenv("HOME");
	char root[512] = "";
	FILE *p;

	if (env && *env) {
		snprintf(root, sizeof(root), "%s", env);
	} else if ((p = popen("pyenv root 2>/dev/null", "r"))) {
		if (fgets(root, sizeof(root), p))
			root[strcspn(root, "\n")] = 0;
		pclose(p);
	}
	if (!*root && home)
		snprintf(root, sizeof(root), "%s/.pyenv", home);
	snprintf(out, len, "%s/versions", root);
}

int main(void)
{
	char versions[600], py[1024];
	unsigned int minor, n;

	test_find();
	pyenv_versions(versions, sizeof(versions));
	for (minor = 8; minor <= 13; minor++) {
		n = 0;
		if (newest_micro(versions, minor, py, sizeof(py))) {
			run_case(py);
			n++;
		}
		/* distribution builds (Debian's is a static, non-PIE executable) */
		snprintf(py, sizeof(py), "/usr/bin/python3.%u", minor);
		if (!access(py, X_OK)) {
			run_case(py);
			n++;
		}
		if (!n)
			SKIP("no CPython 3.%u installed (looked in %s and /usr/bin)", minor,
			     versions);
	}
	return unit_exit();
}
