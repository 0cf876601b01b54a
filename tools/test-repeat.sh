#!/bin/sh
# Runs chosen tests N times, for hunting flakes: make test-repeat N=5 TESTS='...'.
#
# usage: tools/test-repeat.sh N LOGDIR TEST...
#   TEST: pytest node ids or paths (tests/integration/test_churn.py,
#         tests/integration/test_x.py::test_y). The environment passes through
#         (ASYNCBPF_INTERPRETERS, ASYNCBPF_BUILD, ...); PYTEST names pytest.
# Each run's log is LOGDIR/run-I.log. At the end, each failed run's first failure
# (the assertion and the lines around it) and "K of N runs failed"; exit 1 if any did.
set -u

die() {
	echo "test-repeat: $*" >&2
	exit 2
}

[ $# -ge 2 ] || die "usage: $0 N LOGDIR TEST..."
n=$1
dir=$2
shift 2
case "$n" in
'' | *[!0-9]* | 0) die "N must be a positive whole number, not '$n'" ;;
esac
[ $# -gt 0 ] || die "no tests given: make test-repeat N=5 TESTS='tests/integration/test_x.py'"
PYTEST=${PYTEST:-/usr/bin/python3 -m pytest}

mkdir -p "$dir" || die "cannot create $dir"
rm -f "$dir"/run-*.log
trap 'echo; echo "test-repeat: interrupted; logs in $dir" >&2; exit 130' INT TERM

# The first failure of a log: pytest's summary lines, then its first "E " line (the
# assertion) with a few lines before it (the test's source) and after it.
first_failure() {
	grep -E '^(FAILED|ERROR) ' "$1" | head -5
	line=$(grep -n -m1 -E '^E ' "$1" | cut -d: -f1)
	if [ -n "$line" ]; then
		from=$((line > 6 ? line - 6 : 1))
		# up to the end of that test's section
		sed -n "${from},$((line + 8))p" "$1" | sed '/^\(____\|====\)/,$d'
	else
		# no assertion (a crash, a collection error, a hang killed): the end of the log
		tail -n 15 "$1"
	fi
}

failed=""
k=0
i=1
while [ "$i" -le "$n" ]; do
	log="$dir/run-$i.log"
	start=$(date +%s)
	# shellcheck disable=SC2086 # PYTEST is a command line
	$PYTEST -v -rfEs "$@" >"$log" 2>&1
	rc=$?
	secs=$(($(date +%s) - start))
	if [ "$rc" = 0 ]; then
		echo "test-repeat: run $i of $n passed (${secs} s, $log)"
	else
		echo "test-repeat: run $i of $n FAILED (pytest exit $rc, ${secs} s, $log)"
		failed="$failed $i"
		k=$((k + 1))
	fi
	i=$((i + 1))
done

for i in $failed; do
	echo
	echo "=== run $i: first failure ($dir/run-$i.log)"
	first_failure "$dir/run-$i.log"
done
echo
echo "test-repeat: $k of $n runs failed: $*"
[ "$k" = 0 ]
