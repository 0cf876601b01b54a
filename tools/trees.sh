#!/bin/sh
# Creates and caches the Debian trees whose interpreters the integration suite runs
# (Debian's own stripped builds, in a chroot): sid with python3.13, 3.14, 3.15, uvloop,
# aiohttp, numpy and the service frameworks (FastAPI, uvicorn, anyio 4, asyncpg, redis);
# trixie with its python3.13.
#
#   tools/trees.sh            build the trees that are missing or older than a week
#   tools/trees.sh --force    build them all again
#
# Cache: ${ASYNCBPF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/asyncbpf}/trees/. NAME is a
# symlink to NAME.STAMP, a tree that debootstrap finished: a tree is built under a
# temporary name and only then linked into place, so NAME is never a half tree. When a
# build fails, NAME.failed holds the one-line reason (the suite reports it when it skips
# NAME's interpreters) and an existing older tree stays in use. NAME.STAMP/.asyncbpf-tree
# records when it was built, how long that took and its size.
# Needs root (debootstrap). Exits 0 when a tree could not be built (without root too):
# the suite then skips its interpreters with the reason; 1 on a usage error.
set -u

cache="${ASYNCBPF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/asyncbpf}/trees"
mirror="${ASYNCBPF_TREES_MIRROR:-http://deb.debian.org/debian}"
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
max_age_days=7
force=0

case "${1-}" in
"") ;;
--force) force=1 ;;
*)
	echo "trees: usage: tools/trees.sh [--force]" >&2
	exit 1
	;;
esac

# name suite packages (tests/integration/helpers.py's TREE_PYTHONS: what it runs of them)
trees="sid sid python3.13,python3.14,python3.15,python3-uvloop,python3-aiohttp,python3-numpy,python3-fastapi,python3-uvicorn,python3-anyio,python3-starlette,python3-asyncpg,python3-redis
trixie trixie python3.13"

mkdir -p "$cache" || exit 1
# one builder at a time; a second one waits, then finds the trees fresh
exec 9>"$cache/.lock"
flock 9

fail() { # name reason
	echo "$2" >"$cache/$1.failed.tmp" && mv "$cache/$1.failed.tmp" "$cache/$1.failed"
	echo "trees: $1: $2" >&2
}

fresh() { # name: the tree exists, was built within max_age_days
	[ -f "$cache/$1/.asyncbpf-tree" ] &&
		[ -z "$(find "$cache/$1/.asyncbpf-tree" -mtime +$((max_age_days - 1)))" ]
}

build() { # name suite packages
	name=$1 suite=$2 pkgs=$3
	if [ "$(id -u)" != 0 ]; then
		fail "$name" "building it needs root (debootstrap): run make trees as root"
		return
	fi
	for tool in debootstrap gpgv wget; do
		if ! command -v $tool >/dev/null 2>&1; then
			fail "$name" "no $tool (make deps installs it)"
			return
		fi
	done
	# without the keyring debootstrap would install unverified packages with a warning
	if [ ! -f "$keyring" ]; then
		fail "$name" "no $keyring (debian-archive-keyring; make deps installs it)"
		return
	fi
	# a quick look first: debootstrap's own downloads retry for a long time
	if ! wget -q -T 30 -t 2 -O /dev/null "$mirror/dists/$suite/InRelease"; then
		fail "$name" "cannot reach the archive: $mirror/dists/$suite/InRelease"
		return
	fi
	stamp=$(date -u +%Y%m%dT%H%M%S)
	tmp="$cache/.$name.$stamp.tmp"
	log="$cache/$name.log"
	# an earlier build that was interrupted (debootstrap mounts proc and sys in it)
	for old in "$cache/.$name".*.tmp; do
		[ -e "$old" ] || continue
		umount -R "$old/proc" "$old/sys" 2>/dev/null
		rm -rf --one-file-system "$old"
	done
	echo "trees: building $name ($suite: $pkgs) from $mirror, log in $log" >&2
	t0=$(date +%s)
	if ! debootstrap --variant=minbase --keyring="$keyring" --include="$pkgs" \
		"$suite" "$tmp" "$mirror" >"$log" 2>&1; then
		# debootstrap's own last error line says why (archive unreachable, bad signature, ...)
		why=$(grep -E '^(E|W): ' "$log" | tail -1)
		[ -n "$why" ] || why=$(grep -v '^ *$' "$log" | tail -1)
		umount -R "$tmp/proc" "$tmp/sys" 2>/dev/null
		rm -rf --one-file-system "$tmp"
		fail "$name" "debootstrap $suite from $mirror failed: ${why:-no output}"
		return
	fi
	rm -f "$tmp"/var/cache/apt/archives/*.deb
	secs=$(($(date +%s) - t0))
	mib=$(du -sm "$tmp" | cut -f1)
	printf 'suite=%s\npackages=%s\nmirror=%s\nbuilt=%s\nseconds=%s\nmib=%s\n' \
		"$suite" "$pkgs" "$mirror" "$stamp" "$secs" "$mib" >"$tmp/.asyncbpf-tree"
	mv "$tmp" "$cache/$name.$stamp" || {
		fail "$name" "cannot move the new tree into $cache"
		return
	}
	# the switch is one rename of a symlink: readers see the old tree or the new one
	ln -sfn "$name.$stamp" "$cache/.$name.link" && mv -T "$cache/.$name.link" "$cache/$name" || {
		fail "$name" "cannot link $cache/$name to the new tree"
		return
	}
	rm -f "$cache/$name.failed"
	for old in "$cache/$name".2*; do
		[ "$old" = "$cache/$name.$stamp" ] || rm -rf --one-file-system "$old"
	done
	echo "trees: $name built in ${secs}s, ${mib} MiB" >&2
}

echo "$trees" | while read -r name suite pkgs; do
	if [ $force = 0 ] && fresh "$name"; then
		continue
	fi
	build "$name" "$suite" "$pkgs"
	if [ -f "$cache/$name.failed" ] && [ -f "$cache/$name/.asyncbpf-tree" ]; then
		echo "trees: $name: keeping the tree built $(sed -n 's/^built=//p' "$cache/$name/.asyncbpf-tree")" >&2
	fi
done
exit 0
