#!/bin/sh
# Installs from Debian's archive whatever the build and the tests need and is missing.
set -e
pkgs="make gcc clang libclang-rt-14-dev libbpf-dev bpftool libelf-dev zlib1g-dev python3 python3-pytest python3-uvloop"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing packages:$missing (run 'make deps' as root)" >&2
	exit 1
fi
echo "deps: installing$missing"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing
