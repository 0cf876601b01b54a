#!/bin/sh
# tree-run.sh TREE PROGRAM [ARG...]
# Runs PROGRAM (a path inside TREE, e.g. /usr/bin/python3.14) the way a container runtime
# would: in a mount namespace of its own (unshare --mount) and with TREE as its root
# (chroot), /proc mounted there, and the host's /dev, /tmp and this repository
# bind-mounted at their own paths, so that the tests' workloads, their temporary files and
# the build are where the tests expect them. The working directory is kept; it must exist
# inside TREE (the repository and /tmp do). Every step execs: the pid that started this
# script is PROGRAM's. Made for the integration tests (tools/trees.sh builds the trees).
set -eu

if [ "${1-}" != --in-namespace ]; then
	if [ $# -lt 2 ]; then
		echo "tree-run: usage: tools/tree-run.sh TREE PROGRAM [ARG...]" >&2
		exit 125
	fi
	exec unshare --mount --propagation private -- "$0" --in-namespace "$@"
fi
shift
tree=$1
shift
repo=$(cd "$(dirname "$0")/.." && pwd -P)
wd=$(pwd -P)
mount -t proc proc "$tree/proc"
mount --rbind /dev "$tree/dev"
mount --bind /tmp "$tree/tmp"
mkdir -p "$tree$repo"
mount --bind "$repo" "$tree$repo"
if [ ! -d "$tree$wd" ]; then
	echo "tree-run: the working directory $wd is not inside $tree (run from the repository or /tmp)" >&2
	exit 125
fi
exec chroot "$tree" /bin/sh -c 'cd "$0" && exec "$@"' "$wd" "$@"
