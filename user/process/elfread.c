// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/elfread.h"

#define MAX_SEGMENTS 256
#define MAX_SCAN     (256u << 20) /* bytes of read-only data searched for PY_VERSION */

struct elf_file {
	int fd;
	Elf *elf;
	uint64_t fsize;
	int type;
	bool msb;
	size_t nseg;
	struct elf_segment seg[MAX_SEGMENTS];
};

static bool add_overflows(uint64_t a, uint64_t b, uint64_t *sum)
{
	return __builtin_add_overflow(a, b, sum);
}

static void load_segments(struct elf_file *e)
{
	size_t n, i;
	GElf_Phdr ph;
	uint64_t end;

	if (elf_getphdrnum(e->elf, &n))
		return;
	for (i = 0; i < n && e->nseg < MAX_SEGMENTS; i++) {
		if (!gelf_getphdr(e->elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		/* A segment that does not fit the file or its address space is ignored. */
		if (ph.p_filesz > ph.p_memsz || add_overflows(ph.p_vaddr, ph.p_memsz, &end) ||
		    add_overflows(ph.p_offset, ph.p_filesz, &end) || end > e->fsize)
			continue;
		e->seg[e->nseg++] = (struct elf_segment){
			.vaddr = ph.p_vaddr,
			.offset = ph.p_offset,
			.filesz = ph.p_filesz,
			.memsz = ph.p_memsz,
			.flags = ph.p_flags,
		};
	}
}

int elf_open(const char *path, struct elf_file **out)
{
	struct elf_file *e;
	struct stat st;
	GElf_Ehdr eh;
	int err;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (e->fd < 0) {
		err = -errno;
		free(e);
		return err;
	}
	if (fstat(e->fd, &st)) {
		err = -errno;
		goto fail;
	}
	err = -ENOEXEC;
	if (!S_ISREG(st.st_mode))
		goto fail;
	e->fsize = (uint64_t)st.st_size;
	/* ELF_C_READ reads with pread, so a file truncated under us cannot SIGBUS. */
	e->elf = elf_begin(e->fd, ELF_C_READ, NULL);
	if (!e->elf || elf_kind(e->elf) != ELF_K_ELF || !gelf_getehdr(e->elf, &eh))
		goto fail;
	e->type = eh.e_type;
	e->msb = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	load_segments(e);
	*out = e;
	return 0;
fail:
	elf_close(e);
	return err;
}

void elf_close(struct elf_file *e)
{
	if (!e)
		return;
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	free(e);
}

int elf_type(const struct elf_file *e)
{
	return e->type;
}

/* Section data that libelf will hand out only if it lies inside the file. */
static Elf_Data *section_data(struct elf_file *e, Elf_Scn *scn, const GElf_Shdr *sh)
{
	uint64_t end;

	if (sh->sh_type == SHT_NOBITS || add_overflows(sh->sh_offset, sh->sh_size, &end) ||
	    end > e->fsize)
		return NULL;
	return elf_getdata(scn, NULL);
}

static int find_in_symtab(struct elf_file *e, Elf_Scn *scn, const GElf_Shdr *sh, const char *name,
			  uint64_t *value, uint64_t *size)
{
	Elf_Data *d = section_data(e, scn, sh);
	size_t entsz = gelf_fsize(e->elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t i, n;
	GElf_Sym sym;
	const char *s;

	if (!d || !entsz)
		return -ENOENT;
	n = d->d_size / entsz;
	for (i = 1; i < n; i++) {
		if (!gelf_getsym(d, (int)i, &sym))
			break;
		if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0)
			continue;
		s = elf_strptr(e->elf, sh->sh_link, sym.st_name);
		if (!s || strcmp(s, name))
			continue;
		*value = sym.st_value;
		*size = sym.st_size;
		return 0;
	}
	return -ENOENT;
}

static int find_symbol_in(struct elf_file *e, Elf64_Word type, const char *name, uint64_t *value,
			  uint64_t *size)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		if (!find_in_symtab(e, scn, &sh, name, value, size))
			return 0;
	}
	return -ENOENT;
}

