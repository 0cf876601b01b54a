#!/usr/bin/python3
"""Boots a kernel fetched by fetch.py under qemu (software emulation, -accel tcg,thread=single) with
the host's root shared read-only over 9p and runs one command inside (tests/kernels/
init.sh): the initramfs holds Debian's busybox-static and the kernel's own 9p and virtio
modules, built once per kernel next to it in the cache.

    vm.py KERNEL_TREE RESULTS_DIR COMMAND [ARG...]
runs COMMAND RESULTS_DIR in the guest (RESULTS_DIR is shared read-write; arguments
must not contain spaces) and exits with COMMAND's status, 124 on a timeout
(ASYNCBPF_VM_TIMEOUT seconds, default 900), 2 if the guest cannot be built or booted.
The console is written to RESULTS_DIR/console.log.
"""
import gzip
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fetch  # noqa: E402

BUSYBOX = "/bin/busybox"
# what mounting a 9p share over virtio needs; each module's own dependencies are added
MODULES = ["virtio_pci", "9pnet_virtio", "9p"]
PROG = "vm.py: "


class VmError(Exception):
    pass


def module_index(moddir):
    """{name: path} of every module file (name with - and _ alike)."""
    idx = {}
    for root, _, files in os.walk(os.path.join(moddir, "kernel")):
        for f in files:
            base = f.split(".ko")[0]
            if ".ko" in f:
                idx[base.replace("-", "_")] = os.path.join(root, f)
    return idx


def depends(path):
    p = subprocess.run(["modinfo", "-F", "depends", path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True)
    if p.returncode:
        raise VmError("modinfo %s: %s" % (path, p.stderr.strip()))
    return [d.replace("-", "_") for d in p.stdout.strip().split(",") if d]


def builtin(moddir, name):
    """Is the module built in? Without modules.builtin (sid's split packages ship none)
    a module not found is taken as built in: if it is not, init.sh says the mount failed."""
    try:
        with open(os.path.join(moddir, "modules.builtin")) as f:
            return any(os.path.basename(l.strip()).split(".ko")[0].replace("-", "_") == name
                       for l in f)
    except FileNotFoundError:
        return True
    except OSError:
        return False


def load_order(moddir):
    idx = module_index(moddir)
    order = []

    def visit(name, chain):
        if name in order:
            return
        if name in chain:
            raise VmError("module dependency cycle: %s" % " -> ".join(chain + [name]))
        if name not in idx:
            if builtin(moddir, name):
                return
            raise VmError("the kernel has no module %s" % name)
        for d in depends(idx[name]):
            visit(d, chain + [name])
        order.append(name)

    for m in MODULES:
        visit(m, [])
    return [(m, idx[m]) for m in order]


def read_module(path):
    if path.endswith(".xz"):
        return lzma.open(path).read()
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], check=True, stdout=subprocess.PIPE).stdout
    if path.endswith(".gz"):
        return gzip.open(path).read()
    with open(path, "rb") as f:
        return f.read()


def initramfs(tree):
    """The initramfs of this kernel, built once: tree/asyncbpf-initrd.gz."""
    out = os.path.join(tree, "asyncbpf-initrd.gz")
    init = os.path.join(HERE, "init.sh")
    if os.path.exists(out) and os.path.getmtime(out) >= os.path.getmtime(init):
        return out
    files = fetch.kernel_files(tree)
    if not files:
        raise VmError("%s holds no kernel" % tree)
    if not os.access(BUSYBOX, os.X_OK):
        raise VmError("no %s (Debian's busybox-static; make deps)" % BUSYBOX)
    stage = tempfile.mkdtemp(prefix=".initrd-", dir=tree)
    try:
        os.makedirs(os.path.join(stage, "bin"))
        os.makedirs(os.path.join(stage, "lib", "modules"))
        shutil.copy(BUSYBOX, os.path.join(stage, "bin", "busybox"))
        shutil.copy(init, os.path.join(stage, "init"))
        os.chmod(os.path.join(stage, "init"), 0o755)
        names = []
        for name, path in load_order(files[1]):
            with open(os.path.join(stage, "lib", "modules", name + ".ko"), "wb") as f:
                f.write(read_module(path))
            names.append(name + ".ko")
        with open(os.path.join(stage, "modules"), "w") as f:
            f.write("\n".join(names) + "\n")
        listing = subprocess.run(["find", "."], cwd=stage, check=True,
                                 stdout=subprocess.PIPE).stdout
        cpio = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet", "-R", "0:0"],
                              cwd=stage, input=listing, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        if cpio.returncode:
            raise VmError("cpio: %s" % cpio.stderr.decode(errors="replace").strip())
        tmp = out + ".part.%d" % os.getpid()
        with gzip.open(tmp, "wb", compresslevel=6) as f:
            f.write(cpio.stdout)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return out


def boot(tree, results, argv, timeout=None):
    """Runs argv + [results directory as the guest sees it] in a guest; returns its exit
    status (124: timed out)."""
    timeout = timeout or float(os.environ.get("ASYNCBPF_VM_TIMEOUT", "900"))
    files = fetch.kernel_files(tree)
    if not files:
        raise VmError("%s holds no kernel" % tree)
    for a in argv:
        if not a or any(c.isspace() for c in a):
            raise VmError("guest arguments must be words: %r" % a)
    initrd = initramfs(tree)
    os.makedirs(results, exist_ok=True)
    status = os.path.join(results, "exit-status")
    if os.path.exists(status):
        os.unlink(status)
    cmdline = ["console=ttyS0", "panic=-1", "loglevel=4", "asyncbpf.run=" + argv[0]]
    cmdline += ["asyncbpf.arg=" + a for a in argv[1:]]
    # thread=single: with a host thread per vCPU, a vCPU can run code another has just
    # patched (the kernel's int3-then-write text poking, as a probe or tracepoint is
    # enabled) from a stale translation and die on the int3 (trixie, Oops: int3 in
    # __schedule during test_creation_probe); one thread for both vCPUs sees each write
    qemu = ["qemu-system-x86_64", "-accel", "tcg,thread=single", "-cpu", "max", "-smp", "2",
            "-m", "2048",
            "-nodefaults", "-no-reboot", "-display", "none", "-monitor", "none",
            "-serial", "file:" + os.path.join(results, "console.log"),
            "-kernel", files[0], "-initrd", initrd, "-append", " ".join(cmdline),
            "-virtfs", "local,path=/,mount_tag=host,security_model=none,readonly=on,"
            "multidevs=remap",
            "-virtfs", "local,path=%s,mount_tag=results,security_model=none" % results]
    if not shutil.which(qemu[0]):
        raise VmError("no qemu-system-x86_64 (Debian's qemu-system-x86; make deps)")
    try:
        p = subprocess.run(qemu, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124
    if p.returncode:
        raise VmError("qemu exited %d: %s" % (p.returncode,
                                              p.stdout.decode(errors="replace").strip()[-500:]))
    try:
        with open(status) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        raise VmError("the guest ended without an exit status (see %s/console.log)" % results)


def main():
    if len(sys.argv) < 4:
        print("usage: vm.py KERNEL_TREE RESULTS_DIR COMMAND [ARG...]", file=sys.stderr)
        return 1
    try:
        return boot(sys.argv[1], os.path.abspath(sys.argv[2]), sys.argv[3:])
    except VmError as e:
        print(PROG + str(e), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
