#!/usr/bin/env python3
"""The workspace's layout invariants (ARCHITECTURE.md, "Cross-cutting invariants"):

1. no import circle between the modules of a crate: a file's `crate::`, `super::`,
   `self::` and submodule paths are resolved to the deepest module file they name, and the
   graph of those edges must have no cycle (test modules, `#[cfg(test)] mod tests { .. }`
   blocks and files named `tests.rs`, are left out: a test may use anything);
2. no Rust source file longer than 1,200 lines;
3. the working tree (the files git tracks, and those it neither tracks nor ignores) at
   most 50 MiB, so that it travels to a lent GPU machine beside the ~14 MiB bundle of
   `scripts/gpu-bundle.sh` (the device tool carries 64 MiB in all; docs/gpu.md).
   Superseded seeds leave the tree (experiments/seeds/README.md says how).

Between crates Cargo itself refuses a cycle. Run from anywhere:
`python3 scripts/check-layout.py` (exit status 1 and one line per problem if any).
"""

import re
import subprocess
import sys
from pathlib import Path

MAX_LINES = 1200
MAX_TREE_MIB = 50
ROOT = Path(__file__).resolve().parent.parent
PATH = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)*)::\{([^;]*?)\}", re.S)
MOD_DECL = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def strip_code(text: str) -> str:
    """`text` with comments removed and string and char literals emptied, in one pass
    (so that a `//` inside a string or a quote inside a comment cannot throw it off)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c == "r" and re.match(r'r#*"', text[i:]) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            hashes = re.match(r'r(#*)"', text[i:]).group(1)
            j = text.find('"' + hashes, i + len(hashes) + 2)
            out.append('""')
            i = n if j < 0 else j + 1 + len(hashes)
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('""')
            i = j + 1
        elif c == "'" and re.match(r"'(?:[^'\\]|\\[^']*)'", text[i:]):
            m = re.match(r"'(?:[^'\\]|\\[^']*)'", text[i:])
            out.append("' '")
            i += len(m.group(0))
        else:
            out.append(c)
            i += 1
    return "".join(out)


def strip_tests_and_comments(text: str) -> str:
    """The text without comments, string literals' contents and `#[cfg(test)]` items."""
    text = strip_code(text)
    out, i = [], 0
    while True:
        j = text.find("#[cfg(test)]", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        k = j + len("#[cfg(test)]")
        # The item the attribute applies to: up to its `;` or its balanced `{ .. }`.
        brace, semi = text.find("{", k), text.find(";", k)
        if semi >= 0 and (brace < 0 or semi < brace):
            i = semi + 1
            continue
        depth, m = 0, brace
        while m < len(text):
            if text[m] == "{":
                depth += 1
            elif text[m] == "}":
                depth -= 1
                if depth == 0:
                    break
            m += 1
        i = m + 1
    return "".join(out)


def module_of(src: Path, f: Path) -> tuple:
    rel = f.relative_to(src).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] in ("lib", "main", "mod"):
        parts = parts[:-1]
    return tuple(parts)


def crate_graph(src: Path):
    files = {}
    for f in sorted(src.rglob("*.rs")):
        if f.name == "tests.rs" or "tests" in f.relative_to(src).parts[:-1]:
            continue
        if f.parent == src / "bin":
            continue
        files[module_of(src, f)] = f
    edges = {m: set() for m in files}
    for m, f in files.items():
        text = strip_tests_and_comments(f.read_text())
        submods = set(MOD_DECL.findall(text))

        def resolve(anchor: str, rest: list) -> tuple:
            if anchor == "crate":
                base = ()
            elif anchor == "self":
                base = m
            else:  # super, possibly repeated
                base = m[:-1]
                while rest and rest[0] == "super":
                    base, rest = base[:-1], rest[1:]
            path = base
            for p in rest:
                if path + (p,) in files:
                    path = path + (p,)
                else:
                    break
            return path

        paths = [(a, [p for p in r.split("::") if p]) for a, r in PATH.findall(text)]
        for a, r, group in USE_GROUP.findall(text):
            for item in re.split(r"[,{}\s]+", group):
                if item and item not in ("self", "*"):
                    paths.append((a, [p for p in r.split("::") if p] + [item.split("::")[0]]))
        # `use name::..` of a submodule declared in this file.
        for sub in re.findall(r"\buse\s+([a-z_][a-z0-9_]*)::", text):
            if sub in submods:
                paths.append(("self", [sub]))
        for sub in re.findall(r"\bpub\s+use\s+([a-z_][a-z0-9_]*)::", text):
            if sub in submods:
                paths.append(("self", [sub]))
        for anchor, rest in paths:
            target = resolve(anchor, rest)
            if target != m and target in files:
                edges[m].add(target)
    return files, edges


def cycles(edges: dict) -> list:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def tree_bytes():
    """Bytes of the files that would travel: tracked (where they exist) and untracked but
    not ignored, as gpu-bundle.sh counts them; None outside a git checkout."""
    listed = set()
    for args in (["ls-files", "-z"], ["ls-files", "-z", "--others", "--exclude-standard"]):
        try:
            out = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            return None
        listed.update(name for name in out.decode().split("\0") if name)
    return sum((ROOT / n).stat().st_size for n in listed if (ROOT / n).is_file())


def main() -> int:
    problems = []
    size = tree_bytes()
    if size is None:
        print("layout: WARNING: not a git checkout (or no git), so the tree's size is not checked")
    elif size > MAX_TREE_MIB * 1024 * 1024:
        problems.append(
            f"the working tree is {size / 1048576:.1f} MiB, over {MAX_TREE_MIB} MiB: with the GPU bundle "
            "(~14 MiB) it would not travel to a lent GPU machine (64 MiB); retire superseded "
            "seeds (experiments/seeds/README.md)"
        )
    for src in sorted(ROOT.glob("crates/*/src")):
        crate = src.parent.name
        files, edges = crate_graph(src)
        for comp in cycles(edges):
            names = [("::".join(c) or "lib") for c in comp]
            detail = "; ".join(
                f"{'::'.join(a) or 'lib'} -> {', '.join('::'.join(b) or 'lib' for b in sorted(edges[a]) if b in comp)}"
                for a in comp
            )
            problems.append(f"import circle in crates/{crate}: {', '.join(names)} ({detail})")
    for f in sorted(list(ROOT.glob("crates/**/*.rs")) + list(ROOT.glob("fuzz/**/*.rs"))):
        if "target" in f.parts:
            continue
        n = f.read_text().count("\n")
        if n > MAX_LINES:
            problems.append(f"{f.relative_to(ROOT)} has {n} lines, more than {MAX_LINES}")
    for p in problems:
        print(p)
    if not problems:
        crates = len(list(ROOT.glob("crates/*/src")))
        tree = "" if size is None else f", working tree {size / 1048576:.1f} MiB of {MAX_TREE_MIB}"
        print(f"layout: no import circle in {crates} crates, no source file over {MAX_LINES} lines{tree}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
