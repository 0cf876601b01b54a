#!/bin/sh
# Runs each unit-test binary; a binary that exits 77 ran nothing and is reported skipped.
fail=0
for t in "$@"; do
	"$t"
	rc=$?
	case $rc in
	0) echo "PASS $t" ;;
	77) echo "SKIPPED $t (see its SKIP lines)" ;;
	*) echo "FAIL $t (exit $rc)"; fail=1 ;;
	esac
done
exit $fail
