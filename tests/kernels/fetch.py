#!/usr/bin/python3
"""Fetches the amd64 kernel of a Debian suite from Debian's archive and verifies it:
the suite's InRelease with gpgv against debian-archive-keyring, Packages.xz against
InRelease's SHA256, the kernel's .deb against Packages' SHA256. The kernel is cached
under $ASYNCBPF_CACHE/kernels/ (default $XDG_CACHE_HOME/asyncbpf, ~/.cache/asyncbpf),
every file fetched under a temporary name and renamed once complete.

    fetch.py SUITE      prints the directory holding boot/vmlinuz-* and lib/modules/
Exit 0 done, 2 the kernel cannot be had (one line on stderr says why).
"""
import hashlib
import lzma
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request

MIRROR = os.environ.get("ASYNCBPF_DEBIAN_MIRROR", "https://deb.debian.org/debian")
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
PACKAGES = "main/binary-amd64/Packages.xz"
PROG = "fetch.py: "


class Unavailable(Exception):
    pass


def cache_root():
    base = os.environ.get("ASYNCBPF_CACHE")
    if not base:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
        base = os.path.join(xdg, "asyncbpf")
    return os.path.join(base, "kernels")


def download(url, dest, sha256=None, size=None):
    """url to dest through dest's temporary name; checked against sha256 if given."""
    tmp = "%s.part.%d" % (dest, os.getpid())
    h = hashlib.sha256()
    n = 0
    try:
        with urllib.request.urlopen(url, timeout=60) as r, open(tmp, "wb") as f:
            while True:
                chunk = r.read(1 << 20)
                if not chunk:
                    break
                h.update(chunk)
                n += len(chunk)
                f.write(chunk)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise Unavailable("%s: %s" % (url, e))
    if (sha256 and h.hexdigest() != sha256) or (size is not None and n != size):
        os.unlink(tmp)
        raise Unavailable("%s: SHA256 or size mismatch (got %s, %d bytes; want %s, %s)"
                          % (url, h.hexdigest(), n, sha256, size))
    os.rename(tmp, dest)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def verified_release(suite, d):
    """InRelease fetched, checked with gpgv; returns its signed text."""
    path = os.path.join(d, "InRelease")
    download("%s/dists/%s/InRelease" % (MIRROR, suite), path)
    if not os.path.exists(KEYRING):
        raise Unavailable("no %s (Debian's debian-archive-keyring; make deps)" % KEYRING)
    with tempfile.NamedTemporaryFile(dir=d) as out:
        p = subprocess.run(["gpgv", "--keyring", KEYRING, "--status-fd", "1",
                            "--output", out.name, path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        status = p.stdout.splitlines()
        # as apt: good if one signature is valid and none is bad (a key this keyring
        # lacks, say a newer release's, is NO_PUBKEY, not bad)
        good = [l for l in status if l.startswith("[GNUPG:] VALIDSIG ")]
        bad = [l for l in status if l.startswith(("[GNUPG:] BADSIG ", "[GNUPG:] EXPSIG ",
                                                  "[GNUPG:] REVKEYSIG "))]
        if not good or bad:
            raise Unavailable("%s: InRelease signature not valid with %s: %s"
                              % (suite, KEYRING, " ".join(bad) or p.stderr.strip()[-300:]))
        with open(out.name, errors="replace") as f:
            return f.read()


def release_sha256(text, name):
    section = text.split("\nSHA256:\n", 1)
    if len(section) != 2:
        raise Unavailable("InRelease has no SHA256 section")
    for line in section[1].splitlines():
        if not line.startswith(" "):
            break
        parts = line.split()
        if len(parts) == 3 and parts[2] == name:
            return parts[0], int(parts[1])
    raise Unavailable("InRelease lists no %s" % name)


def stanzas(text):
    for block in text.split("\n\n"):
        fields, key = {}, None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key] += "\n" + line
            elif ":" in line:
                key, _, val = line.partition(":")
                fields[key] = val.strip()
        if fields:
            yield fields


def kernel_packages(packages):
    """The stanzas that make up the current kernel: the image linux-image-amd64 depends
    on and, where the image is split (sid), the binary and modules packages it depends on.
    """
    by_name = {}
    for s in stanzas(packages):
        by_name.setdefault(s.get("Package"), []).append(s)

    def deps(stanza, pattern):
        return re.findall(r"(?:^|[,|]\s*)(%s)\b" % pattern, stanza.get("Depends", ""))

    def stanza(name):
        # the signed image and the unsigned one both hold vmlinuz and the modules
        for n in (name, name + "-unsigned"):
            if by_name.get(n):
                return by_name[n][-1]
        raise Unavailable("Packages has no %s" % name)

    meta = by_name.get("linux-image-amd64")
    if not meta:
        raise Unavailable("Packages has no linux-image-amd64")
    image = deps(meta[-1], r"linux-image-[0-9][^ ,|(]*?-amd64")
    if not image:
        raise Unavailable("linux-image-amd64 depends on %r" % meta[-1]["Depends"])
    out = [stanza(image[0])]
    for name in deps(out[0], r"linux-(?:binary|modules)-[0-9][^ ,|(]*?-amd64"):
        out.append(stanza(name))
    return out


def kernel_files(tree):
    """(vmlinuz, modules directory) of an unpacked kernel, or None. The image is
    boot/vmlinuz-VERSION, or (sid) in the modules directory."""
    for mods in ("lib/modules", "usr/lib/modules"):
        d = os.path.join(tree, mods)
        for ver in sorted(os.listdir(d)) if os.path.isdir(d) else ():
            for image in (os.path.join(tree, "boot", "vmlinuz-" + ver),
                          os.path.join(d, ver, "vmlinuz")):
                if os.path.isfile(image) and os.path.isdir(os.path.join(d, ver, "kernel")):
                    return image, os.path.join(d, ver)
    return None


def fetch(suite):
    root = cache_root()
    d = os.path.join(root, suite)
    os.makedirs(d, exist_ok=True)
    text = verified_release(suite, d)
    sha, size = release_sha256(text, PACKAGES)
    pk = os.path.join(d, "Packages.xz")
    if not os.path.exists(pk) or sha256_of(pk) != sha:
        download("%s/dists/%s/%s" % (MIRROR, suite, PACKAGES), pk, sha, size)
    with lzma.open(pk, "rt", errors="replace") as f:
        pkgs = kernel_packages(f.read())
    tree = os.path.join(d, "%s_%s" % (pkgs[0]["Package"], pkgs[0]["Version"]))
    if os.path.isdir(tree):
        return tree
    tmp = tempfile.mkdtemp(prefix=".unpack-", dir=d)
    for pkg in pkgs:
        deb = os.path.join(d, os.path.basename(pkg["Filename"]))
        if not os.path.exists(deb) or sha256_of(deb) != pkg["SHA256"]:
            download("%s/%s" % (MIRROR, pkg["Filename"]), deb, pkg["SHA256"],
                     int(pkg["Size"]))
        p = subprocess.run(["dpkg-deb", "-x", deb, tmp], stderr=subprocess.PIPE,
                           universal_newlines=True)
        if p.returncode:
            shutil.rmtree(tmp, ignore_errors=True)
            raise Unavailable("dpkg-deb -x %s: %s" % (deb, p.stderr.strip()))
    if not kernel_files(tmp):
        shutil.rmtree(tmp, ignore_errors=True)
        raise Unavailable("%s unpack to no boot/vmlinuz-* with its modules"
                          % " ".join(p["Package"] for p in pkgs))
    os.rename(tmp, tree)
    # older kernels of this suite and the .debs (unpacked now) are not needed any more
    for old in os.listdir(d):
        path = os.path.join(d, old)
        if old.endswith(".deb") or (old.startswith("linux-image-") and path != tree):
            shutil.rmtree(path) if os.path.isdir(path) else os.unlink(path)
    return tree


def main():
    if len(sys.argv) != 2:
        print("usage: fetch.py SUITE", file=sys.stderr)
        return 1
    try:
        print(fetch(sys.argv[1]))
    except Unavailable as e:
        print(PROG + "%s: %s" % (sys.argv[1], e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