int elf_symbol(struct elf_file *e, const char *name, unsigned int which, uint64_t *value,
	       uint64_t *size)
{
	if ((which & ELF_DYNSYM) && !find_symbol_in(e, SHT_DYNSYM, name, value, size))
		return 0;
	if ((which & ELF_SYMTAB) && !find_symbol_in(e, SHT_SYMTAB, name, value, size))
		return 0;
	return -ENOENT;
}

int elf_section(struct elf_file *e, const char *name, uint64_t *addr, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *s;

	if (elf_getshdrstrndx(e->elf, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(e->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		s = elf_strptr(e->elf, shstrndx, sh.sh_name);
		if (!s || strcmp(s, name))
			continue;
		*addr = sh.sh_addr;
		*size = sh.sh_size;
		return 0;
	}
	return -ENOENT;
}

bool elf_needs(struct elf_file *e, const char *prefix)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(e->elf, scn))) {
		Elf_Data *d;
		GElf_Dyn dyn;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;

			if (!gelf_getdyn(d, (int)i, &dyn) || dyn.d_tag == DT_NULL)
				break;
			name = dyn.d_tag == DT_NEEDED
				       ? elf_strptr(e->elf, sh.sh_link, dyn.d_un.d_val)
				       : NULL;
			if (name && !strncmp(name, prefix, strlen(prefix)))
				return true;
		}
	}
	return false;
}

int elf_segment_of(struct elf_file *e, uint64_t vaddr, struct elf_segment *seg)
{
	size_t i;

	for (i = 0; i < e->nseg; i++) {
		if (vaddr >= e->seg[i].vaddr && vaddr - e->seg[i].vaddr < e->seg[i].memsz) {
			*seg = e->seg[i];
			return 0;
		}
	}
	return -ENOENT;
}

