#!/bin/sh
# Installs from Debian's archive whatever the build and the tests need and is missing.
set -e
pkgs="make gcc clang libclang-rt-14-dev libbpf-dev bpftool libelf-dev zlib1g-dev python3 python3-pytest python3-uvloop"
# asyncbpf-agent's HTTP client
pkgs="$pkgs libcurl4-openssl-dev"
# the Debian trees of the integration suite (tools/trees.sh), their signatures checked
pkgs="$pkgs debootstrap debian-archive-keyring gpgv wget"
# the demo service (make demo) and its test
pkgs="$pkgs python3-aiohttp python3-numpy"
# the real-service workloads: FastAPI/Starlette/anyio/uvicorn with asyncpg against a
# PostgreSQL, aiohttp with redis against a redis-server, loaded by wrk
pkgs="$pkgs python3-fastapi python3-uvicorn python3-anyio python3-starlette python3-asyncpg"
pkgs="$pkgs postgresql redis-server python3-redis wrk"
# asgiref's sync_to_async, linked as thread work (test_asgiref_work.py)
pkgs="$pkgs python3-asgiref"
# pprof's reader (go tool pprof) and a headless browser for the output-format tests
pkgs="$pkgs golang-go chromium"
# asyncbpf-top draws with ncursesw; its test drives it in tmux
pkgs="$pkgs libncurses-dev tmux"
# the kernels of the suite (make test-kernels): boot under qemu, verify Debian's archive
pkgs="$pkgs qemu-system-x86 busybox-static debian-archive-keyring gpgv xz-utils zstd cpio kmod"
# --native: user stacks unwound with elfutils' libdw; perf as the tests' independent unwinder
pkgs="$pkgs libdw-dev linux-perf"
# tests/unit/docs.sh: groff and mandoc check the manual pages, systemd-analyze the unit
pkgs="$pkgs mandoc groff-base systemd"
# make deb: Debian's packaging tools
pkgs="$pkgs dpkg-dev debhelper lintian"
command -v npm >/dev/null 2>&1 || pkgs="$pkgs nodejs npm"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "deps: missing packages:$missing (run 'make deps' as root)" >&2
		exit 1
	fi
	echo "deps: installing$missing"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
fi
# npm packages of the browser and speedscope checks, as locked
browser="$(dirname "$0")/../tests/browser"
if [ ! -d "$browser/node_modules" ] || [ "$browser/package-lock.json" -nt "$browser/node_modules" ]; then
	echo "deps: npm ci in tests/browser"
	npm ci --prefix "$browser" --no-audit --no-fund --loglevel=error
fi
