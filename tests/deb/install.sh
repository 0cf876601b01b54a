#!/bin/sh
# make test-deb: the package make deb built, installed with apt into fresh Debian trees
# (debootstrap minbase of bookworm and sid, as tools/trees.sh makes the suite's), and
# used there: apt pulls runtime libraries only (no compiler, no -dev package), and inside
# each tree asyncbpf-record -p PID -d 2 on a Python process of that tree writes a profile
# with the process's own frames. Needs root and the archive; each tree is made anew and
# removed after. Not part of make test: two debootstraps take minutes.
#
#   tests/deb/install.sh DEB [SUITE...]     default suites: bookworm sid
set -eu
mirror="${ASYNCBPF_TREES_MIRROR:-http://deb.debian.org/debian}"
deb=${1:?usage: tests/deb/install.sh DEB [SUITE...]}
shift
suites=${*:-bookworm sid}
[ "$(id -u)" = 0 ] || { echo "test-deb: needs root (debootstrap, chroot, BPF)" >&2; exit 2; }
[ -f "$deb" ] || { echo "test-deb: no package $deb (make deb)" >&2; exit 2; }
fail=0
root=

cleanup() {
	[ -n "$root" ] || return 0
	for m in sys proc; do umount "$root/$m" 2>/dev/null || true; done
	rm -rf "$root"
	root=
}
trap cleanup EXIT INT TERM

for suite in $suites; do
	root=$(mktemp -d /var/tmp/asyncbpf-deb.XXXXXX)
	t0=$(date +%s)
	if ! debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$root.log" 2>&1; then
		echo "FAIL test-deb $suite: debootstrap failed, see $root.log" >&2
		fail=1
		cleanup
		continue
	fi
	cp "$deb" "$root/tmp/"
	chroot "$root" dpkg-query -W -f '${Package}\n' | sort >"$root/tmp/before"
	# the archive is a frozen snapshot: its Release files are past their Valid-Until
	if ! chroot "$root" sh -c "apt-get -o Acquire::Check-Valid-Until=false update -qq &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 >/dev/null &&
		dpkg-query -W -f '\${Package}\n' | sort >/tmp/with-python &&
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$(basename "$deb")" \
		>>"$root.log" 2>&1; then
		echo "FAIL test-deb $suite: apt could not install the package, see $root.log" >&2
		fail=1
		cleanup
		continue
	fi
	pulled=$(chroot "$root" dpkg-query -W -f '${Package}\n' | sort | comm -13 "$root/tmp/with-python" -)
	tools=$(echo "$pulled" | grep -E '^(gcc|g\+\+|clang|cpp|make|binutils|libc6-dev|.*-dev)(-[0-9.]+)?$' || true)
	if [ -n "$tools" ]; then
		echo "FAIL test-deb $suite: the package pulled build tools: $(echo $tools)" >&2
		fail=1
	fi
	mount -t proc proc "$root/proc"
	mount -t sysfs sysfs "$root/sys"
	# a Python process of the tree, then a 2 s profile of it from inside the tree
	if chroot "$root" sh -c '
		python3 -c "
import sys
def spin_for_asyncbpf():
    n = 0
    while True:
        n += 1
print(\"READY\", flush=True)
spin_for_asyncbpf()
" >/tmp/py.out &
		pid=$!
		while ! grep -q READY /tmp/py.out; do sleep 0.1; done
		asyncbpf-record -p $pid -d 2 -o /tmp/profile.collapsed
		rc=$?
		kill $pid
		[ $rc = 0 ] && grep -q "spin_for_asyncbpf" /tmp/profile.collapsed' >>"$root.log" 2>&1; then
		echo "PASS test-deb $suite: installed ($(echo $pulled | wc -w) packages pulled:" \
			"$(echo $pulled)); a profile with the process's frames, in $(($(date +%s) - t0)) s"
	else
		echo "FAIL test-deb $suite: no profile with the process's frames, see $root.log" >&2
		fail=1
	fi
	cleanup
done
exit $fail
