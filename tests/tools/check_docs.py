#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The documentation names only what exists.

    check_docs.py links SOURCE_DIR
        Every relative link of README.md and docs/ (docs/data/ aside,
        but for docs/data/history/)
        reaches a file, and its #anchor a heading of that file.
    check_docs.py names BUILD_DIR SOURCE_DIR BINDIR
        README.md, docs/guide/, docs/api/ and docs/design/ name only
        what exists: files and
        directories of the tree, programs meson builds or installs and
        the options their --help lists, make targets, manual pages, meson
        options, public identifiers of include/minimp.h (and internal
        ones of the sources), MINIMP_* variables the code reads; and
        their C examples compile.
    check_docs.py errors SOURCE_DIR
        Every code of MMP_ERRNO_MAP in include/minimp.h is a row of
        docs/guide/troubleshooting.md's table, with its value, a cause and
        what to do.
    check_docs.py tuning SOURCE_DIR
        Every MINIMP_*, SLURM_*, PBS_*, PMIX_* and PMI_* variable named in a
        string of
        runtime/, transport/, collectives/ or launcher/ is a row of
        docs/guide/tuning.md's table, and every variable of the table is
        one of them.

Prints one line per problem (FILE:LINE: what) and exits 1 if any.
"""
import glob
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile

CODE_DIRS = ("runtime", "transport", "collectives", "launcher")
ENV_NAME = re.compile(
    r"\b((?:MINIMP|SLURM|PBS|PMIX|PMI)_[A-Z0-9_]*[A-Z0-9])\b(?!\*)")


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


# ---- Markdown ------------------------------------------------------------


def md_lines(text):
    """(line number, line, in a fenced block) for every line."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if m:
            if fence is None:
                fence = m.group(1)
                yield n, line, True
                continue
            if line.strip().startswith(fence):
                fence = None
                yield n, line, True
                continue
        yield n, line, fence is not None


def md_blocks(text):
    """(first line number, info string, body) of every fenced block."""
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^\s*(```+)\s*(\S*)", lines[i])
        if not m:
            i += 1
            continue
        start, info, body = i + 1, m.group(2), []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(m.group(1)):
            body.append(lines[i])
            i += 1
        yield start + 1, info, "\n".join(body)
        i += 1


def slug(heading):
    """GitHub's anchor for a heading."""
    h = re.sub(r"`", "", heading.strip().lower())
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    seen, out = {}, set()
    for _, line, code in md_lines(read(path)):
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if code or not m:
            continue
        s = slug(m.group(2))
        k = seen.get(s, 0)
        seen[s] = k + 1
        out.add(s if k == 0 else "%s-%d" % (s, k))
    return out


def code_spans(line):
    return re.findall(r"`([^`]+)`", line)


def without_code(line):
    return re.sub(r"`[^`]*`", "", line)


def check_links(src):
    files = [os.path.join(src, "README.md")]
    for root, dirs, names in os.walk(os.path.join(src, "docs")):
        dirs[:] = [d for d in dirs if os.path.join(root, d) !=
                   os.path.join(src, "docs", "data")]
        files += [os.path.join(root, n) for n in names if n.endswith(".md")]
    # The history's pages are read too: measurements moved there keep
    # their links.
    files += glob.glob(os.path.join(src, "docs", "data", "history", "*.md"))
    errors, cache = [], {}
    for f in sorted(files):
        rel = os.path.relpath(f, src)
        for n, line, code in md_lines(read(f)):
            if code:
                continue
            for target in re.findall(r"\]\(([^)\s]+)\)", without_code(line)):
                if re.match(r"^[a-z]+:", target):
                    continue
                path, _, frag = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) \
                    if path else f
                if not os.path.exists(dest):
                    errors.append("%s:%d: link to %s: no such file" %
                                  (rel, n, target))
                    continue
                if frag and dest.endswith(".md"):
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if frag not in cache[dest]:
                        errors.append("%s:%d: link to %s: %s has no heading "
                                      "#%s" % (rel, n, target,
                                               os.path.relpath(dest, src),
                                               frag))
    return errors


# ---- What exists ----------------------------------------------------------


def env_read_by_code(src):
    """{name: first file} of the variables named in the code's strings."""
    found = {}
    for d in CODE_DIRS:
        for path in sorted(glob.glob(os.path.join(src, d, "**", "*"),
                                     recursive=True)):
            if path.endswith((".c", ".h")):
                text = read(path)
                # Strings only: comments mention variables in passing.
                text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
                text = re.sub(r"//[^\n]*", " ", text)
                strings = re.findall(r'"((?:[^"\\\n]|\\.)*)"', text)
            elif path.endswith(".in"):
                strings = re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)",
                                     read(path))
            else:
                continue
            for s in strings:
                for name in ENV_NAME.findall(s):
                    found.setdefault(name, os.path.relpath(path, src))
    return found


