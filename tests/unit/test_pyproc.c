// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* procmaps and pyproc_inspect against real processes: every installed interpreter (ground
 * truth from Python itself), non-Python, exited and kernel processes, and small fake
 * CPythons compiled here. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process/procmaps.h"
#include "cpython/py_layouts.h"
#include "cpython/pyproc.h"
#include "tests/unit/pydir.h"
#include "tests/unit/unit.h"

static char tmpdir[] = "/tmp/test_pyproc.XXXXXX";

struct child {
	pid_t pid;
	int in, out; /* its stdin (closing it ends the child) and stdout */
};

/* Starts argv with pipes on stdin and stdout; env entries are added to the environment. */
static int spawn(char *const argv[], const char *env, struct child *c)
{
	int in[2], out[2];

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		if (env)
			putenv((char *)env);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	c->in = in[1];
	c->out = out[0];
	return 0;
}

/* One line of the child's output, waiting up to 10 s. */
static int read_line(struct child *c, char *buf, size_t len)
{
	struct pollfd p = { .fd = c->out, .events = POLLIN };
	size_t n = 0;
	ssize_t r;

	while (n + 1 < len) {
		if (poll(&p, 1, 10000) <= 0)
			return -1;
		r = read(c->out, buf + n, 1);
		if (r <= 0)
			return -1;
		if (buf[n] == '\n')
			break;
		n++;
	}
	buf[n] = '\0';
	return 0;
}

static void stop(struct child *c)
{
	close(c->in);
	close(c->out);
	kill(c->pid, SIGKILL);
	waitpid(c->pid, NULL, 0);
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -1;
	err = fputs(text, f) < 0;
	return fclose(f) || err ? -1 : 0;
}

/* ---- procmaps ---- */

/* A child stopped before it execs /bin/sleep: its maps then, compared with its maps
 * before and after the exec (same pid, same start time: only the maps tell). */
static void test_exec_since(void)
{
	struct procmaps then;
	int st, rc;
	pid_t pid = fork();

	if (pid == 0) {
		raise(SIGSTOP);
		execl("/bin/sleep", "sleep", "5", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0 && waitpid(pid, &st, WUNTRACED) == pid && WIFSTOPPED(st), "stopped child");
	if (pid <= 0)
		return;
	rc = procmaps_read(pid, &then);
	CHECK(!rc, "maps of the child: %d", rc);
	if (!rc) {
		char exe[PATH_MAX], link[64];
		ssize_t n = 0;

		rc = procmaps_exec_since(pid, &then);
		CHECK(rc == 0, "no exec yet: %d", rc);
		kill(pid, SIGCONT);
		snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
		for (int i = 0; i < 500; i++) {
			n = readlink(link, exe, sizeof(exe) - 1);
			if (n > 0 && (exe[n] = 0, strstr(exe, "sleep")))
				break;
			usleep(10000);
		}
		CHECK(n > 0 && strstr(exe, "sleep"), "the child exec'd sleep");
		rc = procmaps_exec_since(pid, &then);
		CHECK(rc == 1, "exec'd: %d", rc);
		procmaps_free(&then);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	rc = procmaps_exec_since(pid, &then);
	CHECK(rc == -ESRCH || rc == -ENOENT, "gone: %d", rc);
}

static void test_procmaps_self(void)
{
	char exe[PATH_MAX], path[PATH_MAX];
	const struct procmap *m;
	struct procmaps maps;
	struct stat st;
	ssize_t n;
	void *p;
	int fd, err, stackvar = 0;
	long page = sysconf(_SC_PAGESIZE);

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0, "readlink");
	if (n <= 0)
		return;
	exe[n] = '\0';
	/* a file whose name needs the whole rest of the line, mapped at an offset */
	snprintf(path, sizeof(path), "%s/a map (x) %s", tmpdir, "y");
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && !ftruncate(fd, 4 * page) && !fstat(fd, &st), "create %s", path);
	if (fd < 0)
		return;
	p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 2 * page);
	CHECK(p != MAP_FAILED, "mmap");
	err = procmaps_read(getpid(), &maps);
	CHECK(!err && maps.n > 0, "procmaps_read: %d", err);
	if (!err) {
		m = procmaps_find(&maps, (uintptr_t)&test_procmaps_self);
		CHECK(m && m->perms[2] == 'x' && !strcmp(m->path, exe) && !m->deleted,
		      "code of this function: %s", m ? m->path : "unmapped");
		m = procmaps_find(&maps, (uintptr_t)&stackvar);
		CHECK(m && !strcmp(m->path, "[stack]") && m->perms[0] == 'r' && m->perms[1] == 'w',
		      "stack: %s", m ? m->path : "unmapped");
		m = procmaps_find(&maps, (uintptr_t)p);
		CHECK(m && !strcmp(m->path, path) && m->offset == (uint64_t)(2 * page) &&
			      m->start == (uintptr_t)p && m->end - m->start == (uint64_t)page &&
			      m->inode == st.st_ino && m->dev_major == major(st.st_dev) &&
			      m->dev_minor == minor(st.st_dev) && !strcmp(m->perms, "r--s") &&
			      !m->deleted,
		      "mapped file: '%s' off %#llx", m ? m->path : "",
		      m ? (unsigned long long)m->offset : 0ULL);
		procmaps_free(&maps);
	}
	unlink(path);
	err = procmaps_read(getpid(), &maps);
	if (!err) {
		m = procmaps_find(&maps, (uintptr_t)p);
		CHECK(m && m->deleted && !strcmp(m->path, path), "deleted file: '%s' deleted %d",
		      m ? m->path : "", m ? m->deleted : -1);
		procmaps_free(&maps);
	}
	munmap(p, (size_t)page);
	close(fd);
	CHECK(procmaps_read(INT_MAX, &maps) == -ENOENT, "maps of a missing pid");
}

