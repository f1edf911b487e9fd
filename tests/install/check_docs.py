#!/usr/bin/env python3
"""Checks of the generated man pages against the binary (label install, issue 20).

  check_docs.py man      BIN DOCS   every page renders with `groff -ww` and `man --warnings` silent,
                                    one page per command of `exitscope --help`, each with OPTIONS,
                                    EXIT STATUS (known codes, each with its meaning) and EXAMPLES
  check_docs.py options  BIN DOCS   `exitscope CMD --help` and exitscope-CMD(1) list the same options,
                                    and exitscope(1) the same commands as `exitscope --help`
  check_docs.py self-test BIN DOCS  the options check fails on a page that dropped or gained one
DOCS is the build's docs/ folder (scripts/gen_cli_docs.py --out).
"""
import os
import re
import subprocess
import sys

KNOWN_CODES = {0, 1, 64, 65, 66, 69, 70, 74, 77, 141}


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def commands_of_help(binary):
    """Command names under "commands:" in `exitscope --help`."""
    out = run([binary, "--help"]).stdout
    block = out.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return [l.split()[0] for l in block.splitlines() if l.strip()]


def options_of_help(text):
    """Every option name in a CLI11 --help text (its Options: section)."""
    names, in_options = set(), False
    for line in text.splitlines():
        if re.match(r"^\S.*:$", line):
            in_options = line.startswith("Options:")
            continue
        if in_options and re.match(r"^  -", line):
            for n in line.split()[0].split(","):
                names.add(re.sub(r"\{[^}]*\}", "", n))
    return names


def plain_roff(s):
    return re.sub(r"\\f[BIRP]", "", s).replace("\\-", "-").replace("\\&", "")


def sections(page):
    """{section name: [lines]} of a roff man page."""
    out, cur = {}, None
    for line in page.splitlines():
        if line.startswith(".SH "):
            cur = plain_roff(line[4:]).strip().strip('"')
            out[cur] = []
        elif cur:
            out[cur].append(line)
    return out


def tp_heads(lines):
    return [plain_roff(lines[i + 1]) for i, l in enumerate(lines[:-1]) if l == ".TP"]


def options_of_page(page):
    names = set()
    for head in tp_heads(sections(page).get("OPTIONS", [])):
        names |= set(re.findall(r"(?<![\w-])--?[A-Za-z0-9?][\w-]*", head))
    return names


def compare(cmd, help_text, page):
    """Differences between a command's --help and its page, as lines (empty: they agree)."""
    h, m = options_of_help(help_text), options_of_page(page)
    out = []
    if not h:
        out.append("%s: no options found in --help" % cmd)
    for n in sorted(h - m):
        out.append("%s: %s is in --help but not in the man page" % (cmd, n))
    for n in sorted(m - h):
        out.append("%s: %s is in the man page but not in --help" % (cmd, n))
    return out


def read(path):
    with open(path) as f:
        return f.read()


def check_man(binary, docs):
    errors = []
    cmds = commands_of_help(binary)
    man_dir = os.path.join(docs, "man")
    want = {"exitscope.1"} | {"exitscope-%s.1" % c for c in cmds}
    have = set(os.listdir(man_dir))
    if want != have:
        errors.append("pages %s, commands want %s" % (sorted(have), sorted(want)))
    env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8")
    for name in sorted(have):
        path = os.path.join(man_dir, name)
        g = run(["groff", "-man", "-ww", "-z", "-Tutf8", path])
        if g.returncode or g.stderr:
            errors.append("%s: groff -ww: %s" % (name, g.stderr.strip() or g.returncode))
        m = run(["man", "--warnings", "-l", path], env=env)
        if m.returncode or m.stderr or "NAME" not in m.stdout:
            errors.append("%s: man --warnings -l: %s" % (name, m.stderr.strip() or m.returncode))
        secs = sections(read(path))
        for s in ("NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES", "SEE ALSO"):
            if not secs.get(s):
                errors.append("%s: no %s section" % (name, s))
        st = secs.get("EXIT STATUS", [])
        codes = []
        for i, l in enumerate(st[:-2]):
            if l == ".TP":
                c = re.match(r"(\d+)", plain_roff(st[i + 1]))
                meaning = plain_roff(st[i + 2]).strip(" .")
                if not c or st[i + 2].startswith(".") or len(meaning) < 3:
                    errors.append("%s: exit status item without a number and its meaning: %r" % (name, st[i + 1:i + 3]))
                    continue
                codes.append(int(c.group(1)))
        if 0 not in codes or 64 not in codes:
            errors.append("%s: EXIT STATUS lists %s, not 0 and 64" % (name, codes))
        for c in codes:
            if c not in KNOWN_CODES:
                errors.append("%s: exit status %d is not one exitscope uses %s" % (name, c, sorted(KNOWN_CODES)))
        if name == "exitscope.1" and set(codes) != KNOWN_CODES:
            errors.append("exitscope.1: EXIT STATUS lists %s, want every code %s" % (codes, sorted(KNOWN_CODES)))
        if not any(re.search(r"\bexitscope\b", l) for l in secs.get("EXAMPLES", [])):
            errors.append("%s: EXAMPLES has no exitscope command line" % name)
    return errors


def check_options(binary, docs):
    errors = []
    cmds = commands_of_help(binary)
    main_page = read(os.path.join(docs, "man", "exitscope.1"))
    listed = [h.strip() for h in tp_heads(sections(main_page).get("COMMANDS", []))]
    if listed != cmds:
        errors.append("exitscope(1) lists commands %s, exitscope --help %s" % (listed, cmds))
    for c in cmds:
        h = run([binary, c, "--help"])
        if h.returncode:
            errors.append("%s --help: status %d" % (c, h.returncode))
        errors += compare(c, h.stdout, read(os.path.join(docs, "man", "exitscope-%s.1" % c)))
    return errors


def self_test(binary, docs):
    """The check must see a page that lost an option, and a --help that gained one."""
    errors = []
    cmd = commands_of_help(binary)[0]
    help_text = run([binary, cmd, "--help"]).stdout
    page = read(os.path.join(docs, "man", "exitscope-%s.1" % cmd))
    if compare(cmd, help_text, page):
        errors.append("self-test: the real page and --help should agree")
    lines = page.splitlines()
    i = lines.index(".SH OPTIONS")
    j = lines.index(".TP", i + 1)
    j = lines.index(".TP", j + 1)  # the second item: the first may be the positional
    dropped = "\n".join(lines[:j] + lines[j + 2:])
    lost = plain_roff(lines[j + 1])
    if not any("not in the man page" in e for e in compare(cmd, help_text, dropped)):
        errors.append("self-test: a page without %r passed" % lost)
    gained = help_text.replace("\nOptions:\n", "\nOptions:\n  --surely-not-an-option  added\n", 1)
    if not any("--surely-not-an-option" in e for e in compare(cmd, gained, page)):
        errors.append("self-test: an option missing from the page passed")
    return errors


def main():
    mode, binary, docs = sys.argv[1:4]
    errors = {"man": check_man, "options": check_options, "self-test": self_test}[mode](binary, docs)
    for e in errors:
        print("FAIL:", e)
    if not errors:
        print("ok: %s" % mode)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
