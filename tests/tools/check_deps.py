#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks the library's layering from the symbols of its object files.

Reads `nm` of the static library: which member defines and which uses
each global symbol. Fails when
  - two files of collectives/ use each other, directly or through a longer
    cycle (each file stays a layer the next one builds on);
  - transport/ uses anything of runtime/ or collectives/, or runtime/ uses
    anything of collectives/ (dependencies point downward only);
  - collectives/ uses transport/ other than its byte and logging helpers
    (util.c): it reaches the network only through the runtime.
Usage: check_deps.py NM LIBMINIMP.a

    check_deps.py folders SOURCE_DIR
        The folders of collectives/ from their #include lines: core/ (the
        executor, descriptors, the registry's mechanism) uses nothing of
        collectives/ above it, patterns/ only core/, select/ (the network
        model, AUTO) only patterns/ and core/, a collective's folder only
        those and other collectives' folders, with no cycle among them;
        collectives/registry.c, which lists the collectives, and
        collectives/init.c, the entry points that hand the runtime its
        hooks into this layer, are the top.
        Of runtime/, collectives/ includes only runtime/coll_api.h.
"""
import glob
import os
import re
import subprocess
import sys
from collections import defaultdict


def layer_of(member):
    # meson names members <dir>_<file>.c.o
    for layer in ("transport", "runtime", "collectives"):
        if member.startswith(layer + "_"):
            return layer, member[len(layer) + 1:].replace(".c.o", ".c")
    return None, member


def main():
    nm, lib = sys.argv[1], sys.argv[2]
    out = subprocess.run([nm, "-A", lib], check=True, capture_output=True,
                         text=True).stdout
    defines, uses = {}, defaultdict(set)
    for line in out.splitlines():
        # libminimp.a:collectives_sched.c.o:                 U mmp__irecv_locked
        head, _, rest = line.rpartition(":")
        member = head.split(":")[-1]
        parts = rest.split()
        if len(parts) == 2 and parts[0] == "U":
            uses[member].add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDRBCGS" and parts[1].isupper():
            defines[parts[2]] = member
    graph = defaultdict(set)
    problems = []
    for member, syms in uses.items():
        for sym in syms:
            other = defines.get(sym)
            if other is None or other == member:
                continue
            graph[member].add(other)
            la, fa = layer_of(member)
            lb, fb = layer_of(other)
            rank = {"transport": 0, "runtime": 1, "collectives": 2}
            if la in rank and lb in rank and rank[lb] > rank[la]:
                problems.append(f"{la}/{fa} uses {sym} of {lb}/{fb}")
            if la == "collectives" and lb == "transport" and fb != "util.c":
                problems.append(f"{la}/{fa} uses {sym} of {lb}/{fb}")
    # Cycles among collectives/ files (Tarjan's strongly connected parts).
    coll = sorted(m for m in set(uses) | set(defines.values())
                  if layer_of(m)[0] == "collectives")
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if layer_of(w)[0] != "collectives":
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1:
                sccs.append(sorted(layer_of(m)[1] for m in part))

    sys.setrecursionlimit(10000)
    for v in coll:
        if v not in index:
            visit(v)
    for part in sccs:
        problems.append("collectives/ files use each other in a cycle: " +
                        ", ".join(part))
    for p in problems:
        print(p)
    print(f"{len(coll)} collectives/ files, {len(problems)} problem(s)")
    return 1 if problems else 0


# Lower layers first; every other folder of collectives/ is a collective's.
FOLDER_RANK = {"core": 0, "patterns": 1, "select": 2}
COLLECTIVE, TOP = 3, 4


def folder_rank(folder):
    return TOP if folder == "." else FOLDER_RANK.get(folder, COLLECTIVE)


def folders(src):
    """The problems of collectives/'s folders' #include lines."""
    root = os.path.join(src, "collectives")
    graph, problems = {}, []
    paths = sorted(glob.glob(os.path.join(root, "**", "*.[ch]"),
                             recursive=True))
    for path in paths:
        rel = os.path.relpath(path, root)
        here = os.path.dirname(rel).split(os.sep)[0] or "."
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for n, line in enumerate(text.split("\n"), 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            inc = m.group(1)
            where = "collectives/%s:%d" % (rel, n)
            if inc.startswith("runtime/"):
                if inc != "runtime/coll_api.h":
                    problems.append("%s includes %s (only runtime/coll_api.h)"
                                    % (where, inc))
                continue
            if not inc.startswith("collectives/"):
                continue
            parts = inc.split("/")
            there = parts[1] if len(parts) > 2 else "."
            if there == here:
                continue
            if folder_rank(there) > folder_rank(here) or (
                    folder_rank(here) < COLLECTIVE and
                    folder_rank(there) == folder_rank(here)):
                problems.append("%s: %s/ includes %s, a layer above it"
                                % (where, here, inc))
            graph.setdefault(here, set()).add(there)
    # Collectives may build on each other (allreduce on bcast), never in a
    # cycle: depth-first search for a back edge.
    state = {}

    def visit(v, trail):
        state[v] = 1
        for w in sorted(graph.get(v, ())):
            if state.get(w) == 1:
                loop = trail + [v]
                problems.append("collectives/ folders include each other in "
                                "a cycle: " +
                                " -> ".join(loop[loop.index(w):] + [w]))
            elif w not in state:
                visit(w, trail + [v])
        state[v] = 2

    for v in sorted(graph):
        if v not in state:
            visit(v, [])
    for p in problems:
        print(p)
    print("%d files of collectives/ in %d folders, %d problem(s)"
          % (len(paths), len(graph), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "folders":
        sys.exit(folders(sys.argv[2]))
    sys.exit(main())
