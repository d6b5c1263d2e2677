#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every program meson installs into bindir has a manual page that matches
its --help: the page docs/man/NAME.1 exists and is installed, the program's
--help succeeds, every option that --help lists as an entry (a line that
starts with it) is an entry of the page's OPTIONS section, every other
option --help names appears in the page, and every entry of the page's
OPTIONS section is an option --help names; and the page renders with
groff -man -ww without a warning. The programs come from the build's own
list of installed files (meson-info/intro-installed.json), so a new tool
is checked as soon as meson installs it.

    check_man.py BUILD_DIR SOURCE_DIR BINDIR
"""
import json
import os
import re
import shlex
import subprocess
import sys

# An option: one or two dashes and a letter, not inside a word or a path.
OPTION = re.compile(r"(?<![\w/.=-])(--?[A-Za-z][A-Za-z0-9-]*)")
# A line of --help that lists options: indented a little, then a dash; the
# options are those before the description (two spaces or more).
HELP_ENTRY = re.compile(r"^ {1,8}(-\S.*?)(?: {2,}|$)")
# Font macros whose arguments alternate fonts and join without spaces.
JOINED = {".BR", ".RB", ".BI", ".IB", ".IR", ".RI"}


def troff_text(line):
    """The text a line of man(7) source shows, roughly: escapes resolved,
    the macro name dropped, the font macros' arguments joined."""
    line = line.rstrip("\n")
    line = line.replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "")
    line = line.replace("\\&", "").replace("\\ ", " ")
    line = re.sub(r"\\f[BIRP]|\\f\(..|\\f\[[A-Z]*\]", "", line)
    if not line.startswith("."):
        return line
    macro, _, rest = line.partition(" ")
    try:
        args = shlex.split(rest)
    except ValueError:
        args = rest.split()
    return ("" if macro in JOINED else " ").join(args)


def man_pages(path):
    """(every option the page names, the options of its OPTIONS entries,
    its .TH name)."""
    names, entries, th = set(), set(), None
    section, tag_next = None, False
    for raw in open(path, encoding="utf-8"):
        if raw.startswith('.\\"'):
            continue
        if raw.startswith(".TH "):
            th = raw.split()[1]
        if raw.startswith(".SH "):
            section = raw[4:].strip().strip('"')
            continue
        text = troff_text(raw)
        found = set(OPTION.findall(text))
        names |= found
        if tag_next:
            if section == "OPTIONS":
                entries |= found
            tag_next = False
        if raw.startswith(".TP"):
            tag_next = True
    return names, entries, th


def help_entries(text):
    """The options --help lists as entries."""
    found = set()
    for line in text.splitlines():
        m = HELP_ENTRY.match(line)
        if m:
            found |= set(OPTION.findall(m.group(1)))
    return found


def run_help(build_path):
    """The program's --help output, or raises with why not."""
    cmd = [build_path, "--help"]
    if not os.access(build_path, os.X_OK):
        # A configured script is executable only once installed.
        first = open(build_path, encoding="utf-8", errors="replace").readline()
        if not first.startswith("#!"):
            raise RuntimeError("not executable and no #! line")
        cmd = first[2:].split() + cmd
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=30,
                       universal_newlines=True)
    if p.returncode != 0 or not p.stdout.strip():
        raise RuntimeError("--help exits %d with %d bytes on stdout: %s" %
                           (p.returncode, len(p.stdout), p.stderr[:300]))
    return p.stdout


def main():
    build, src, bindir = sys.argv[1:4]
    bindir = os.path.normpath(bindir)
    with open(os.path.join(build, "meson-info", "intro-installed.json")) as f:
        installed = json.load(f)
    tools = {os.path.basename(dest): path for path, dest in installed.items()
             if os.path.dirname(os.path.normpath(dest)) == bindir}
    man1 = {os.path.basename(dest) for dest in installed.values()
            if os.path.basename(os.path.dirname(dest)) == "man1"}
    errors = []
    if not tools:
        errors.append("meson installs nothing into %s" % bindir)
    for name, path in sorted(tools.items()):
        page = os.path.join(src, "docs", "man", name + ".1")
        if not os.path.exists(page):
            errors.append("%s: no manual page %s" % (name, page))
            continue
        r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True)
        if r.returncode != 0 or r.stderr.strip():
            errors.append("%s: groff -ww warns about %s: %s" %
                          (name, page, r.stderr.strip()[:300]))
        if name + ".1" not in man1:
            errors.append("%s: %s.1 is not installed (docs/man/meson.build)"
                          % (name, name))
        try:
            helptext = run_help(path)
        except (OSError, RuntimeError, subprocess.TimeoutExpired) as e:
            errors.append("%s: %s" % (name, e))
            continue
        said = set(OPTION.findall(helptext))
        names, entries, th = man_pages(page)
        if th is None or th.lower() != name.replace("-", "\\-").lower() and \
                th.lower() != name.lower():
            errors.append("%s: %s has .TH %s" % (name, page, th))
        for opt in sorted(help_entries(helptext) - entries):
            errors.append("%s: '%s' is an option of --help but no entry of "
                          "%s's OPTIONS" % (name, opt, page))
        for opt in sorted(said - names):
            errors.append("%s: '%s' is in --help but not in %s" %
                          (name, opt, page))
        for opt in sorted(entries - said):
            errors.append("%s: '%s' is an entry of %s's OPTIONS but not in "
                          "--help" % (name, opt, page))
        print("%s: %d options in --help, checked against %s" %
              (name, len(said), os.path.relpath(page, src)))
    for e in errors:
        print("FAIL: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
