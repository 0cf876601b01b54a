#!/bin/sh
# make demo: runs the demo service (examples/demo/service.py, Debian's python3 with
# python3-aiohttp and python3-numpy) under asyncbpf-record --native (Python and native
# frames: what NumPy and zlib do below the service's code), drives it with an HTTP
# client from another process, writes demo.pb.gz and demo.html, and prints the
# heaviest stacked stacks of each route.
#
# DEMO_SECONDS (default 10): how long the service is driven; DEMO_FREQ (default 199):
# samples per second; DEMO_OUT (default .): where to write.
set -eu
cd "$(dirname "$0")/.."

REC=build/asyncbpf-record
REPORT=build/asyncbpf-report
DEMO=examples/demo
PY=/usr/bin/python3
SECS=${DEMO_SECONDS:-10}
FREQ=${DEMO_FREQ:-199}
OUT=${DEMO_OUT:-.}

die() {
	echo "demo: $*" >&2
	exit 1
}

[ "$(id -u)" = 0 ] ||
	die "asyncbpf-record needs root (BPF programs, perf events): run 'sudo make demo'"
for b in "$REC" "$REPORT"; do
	[ -x "$b" ] || die "$b is not built: run 'make'"
done
[ -x "$PY" ] || die "$PY is missing: install Debian's python3 ('make deps')"
for m in aiohttp:python3-aiohttp numpy:python3-numpy; do
	"$PY" -c "import ${m%%:*}" 2>/dev/null ||
		die "$PY cannot import ${m%%:*}: install Debian's ${m#*:} ('make deps' as root)"
done
case $SECS in
'' | *[!0-9]*) die "DEMO_SECONDS must be a whole number of seconds, not '$SECS'" ;;
esac
case $FREQ in
'' | *[!0-9]*) die "DEMO_FREQ must be a whole number of samples per second, not '$FREQ'" ;;
esac
[ -d "$OUT" ] || die "DEMO_OUT: no directory '$OUT'"

tmp=$(mktemp -d)
rec=
load=
# Ends whatever still runs: the load, and the recorder, which stops the service it
# started (SIGTERM) and waits for it.
cleanup() {
	trap - EXIT INT TERM
	for p in $load $rec; do
		kill "$p" 2>/dev/null || true
	done
	for p in $load $rec; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# The recording lasts as long as the service: from its start until it is stopped after
# SECS seconds of load. Nothing is printed meanwhile: the recorder's status line is on
# the terminal.
echo "demo: recording $DEMO/service.py at $FREQ Hz while $DEMO/load.py drives it" \
	"over HTTP for $SECS s"
echo "demo: $REC --native -F $FREQ -o demo.pb.gz -- $PY $DEMO/service.py ..."
"$REC" --native -F "$FREQ" -o "$tmp/demo.pb.gz" -- \
	"$PY" "$DEMO/service.py" --port-file "$tmp/port" --log-file "$tmp/audit.log" \
	>"$tmp/service.out" &
rec=$!

# the service starts once the recorder samples: loading its BPF programs takes seconds,
# tens of them on a loaded machine
i=0
until [ -s "$tmp/port" ]; do
	kill -0 "$rec" 2>/dev/null || {
		rec=
		cat "$tmp/service.out" >&2
		die "the service or the recorder exited before the service listened"
	}
	i=$((i + 1))
	[ "$i" -le 1200 ] || die "the service did not listen within 120 s"
	sleep 0.1
done
read -r port service <"$tmp/port"
"$PY" "$DEMO/load.py" --url "http://127.0.0.1:$port" --seconds "$SECS" \
	>"$tmp/load.out" 2>&1 &
load=$!
wait "$load" || {
	load=
	cat "$tmp/load.out" >&2
	die "the load client failed"
}
load=

# the recording ends when the service has exited
kill -TERM "$service" 2>/dev/null || true
i=0
while kill -0 "$rec" 2>/dev/null && [ "$i" -lt 100 ]; do
	i=$((i + 1))
	sleep 0.1
done
# not stopped within 10 s: the recorder ends it (SIGTERM, then SIGKILL)
kill -0 "$rec" 2>/dev/null && kill -TERM "$rec"
status=0
wait "$rec" || status=$?
rec=
[ "$status" = 0 ] || die "asyncbpf-record or the service failed (exit $status)"
echo "demo: service on http://127.0.0.1:$port; requests answered per route and status:"
sed 's/^load: /  /' "$tmp/load.out"

mv "$tmp/demo.pb.gz" "$OUT/demo.pb.gz"
"$REPORT" -o "$OUT/demo.html" "$OUT/demo.pb.gz"
"$REPORT" -o "$tmp/demo.collapsed" "$OUT/demo.pb.gz"
# written 0600 by root; whoever ran sudo make demo opens them
chmod 0644 "$OUT/demo.pb.gz" "$OUT/demo.html"
if [ -n "${SUDO_UID:-}" ]; then
	chown "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$OUT/demo.pb.gz" "$OUT/demo.html" || true
fi
echo "demo: wrote $OUT/demo.pb.gz (go tool pprof -http=: $OUT/demo.pb.gz) and" \
	"$OUT/demo.html (open it in a browser); $REPORT $OUT/demo.pb.gz tells more"
echo
"$PY" "$DEMO/summary.py" "$tmp/demo.collapsed"
