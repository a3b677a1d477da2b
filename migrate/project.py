"""Facts about names defined in other files of the project being converted.

The engine converts one file at a time. What it needs to know about a name imported from a
sibling file is what a single-file conversion learns from the definition itself: calling
`Net` (a class deriving from `nn.Module`, possibly through other project classes) makes a
torch module, calling `helpers.make_optimizer` returns a `torch.optim.SGD`. This module
summarises every file cheaply with the stdlib `ast` (imports, top-level classes and their
bases, what top-level functions return), resolves the imports between files (absolute,
relative, package re-exports through `__init__`, `import pkg.mod as m`), and hands each file a
mapping `name as the file spells it -> torch API` (`convert_source(..., project=...)`).

No API knowledge here: a fact is just "the torch qualified name this call ends up creating".
"""
from __future__ import annotations

import ast
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from msmigrate.names import ast_dotted, is_source

_MAX_ROUNDS = 20     # fixed-point rounds (a chain of re-exports/subclasses longer than this is cut)
_MAX_DEPTH = 12      # recursion guard when following re-exports


@dataclass
class ModuleSummary:
    """What one file defines and imports at its top level (plain data: crosses processes)."""
    # bound name -> ("module", dotted module, level) for `import a.b [as x]`, `from . import m`
    #            -> ("from", dotted module, level, name) for `from m import name [as x]`
    imports: dict[str, tuple] = field(default_factory=dict)
    star: list[tuple[str, int]] = field(default_factory=list)     # `from m import *`: (module, level)
    classes: dict[str, list[str]] = field(default_factory=dict)   # name -> dotted bases
    functions: dict[str, list[str | None]] = field(default_factory=dict)  # name -> dotted callee per return
    is_package: bool = False
    class_lines: dict[str, tuple[int, int]] = field(default_factory=dict)   # name -> (first, last) line

    @classmethod
    def from_dict(cls, d: dict) -> "ModuleSummary":
        """Back from dataclasses.asdict() through JSON (which turned the tuples into lists)."""
        return cls({k: tuple(v) for k, v in d["imports"].items()}, [tuple(x) for x in d["star"]],
                   d["classes"], d["functions"], d["is_package"],
                   {k: tuple(v) for k, v in d["class_lines"].items()})


def summarize(source: str, is_package: bool = False) -> ModuleSummary | None:
    """The summary of one file's text; None when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    out = ModuleSummary(is_package=is_package)
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out.imports[a.asname] = ("module", a.name, 0)
                else:
                    root = a.name.split(".")[0]
                    out.imports[root] = ("module", root, 0)
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                if a.name == "*":
                    out.star.append((node.module or "", node.level))
                else:
                    out.imports[a.asname or a.name] = ("from", node.module or "", node.level, a.name)
        elif isinstance(node, ast.ClassDef):
            out.classes[node.name] = [d for d in map(ast_dotted, node.bases) if d]
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out.class_lines[node.name] = (first, node.end_lineno or node.lineno)
            out.imports.pop(node.name, None)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.functions[node.name] = _returned_callees(node)
            out.imports.pop(node.name, None)
    return out


def _top_level(body: list):
    """Top-level statements, also inside top-level if/try blocks (`try: import x`)."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try)) or (hasattr(ast, "TryStar") and isinstance(node, ast.TryStar)):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
            for h in getattr(node, "handlers", ()):
                yield from _top_level(h.body)



