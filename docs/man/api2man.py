#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the section-3 manual pages from the API reference (docs/api/).

Every "## " section of a page of docs/api/ whose "### " entries name
public functions becomes one manual page, named after its first
function; every other function of the section gets a page that is a
".so" link to it. A page holds the reference page's introduction, the
section, and the page's sections that name no function (mmp_status_t
beside mmp_wait). docs/man/man3/meson.build, which installs them, is
written too. The reference is the one source: edit docs/api/, then run

    docs/man/api2man.py SOURCE_DIR            # rewrite docs/man/man3/
    docs/man/api2man.py SOURCE_DIR --check    # list what is stale, exit 1

The test api_reference (tests/tools/check_api.py) runs --check.
"""
import os
import re
import sys
import tempfile

DATE = "2026-11-29"
SOURCE = "libminimp 0.1.0"
MANUAL = "libminimp Manual"
FUNC = re.compile(r"\bmmp_[a-z0-9_]+\b")
HEADER_FUNC = re.compile(r"\bMMP_EXTERN\b[^;(]*?\b(mmp_[A-Za-z0-9_]+)\s*\(")


def public_functions(src):
    text = open(os.path.join(src, "include", "minimp.h"),
                encoding="utf-8").read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return set(HEADER_FUNC.findall(text))


def escape(text):
    """Text for troff: backslashes, then every non-ASCII character as a
    \\[uXXXX] escape, so that no preprocessor is needed."""
    text = text.replace("\\", "\\e")
    return "".join(c if ord(c) < 128 else "\\[u%04X]" % ord(c) for c in text)


def inline(text):
    """A line of Markdown prose as troff text."""
    text = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", text)  # links: the text
    out = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if part.startswith("`") and part.endswith("`") and len(part) > 1:
            out.append("\\fB" + escape(part[1:-1]) + "\\fR")
        else:
            part = escape(part)
            part = re.sub(r"\*\*([^*]+)\*\*", r"\\fB\1\\fR", part)
            part = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])",
                          r"\\fI\1\\fR", part)
            out.append(part)
    line = "".join(out)
    if line.startswith((".", "'")):
        line = "\\&" + line
    return line


def sections(text):
    """(intro lines, [(title, lines)]) of a page, split at "## "."""
    intro, secs, cur = [], [], None
    fence = False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("## "):
            cur = (line[3:].strip(), [])
            secs.append(cur)
        elif cur is None:
            if not line.startswith("# "):
                intro.append(line)
        else:
            cur[1].append(line)
    return intro, secs


def entries(lines, public):
    """The public functions the "### " headings of a section name."""
    found = []
    fence = False
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("### "):
            found += [f for f in FUNC.findall(line) if f in public]
    return found


def body(lines, synopsis):
    """troff for Markdown lines; the first code block after each "### "
    heading goes to `synopsis` instead."""
    out, para = [], []
    i, after_heading = 0, False

    def flush():
        if para:
            out.extend(para)
            para.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            flush()
            code = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                code.append(lines[i])
                i += 1
            i += 1
            text = [("\\&" if c.startswith((".", "'")) else "") + escape(c)
                    for c in code]
            if after_heading:
                synopsis.extend(text + [""])
                after_heading = False
            else:
                out += [".PP", ".RS 4", ".nf"] + text + [".fi", ".RE"]
            continue
        if line.startswith("### "):
            flush()
            out += [".SS \"%s\"" % escape(line[4:].strip())]
            after_heading = True
        elif not line.strip():
            flush()
        elif line.startswith("|"):
            flush()
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(re.match(r"^:?-+:?$", c) for c in cells) and \
                    not (i + 1 < len(lines) and
                         re.match(r"^\|[ :|-]+\|$", lines[i + 1].strip())):
                out += [".TP", inline(cells[0]),
                        inline(" \u2014 ".join(c for c in cells[1:] if c))]
        elif line.startswith("- "):
            flush()
            para += [".IP \\(bu 2", inline(line[2:])]
        elif line.startswith("  ") and para and para[0].startswith(".IP"):
            para.append(inline(line.strip()))
        else:
            if not para:
                para.append(".PP")
            para.append(inline(line.strip()))
        i += 1
    flush()
    return out


def page(name, title, funcs, intro, sec, extra, rel, see):
    synopsis = []
    desc = body(intro, []) + body(sec, synopsis)
    for t, lines in extra:
        desc += [".SS \"%s\"" % escape(t)] + body(lines, [])
    lines = ['.\\" SPDX-License-Identifier: MIT',
             '.\\" Written by docs/man/api2man.py from %s: do not edit.' % rel,
             '.TH %s 3 %s "%s" "%s"' % (name.upper(),
                                       DATE, SOURCE, MANUAL),
             # Identifiers are long and must not be hyphenated.
             ".nh",
             ".ad l",
             ".SH NAME",
             "%s \\- %s" % (", ".join(funcs),
                            escape(title[0].lower() + title[1:])),
             ".SH SYNOPSIS", ".nf", ".B #include <minimp.h>", ""]
    lines += synopsis
    lines += [".fi", ".SH DESCRIPTION"] + desc
    lines += [".SH SEE ALSO"]
    lines += [".BR %s (3)," % s for s in see if s != name]
    lines.append("the guide and the API reference (%s) in the libminimp "
                 "sources." % rel)
    return "\n".join(l for l in lines) + "\n"


def generate(src):
    """{file name: text} of every page, and the meson.build."""
    public = public_functions(src)
    api = os.path.join(src, "docs", "api")
    files = {}
    for md in sorted(os.listdir(api)):
        if not md.endswith(".md"):
            continue
        rel = "docs/api/" + md
        intro, secs = sections(open(os.path.join(api, md),
                                    encoding="utf-8").read())
        fams = [(t, l, entries(l, public)) for t, l in secs]
        extra = [(t, l) for t, l, f in fams if not f]
        see = [f[0] for t, l, f in fams if f]
        for title, lines, funcs in fams:
            if not funcs:
                continue
            files[funcs[0] + ".3"] = page(funcs[0], title, funcs, intro,
                                          lines, extra, rel, see)
            for f in funcs[1:]:
                files[f + ".3"] = ".so man3/%s.3\n" % funcs[0]
    files["meson.build"] = (
        "# SPDX-License-Identifier: MIT\n"
        "# Written by docs/man/api2man.py from docs/api/: do not edit.\n"
        "install_man(\n" +
        "".join("  '%s',\n" % n for n in sorted(files)) + ")\n")
    return files


def main():
    src = sys.argv[1]
    check = "--check" in sys.argv[2:]
    out = os.path.join(src, "docs", "man", "man3")
    files = generate(src)
    have = set(os.listdir(out)) if os.path.isdir(out) else set()
    stale = []
    for name, text in sorted(files.items()):
        path = os.path.join(out, name)
        old = open(path, encoding="utf-8").read() if name in have else None
        if old != text:
            stale.append(name)
            if not check:
                os.makedirs(out, exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
    extra = sorted(have - set(files))
    if check:
        for name in stale:
            print("FAIL: docs/man/man3/%s is %s: run docs/man/api2man.py ." %
                  (name, "stale" if name in have else "missing"))
        for name in extra:
            print("FAIL: docs/man/man3/%s is not made from docs/api/" % name)
        return 1 if stale or extra else 0
    for name in extra:
        os.unlink(os.path.join(out, name))
    print("%d pages written, %d removed" % (len(stale), len(extra)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
