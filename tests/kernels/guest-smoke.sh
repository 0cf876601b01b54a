#!/bin/sh
# Runs in a guest of make test-kernels (tests/kernels/init.sh chroots into the host's
# root to run it): the smoke subset, its results in the directory given ($1, shared with
# the host).
results=$1
cd "$(dirname "$0")/../.." || exit 1
{
	echo "kernel: $(uname -r)"
	ls -l /sys/kernel/btf/vmlinux
} >"$results/guest.txt" 2>&1
# only the interpreters the smoke subset runs: the helpers start each one they select
ASYNCBPF_INTERPRETERS=pyenv-3.12,debian-3.11 \
	ASYNCBPF_RESULTS=$results ASYNCBPF_TIMEOUT_SCALE=${ASYNCBPF_TIMEOUT_SCALE:-10} \
	PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 -m pytest -v -rs -p no:cacheprovider \
	--junitxml="$results/junit.xml" tests/kernels/guest_smoke.py >"$results/pytest.txt" 2>&1