def _returned_callees(func: ast.FunctionDef) -> list[str | None]:
    """For each `return` of the function (not of nested ones): the dotted name it calls
    (`return nn.Linear(...)`, or `m = Net(); ...; return m`), None when it returns anything else."""
    assigned: dict[str, str | None] = {}
    out: list[str | None] = []
    stack = list(reversed(func.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = node.value
            assigned[node.targets[0].id] = ast_dotted(value.func) if isinstance(value, ast.Call) else None
        elif isinstance(node, ast.Return):
            value = node.value
            if isinstance(value, ast.Call):
                out.append(ast_dotted(value.func))
            elif isinstance(value, ast.Name):
                out.append(assigned.get(value.id))
            else:
                out.append(None)
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def module_name(path: Path, root: Path) -> tuple[str, bool]:
    """(`pkg.mod`, is_package) of a file relative to the directory the project was given as."""
    rel = path.relative_to(root).with_suffix("")
    parts = list(rel.parts)
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    return ".".join(parts), is_package


class Project:
    """The summaries of every file of a tree, their imports resolved, and the facts."""

    def __init__(self, summaries: dict[str, ModuleSummary]) -> None:
        self.modules = {name: s for name, s in summaries.items() if s is not None}
        self.facts: dict[str, dict[str, str]] = {name: {} for name in self.modules}
        # classes of plain Python objects: no torch base, only `object` or other such classes
        # (a replay buffer, a learner): their methods are the file's own, never Tensor/Module ones
        self.plain: dict[str, set[str]] = {name: set() for name in self.modules}
        self._solve()
        self._solve_plain()

    # ---- resolution --------------------------------------------------------------------
    def _find_module(self, importer: str, module: str, level: int) -> str | None:
        summary = self.modules.get(importer)
        package = importer.split(".") if summary is not None and summary.is_package else importer.split(".")[:-1]
        if importer == "":
            package = []
        if level:
            if level - 1 > len(package):
                return None
            base = package[:len(package) - (level - 1)]
            name = ".".join([*base, *([module] if module else [])])
            return name if name in self.modules or self._is_namespace(name) or name == "" else None
        # an absolute import: from the tree's root, else from the importer's package and its
        # parents (a script importing a sibling, a `src/` layout run from inside `src`)
        for k in range(len(package) + 1):
            name = ".".join([*package[:k], module])
            if name in self.modules or self._is_namespace(name):
                return name
        return None

    def _is_namespace(self, name: str) -> bool:
        prefix = name + "."
        return bool(name) and any(m.startswith(prefix) for m in self.modules)

    def _binding(self, module: str, name: str, depth: int = 0):
        """What `name` means at the top level of `module`: ("torch", qualname), ("module", m),
        ("fact", torch qualname, (defining module, name)), ("plain", None, (defining module,
        name)) for a plain class, or None."""
        if depth > _MAX_DEPTH:
            return None
        summary = self.modules.get(module)
        if summary is None:
            return None
        if name in summary.classes or name in summary.functions:
            fact = self.facts[module].get(name)
            if fact:
                return ("fact", fact, (module, name))
            return ("plain", None, (module, name)) if name in self.plain[module] else None
        imp = summary.imports.get(name)
        if imp is not None:
            if imp[0] == "module":
                _, target, _ = imp
                if is_source(target):
                    return ("torch", target)
                found = self._find_module(module, target, 0)
                return ("module", found) if found else None
            _, target, level, attr = imp
            if not level and is_source(target):
                return ("torch", f"{target}.{attr}")
            found = self._find_module(module, target, level)
            if found is None:
                return None
            return self._attribute(("module", found), attr, depth + 1)
        for target, level in summary.star:
            found = self._find_module(module, target, level)
            if found is not None and found != module:
                got = self._binding(found, name, depth + 1)
                if got is not None:
                    return got
        return None

    def _attribute(self, value, attr: str, depth: int):
        if value is None:
            return None
        kind, what = value[:2]
        if kind == "torch":
            return ("torch", f"{what}.{attr}")
        if kind == "module":
            sub = f"{what}.{attr}" if what else attr   # "" is the tree's root package
            if sub in self.modules or self._is_namespace(sub):
                return ("module", sub)
            return self._binding(what, attr, depth)
        return None   # an attribute of an object: not followed

    def resolve(self, module: str, dotted: str):
        head, *rest = dotted.split(".")
        value = self._binding(module, head)
        for attr in rest:
            value = self._attribute(value, attr, 0)
        return value

    def _creates(self, module: str, dotted: str | None) -> str | None:
        """The torch API a call of `dotted` creates, seen from `module`."""
        if not dotted:
            return None
        value = self.resolve(module, dotted)
        if value is None or value[0] == "module":
            return None
        return value[1]

    # ---- facts -------------------------------------------------------------------------
    def _solve(self) -> None:
        for _ in range(_MAX_ROUNDS):
            changed = False
            for module, summary in self.modules.items():
                facts = self.facts[module]
                for name, bases in summary.classes.items():
                    fact = next((f for f in (self._creates(module, b) for b in bases) if f), None)
                    if fact and facts.get(name) != fact:
                        facts[name], changed = fact, True
                for name, callees in summary.functions.items():
                    found = {self._creates(module, c) for c in callees}
                    if callees and len(found) == 1 and None not in found:
                        fact = found.pop()
                        if facts.get(name) != fact:
                            facts[name], changed = fact, True
            if not changed:
                return

    def _solve_plain(self) -> None:
        for _ in range(_MAX_ROUNDS):
            changed = False
            for module, summary in self.modules.items():
                for name, bases in summary.classes.items():
                    if name in self.plain[module] or name in self.facts[module]:
                        continue
                    if all(b == "object" or (self.resolve(module, b) or ("",))[0] == "plain" for b in bases):
                        self.plain[module].add(name)
                        changed = True
            if not changed:
                return

    def exports(self, module: str, depth: int = 0) -> dict[str, str]:
        """Names of `module` (its own and the ones it imports) that have a fact."""
        summary = self.modules.get(module)
        if summary is None or depth > _MAX_DEPTH:
            return {}
        out = {}
        for target, level in summary.star:
            found = self._find_module(module, target, level)
            if found is not None and found != module:
                out.update(self.exports(found, depth + 1))
        for name in (*summary.imports, *summary.classes, *summary.functions):
            value = self._binding(module, name)
            if value is not None and value[0] == "fact":
                out[name] = value[1]
        return out

    def names_for(self, module: str, summary: ModuleSummary | None = None) -> dict[str, str]:
        """What `convert_source(project=...)` gets for this file: every name (dotted as the
        file spells it) whose call creates a torch object, defined in another project file
        or as one of its own top-level functions. Its own classes are left to the engine."""
        summary = summary or self.modules.get(module)
        if summary is None:
            return {}
        out: dict[str, str] = {}
        for target, level in summary.star:
            found = self._find_module(module, target, level)
            if found is not None and found != module:
                out.update(self.exports(found))
        for name in summary.imports:
            value = self._binding_in(module, summary, name)
            self._collect(name, value, out, 0)
        for name in summary.functions:
            fact = self.facts.get(module, {}).get(name) if module in self.modules else None
            if fact is None and module not in self.modules:   # a notebook: its own functions
                fact = self._own_function_fact(summary, module, name)
            if fact:
                out[name] = fact
        return out

    def class_origins(self, module: str, summary: ModuleSummary | None = None) -> dict[str, tuple[str, str]]:
        """Names (as the file spells them, see names_for) of classes defined in other project
        files -> (defining module, class name): transforms that read a class body (a Dataset's
        `__getitem__`) find it there. Plain classes (no torch base) are among them, without a
        fact: the engine knows their objects hold no Tensor."""
        summary = summary or self.modules.get(module)
        if summary is None:
            return {}
        out: dict[str, tuple[str, str]] = {}
        for name in summary.imports:
            value = self._binding_in(module, summary, name)
            if value is not None and value[0] in ("fact", "plain"):
                origin = value[2]
                if origin[0] != module and origin[1] in self.modules[origin[0]].classes:
                    out[name] = origin
        return out

    def _binding_in(self, module: str, summary: ModuleSummary, name: str):
        if module in self.modules:
            return self._binding(module, name)
        # a file that is not part of the importable tree (a notebook): resolve as if it sat at
        # `module`'s place, without registering it
        with self._visiting(module, summary):
            return self._binding(module, name)

    @contextmanager
    def _visiting(self, module: str, summary: ModuleSummary):
        """`module` (a notebook's place in the tree) registered while the body resolves names in
        it: the tables every lookup reads (facts, plain classes) have its entry too."""
        self.modules[module] = summary
        self.facts[module] = {}
        self.plain[module] = set()
        try:
            yield
        finally:
            del self.modules[module]
            del self.facts[module]
            del self.plain[module]

    def _own_function_fact(self, summary: ModuleSummary, module: str, name: str) -> str | None:
        with self._visiting(module, summary):
            found = {self._creates(module, c) for c in summary.functions[name]}
        return found.pop() if summary.functions[name] and len(found) == 1 and None not in found else None

    def _collect(self, prefix: str, value, out: dict[str, str], depth: int) -> None:
        if value is None or depth > 3:
            return
        kind, what = value[:2]
        if kind == "fact":
            out[prefix] = what
        elif kind == "module":
            for name, fact in self.exports(what).items():
                out[f"{prefix}.{name}"] = fact
            sub_prefix = what + "." if what else ""
            for sub in self.modules:
                if sub and sub.startswith(sub_prefix) and "." not in sub[len(sub_prefix):]:
                    self._collect(f"{prefix}.{sub[len(sub_prefix):]}", ("module", sub), out, depth + 1)