def tuning_table(src):
    """{variable: line} of docs/guide/tuning.md's table."""
    path = os.path.join(src, "docs", "guide", "tuning.md")
    rows = {}
    for n, line, code in md_lines(read(path)):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if code or not line.startswith("|") or len(cells) < 4:
            continue
        for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells[1]):
            rows.setdefault(name, n)
    return rows


def error_map(src):
    """[(NAME, value)] of MMP_ERRNO_MAP in include/minimp.h."""
    header = read(os.path.join(src, "include", "minimp.h"))
    return [(m.group(1), int(m.group(2))) for m in
            re.finditer(r"XX\((\w+),\s*(-\d+),", header)]


def check_errors(src):
    """Every code of MMP_ERRNO_MAP is a row of troubleshooting.md's table,
    with its value."""
    path = os.path.join(src, "docs", "guide", "troubleshooting.md")
    rows = {}
    for n, line, code in md_lines(read(path)):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not code and line.startswith("|") and len(cells) >= 4:
            m = re.match(r"^`MMP_(\w+)`$", cells[0])
            if m:
                rows[m.group(1)] = (n, cells[1].replace("\u2212", "-"),
                                    cells[2], cells[3])
    codes = error_map(src)
    errors = []
    if not codes:
        errors.append("include/minimp.h: no MMP_ERRNO_MAP entries found")
    for name, value in codes:
        if name not in rows:
            errors.append("docs/guide/troubleshooting.md: MMP_%s (%d) has no "
                          "row" % (name, value))
        elif rows[name][1] != str(value):
            errors.append("docs/guide/troubleshooting.md:%d: MMP_%s is %d, "
                          "not %s" % (rows[name][0], name, value,
                                      rows[name][1]))
        elif len(rows[name][2]) < 20 or not rows[name][3]:
            errors.append("docs/guide/troubleshooting.md:%d: MMP_%s: say "
                          "what causes it and what to do" %
                          (rows[name][0], name))
    for name in sorted(set(rows) - {n for n, _ in codes}):
        errors.append("docs/guide/troubleshooting.md:%d: MMP_%s is no code "
                      "of MMP_ERRNO_MAP" % (rows[name][0], name))
    if not errors:
        print("errors: every one of the %d codes has its row" % len(codes))
    return errors


def check_tuning(src):
    code = env_read_by_code(src)
    table = tuning_table(src)
    errors = []
    for name in sorted(set(code) - set(table)):
        errors.append("docs/guide/tuning.md: %s (named in %s) is not in the "
                      "table" % (name, code[name]))
    for name in sorted(set(table) - set(code)):
        errors.append("docs/guide/tuning.md:%d: %s is in the table, but no "
                      "code reads it" % (table[name], name))
    if not errors:
        print("tuning: %d variables, every one in the table" % len(code))
    return errors


class World:
    """What the tree and the build have."""

    def __init__(self, build, src, bindir):
        self.src, self.build = src, build
        bindir = os.path.normpath(bindir)
        with open(os.path.join(build, "meson-info",
                               "intro-installed.json")) as f:
            installed = json.load(f)
        self.programs = {os.path.basename(d): p for p, d in installed.items()
                         if os.path.dirname(os.path.normpath(d)) == bindir}
        self.man = {os.path.basename(d) for d in installed.values()
                    if re.search(r"/man\d/", d)}
        with open(os.path.join(build, "meson-info", "intro-targets.json")) as f:
            targets = json.load(f)
        self.built = set()
        for t in targets:
            for fn in t.get("filename", []):
                self.built.add(os.path.relpath(fn, build))
        self.make = set()
        for line in read(os.path.join(src, "Makefile")).split("\n"):
            m = re.match(r"^([A-Za-z0-9_.$()/-]+)\s*:(?!=)", line)
            if m and "$" not in m.group(1):
                self.make.add(m.group(1))
        self.meson_opts = set(re.findall(r"option\(\s*'([\w-]+)'",
                                         read(os.path.join(
                                             src, "meson_options.txt"))))
        header = read(os.path.join(src, "include", "minimp.h"))
        self.public = set(re.findall(r"\b(?:mmp|MMP)_\w+", header)) | \
            {"MMP_" + name for name, _ in error_map(src)}
        self.internal = set()
        for d in CODE_DIRS + ("include", "tests"):
            for path in glob.glob(os.path.join(src, d, "**", "*.[ch]"),
                                  recursive=True):
                self.internal |= set(re.findall(r"\b(?:mmp|MMP)__\w+",
                                                read(path)))
        self.env = set(env_read_by_code(src))
        # What the checkout holds, not what runs left in it (results/ of
        # make bench or make report, which docs name as output to come).
        self.top = set(os.listdir(src)) - {"build", "results"}
        self.helps = {}

    def options(self, prog):
        """The options the program's --help names."""
        if prog not in self.helps:
            path = self.programs[prog]
            cmd = [path, "--help"]
            if not os.access(path, os.X_OK):
                cmd = read(path).split("\n")[0][2:].split() + cmd
            out = subprocess.run(cmd, stdout=subprocess.PIPE,
                                 stderr=subprocess.DEVNULL, timeout=30,
                                 universal_newlines=True).stdout
            self.helps[prog] = set(re.findall(
                r"(?<![\w/.=-])(--?[A-Za-z][A-Za-z0-9-]*)", out))
        return self.helps[prog]


