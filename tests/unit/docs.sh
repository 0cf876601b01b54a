#!/bin/sh
# The manual pages, make install and the agent's unit, checked without root in a few
# seconds: every long option a tool's getopt table accepts is a term (.TP) of its page;
# every page renders with groff -ww (and mandoc -T lint, where installed) without a
# warning; --help lists them all (bash completion reads it); make install DESTDIR=TMP writes under TMP only, every file the README lists;
# systemd-analyze verify accepts the installed unit. Run from the top of the tree by
# make unit; MAKE and BUILD (default build) name the make and the build directory.
set -u
MAKE=${MAKE:-make}
BUILD=${BUILD:-build}
TOOLS="asyncbpf-record asyncbpf-report asyncbpf-top asyncbpf-agent asyncbpf-tasks asyncbpf-bench"
fail=0
bad() {
	echo "docs: $*" >&2
	fail=1
}

# The long options of a tool: its longopts table, and the shared ones when it takes them.
longopts() {
	src=tools/$1.c
	if grep -q RECORDER_CLI_LONGOPTS "$src"; then
		sed -n '/define RECORDER_CLI_LONGOPTS/,/^#define/p' user/recorder/recorder_cli.h |
			grep -o '"[a-z][a-z0-9-]*"' | tr -d '"'
	fi
	sed -n '/struct option longopts\[\]/,/};/p' "$src" | grep -o '{ "[a-z][a-z0-9-]*"' |
		sed 's/{ "//;s/"//'
}

# The long options that are the term of a .TP paragraph of a page, as plain names.
terms() {
	awk 'prev == ".TP" { print } { prev = $0 }' "$1" |
		grep -o '\\fB\\-\\-[a-z][a-z0-9\\-]*\\fR' | sed 's/\\fB\\-\\-//;s/\\fR$//;s/\\-/-/g'
}

for t in $TOOLS; do
	page=man/$t.8
	if [ ! -f "$page" ]; then
		bad "$t: no manual page $page"
		continue
	fi
	opts=$(longopts "$t")
	[ -n "$opts" ] || bad "$t: no long options found in tools/$t.c"
	have=$(terms "$page")
	for o in $opts; do
		echo "$have" | grep -qx -- "$o" || bad "$page: option --$o of tools/$t.c is not a .TP term"
	done
	w=$(groff -ww -man -Tutf8 "$page" 2>&1 >/dev/null)
	[ -z "$w" ] || bad "$page: groff -ww: $w"
	if command -v mandoc >/dev/null 2>&1; then
		w=$(mandoc -T lint -W warning "$page" 2>&1)
		[ -z "$w" ] || bad "$page: mandoc: $w"
	fi
	grep -q "See $t(8)" "tools/$t.c" || bad "tools/$t.c: --help does not point to $t(8)"
	# bash completion offers what --help lists (dist/asyncbpf.bash-completion)
	if [ -x "$BUILD/$t" ]; then
		help=$("$BUILD/$t" --help | grep -oE -- '(^ *(-[A-Za-z], )?|\[)--[a-z][a-z0-9-]*' |
			sed 's/.*--//')
		for o in $opts; do
			[ "$o" = help ] && continue
			echo "$help" | grep -qx -- "$o" ||
				bad "$t --help does not list --$o (bash completion reads it there)"
		done
	fi
done

# make install into a temporary root: everything under it, nothing elsewhere
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/root"
stamp="$tmp/stamp"
: >"$stamp"
if ! $MAKE -s --no-print-directory install DESTDIR="$tmp/root" PREFIX=/usr/local OUT="$BUILD" \
	>"$tmp/log" 2>&1; then
	bad "make install DESTDIR failed:"
	cat "$tmp/log" >&2
else
	p=$tmp/root/usr/local
	for f in $TOOLS; do
		[ -x "$p/sbin/$f" ] || bad "install: no $p/sbin/$f"
		[ -f "$p/share/man/man8/$f.8" ] || bad "install: no $p/share/man/man8/$f.8"
		[ -f "$p/share/bash-completion/completions/$f" ] ||
			bad "install: no bash completion for $f"
	done
	for f in lib/asyncbpf/libasyncbpf-memcpy.so lib/asyncbpf/workload.py \
		lib/systemd/system/asyncbpf-agent.service; do
		[ -f "$p/$f" ] || bad "install: no $p/$f"
	done
	# the README's install table names each of these places
	for d in sbin lib/asyncbpf share/man/man8 lib/systemd/system share/bash-completion/completions; do
		grep -q "\$(PREFIX)/$d/" README.md || bad "README.md: the install section does not list $d"
	done
	# nothing written outside the temporary root (in the places an install could reach)
	for d in /usr/local /usr/lib/systemd/system /etc/bash_completion.d; do
		[ -d "$d" ] || continue
		new=$(find "$d" -newer "$stamp" -type f 2>/dev/null | head -3)
		[ -z "$new" ] || bad "make install wrote outside DESTDIR: $new"
	done
	unit=$p/lib/systemd/system/asyncbpf-agent.service
	if [ -f "$unit" ] && command -v systemd-analyze >/dev/null 2>&1; then
		# verify checks that ExecStart's binary exists: point it at the staged one
		mkdir "$tmp/unit"
		sed "s|/usr/local/sbin/|$p/sbin/|" "$unit" >"$tmp/unit/asyncbpf-agent.service"
		w=$(SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no \
			"$tmp/unit/asyncbpf-agent.service" 2>&1)
		[ -z "$w" ] || bad "systemd-analyze verify: $w"
	fi
	if command -v bash >/dev/null 2>&1; then
		for f in "$p"/share/bash-completion/completions/*; do
			bash -n "$f" || bad "$f: not valid bash"
		done
	fi
fi

[ $fail = 0 ] && echo "PASS docs (manual pages, make install, the agent's unit)"
exit $fail