static void test_procmaps_parse(void)
{
	static const char good[] =
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
		"7f2c4a000000-7f2c4a021000 rw-p 00000000 00:00 0 \n"
		"7ffd5e1c3000-7ffd5e1e4000 rw-p 00000000 00:00 0                          [stack]\n"
		"7f2c4b000000-7f2c4b001000 r--p 0001a000 fd:01 99 /tmp/x y (deleted)\n"
		"7f2c4c000000-7f2c4c001000 r--p 00000000 103:0a 18446744073709551615\n";
	char line[PATH_MAX + 300];
	struct procmaps m;
	size_t cut;
	int err;

#define PARSE(s) procmaps_parse(s, sizeof(s) - 1, &m)

	err = procmaps_parse(good, sizeof(good) - 1, &m);
	CHECK(!err && m.n == 5, "parse: %d, %zu entries", err, m.n);
	if (!err && m.n == 5) {
		CHECK(m.v[0].start == 0x400000 && m.v[0].end == 0x452000 &&
			      !strcmp(m.v[0].perms, "r-xp") && m.v[0].dev_major == 8 &&
			      m.v[0].dev_minor == 2 && m.v[0].inode == 173521 &&
			      !strcmp(m.v[0].path, "/usr/bin/dbus-daemon"),
		      "line 1");
		CHECK(!strcmp(m.v[1].path, "") && m.v[1].inode == 0, "anonymous: '%s'",
		      m.v[1].path);
		CHECK(!strcmp(m.v[2].path, "[stack]"), "stack: '%s'", m.v[2].path);
		CHECK(m.v[3].deleted && !strcmp(m.v[3].path, "/tmp/x y") &&
			      m.v[3].offset == 0x1a000 && m.v[3].dev_major == 0xfd,
		      "deleted: '%s'", m.v[3].path);
		CHECK(m.v[4].dev_major == 0x103 && m.v[4].dev_minor == 10 &&
			      m.v[4].inode == UINT64_MAX && !m.v[4].path[0],
		      "big numbers");
		procmaps_free(&m);
	}
	CHECK(!procmaps_parse("", 0, &m) && m.n == 0, "empty");
	procmaps_free(&m);
	CHECK(PARSE("garbage\n") == -EINVAL, "garbage");
	CHECK(PARSE("1000-0fff r-xp 0 0:0 0\n") == -EINVAL, "end < start");
	CHECK(PARSE("1000-2000 r-xp 0 0:0 99999999999999999999\n") == -EINVAL, "inode overflow");
	CHECK(PARSE("11112222333344445-2 r-xp 0 0:0 0\n") == -EINVAL, "address overflow");
	CHECK(PARSE("1000-2000 r-xp 0 0:0 0\0/x\n") == -EINVAL, "embedded NUL");
	CHECK(PARSE("1000-2000 r-x 0 0:0 0\n") == -EINVAL, "short perms");
	CHECK(PARSE("1000-2000 r-xp 0 0:0 0x\n") == -EINVAL, "junk after inode");
	/* an overlong line; input cut short without a newline */
	snprintf(line, sizeof(line), "1000-2000 r-xp 0 0:0 1 /%0*d\n", PATH_MAX + 200, 0);
	CHECK(procmaps_parse(line, strlen(line), &m) == -EINVAL, "overlong line");
	cut = (size_t)(strstr(good, "/usr/bi") - good) + 7;
	CHECK(!procmaps_parse(good, cut, &m) && m.n == 1 && !strcmp(m.v[0].path, "/usr/bi"),
	      "cut: %zu", m.n);
	procmaps_free(&m);
}

