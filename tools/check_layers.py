#!/usr/bin/env python3
"""Fails when files of src/ depend on each other in a cycle.

A file depends on another when it includes it, or when it uses (calls,
takes the address of, reads) a function or variable that the other defines
with external linkage. A .c file and the .h of the same name in its folder
are one node, so the check reads the code's structure as calls and includes
together: a family calling back into the file that holds its backend table,
or an engine calling up into its backend, is a cycle.

Usage: tools/check_layers.py [src]   prints the cycles, if any, and ends
on the test harness's summary line ("1 passed, 0 failed" when there is
none), exiting 1 when there is one.
"""
import os
import re
import sys

IDENT = re.compile(r"[A-Za-z_]\w*")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# Comments, string and character literals, preprocessor lines (continued
# with backslashes): none of them holds code that calls anything.
NOISE = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
    r"|^[ \t]*#(?:[^\n]*\\\n)*[^\n]*",
    re.S | re.M,
)
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "_Alignof",
            "__attribute__", "_Static_assert", "static_assert"}


def strip(text):
    return NOISE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def top_level(code):
    """Yields (head, body) for each brace group at depth 0: head is the
    text since the previous top-level ';' or '}', body what the braces
    hold."""
    depth, start, head = 0, 0, ""
    for i, ch in enumerate(code):
        if ch == "{":
            if depth == 0:
                head, start = code[start:i], i + 1
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                yield head, code[start:i]
                start = i + 1
        elif ch == ";" and depth == 0:
            start = i + 1


def definitions(code):
    """Names this file defines with external linkage: functions with a
    body, and initialised variables, neither static."""
    names = set()
    for head, _ in top_level(code):
        words = IDENT.findall(head)
        if not words or "static" in words or "typedef" in words:
            continue
        if words[0] in ("struct", "union", "enum") and "=" not in head:
            continue
        if "=" in head:  # const T name[] = { ... }
            before = IDENT.findall(head.split("=")[0])
            if before:
                names.add(before[-1])
            continue
        m = re.search(r"(\w+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*$", head.strip())
        if m and m.group(1) not in KEYWORDS:
            names.add(m.group(1))
    return names


def uses(code):
    """Identifiers inside brace groups (bodies and initialisers): what the
    file's code refers to, not what its declarations name."""
    used = set()
    for _, body in top_level(code):
        used.update(IDENT.findall(body))
    return used


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "src"
    files = []
    for d, _, names in os.walk(root):
        files += [os.path.join(d, n) for n in names if n.endswith((".c", ".h"))]
    files.sort()

    def node(path):  # foo.h with a foo.c beside it is foo.c's node
        stem, ext = os.path.splitext(path)
        return stem + ".c" if ext == ".h" and os.path.exists(stem + ".c") else path

    defs, edges = {}, {}
    codes = {}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            raw = fh.read()
        codes[f] = strip(raw)
        edges.setdefault(node(f), {})
        for inc in INCLUDE.findall(raw):
            for base in (os.path.dirname(f), root, "include"):
                target = os.path.normpath(os.path.join(base, inc))
                if target in files or os.path.exists(target):
                    if node(target) != node(f) and target.startswith(root):
                        edges[node(f)].setdefault(node(target), set()).add(
                            "#include " + inc)
                    break
        if f.endswith(".c"):
            for name in definitions(codes[f]):
                defs.setdefault(name, set()).add(node(f))
    for f in files:
        for name in uses(codes[f]):
            owners = defs.get(name, set())
            # A file that defines the name itself uses its own: the other
            # definitions are alternatives built instead of it (gpu_native.c
            # or gpu_browser.c, defer_none.c or defer_queue.c).
            if node(f) in owners:
                continue
            for target in owners:
                if target != node(f):
                    edges[node(f)].setdefault(target, set()).add(name)

    # Tarjan's strongly connected components.
    index, low, stack, on, sccs = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    if not sccs:
        n = sum(len(t) for t in edges.values())
        print(f"ok   layers: {len(edges)} files, {n} dependencies, no cycle")
        print("1 passed, 0 failed")
        return 0
    for scc in sccs:
        print("FAIL layers: these files depend on each other in a cycle:")
        members = set(scc)
        for v in scc:
            for w, why in sorted(edges[v].items()):
                if w in members:
                    print(f"  {v} -> {w}: {', '.join(sorted(why)[:6])}")
    print(f"0 passed, {len(sccs)} failed")
    return 1


if __name__ == "__main__":
    sys.exit(main())
