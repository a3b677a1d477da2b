"""Cross-file facts for files linted together: imported Cell base classes, and functions in one
file that compiled code in another file calls.

Each file gets a small JSON-able summary (cached by content hash with the lint results); the
summaries are linked here without re-parsing, and each file is then linted with its `External`
facts, which are part of its cache key.
"""
from __future__ import annotations

import ast
from pathlib import Path

from msmigrate.lint.analysis import External, FileModel, dotted


def summarize(tree: ast.Module, model: FileModel) -> dict:
    """What other files need to know about this one, and which imported names it uses where."""
    imported = {a for a, q in model.aliases.items()
                if not q.split(".")[0] in ("mindspore", "torch", "numpy", "math", "os", "sys")}

    def calls_in(node) -> tuple[list[str], list[str]]:
        ext, local = set(), set()
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                d = dotted(n.func)
                if d is None:
                    continue
                head = d.split(".")[0]
                if head in imported:
                    ext.add(d)
                elif d in model.functions:
                    local.add(d)
        return sorted(ext), sorted(local)

    functions = {}
    for name, fn in model.functions.items():
        ext, local = calls_in(fn)
        functions[name] = {"ext": ext, "local": local}
    graph_calls = set()
    for g in model.graph.values():
        graph_calls.update(calls_in(g.node)[0])
    classes = {}
    for name, cls in model.classes.items():
        bases = [d for d in (dotted(b) for b in cls.bases) if d and d.split(".")[0] in imported]
        construct = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "construct"), None)
        ext, local = calls_in(construct) if construct is not None else ([], [])
        classes[name] = {"cell": name in model.cell_classes, "bases": bases, "ext": ext, "local": local}
    return {"imports": {a: model.aliases[a] for a in sorted(imported)}, "functions": functions,
            "classes": classes, "graph_calls": sorted(graph_calls)}


def _module_names(path: Path, roots: list[Path]) -> list[str]:
    """Dotted names `path` can be imported as, relative to each enclosing root directory."""
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = []
    for i in range(len(parts)):
        names.append(".".join(parts[i:]))
    return [n for n in names if n]


def link(summaries: dict[str, dict]) -> dict[str, External]:
    paths = {p: Path(p).resolve() for p in summaries}
    modmap: dict[str, str] = {}
    by_resolved = {r: p for p, r in paths.items()}
    for p, r in paths.items():
        for name in _module_names(r, []):
            modmap.setdefault(name, p)

    def resolve(path: str, alias_target: str, rest: str) -> tuple[str, str] | None:
        """(file, top-level name) that `alias_target` + `.rest` refers to, if it is a linted file."""
        target = alias_target + (("." + rest) if rest else "")
        if target.startswith("."):
            level = len(target) - len(target.lstrip("."))
            base = paths[path].parent
            for _ in range(level - 1):
                base = base.parent
            bits = target.lstrip(".").split(".")
            for i in range(len(bits), 0, -1):
                stem = base.joinpath(*bits[:i])
                for cand in (stem.with_suffix(".py"), stem / "__init__.py"):
                    if cand in by_resolved and i == len(bits) - 1:
                        return by_resolved[cand], bits[-1]
            return None
        bits = target.split(".")
        for i in range(len(bits) - 1, 0, -1):
            mod = ".".join(bits[:i])
            if mod in modmap and i == len(bits) - 1:
                return modmap[mod], bits[-1]
        return None

    def resolve_name(path: str, dotted_name: str) -> tuple[str, str] | None:
        head, _, rest = dotted_name.partition(".")
        target = summaries[path]["imports"].get(head)
        return resolve(path, target, rest) if target else None

    # Cell classes through imported bases, to a fixpoint
    cells = {(p, c) for p, s in summaries.items() for c, info in s["classes"].items() if info["cell"]}
    cell_bases: dict[str, set[str]] = {p: set() for p in summaries}
    changed = True
    while changed:
        changed = False
        for p, s in summaries.items():
            for c, info in s["classes"].items():
                if (p, c) in cells:
                    continue
                for b in info["bases"]:
                    if resolve_name(p, b) in cells:
                        cells.add((p, c))
                        cell_bases[p].add(b)
                        changed = True
                        break
    # functions called from compiled code in other files, transitively
    graph: dict[tuple[str, str], str] = {}
    work: list[tuple[str, list[str], str]] = []
    for p, s in summaries.items():
        work.append((p, s["graph_calls"], Path(p).name))
        for c, info in s["classes"].items():
            if (p, c) in cells and not info["cell"]:  # a Cell only through another file
                work.append((p, info["ext"], f"{Path(p).name}:{c}.construct"))
                work.append((p, [f for f in info["local"]], f"{Path(p).name}:{c}.construct"))
    while work:
        p, names, why = work.pop()
        for name in names:
            target = resolve_name(p, name) if "." in name or name in summaries[p]["imports"] else (p, name)
            if target is None or target in graph:
                continue
            q, fname = target
            fn = summaries[q]["functions"].get(fname)
            if fn is None:
                continue
            if q != p or name in summaries[p]["imports"]:
                graph[target] = why
            elif target not in graph:
                graph[target] = why
            work.append((q, fn["ext"] + fn["local"], why))
    out = {}
    for p in summaries:
        funcs = tuple(sorted((f, why) for (q, f), why in graph.items() if q == p))
        if funcs or cell_bases[p]:
            out[p] = External(frozenset(cell_bases[p]), funcs)
    return out