/* ---- interpreters ---- */

/* Python's own view: runtime and PyCode_Type addresses, version, comm, start time, and
 * the file mapped where its C API code is. */
static const char truth_py[] =
	"import sys, platform, ctypes\n"
	"def addr(name):\n"
	"    for lib in (ctypes.pythonapi, ctypes.CDLL(None)):\n"
	"        try:\n"
	"            return ctypes.addressof(ctypes.c_char.in_dll(lib, name))\n"
	"        except ValueError:\n"
	"            pass\n"
	"    return 0\n"
	"f = ctypes.cast(ctypes.pythonapi.Py_GetVersion, ctypes.c_void_p).value\n"
	"for l in open('/proc/self/maps'):\n"
	"    m = l.split(None, 5)\n"
	"    s, e = [int(x, 16) for x in m[0].split('-')]\n"
	"    if s <= f < e:\n"
	"        binary = m[5].rstrip('\\n')\n"
	"comm = open('/proc/self/comm').read().strip()\n"
	"start = open('/proc/self/stat').read().rsplit(')', 1)[1].split()[19]\n"
	"sys.stdout.write('%d %s %x %x %s %s %s\\n' % (sys.hexversion, platform.python_version(),\n"
	"    addr('_PyRuntime'), id(type(addr.__code__)), start, comm, binary))\n"
	"sys.stdout.flush()\n"
	"sys.stdin.read()\n";

struct truth {
	unsigned int hexversion;
	char version[32], comm[64], binary[PATH_MAX];
	unsigned long long runtime, code_type, start;
};

static int run_truth(const char *python, const char *env, struct child *c, struct truth *tr)
{
	char script[PATH_MAX], line[PATH_MAX + 256];
	char *argv[] = { (char *)python, script, NULL };
	int n;

	snprintf(script, sizeof(script), "%s/truth.py", tmpdir);
	if (spawn(argv, env, c))
		return -1;
	if (read_line(c, line, sizeof(line))) {
		stop(c);
		return -1;
	}
	n = -1;
	if (sscanf(line, "%u %31s %llx %llx %llu %63s %n", &tr->hexversion, tr->version,
		   &tr->runtime, &tr->code_type, &tr->start, tr->comm, &n) != 6 ||
	    n < 0) {
		stop(c);
		return -1;
	}
	snprintf(tr->binary, sizeof(tr->binary), "%s", line + n);
	return 0;
}

static bool supported(unsigned int hexversion)
{
	return hexversion >= 0x03080000 && hexversion < 0x030e0000;
}

