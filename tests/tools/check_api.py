#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every public function has its reference entry and its manual page.

Every type and constant of include/minimp.h (its macros, enumerators,
error codes and typedef names; the deprecated algorithm names, which
docs/api/algorithms.md describes as a group, aside) is named in docs/api/.
For every function include/minimp.h declares with MMP_EXTERN:
  - a "### " heading of a page of docs/api/ names it, and no such heading
    names a function the header does not declare;
  - docs/man/man3/NAME.3 exists, meson installs it (the build's
    meson-info/intro-installed.json), and a ".so" page points at a page
    that exists;
and docs/man/man3/ is what docs/man/api2man.py writes from docs/api/
(so a page edited in docs/api/ without regenerating fails), and every
page that is not a ".so" link renders with groff -man -ww without a
warning. Fails naming each function or page at fault.

    check_api.py BUILD_DIR SOURCE_DIR
"""
import json
import os
import re
import subprocess
import sys

DECL = re.compile(r"\bMMP_EXTERN\b[^;(]*?\b(mmp_[A-Za-z0-9_]+)\s*\(")
ENTRY_NAME = re.compile(r"\bmmp_[A-Za-z0-9_]+\b")


def public_functions(src):
    text = open(os.path.join(src, "include", "minimp.h"),
                encoding="utf-8").read()
    return set(DECL.findall(re.sub(r"/\*.*?\*/", " ", text, flags=re.S)))


def public_names(src):
    """The types and constants of the header, deprecated names aside."""
    text = open(os.path.join(src, "include", "minimp.h"),
                encoding="utf-8").read()
    text = re.sub(r"#ifndef MMP_NO_DEPRECATED.*?#endif /\* MMP_NO_DEPRECATED",
                  " ", text, flags=re.S)
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    names = set(re.findall(r"#define\s+(MMP_[A-Z0-9_]+)", text))
    names |= set(re.findall(r"^\s*(MMP_[A-Z0-9_]+)\s*=", text, flags=re.M))
    names |= {"MMP_" + n for n in re.findall(r"XX\((\w+),", text)}
    names |= set(re.findall(r"\b(mmp_\w+_t|mmp_\w+_fn)\b", text))
    # The export and attribute macros are the build's, not the user's.
    return {n for n in names if not n.startswith("MMP__")} - \
        {"MMP_EXTERN", "MMP_NORETURN"}


def reference_entries(src):
    """{function: "docs/api/PAGE.md:LINE"} of every "### " heading."""
    found = {}
    api = os.path.join(src, "docs", "api")
    for md in sorted(os.listdir(api)):
        if not md.endswith(".md"):
            continue
        fence = False
        path = os.path.join(api, md)
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if line.startswith("```"):
                fence = not fence
            if not fence and line.startswith("### "):
                for name in ENTRY_NAME.findall(line):
                    if not name.endswith("_t"):
                        found.setdefault(name, "docs/api/%s:%d" % (md, n))
    return found


def installed_man3(build):
    with open(os.path.join(build, "meson-info", "intro-installed.json")) as f:
        installed = json.load(f)
    return {os.path.basename(d) for d in installed.values()
            if os.path.basename(os.path.dirname(d)) == "man3"}


def main():
    build, src = sys.argv[1:3]
    man3 = os.path.join(src, "docs", "man", "man3")
    errors = []
    public = public_functions(src)
    entries = reference_entries(src)
    installed = installed_man3(build)
    if not public:
        errors.append("include/minimp.h declares no MMP_EXTERN function")
    for name in sorted(public):
        if name not in entries:
            errors.append("%s has no entry (a '### %s' heading) in docs/api/"
                          % (name, name))
        page = os.path.join(man3, name + ".3")
        if not os.path.exists(page):
            errors.append("%s has no manual page docs/man/man3/%s.3" %
                          (name, name))
        elif name + ".3" not in installed:
            errors.append("%s: docs/man/man3/%s.3 is not installed "
                          "(docs/man/man3/meson.build)" % (name, name))
    text = " ".join(open(os.path.join(src, "docs", "api", f),
                         encoding="utf-8").read()
                    for f in os.listdir(os.path.join(src, "docs", "api"))
                    if f.endswith(".md"))
    names = public_names(src)
    for name in sorted(names):
        if not re.search(r"\b%s\b" % re.escape(name), text):
            errors.append("%s (include/minimp.h) is named nowhere in "
                          "docs/api/" % name)
    for name, where in sorted(entries.items()):
        if name not in public:
            errors.append("%s: %s is not a public function of "
                          "include/minimp.h" % (where, name))
    p = subprocess.run([sys.executable,
                        os.path.join(src, "docs", "man", "api2man.py"), src,
                        "--check"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    if p.returncode != 0:
        errors += [l[6:] if l.startswith("FAIL: ") else l
                   for l in p.stdout.splitlines() if l.strip()]
    rendered = 0
    for f in sorted(os.listdir(man3)):
        if not f.endswith(".3"):
            continue
        path = os.path.join(man3, f)
        first = open(path, encoding="utf-8").readline()
        if first.startswith(".so "):
            target = os.path.join(man3, os.path.basename(first.split()[1]))
            if not os.path.exists(target):
                errors.append("docs/man/man3/%s: .so to a missing page" % f)
            continue
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        rendered += 1
        if r.returncode != 0 or r.stderr.strip():
            errors.append("docs/man/man3/%s: groff -ww: %s" %
                          (f, r.stderr.strip()[:300] or
                           "exit %d" % r.returncode))
    for e in errors:
        print("FAIL: " + e)
    if not errors:
        print("api_reference: %d public functions, each with its entry in "
              "docs/api/ and its installed page; %d types and constants, "
              "each named there; %d pages rendered without a warning" %
              (len(public), len(names), rendered))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