def program_of(word, world):
    """The installed program a command's first word runs, or None."""
    base = os.path.basename(word)
    if base not in world.programs:
        return None
    if "/" not in word:
        return base
    if word.startswith("build/"):
        return base if os.path.relpath(world.programs[base], world.build) == \
            word[len("build/"):] else None
    return base if "/bin/" in word else None


def check_path(tok, world):
    """None, or why the path a document names does not exist."""
    t = tok.rstrip(".,;:)")
    if t.startswith("build/"):
        rest = t[len("build/"):].rstrip("/")
        if rest == "" or rest in world.built:
            return None
        return "%s is not built by meson" % t
    if t.startswith("/"):
        m = re.match(r"^/.*/bin/([\w.+-]+)$", t)
        if m and "minimp" in m.group(1):
            return None if m.group(1) in world.programs else \
                "%s: meson installs no %s" % (t, m.group(1))
        return None
    first = t.split("/")[0]
    if first not in world.top or re.search(r"[A-Z]{2,}", t.split("/", 1)[-1]):
        return None
    if not os.path.exists(os.path.join(world.src, t)):
        return "%s does not exist" % t
    return None


def check_command(words, world):
    """Problems of one command line, split into words."""
    errors = []
    while words and (re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]) or
                     words[0] in ("sudo", "heavy", "env", "exec", "time")):
        words = words[1:]
    if len(words) >= 4 and words[:3] == ["ip", "netns", "exec"]:
        words = words[4:]
    if not words:
        return errors
    cmd = words[0]
    if cmd == "make":
        for w in words[1:]:
            if not w.startswith("-") and "=" not in w and w not in world.make:
                errors.append("make %s: no such target in the Makefile" % w)
        return errors
    if cmd == "man" and len(words) in (2, 3):
        # man NAME (any section) or man SECTION NAME.
        sections = [words[1]] if len(words) == 3 else "123456789"
        if not any("%s.%s" % (words[-1], sec) in world.man
                   for sec in sections):
            errors.append("%s: no such page is installed" % " ".join(words))
        return errors
    if cmd == "meson":
        for w in words[1:]:
            m = re.match(r"^-D([\w-]+)=", w)
            if m and not m.group(1).startswith("b_") and \
                    m.group(1) not in world.meson_opts and \
                    m.group(1) not in ("buildtype", "prefix", "libdir",
                                       "bindir", "default_library"):
                errors.append("meson option %s does not exist" % m.group(1))
        return errors
    if cmd in ("sh", "bash", "python3") and len(words) > 1:
        words = words[1:]
        cmd = words[0]
    prog = program_of(cmd, world)
    if prog is None:
        why = check_path(cmd, world) if "/" in cmd else None
        if why:
            errors.append(why)
        return errors
    if cmd.startswith("build/") and check_path(cmd, world):
        errors.append(check_path(cmd, world))
    known = world.options(prog)
    rest = words[1:]
    for i, w in enumerate(rest):
        if "/" in w and not w.startswith("-") and prog == "minimprun":
            # The program minimprun starts, with its own arguments.
            errors += check_command(rest[i:], world)
            break
        if not w.startswith("-") or (prog == "minimpcc" and
                                      not w.startswith("--")):
            continue
        name = w.split("=", 1)[0]
        if re.match(r"^--?[A-Za-z]", name) and name not in known:
            errors.append("%s %s: not an option of %s --help" %
                          (prog, name, prog))
    return errors