static void check_ok(const char *what, pid_t pid, const struct truth *tr, const char *binary)
{
	struct py_target t;
	char why[512];
	enum pyproc_status st = pyproc_inspect(pid, &t, why, sizeof(why));

	CHECK(st == PYPROC_OK, "%s: status %d: %s", what, st, why);
	if (st != PYPROC_OK)
		return;
	CHECK(t.pid == pid, "%s: pid %d", what, t.pid);
	CHECK(t.proc.runtime == tr->runtime, "%s: runtime %#llx, Python says %#llx", what,
	      (unsigned long long)t.proc.runtime, tr->runtime);
	CHECK(t.proc.code_type == tr->code_type, "%s: PyCode_Type %#llx, Python says %#llx", what,
	      (unsigned long long)t.proc.code_type, tr->code_type);
	CHECK(t.version == tr->hexversion, "%s: version %#x, Python says %#x", what, t.version,
	      tr->hexversion);
	CHECK(!strcmp(t.version_str, tr->version), "%s: version '%s', Python says '%s'", what,
	      t.version_str, tr->version);
	CHECK(!strcmp(t.comm, tr->comm), "%s: comm '%s', Python says '%s'", what, t.comm, tr->comm);
	CHECK(t.start_time == tr->start, "%s: start %llu, Python says %llu", what, t.start_time,
	      tr->start);
	CHECK(!strcmp(t.binary, binary), "%s: binary '%s', expected '%s'", what, t.binary, binary);
	CHECK(PYV_MINOR_OF(t.proc.layout.py_version) == PYV_MINOR_OF(tr->hexversion),
	      "%s: layout of %#x", what, t.proc.layout.py_version);
}

static void check_unsupported(const char *what, pid_t pid, const char *version)
{
	struct py_target t;
	char why[512], pidstr[32];
	enum pyproc_status st = pyproc_inspect(pid, &t, why, sizeof(why));

	snprintf(pidstr, sizeof(pidstr), "pid %d:", (int)pid);
	CHECK(st == PYPROC_UNSUPPORTED, "%s: status %d: %s", what, st, why);
	CHECK(!strncmp(why, pidstr, strlen(pidstr)) && strstr(why, version) &&
		      strstr(why, "not supported"),
	      "%s: message '%s'", what, why);
}

/* True when python is a supported version that ran its checks. */
static bool check_interpreter(const char *python, int *seen_minor)
{
	struct child c;
	struct truth tr;

	if (run_truth(python, NULL, &c, &tr)) {
		CHECK(0, "%s did not report its ground truth", python);
		return false;
	}
	if (tr.hexversion >> 24 == 3 && (tr.hexversion >> 16 & 0xff) < 16)
		seen_minor[tr.hexversion >> 16 & 0xff]++;
	else if (tr.hexversion >> 24 == 2)
		seen_minor[0]++;
	if (supported(tr.hexversion))
		check_ok(python, c.pid, &tr, tr.binary);
	else
		check_unsupported(python, c.pid, tr.version);
	stop(&c);
	return supported(tr.hexversion);
}

/* Checks every interpreter; last_shared gets a supported pyenv one. */
static void test_interpreters(char *last_shared, size_t len)
{
	static const char *const pats[] = { "%s/versions/*/bin/python[0-9].[0-9]",
					    "%s/versions/*/bin/python[0-9].[0-9][0-9]",
					    "/usr/bin/python[0-9].[0-9]%.0s",
					    "/usr/bin/python[0-9].[0-9][0-9]%.0s" };
	char root[PATH_MAX], pat[PATH_MAX + 64];
	int seen[16] = { 0 }, minor;
	size_t i, j;
	glob_t g;

	snprintf(pat, sizeof(pat), "%s/truth.py", tmpdir);
	if (write_file(pat, truth_py)) {
		CHECK(0, "cannot write %s", pat);
		return;
	}
	pyenv_root(root, sizeof(root));
	for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		snprintf(pat, sizeof(pat), pats[i], root);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (j = 0; j < g.gl_pathc; j++)
			if (check_interpreter(g.gl_pathv[j], seen) && i < 2)
				snprintf(last_shared, len, "%s", g.gl_pathv[j]);
		globfree(&g);
	}
	for (minor = 6; minor <= 13; minor++)
		if (!seen[minor])
			SKIP("no Python 3.%d installed (pyenv root %s, /usr/bin)", minor, root);
	if (!seen[0])
		SKIP("no Python 2 installed (pyenv root %s, /usr/bin)", root);
}

/* A pyenv interpreter whose libpython was deleted after it was loaded. */
/* A shared-libpython CPython stopped at its exec, before the loader mapped libpython:
 * not ready yet, not "not Python" (which would drop it for good). */
