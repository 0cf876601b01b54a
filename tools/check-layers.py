#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""Check the library's layers: every project include of a file in user/FOLDER/ must name
FOLDER itself, a folder on the "May call (checked):" line of user/FOLDER/README.md, or a
header at user/ itself (hash.h, clock.h, errmsg.h: shared by all); bpf/ headers include
only bpf/; and no folders, nor files, may include each other round a cycle (a file is
named by its stem, path without .c/.h: a source and its header are one file here).

Usage: tools/check-layers.py [ROOT]   (ROOT defaults to the repository holding this
script). Prints one line per offence and exits 1 if there is any; --graph prints the
folder dependencies found instead."""

import os
import re
import sys

MAY_CALL = re.compile(r"^May call \(checked\):(.*)$")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def may_call(readme):
    """The folders a README's checked line names, or None when it has none."""
    with open(readme, encoding="utf-8") as f:
        for line in f:
            m = MAY_CALL.match(line.strip())
            if m:
                names = [n.strip().strip("`").rstrip("/") for n in m.group(1).split(",")]
                return {n for n in names if n and n != "nothing"}
    return None


def resolve(root, path, name):
    """The repository path an include names (None for system or generated headers)
    and the layer it belongs to."""
    d = os.path.dirname(path)
    if name.endswith(".skel.h"):
        return None, "bpf"
    if path.startswith("bpf/") and "/" not in name:
        p = "bpf/" + name
        return (p, "bpf") if os.path.exists(os.path.join(root, p)) else (None, None)
    if name.startswith("bpf/"):
        return name, "bpf"
    p = "user/" + name
    if os.path.exists(os.path.join(root, p)):
        parts = name.split("/")
        return p, (parts[0] if len(parts) > 1 else "")
    p = os.path.normpath(os.path.join(d, name))
    if os.path.exists(os.path.join(root, p)):
        return p, "?"
    return None, None


def sources(root):
    out = []
    for top in ("user", "bpf"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dirpath, n), root))
    return sorted(out)


def folder_of(path):
    parts = path.split("/")
    if parts[0] == "bpf":
        return "bpf"
    return parts[1] if len(parts) > 2 else ""


def stem(path):
    return re.sub(r"\.(bpf\.)?[ch]$", "", path)


def sccs(graph):
    """Strongly connected components with more than one node (Tarjan, iterative)."""
    index, low, onstack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        onstack.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    onstack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in onstack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        onstack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(tuple(sorted(comp)))
    return out


def cycle_path(graph, comp):
    """One cycle through a component, as a -> b -> ... -> a."""
    members = set(comp)
    start = comp[0]
    prev = {start: None}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph.get(v, ())):
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                return " -> ".join(list(reversed(path)) + [start])
            if w in members and w not in prev:
                prev[w] = v
                queue.append(w)
    return " <-> ".join(comp)


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    root = args[0] if args else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    errors = []
    allowed = {}
    for name in sorted(os.listdir(os.path.join(root, "user"))):
        readme = os.path.join(root, "user", name, "README.md")
        if os.path.isfile(readme):
            calls = may_call(readme)
            if calls is None:
                errors.append(f"user/{name}/README.md: no 'May call (checked):' line")
                calls = set()
            allowed[name] = calls
    folders, files = {}, {}
    for path in sources(root):
        src = folder_of(path)
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                name = m.group(1)
                target, dst = resolve(root, path, name)
                if dst is None:
                    if name != "vmlinux.h" and not name.endswith(".html"):
                        errors.append(f"{path}:{lineno}: include \"{name}\" names no project file")
                    continue
                if dst == "?":
                    errors.append(f"{path}:{lineno}: include \"{name}\" does not name its folder")
                    continue
                if target:
                    files.setdefault(stem(path), set())
                    if stem(target) != stem(path):
                        files[stem(path)].add(stem(target))
                if dst == src or dst == "":
                    continue
                folders.setdefault(src, set()).add(dst)
                if src == "bpf":
                    errors.append(f"{path}:{lineno}: bpf/ includes {dst}/, bpf/ may call nothing above it")
                elif dst not in allowed.get(src, set()):
                    errors.append(f"{path}:{lineno}: folder {src} includes {dst}, not in its may-call list")
    if "--graph" in argv:
        for src in sorted(folders):
            print(f"{src}: {', '.join(sorted(folders[src]))}")
        return 0
    for kind, graph in (("folder", folders), ("file", files)):
        for comp in sccs(graph):
            errors.append(f"{kind} cycle: {cycle_path(graph, comp)}")
    for e in errors:
        print(e)
    if errors:
        print(f"check-layers: {len(errors)} offence(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
