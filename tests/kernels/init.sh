#!/bin/busybox sh
# /init of the guests of make test-kernels: loads the 9p and virtio modules, mounts the
# host's root (read-only) and the results share, and runs the command the kernel
# command line names (asyncbpf.run=PATH, then asyncbpf.arg=... in order) chrooted into
# the host's root, with the results directory as its argument. Its exit status goes to
# the results share; then the guest powers off.
/bin/busybox mkdir -p /bin /proc /sys /dev /newroot
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in $(cat /modules); do
	insmod "/lib/modules/$m" || echo "init: insmod $m failed"
done
fail() {
	echo "init: $*"
	reboot -f
}
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 host /newroot ||
	fail "cannot mount the host's root"
R=/newroot
# the guest's /tmp is its own; the host's stays under /hosttmp for a checkout kept there
mkdir -p /hosttmp
mount -o bind $R/tmp /hosttmp
mount -t tmpfs -o mode=1777 tmpfs $R/tmp || fail "no tmpfs on /tmp"
mount -t tmpfs tmpfs $R/run
mount -t proc proc $R/proc
mount -t sysfs sysfs $R/sys
mount -t devtmpfs devtmpfs $R/dev
mkdir -p $R/dev/pts $R/dev/shm
mount -t devpts devpts $R/dev/pts
mount -t tmpfs tmpfs $R/dev/shm
mount -t bpf bpf $R/sys/fs/bpf
mount -t debugfs debugfs $R/sys/kernel/debug
mount -t tracefs tracefs $R/sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup
mkdir -p $R/tmp/results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results $R/tmp/results ||
	fail "cannot mount the results share"
run=
args=
for w in $(cat /proc/cmdline); do
	case "$w" in
	asyncbpf.run=*) run="${w#asyncbpf.run=}" ;;
	asyncbpf.arg=*) args="$args ${w#asyncbpf.arg=}" ;;
	esac
done
case "$run" in
/tmp/*)
	top="${run#/tmp/}"
	top="${top%%/*}"
	mkdir -p "$R/tmp/$top"
	mount -o bind "/hosttmp/$top" "$R/tmp/$top" || fail "cannot reach /tmp/$top of the host"
	;;
esac
echo "init: up after $(cut -d' ' -f1 /proc/uptime) s, running $run$args"
# shellcheck disable=SC2086
chroot $R /usr/bin/env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
	HOME=/tmp LANG=C.UTF-8 "$run" $args /tmp/results
echo $? >$R/tmp/results/exit-status
sync
umount $R/tmp/results
reboot -f