static void test_before_loader(const char *python)
{
	char why[512];
	struct py_target t;
	enum pyproc_status st;
	int status;
	pid_t pid;

	if (!*python) {
		SKIP("no pyenv CPython with a shared libpython");
		return;
	}
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execl(python, python, "-c", "pass", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFSTOPPED(status),
	      "%s did not stop at its exec", python);
	if (pid <= 0)
		return;
	st = pyproc_inspect(pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_NOT_READY && strstr(why, "libpython that is not mapped yet"),
	      "%s before the loader: status %d (%s)", python, st, why);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
}

static void test_deleted_lib(const char *python)
{
	char libdir[256], cmd[2 * PATH_MAX], lib[PATH_MAX], env[300], exp[PATH_MAX + 256];
	struct truth tr;
	struct child c;
	FILE *p;

	if (!python[0]) {
		SKIP("no pyenv interpreter for the deleted-libpython case");
		return;
	}
	snprintf(libdir, sizeof(libdir), "%s/lib", tmpdir);
	snprintf(cmd, sizeof(cmd),
		 "'%s' -c 'import sysconfig; print(sysconfig.get_config_var(\"LIBDIR\") + \"/\" + "
		 "sysconfig.get_config_var(\"INSTSONAME\"))'",
		 python);
	p = popen(cmd, "r");
	lib[0] = '\0';
	if (p) {
		if (!fgets(lib, sizeof(lib), p))
			lib[0] = '\0';
		lib[strcspn(lib, "\n")] = '\0';
		pclose(p);
	}
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s' '%s/'", libdir, lib, libdir);
	if (!strchr(lib, '/') || access(lib, R_OK) || system(cmd)) {
		SKIP("%s: no shared libpython to copy ('%s')", python, lib);
		return;
	}
	snprintf(env, sizeof(env), "LD_LIBRARY_PATH=%s", libdir);
	if (run_truth(python, env, &c, &tr)) {
		CHECK(0, "%s with a copied libpython did not answer", python);
		return;
	}
	snprintf(exp, sizeof(exp), "%s/%s", libdir, strrchr(lib, '/') + 1);
	CHECK(!strcmp(tr.binary, exp), "copy not loaded: %s", tr.binary);
	CHECK(!unlink(exp), "unlink %s", exp);
	if (supported(tr.hexversion))
		check_ok("deleted libpython", c.pid, &tr, exp);
	else
		SKIP("%s is not a supported version", python);
	stop(&c);
}

/* ---- other processes ---- */

static void test_not_python(void)
{
	char *argv[] = { "sleep", "30", NULL };
	struct py_target t;
	struct child c;
	char why[512];
	enum pyproc_status st;

	if (spawn(argv, NULL, &c)) {
		CHECK(0, "cannot start sleep");
		return;
	}
	usleep(100000); /* let it exec */
	st = pyproc_inspect(c.pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_NOT_PYTHON, "sleep: status %d: %s", st, why);
	stop(&c);
	st = pyproc_inspect(getpid(), &t, why, sizeof(why));
	CHECK(st == PYPROC_NOT_PYTHON, "this test: status %d: %s", st, why);
}

static void test_gone(void)
{
	struct py_target t;
	char why[512], path[64], stat[256] = "";
	enum pyproc_status st;
	pid_t pid = fork();
	int i, fd;
	ssize_t n;

	if (pid == 0)
		_exit(0);
	/* a zombie until reaped */
	for (i = 0; i < 200; i++) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, stat, sizeof(stat) - 1) : -1;
		if (fd >= 0)
			close(fd);
		stat[n > 0 ? n : 0] = '\0';
		if (strstr(stat, ") Z "))
			break;
		usleep(10000);
	}
	CHECK(strstr(stat, ") Z "), "child did not become a zombie: %s", stat);
	st = pyproc_inspect(pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_GONE, "zombie: status %d: %s", st, why);
	waitpid(pid, NULL, 0);
	st = pyproc_inspect(pid, &t, why, sizeof(why));
	snprintf(path, sizeof(path), "pid %d: ", (int)pid);
	CHECK(st == PYPROC_GONE && !strncmp(why, path, strlen(path)), "reaped: status %d: %s", st,
	      why);
	st = pyproc_inspect(-1, &t, why, sizeof(why));
	CHECK(st == PYPROC_GONE, "pid -1: status %d", st);
}

