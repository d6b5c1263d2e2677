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
"""
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


if __name__ == "__main__":
    sys.exit(main())
