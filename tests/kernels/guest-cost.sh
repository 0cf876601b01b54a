#!/bin/sh
# Runs in a guest of make bench-kernels: guest_cost.py, its results in $1.
results=$1
cd "$(dirname "$0")/../.." || exit 1
ASYNCBPF_TIMEOUT_SCALE=${ASYNCBPF_TIMEOUT_SCALE:-10} PYTHONDONTWRITEBYTECODE=1 \
	/usr/bin/python3 tests/kernels/guest_cost.py "$results" >"$results/cost.log" 2>&1
