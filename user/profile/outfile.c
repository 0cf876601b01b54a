// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "profile/outfile.h"

/* A directory opened without following any symlink on the way: a symlink an
 * unprivileged user planted (in /tmp, say) must not redirect a root write. */
static int resolve_dir(const char *dir, int flags, char *why, size_t whylen)
{
	struct open_how how = {
		.flags = flags | O_DIRECTORY | O_CLOEXEC,
		.resolve = RESOLVE_NO_SYMLINKS,
	};
	int fd;

	fd = (int)syscall(SYS_openat2, AT_FDCWD, dir, &how, sizeof(how));
	if (fd < 0 && errno == ENOSYS)
		fd = open(dir, flags | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ELOOP)
		snprintf(why, whylen,
			 "output directory %s is reached through a symlink; give its real path",
			 dir);
	else if (fd < 0)
		snprintf(why, whylen, "output directory %s: %s", dir, strerror(errno));
	return fd;
}

int outfile_opendir(const char *dir, char *why, size_t whylen)
{
	return resolve_dir(dir, O_RDONLY, why, whylen);
}

/* The directory part of path, opened as resolve_dir() does. */
static int open_dir(const char *path, char *base, size_t baselen, char *why, size_t whylen)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];

	if (slash && slash[1] == 0) {
		snprintf(why, whylen, "output %s names a directory", path);
		return -1;
	}
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else if ((size_t)(slash - path) >= sizeof(dir)) {
		snprintf(why, whylen, "output path too long");
		return -1;
	} else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (snprintf(base, baselen, "%s", slash ? slash + 1 : path) >= (int)baselen ||
	    !strcmp(base, ".") || !strcmp(base, "..")) {
		snprintf(why, whylen, "bad output file name %s", path);
		return -1;
	}
	return resolve_dir(dir, O_PATH, why, whylen);
}

/* The final name may be absent or a regular file, which rename replaces. */
static int check_final(int dirfd, const char *base, const char *path, char *why, size_t whylen)
{
	struct stat st;

	if (fstatat(dirfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		snprintf(why, whylen, "output %s: %s", path, strerror(errno));
		return -1;
	}
	if (S_ISLNK(st.st_mode)) {
		snprintf(why, whylen, "output %s is a symlink; not writing through or over it",
			 path);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, whylen, "output %s exists and is not a regular file", path);
		return -1;
	}
	return 0;
}

int outfile_open(struct outfile *o, const char *path, mode_t mode, char *why, size_t whylen)
{
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->dirfd = -1;
	o->dirfd = open_dir(path, o->base, sizeof(o->base), why, whylen);
	if (o->dirfd < 0)
		return -1;
	if (check_final(o->dirfd, o->base, path, why, whylen))
		goto fail;
	if (snprintf(o->tmp, sizeof(o->tmp), ".%s.tmp.%d", o->base, (int)getpid()) >=
	    (int)sizeof(o->tmp)) {
		snprintf(why, whylen, "output file name too long: %s", path);
		goto fail;
	}
	fd = openat(o->dirfd, o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(why, whylen, "cannot create a temporary file next to %s: %s", path,
			 strerror(errno));
		o->tmp[0] = 0;
		goto fail;
	}
	/* exactly the mode asked for, whatever the umask */
	if (fchmod(fd, mode) || !(o->f = fdopen(fd, "w"))) {
		snprintf(why, whylen, "cannot write %s: %s", path, strerror(errno));
		close(fd);
		goto fail;
	}
	return 0;
fail:
	outfile_abort(o);
	return -1;
}

void outfile_abort(struct outfile *o)
{
	if (o->f)
		fclose(o->f);
	o->f = NULL;
	if (o->dirfd >= 0) {
		if (o->tmp[0])
			unlinkat(o->dirfd, o->tmp, 0);
		close(o->dirfd);
	}
	o->dirfd = -1;
	o->tmp[0] = 0;
}

int outfile_commit(struct outfile *o, char *why, size_t whylen)
{
	int err = fflush(o->f) || ferror(o->f) || fsync(fileno(o->f)) ? errno : 0;

	if (fclose(o->f) && !err)
		err = errno;
	o->f = NULL;
	if (err) {
		snprintf(why, whylen, "cannot write %s: %s", o->path, strerror(err ? err : EIO));
		outfile_abort(o);
		return -1;
	}
	/* checked again: the name may have changed while recording */
	if (check_final(o->dirfd, o->base, o->path, why, whylen)) {
		outfile_abort(o);
		return -1;
	}
	if (renameat(o->dirfd, o->tmp, o->dirfd, o->base)) {
		snprintf(why, whylen, "cannot write %s: %s", o->path, strerror(errno));
		outfile_abort(o);
		return -1;
	}
	o->tmp[0] = 0;
	outfile_abort(o);
	return 0;
}

int outfile_check(const char *path, char *why, size_t whylen)
{
	struct outfile o;
	struct stat st;

	/* a device or FIFO is written in place (see writer_write_meta) */
	if (!lstat(path, &st) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode) &&
	    !S_ISDIR(st.st_mode))
		return 0;

	if (outfile_open(&o, path, OUTFILE_MODE, why, whylen))
		return -1;
	outfile_abort(&o);
	return 0;
}
