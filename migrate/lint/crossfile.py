"""Cross-file facts for files linted together: imported Cell classes (as bases and instances),
and functions in one file that compiled code in another file calls. Imported names are followed
through re-exports (`pkg/__init__.py` doing `from .models import Net` or `from .models import *`)
to the file that defines them.

Each file gets a small JSON-able summary (cached by content hash with the lint results); the
summaries are linked here without re-parsing, and each file is then linted with its `External`
facts, which are part of its cache key.
"""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

from msmigrate.lint.analysis import External, FileModel, dotted


def summarize(tree: ast.Module, model: FileModel) -> dict:
    """What other files need to know about this one, and which imported names it uses where."""
    imported = {a for a, q in model.aliases.items()
                if a != "*" and not q.split(".")[0] in ("mindspore", "torch", "numpy", "math", "os", "sys")}
    # `from m import *`: the modules, and the names this file exports (`__all__`, if literal)
    stars, exports = [], None
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and any(a.name == "*" for a in stmt.names):
            mod = "." * stmt.level + (stmt.module or "")
            if mod.split(".")[0] not in ("mindspore", "torch", "numpy"):
                stars.append(mod)
        elif isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets) \
                and isinstance(stmt.value, (ast.List, ast.Tuple)):
            exports = [e.value for e in stmt.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    defined = set(model.functions) | set(model.classes) | model.module_names

    def external(head: str) -> bool:
        """A name that may come from another linted file (through an import or a star import)."""
        return head in imported or bool(stars) and head not in defined and head not in _BUILTINS

    def calls_in(node) -> tuple[list[str], list[str]]:
        ext, local = set(), set()
        for n in ast.walk(node):
            if isinstance(n, ast.Call):
                d = dotted(n.func)
                if d is None:
                    continue
                head = d.split(".")[0]
                if d in model.functions:
                    local.add(d)
                elif external(head):
                    ext.add(d)
        return sorted(ext), sorted(local)

    functions = {}
    for name, fn in model.functions.items():
        ext, local = calls_in(fn)
        functions[name] = {"ext": ext, "local": local}
    graph_calls = set()
    # which arguments of the calls from this file's compiled code into other files are tensors:
    # name -> [tensor positions, tensor keywords], or None when a call passes *args / **kwargs
    call_args: dict[str, list | None] = {}
    for g in model.graph.values():
        graph_calls.update(calls_in(g.node)[0])
        for n in ast.walk(g.node):
            if not isinstance(n, ast.Call):
                continue
            d = dotted(n.func)
            if d is None or d in model.functions or not external(d.split(".")[0]):
                continue
            if any(isinstance(a, ast.Starred) for a in n.args) or any(k.arg is None for k in n.keywords):
                call_args[d] = None
                continue
            if d in call_args and call_args[d] is None:
                continue
            pos, kws = call_args.setdefault(d, [[], []])
            pos.extend(i for i, a in enumerate(n.args) if model.is_tensor(a, g) and i not in pos)
            kws.extend(k.arg for k in n.keywords if model.is_tensor(k.value, g) and k.arg not in kws)
    classes = {}
    for name, cls in model.classes.items():
        bases = [d for d in (dotted(b) for b in cls.bases) if d and external(d.split(".")[0])]
        construct = next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "construct"), None)
        ext, local = calls_in(construct) if construct is not None else ([], [])
        classes[name] = {"cell": name in model.cell_classes, "bases": bases, "ext": ext, "local": local}
    return {"imports": {a: model.aliases[a] for a in sorted(imported)}, "stars": stars, "all": exports,
            "functions": functions, "classes": classes, "graph_calls": sorted(graph_calls),
            "call_args": {k: v for k, v in sorted(call_args.items())}}


_BUILTINS = frozenset(dir(builtins))


def _module_names(path: Path, roots: list[Path]) -> list[str]:
    """Dotted names `path` can be imported as, relative to each enclosing root directory."""
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = []
    for i in range(len(parts)):
        names.append(".".join(parts[i:]))
    return [n for n in names if n]


def _split(target: str) -> tuple[str, str]:
    """'.models.Net' -> ('.models', 'Net'); '..Net' -> ('..', 'Net'); 'pkg.Net' -> ('pkg', 'Net')."""
    bare = target.lstrip(".")
    dots = target[:len(target) - len(bare)]
    module, _, attr = bare.rpartition(".")
    return dots + module, attr