static void test_kernel_thread(void)
{
	char path[64], buf[4096];
	struct py_target t;
	char why[512];
	enum pyproc_status st;
	pid_t pid;
	int fd;
	ssize_t n;

	/* /proc/PID/status says "Kthread: 1" (Linux 6.4+) */
	for (pid = 1; pid < 4096; pid++) {
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		if (strstr(buf, "\nKthread:\t1\n"))
			break;
	}
	if (pid == 4096) {
		SKIP("no kernel thread visible (or no Kthread field in /proc/PID/status)");
		return;
	}
	st = pyproc_inspect(pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_NOT_PYTHON, "kernel thread %d: status %d: %s", (int)pid, st, why);
}

/* ---- fake CPythons ---- */

/* _PyRuntime and Py_Version and nothing else; prints where _PyRuntime is. */
static const char fake_c[] =
	"#include <stdio.h>\n"
	"#include <unistd.h>\n"
	"#ifdef DEBUG_HEAD\n"
	"struct head { char cookie[8]; unsigned long version, free_threaded; };\n"
	"__attribute__((section(\".PyRuntime\"))) struct head _PyRuntime[512] =\n"
	"\t{ { \"xdebugpy\", VERSION, FREE_THREADED } };\n"
	"#elif defined(IN_SECTION)\n"
	"__attribute__((section(\".PyRuntime\"))) char _PyRuntime[8192] = { 1 };\n"
	"#else\n"
	"char _PyRuntime[8192];\n"
	"#endif\n"
	"const unsigned long Py_Version = VERSION;\n"
	"int main(void)\n"
	"{\n"
	"\tchar b;\n"
	"\tprintf(\"%lx\\n\", (unsigned long)_PyRuntime);\n"
	"\tfflush(stdout);\n"
	"\twhile (read(0, &b, 1) > 0)\n"
	"\t\t;\n"
	"\treturn 0;\n"
	"}\n";

static int build_fake(const char *name, const char *flags, char *bin, size_t len)
{
	char src[PATH_MAX], cmd[3 * PATH_MAX];

	snprintf(src, sizeof(src), "%s/fake.c", tmpdir);
	snprintf(bin, len, "%s/%s", tmpdir, name);
	if (write_file(src, fake_c))
		return -1;
	snprintf(cmd, sizeof(cmd), "gcc -O0 %s -o '%s' '%s'", flags, bin, src);
	return system(cmd) ? -1 : 0;
}

static int start_fake(const char *bin, struct child *c, unsigned long long *runtime)
{
	char *argv[] = { (char *)bin, NULL };
	char line[64];

	if (spawn(argv, NULL, c))
		return -1;
	if (read_line(c, line, sizeof(line)) || sscanf(line, "%llx", runtime) != 1) {
		stop(c);
		return -1;
	}
	return 0;
}

static void test_fake_314(void)
{
	unsigned long long runtime;
	char bin[PATH_MAX];
	struct child c;

	if (build_fake("python3.14", "-DIN_SECTION -DVERSION=0x030E00F0UL", bin, sizeof(bin))) {
		SKIP("gcc cannot build the fake CPython 3.14");
		return;
	}
	if (start_fake(bin, &c, &runtime)) {
		CHECK(0, "fake 3.14 did not start");
		return;
	}
	check_unsupported("fake 3.14", c.pid, "3.14.0");
	stop(&c);
}

/* _Py_DebugOffsets whose head says what it is: a line without a table, a free-threaded build
 * of a line with one. Both refused with one line, whatever follows the head. */
static void check_fake_head(const char *flags, const char *what, const char *expect)
{
	unsigned long long runtime;
	char bin[PATH_MAX], why[512];
	struct py_target t;
	enum pyproc_status st;
	struct child c;

	if (build_fake("python3", flags, bin, sizeof(bin))) {
		SKIP("gcc cannot build %s", what);
		return;
	}
	if (start_fake(bin, &c, &runtime)) {
		CHECK(0, "%s did not start", what);
		return;
	}
	st = pyproc_inspect(c.pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_UNSUPPORTED && strstr(why, expect) && strstr(why, "not supported") &&
		      !strchr(why, '\n'),
	      "%s: status %d: '%s', want '%s'", what, st, why, expect);
	stop(&c);
}