int elf_vaddr_to_offset(struct elf_file *e, uint64_t vaddr, uint64_t *off)
{
	struct elf_segment s;

	if (elf_segment_of(e, vaddr, &s) || vaddr - s.vaddr >= s.filesz)
		return -ENOENT;
	*off = s.offset + (vaddr - s.vaddr);
	return 0;
}

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	ssize_t n;

	while (len) {
		n = pread(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int elf_read_vaddr(struct elf_file *e, uint64_t vaddr, void *buf, size_t len)
{
	struct elf_segment s;
	uint64_t end;

	if (add_overflows(vaddr, len, &end) || elf_segment_of(e, vaddr, &s) ||
	    end - s.vaddr > s.filesz)
		return -ENOENT;
	return pread_full(e->fd, buf, len, s.offset + (vaddr - s.vaddr));
}

int elf_read_uint(struct elf_file *e, uint64_t vaddr, size_t size, uint64_t *val)
{
	unsigned char b[8];
	size_t i;
	int err;

	if (size != 1 && size != 2 && size != 4 && size != 8)
		return -EINVAL;
	err = elf_read_vaddr(e, vaddr, b, size);
	if (err)
		return err;
	*val = 0;
	for (i = 0; i < size; i++)
		*val |= (uint64_t)b[e->msb ? i : size - 1 - i] << (8 * (size - 1 - i));
	return 0;
}

/* Reads a decimal number of 1-3 digits, at most max. */
static const char *parse_num(const char *s, unsigned int max, unsigned int *v)
{
	int n = 0;

	*v = 0;
	while (*s >= '0' && *s <= '9' && n < 4) {
		*v = *v * 10 + (unsigned int)(*s++ - '0');
		n++;
	}
	return n == 0 || n > 3 || *v > max ? NULL : s;
}

int py_version_parse(const char *s, uint32_t *hex)
{
	unsigned int major, minor, micro, level = 0xf, serial = 0;

	if (!(s = parse_num(s, 255, &major)) || *s++ != '.' || !(s = parse_num(s, 255, &minor)) ||
	    *s++ != '.' || !(s = parse_num(s, 255, &micro)))
		return -EINVAL;
	if (*s == 'a' || *s == 'b' || (s[0] == 'r' && s[1] == 'c')) {
		level = *s == 'a' ? 0xa : *s == 'b' ? 0xb : 0xc;
		s += level == 0xc ? 2 : 1;
		if (!(s = parse_num(s, 15, &serial)))
			return -EINVAL;
	}
	if (*s == '+')
		s++;
	if (*s)
		return -EINVAL;
	*hex = major << 24 | minor << 16 | micro << 8 | level << 4 | serial;
	return 0;
}

struct vscan {
	int major, minor;
	char found[32];
	int nfound; /* distinct matches, 2 means "several" */
};

/* Looks at the tail of the NUL-terminated string ending at end (exclusive). */
static void vscan_string(struct vscan *vs, const char *start, const char *end)
{
	const char *p = end - 1;
	uint32_t hex;
	size_t n;

	/* PY_VERSION may be the tail of a longer string: the linker merges equal tails. */
	for (; p >= start && end - p < (ptrdiff_t)sizeof(vs->found); p--) {
		if (*p < '0' || *p > '9' ||
		    (p > start && ((p[-1] >= '0' && p[-1] <= '9') || p[-1] == '.')))
			continue;
		if (py_version_parse(p, &hex))
			continue;
		if ((vs->major >= 0 && (int)(hex >> 24) != vs->major) ||
		    (vs->minor >= 0 && (int)(hex >> 16 & 0xff) != vs->minor))
			continue;
		n = (size_t)(end - p);
		if (vs->nfound && strcmp(vs->found, p)) {
			vs->nfound = 2;
		} else if (!vs->nfound) {
			memcpy(vs->found, p, n + 1);
			vs->nfound = 1;
		}
	}
}

static void vscan_buf(struct vscan *vs, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nul;

	while (p < end && (nul = memchr(p, 0, (size_t)(end - p)))) {
		if (nul > p)
			vscan_string(vs, p, nul);
		p = nul + 1;
	}
}

static int vscan_range(struct elf_file *e, struct vscan *vs, uint64_t off, uint64_t len,
		       uint64_t *budget)
{
	uint64_t end;
	char *buf;
	int err;

	if (!len || add_overflows(off, len, &end) || end > e->fsize || len > *budget)
		return 0;
	*budget -= len;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	err = pread_full(e->fd, buf, len, off);
	if (!err)
		vscan_buf(vs, buf, len);
	free(buf);
	return err;
}

int elf_py_version_string(struct elf_file *e, int major, int minor, char *buf, size_t len)
{
	struct vscan vs = { .major = major, .minor = minor };
	uint64_t budget = MAX_SCAN;
	Elf_Scn *scn = NULL;
	bool any_section = false;
	GElf_Shdr sh;
	size_t i;
	int err;

	while ((scn = elf_nextscn(e->elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    (sh.sh_flags & (SHF_ALLOC | SHF_WRITE | SHF_EXECINSTR)) != SHF_ALLOC)
			continue;
		any_section = true;
		err = vscan_range(e, &vs, sh.sh_offset, sh.sh_size, &budget);
		if (err)
			return err;
	}
	/* Without section headers, fall back to the read-only segments. */
	for (i = 0; !any_section && i < e->nseg; i++) {
		if (e->seg[i].flags & (PF_W | PF_X))
			continue;
		err = vscan_range(e, &vs, e->seg[i].offset, e->seg[i].filesz, &budget);
		if (err)
			return err;
	}
	if (vs.nfound == 0)
		return -ENOENT;
	if (vs.nfound > 1)
		return -ENOTUNIQ;
	if (strlen(vs.found) >= len)
		return -ENOSPC;
	strcpy(buf, vs.found);
	return 0;
}