def link(summaries: dict[str, dict]) -> dict[str, External]:
    paths = {p: Path(p).resolve() for p in summaries}
    modmap: dict[str, str] = {}
    by_resolved = {r: p for p, r in paths.items()}
    for p, r in paths.items():
        for name in _module_names(r, []):
            modmap.setdefault(name, p)

    def module_file(path: str, module: str) -> str | None:
        """The linted file `module` (absolute, or relative to `path`) names, if any."""
        if module.startswith("."):
            level = len(module) - len(module.lstrip("."))
            base = paths[path].parent
            for _ in range(level - 1):
                base = base.parent
            stem = base.joinpath(*module.lstrip(".").split(".")) if module.lstrip(".") else base
            for cand in (stem.with_suffix(".py"), stem / "__init__.py"):
                if cand in by_resolved:
                    return by_resolved[cand]
            return None
        return modmap.get(module)

    def defining(path: str, name: str) -> tuple[str, str] | None:
        """(file, name) where the top-level `name` of `path` is defined, following re-exports
        (`from .models import Net`, `from .models import *` within `__all__`) through any
        number of files; None for names from unlinted modules and for import cycles."""
        seen = set()
        todo = [(path, name)]
        while todo:
            p, n = todo.pop()
            if (p, n) in seen:
                continue
            seen.add((p, n))
            s = summaries[p]
            if n in s["functions"] or n in s["classes"]:
                return p, n
            target = s["imports"].get(n)
            if target is not None:
                module, attr = _split(target)
                q = module_file(p, module) if module else None
                if q is not None:
                    todo.append((q, attr))
                continue
            for star in reversed(s.get("stars", [])):
                q = module_file(p, star)
                exported = summaries[q].get("all") if q is not None else None
                if q is not None and (n in exported if exported is not None else not n.startswith("_")):
                    todo.append((q, n))
        return None

    def resolve_name(path: str, dotted_name: str) -> tuple[str, str] | None:
        """(file, top-level name) a name or dotted reference in `path` finally refers to."""
        head, _, rest = dotted_name.partition(".")
        target = summaries[path]["imports"].get(head)
        if target is None:
            return None if rest else defining(path, head)
        if not rest:
            return defining(path, head)
        # `module.attr`, `pkg.module.attr`, `pkg.attr` (re-exported by pkg/__init__.py)
        module, attr = _split(target + "." + rest)
        q = module_file(path, module)
        return defining(q, attr) if q is not None else None

    # Cell classes through imported bases, to a fixpoint
    cells = {(p, c) for p, s in summaries.items() for c, info in s["classes"].items() if info["cell"]}
    changed = True
    while changed:
        changed = False
        for p, s in summaries.items():
            for c, info in s["classes"].items():
                if (p, c) not in cells and any(resolve_name(p, b) in cells for b in info["bases"]):
                    cells.add((p, c))
                    changed = True
    # local names of imported Cells: as bases, and for instances (`net = Net()`)
    cell_names: dict[str, set[str]] = {p: set() for p in summaries}
    for p, s in summaries.items():
        for name in list(s["imports"]) + [b for info in s["classes"].values() for b in info["bases"]]:
            if resolve_name(p, name) in cells:
                cell_names[p].add(name)
    # functions called from compiled code in other files, transitively
    graph: dict[tuple[str, str], str] = {}
    # per function: the union of tensor arguments over its call sites in compiled code, when every
    # call site is one whose arguments are known (None: unknown, every parameter may be a tensor)
    args: dict[tuple[str, str], list | None] = {}
    for p, s in summaries.items():
        known = s.get("call_args", {})
        for name in s["graph_calls"]:
            target = resolve_name(p, name)
            if target is None:
                continue
            info = known.get(name)
            if info is None or args.get(target, []) is None:
                args[target] = None
            else:
                pos, kws = args.setdefault(target, [set(), set()])
                pos.update(info[0])
                kws.update(info[1])
    work: list[tuple[str, list[str], str]] = []
    for p, s in summaries.items():
        work.append((p, s["graph_calls"], Path(p).name))
        for c, info in s["classes"].items():
            if (p, c) in cells and not info["cell"]:  # a Cell only through another file
                work.append((p, info["ext"] + info["local"], f"{Path(p).name}:{c}.construct"))
    # a function's same-file callees are left to that file's own analysis (it sees which of
    # their arguments are tensors); only their calls into other files are followed here
    through: set[tuple[str, str]] = set()
    while work:
        p, names, why = work.pop()
        for name in names:
            target = resolve_name(p, name)
            if target is None or target in graph:
                continue
            q, fname = target
            fn = summaries[q]["functions"].get(fname)
            if fn is None:
                continue
            graph[target] = why
            work.append((q, fn["ext"], why))
            todo = list(fn["local"])
            while todo:
                local = (q, todo.pop())
                if local in graph or local in through or local[1] not in summaries[q]["functions"]:
                    continue
                through.add(local)
                work.append((q, summaries[q]["functions"][local[1]]["ext"], why))
                todo.extend(summaries[q]["functions"][local[1]]["local"])
    # functions reached only through other functions' bodies have unknown arguments
    for target in graph:
        args.setdefault(target, None)
    out = {}
    for p in summaries:
        funcs = tuple(sorted((f, why) for (q, f), why in graph.items() if q == p))
        known = tuple(sorted((f, tuple(sorted(a[0])), tuple(sorted(a[1])))
                             for (q, f), a in args.items() if q == p and a is not None and (q, f) in graph))
        if funcs or cell_names[p]:
            out[p] = External(frozenset(cell_names[p]), funcs, known)
    return out
