#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tools/check-layers.py must fail, naming the file, on an include that crosses a layer
# and on a new cycle; it runs on a copy of user/ and bpf/ in a temporary directory.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

fresh() {
	rm -rf "$tmp/tree" && mkdir -p "$tmp/tree/tools"
	cp -r "$top/user" "$top/bpf" "$tmp/tree/"
	cp "$top/tools/check-layers.py" "$tmp/tree/tools/"
}

# expect NAME STATUS PATTERN: the checker exits STATUS (0, or non-zero for 1) and, when
# it fails, prints a line matching PATTERN
expect() {
	out=$(python3 "$tmp/tree/tools/check-layers.py" "$tmp/tree" 2>&1)
	rc=$?
	if [ "$2" = 0 ] && [ $rc -eq 0 ]; then
		echo "PASS check-layers $1"
	elif [ "$2" != 0 ] && [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q -- "$3"; then
		echo "PASS check-layers $1"
	else
		echo "FAIL check-layers $1 (exit $rc)"
		printf '%s\n' "$out" | sed 's/^/    /'
		fail=1
	fi
}

fresh
expect "passes on the tree" 0 ""

# process/ is the bottom stage: it may not reach the view
fresh
printf '#include "view/tables.h"\n' >>"$tmp/tree/user/process/procfs.c"
expect "fails on a layer-crossing include" 1 \
	'^user/process/procfs.c:[0-9]*: folder process includes view, not in its may-call list$'

# an allowed include that closes a new cycle: view -> profile -> view
fresh
printf '#include "view/tables.h"\n' >>"$tmp/tree/user/profile/json.c"
sed -i 's/^May call (checked): asyncio, cpython, native, process$/May call (checked): asyncio, cpython, native, process, view/' \
	"$tmp/tree/user/profile/README.md"
expect "fails on a new folder cycle" 1 '^folder cycle: .*profile.*view'

# process/ takes its examiner from its caller: naming cpython/ again crosses its layer,
# and allowing it closes the process <-> cpython cycle
fresh
printf '#include "cpython/pyproc.h"\n' >>"$tmp/tree/user/process/discover.c"
expect "fails on process reaching cpython" 1 \
	'^user/process/discover.c:[0-9]*: folder process includes cpython, not in its may-call list$'
sed -i 's/^May call (checked): bpf$/May call (checked): bpf, cpython/' "$tmp/tree/user/process/README.md"
expect "fails on the process-cpython cycle" 1 '^folder cycle: cpython -> process -> cpython$'

# two files of one folder that include each other: the recorder's own header reaching
# back to its public one
fresh
printf '#include "recorder/recorder.h"\n' >>"$tmp/tree/user/recorder/recorder_opts.h"
expect "fails on a new file cycle" 1 '^file cycle: .*user/recorder/recorder_opts'

# a bpf/ header may not reach the library
fresh
printf '#include "cpython/pyproc.h"\n' >>"$tmp/tree/bpf/maps.h"
expect "fails on bpf/ reaching up" 1 '^bpf/maps.h:[0-9]*: bpf/ includes cpython/'

exit $fail