/* A runtime that is mapped but not initialised, until we set interpreters.head. */
static void check_fake_supported(const char *name, const char *flags, const char *what)
{
	const uint32_t version = 0x030c01f0; /* 3.12.1 carries no self-description to check */
	unsigned long long runtime, head = 0x1000;
	const struct py_layout *l;
	char bin[PATH_MAX], fl[512], why[512];
	struct iovec local = { &head, sizeof(head) }, remote;
	struct py_target t;
	enum pyproc_status st;
	struct child c;

	l = py_layout_find(version, why, sizeof(why));
	if (!l) {
		SKIP("%s: no layout for 3.12 (%s)", what, why);
		return;
	}
	snprintf(fl, sizeof(fl), "%s -DVERSION=%#xUL", flags, version);
	if (build_fake(name, fl, bin, sizeof(bin))) {
		SKIP("gcc cannot build %s (%s)", what, fl);
		return;
	}
	if (start_fake(bin, &c, &runtime)) {
		CHECK(0, "%s did not start", what);
		return;
	}
	st = pyproc_inspect(c.pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_NOT_READY, "%s: status %d: %s", what, st, why);
	remote.iov_base = (void *)(uintptr_t)(runtime + l->runtime_interp_head);
	remote.iov_len = sizeof(head);
	CHECK(process_vm_writev(c.pid, &local, 1, &remote, 1, 0) == sizeof(head),
	      "%s: writing interpreters.head", what);
	st = pyproc_inspect(c.pid, &t, why, sizeof(why));
	CHECK(st == PYPROC_OK, "%s: status %d: %s", what, st, why);
	if (st == PYPROC_OK) {
		CHECK(t.proc.runtime == runtime, "%s: runtime %#llx, it says %#llx", what,
		      (unsigned long long)t.proc.runtime, runtime);
		CHECK(t.version == version && !strcmp(t.version_str, "3.12.1"), "%s: version %s",
		      what, t.version_str);
		CHECK(t.proc.code_type == 0, "%s: PyCode_Type %#llx", what,
		      (unsigned long long)t.proc.code_type);
		CHECK(!strcmp(t.binary, bin), "%s: binary %s", what, t.binary);
		CHECK(!strncmp(t.comm, name, sizeof(t.comm) - 1), "%s: comm %s", what, t.comm);
	}
	stop(&c);
}

int main(void)
{
	char cmd[PATH_MAX], last_shared[PATH_MAX] = "";

	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_procmaps_self();
	test_procmaps_parse();
	test_exec_since();
	if (geteuid() != 0) {
		SKIP("not root: cannot read other processes' memory and maps");
	} else {
		test_interpreters(last_shared, sizeof(last_shared));
		test_deleted_lib(last_shared);
		test_before_loader(last_shared);
		test_not_python();
		test_gone();
		test_kernel_thread();
		test_fake_314();
		check_fake_head("-DDEBUG_HEAD -DVERSION=0x031000F0UL -DFREE_THREADED=0",
				"fake 3.16",
				"no table for its _Py_DebugOffsets (version 0x031000f0");
		check_fake_head("-DDEBUG_HEAD -DVERSION=0x030F02F0UL -DFREE_THREADED=1",
				"fake free-threaded 3.15", "3.15.2 is a free-threaded build");
		check_fake_head("-DDEBUG_HEAD -DVERSION=0x030E0AF0UL -DFREE_THREADED=1",
				"fake free-threaded 3.14", "3.14.10 is a free-threaded build");
		/* renamed and stripped: found through the .PyRuntime section alone */
		check_fake_supported("myservice",
				     "-s -DIN_SECTION -Wl,--export-dynamic-symbol=Py_Version",
				     "renamed stripped fake 3.12");
		/* _PyRuntime in .bss, as in 3.8 and 3.9 */
		check_fake_supported("python3.12", "", "fake 3.12 with .bss runtime");
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd))
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return unit_exit();
}
