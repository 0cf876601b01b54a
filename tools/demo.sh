#!/bin/sh
# make demo: runs examples/demo_app.py, records it for 5 s into demo.collapsed, and
# prints its 10 heaviest stacks.
set -eu
cd "$(dirname "$0")/.."

REC=build/asyncbpf-record
APP=examples/demo_app.py
OUT=demo.collapsed
SECS=5

if [ "$(id -u)" != 0 ]; then
	echo "demo: asyncbpf-record needs root (BPF programs, perf events): run 'sudo make demo'" >&2
	exit 1
fi
if [ ! -x "$REC" ]; then
	echo "demo: $REC is not built: run 'make'" >&2
	exit 1
fi
PY=${PYTHON:-}
if [ -z "$PY" ]; then
	if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
fi

tmp=$(mktemp -d)
pid=
# under set -e a failing command in the EXIT trap becomes the exit status: the killed
# workload's wait returns 143
cleanup() {
	if [ -n "$pid" ]; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$PY" -u "$APP" >"$tmp/app.out" 2>"$tmp/app.err" &
pid=$!
i=0
until grep -q READY "$tmp/app.out"; do
	i=$((i + 1))
	if [ "$i" -gt 100 ] || ! kill -0 "$pid" 2>/dev/null; then
		echo "demo: $APP did not start:" >&2
		cat "$tmp/app.err" >&2
		exit 1
	fi
	sleep 0.1
done

echo "demo: recording $APP (pid $pid, $PY) for $SECS s into $OUT"
"$REC" -p "$pid" -d "$SECS" -o "$OUT"

total=$(awk '{ n += $NF } END { print n + 0 }' "$OUT")
if [ "$total" -eq 0 ]; then
	echo "demo: no samples recorded" >&2
	exit 1
fi
echo "demo: $total samples, $(wc -l <"$OUT") distinct stacks; the 10 heaviest"
echo "(count, share, stack root first; process frame and directories left out):"
awk -v total="$total" '
{
	n = $NF
	stack = substr($0, 1, length($0) - length(n) - 1)
	sub(/^[^;]*;/, "", stack)          # the process frame
	gsub(/\([^;()]*\//, "(", stack)    # directories of file names
	gsub(/;/, " ; ", stack)
	printf "%6d %5.1f%%  %s\n", n, 100 * n / total, stack
}' "$OUT" | sort -k 1 -n -r | head -n 10
