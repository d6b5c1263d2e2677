#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that every public call is called by a test.

Lists every function include/minimp.h declares with MMP_EXTERN and looks
for each one's name in the test programs (tests/*.c and *.h, and
tests/fuzz/), with comments and string literals removed, so that a call
named only in a comment or a message does not count. Benchmarks
(tests/bench/) and examples are not tests. Fails naming every function
no test refers to; prints how many were found otherwise.

Usage: check_public_calls.py SOURCE_ROOT
"""
import pathlib
import re
import sys

# MMP_EXTERN, the return type (with pointers and qualifiers), the name,
# then "(".
DECL = re.compile(r"\bMMP_EXTERN\b[^;(]*?\b(mmp_[A-Za-z0-9_]+)\s*\(")
IDENT = re.compile(r"\bmmp_[A-Za-z0-9_]+\b")
# Comments, then string and character literals (with their escapes).
NOISE = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'
                   r"'(?:\\.|[^'\\\n])*'", re.S)


def public_calls(header):
    text = NOISE.sub(" ", header.read_text())
    return sorted(set(DECL.findall(text)))


def test_files(root):
    tests = root / "tests"
    files = sorted(tests.glob("*.c")) + sorted(tests.glob("*.h"))
    files += sorted((tests / "fuzz").glob("*.c"))
    return files


def main():
    root = pathlib.Path(sys.argv[1])
    calls = public_calls(root / "include" / "minimp.h")
    if not calls:
        print("check_public_calls: no MMP_EXTERN function found in "
              "include/minimp.h")
        return 1
    used = set()
    for f in test_files(root):
        used.update(IDENT.findall(NOISE.sub(" ", f.read_text())))
    missing = [c for c in calls if c not in used]
    if missing:
        print("public calls that no test calls (tests/*.c, tests/*.h, "
              "tests/fuzz/*.c):")
        for c in missing:
            print("  " + c)
        return 1
    print("all %d public calls are called by a test" % len(calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