def split_commands(line):
    """A shell line's commands, as lists of words (comments dropped)."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:
        return []
    out, cur = [], []
    for w in words:
        if w in ("&&", "||", "|", ";"):
            out.append(cur)
            cur = []
        else:
            cur.append(w)
    out.append(cur)
    return [c for c in out if c]


def check_span(span, world):
    errors = []
    s = span.strip()
    for name in re.findall(r"\b(mmp__?\w+|MMP_\w+)\b(?!\.\.\.|\*)", s):
        if name.startswith(("mmp__", "MMP__")):
            if name not in world.internal:
                errors.append("%s is in no source file" % name)
        elif name not in world.public:
            errors.append("%s is not in include/minimp.h" % name)
    for name in ENV_NAME.findall(s):
        if name.startswith("MINIMP_") and name not in world.env:
            errors.append("%s: no code reads it" % name)
    m = re.match(r"^([\w.-]+)\((\d)\)$", s)
    if m:
        if "%s.%s" % (m.group(1), m.group(2)) not in world.man:
            errors.append("%s: no such manual page is installed" % s)
        return errors
    if re.match(r"^(make|man|meson|minimp|sh |sudo |\./|/|build/)", s) or \
            re.match(r"^\S+/\S+$", s):
        for words in split_commands(s):
            if len(words) == 1 and "/" in words[0] and \
                    program_of(words[0], world) is None:
                why = check_path(words[0], world)
                if why:
                    errors.append(why)
            else:
                errors += check_command(words, world)
    return errors


def compile_c(body, world):
    """None, or the compiler's complaint about a C example."""
    text = body if "#include" in body else "#include <minimp.h>\n" + body
    with tempfile.NamedTemporaryFile("w", suffix=".c", delete=False) as f:
        f.write(text)
        name = f.name
    try:
        p = subprocess.run(["cc", "-std=c11", "-fsyntax-only", "-Wall",
                            "-Werror",
                            "-I", os.path.join(world.src, "include"), name],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60)
    finally:
        os.unlink(name)
    return None if p.returncode == 0 else p.stdout.strip()[:600]


def check_names(build, src, bindir):
    world = World(build, src, bindir)
    docs = [os.path.join(src, "README.md")] + \
        sorted(glob.glob(os.path.join(src, "docs", "guide", "*.md"))) + \
        sorted(glob.glob(os.path.join(src, "docs", "api", "*.md"))) + \
        sorted(glob.glob(os.path.join(src, "docs", "design", "*.md")))
    errors, checked = [], 0
    for f in docs:
        rel = os.path.relpath(f, src)
        text = read(f)
        for n, line, code in md_lines(text):
            if code:
                continue
            for span in code_spans(line):
                checked += 1
                errors += ["%s:%d: %s" % (rel, n, e)
                           for e in check_span(span, world)]
        for n, info, body in md_blocks(text):
            checked += 1
            if info == "c" and "typedef struct" not in body:
                # A structure as the header declares it cannot be
                # declared twice; the build compiles the header's own.
                why = compile_c(body, world)
                if why:
                    errors.append("%s:%d: the C example does not compile: %s"
                                  % (rel, n, why))
            elif info in ("sh", "bash", "shell"):
                joined = re.sub(r"\\\n\s*", " ", body)
                for k, line in enumerate(joined.split("\n")):
                    for words in split_commands(line):
                        errors += ["%s:%d: %s" % (rel, n, e)
                                   for e in check_command(words, world)]
            elif info == "":
                # A layout: "dir/   what it holds".
                for k, line in enumerate(body.split("\n")):
                    m = re.match(r"^([\w.-]+/)\s{2,}\S", line)
                    if m and m.group(1).rstrip("/") not in world.top:
                        errors.append("%s:%d: %s does not exist" %
                                      (rel, n + k, m.group(1)))
    if not errors:
        print("names: %d code spans and blocks in %d files, all exist" %
              (checked, len(docs)))
    return errors


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "links" and len(sys.argv) == 3:
        errors = check_links(sys.argv[2])
        if not errors:
            print("links: every link reaches its file and heading")
    elif mode == "names" and len(sys.argv) == 5:
        errors = check_names(*sys.argv[2:5])
    elif mode == "tuning" and len(sys.argv) == 3:
        errors = check_tuning(sys.argv[2])
    elif mode == "errors" and len(sys.argv) == 3:
        errors = check_errors(sys.argv[2])
    else:
        print(__doc__)
        return 2
    for e in errors:
        print("FAIL: " + e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
