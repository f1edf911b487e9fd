#!/usr/bin/env python3
"""Fails when a function in src/ runs past the limit (issue 13: long functions split where that reads better).

A function's length is counted from the first line of its definition (the signature, after any comment)
to its closing brace, both included. Functions over REPORT_OVER lines are listed as a reminder; only
those over LIMIT fail the check, unless ALLOWED names them with a reason (data tables, which read best
as one block).

The C++ is scanned, not parsed: comments, string and character literals (raw strings too) and
preprocessor lines are blanked, then a `{` at namespace or class scope whose statement so far holds a
`(` and is not a type, namespace, or initializer (`= {`) opens a function body. Lambdas and blocks
inside a body belong to that body. The house layout (.clang-format) writes a body's brace after a
space and a brace initializer without one; constructor initializer lists rely on that.

Usage: scripts/check_function_length.py [SRC_DIR]     (exit 1 and one line per function over LIMIT)
       scripts/check_function_length.py --list [SRC_DIR]  (every function over REPORT_OVER, longest first)
       scripts/check_function_length.py --self-test
"""
import pathlib
import re
import sys

LIMIT = 100       # a function past this many lines fails
REPORT_OVER = 60  # past this it is listed (the "~60 lines")

# path relative to src/ and function name -> why it may stay long.
ALLOWED = {
    ("decode/kvm_decoder.cc", "Specs"): "a data table: one row per decoded event, read as one block",
}

TYPE_HEAD = re.compile(r"^(template\s*<.*>\s*)?(namespace|class|struct|union|enum|extern)\b", re.S)
NAME = re.compile(r"((?:[A-Za-z_]\w*::)*~?[A-Za-z_]\w*|operator\s*[^\s(]+)\s*\($")


def blank_literals(text: str) -> str:
    """Comments, literals and preprocessor lines become spaces; newlines stay, so line numbers hold."""
    out = []
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":  # a directive, with its continuation lines
                j = j + 2 if text[j] == "\\" and j + 1 < n else j + 1
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        if c == "\n":
            line_start = True
            out.append(c)
            i += 1
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            open_paren = text.find("(", i + 2)
            delim = ")" + text[i + 2:open_paren] + '"'
            j = text.find(delim, open_paren)
            j = n if j < 0 else j + len(delim)
            out.append('""' + re.sub(r"[^\n]", " ", text[i + 2:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text: str):
    """(name, first line, last line) of every function body at namespace or class scope."""
    code = blank_literals(text)
    found = []
    scopes = []        # 'scope' (namespace / class) or 'body' (function or anything inside one)
    head = []          # characters of the statement being read at the current scope
    head_line = None   # line of its first character
    init_depth = 0     # brace initializers inside the head (constructor initializer lists)
    body_start = body_name = None
    line = 1
    for i, c in enumerate(code):
        if c == "\n":
            line += 1
        in_body = bool(scopes) and scopes[-1] == "body"
        if in_body:
            if c == "{":
                scopes.append("body")
            elif c == "}":
                scopes.pop()
                if not scopes or scopes[-1] != "body":
                    found.append((body_name, body_start, line))
            continue
        if c == "{" and (init_depth or (i > 0 and (code[i - 1].isalnum() or code[i - 1] in "_>"))
                         and ")" in "".join(head)):
            init_depth += 1        # a member's brace initializer: still the head
            head.append(c)
            continue
        if c == "}" and init_depth:
            init_depth -= 1
            head.append(c)
            continue
        if c == "{":
            statement = "".join(head).strip()
            if "(" in statement and not TYPE_HEAD.match(statement) and not re.search(r"=\s*$", statement) \
                    and "=" not in statement.split("(", 1)[0]:
                name = NAME.search(statement[:statement.index("(") + 1])
                body_name = name.group(1) if name else statement[:40]
                body_start = head_line
                scopes.append("body")
            else:
                scopes.append("scope")
            head, head_line = [], None
        elif c == "}":
            if scopes:
                scopes.pop()
            head, head_line = [], None
        elif c == ";" or (c == ":" and re.search(r"\b(public|private|protected)\s*$", "".join(head))):
            head, head_line = [], None
        else:
            if head_line is None and not c.isspace():
                head_line = line
            head.append(c)
    return found


def long_functions(src: pathlib.Path, over: int):
    rows = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc"):
            continue
        for name, first, last in functions(path.read_text(errors="replace")):
            length = last - first + 1
            if length > over:
                rows.append((length, str(path.relative_to(src)), name, first))
    return sorted(rows, key=lambda r: (-r[0], r[1], r[3]))


def self_test() -> int:
    sample = (
        "namespace a {\n"                                   # 1
        "// f's comment: not counted\n"                     # 2
        "int f(int x) {\n"                                  # 3
        '  const char* s = "{";\n'                          # 4
        "  auto g = [&] { return x; };\n"                   # 5
        "  return g();\n"                                   # 6
        "}\n"                                               # 7
        "const int kTable[] = {1, 2};\n"                    # 8
        "struct S {\n"                                      # 9
        " public:\n"                                        # 10
        "  S(int v) : v_{v} {}\n"                           # 11
        "  int v_;\n"                                       # 12
        "};\n"                                              # 13
        "void S2::Run(int y,\n"                             # 14
        "             int z) {\n"                           # 15
        "  if (y) {\n"                                      # 16
        "  }\n"                                             # 17
        "}\n"                                               # 18
        "}  // namespace a\n")
    got = functions(sample)
    want = [("f", 3, 7), ("S", 11, 11), ("S2::Run", 14, 18)]
    print(f"check_function_length self-test: {'ok' if got == want else f'FAILED: got {got}, want {want}'}")
    return 0 if got == want else 1


def main() -> int:
    args = sys.argv[1:]
    if args == ["--self-test"]:
        return self_test()
    listing = bool(args) and args[0] == "--list"
    if listing:
        args = args[1:]
    src = pathlib.Path(args[0] if args else pathlib.Path(__file__).parent.parent / "src")
    rows = long_functions(src, REPORT_OVER)
    if listing:
        for length, path, name, first in rows:
            print(f"{length:4} {path}:{first} {name}")
        print(f"{len(rows)} function(s) over {REPORT_OVER} lines, {sum(r[0] > LIMIT for r in rows)} over {LIMIT}")
        return 0
    bad = [r for r in rows if r[0] > LIMIT and (r[1], r[2]) not in ALLOWED]
    for length, path, name, first in bad:
        print(f"src/{path}:{first}: {name} runs {length} lines (limit {LIMIT}): split it into named helpers, "
              f"or add it to ALLOWED in {pathlib.Path(__file__).name} with the reason")
    over = sum(1 for r in rows if r[0] > LIMIT)
    print(f"check_function_length: {len(rows)} function(s) over {REPORT_OVER} lines, {over} over {LIMIT} "
          f"({over - len(bad)} allowed)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
