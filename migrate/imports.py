"""Imports are rewritten once, at the end: references ask for modules while the file is being
converted (`ImportPlan.ref`), then `ImportPlan.apply` drops torch imports that became unused and
adds each needed MindSpore import once, where the torch imports were."""
from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Callable

import libcst as cst

from msmigrate.mapping import RULES_DIR
from msmigrate.names import SOURCE_ROOTS, dotted, import_bindings, is_statement_type


@functools.lru_cache(maxsize=None)
def import_styles() -> dict[str, tuple[str, str]]:
    """module -> (bound name, import statement code)."""
    with (RULES_DIR / "imports.toml").open("rb") as fh:
        modules = tomllib.load(fh)["modules"]
    out = {}
    for module, code in modules.items():
        stmt = cst.parse_statement(code)
        bound = import_bindings(stmt.body[0])[0][0]
        out[module] = (bound, code)
    return out


def source_modules(tree: ast.Module | None) -> set[str]:
    """The torch modules deeper than the root that a file's imports load and that a plain
    `import torch` would not name: `from torch.utils.tensorboard import X`, `import torch.x as y`
    (a plain `import torch.x.y` stays as it is, binding `torch`)."""
    out: set[str] = set()
    plain: set[str] = set()
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                (out if alias.asname else plain).add(alias.name)
    return {m for m in out - plain if "." in m and m.split(".")[0] in SOURCE_ROOTS}


def _attr_chain(root: str, rest: list[str]) -> cst.BaseExpression:
    expr: cst.BaseExpression = cst.Name(root)
    for part in rest:
        expr = cst.Attribute(value=expr, attr=cst.Name(part))
    return expr


class ImportPlan:
    def __init__(self, existing: dict[str, str], taken: set[str], guarded: set[str] = frozenset()) -> None:
        self.existing = existing  # module-level bindings already in the file: name -> qualname
        self.guarded = guarded    # of those, names imported only under an `if`: not bound everywhere
        self.taken = taken        # names the file uses for its own things
        self.needed: dict[str, str] = {}  # bound name -> import statement code
        # name -> code of a function the conversion calls where MindSpore has no counterpart
        # (rules/generated), placed after the imports when the converted code uses it
        self.definitions: dict[str, str] = {}
        self.generated: set[int] = set()  # ids of reference nodes made by structural passes
        self._generated_nodes: list = []  # ... kept alive, so that no other node takes an id
        # statement -> False when it certainly holds no import statement (its subtree is skipped)
        self.may_import: Callable[[cst.CSTNode], bool] = lambda stmt: True
        self.source_aliases: set[str] | None = None   # names torch imports bind (None: unknown)
        # an original top-level statement -> its source text / the names it uses (None: any
        # other statement, whose code is generated and parsed)
        self.source_text: Callable[[cst.CSTNode], str | None] = lambda stmt: None
        self.source_names: Callable[[cst.CSTNode], set[str] | None] = lambda stmt: None
        # a statement -> the same for code generation, unchanged nested parts standing in as text
        self.stand_ins: Callable[[cst.CSTNode], cst.CSTNode] = lambda stmt: stmt
        self._texts: dict[int, tuple[cst.CSTNode, str]] = {}   # top-level statement -> its code
        # the file's stdlib tree, for the torch submodules it imported (`from torch.utils.tensorboard
        # import X`): a reference left as torch under one of them imports that submodule, which
        # `import torch` may not load
        self.source_tree: ast.Module | None = None

    def _usable(self, bound: str, module: str) -> bool:
        if self.existing.get(bound) == module:
            return True
        if bound in self.taken:
            return False
        return self.needed.get(bound, import_styles()[module][1]) == import_styles()[module][1]

    def ref(self, qualname: str) -> cst.BaseExpression:
        """An expression naming `qualname` (e.g. mindspore.nn.Dense), requesting its import."""
        parts = qualname.split(".")
        styles = import_styles()
        for i in range(len(parts), 0, -1):
            module = ".".join(parts[:i])
            if module in styles:
                bound, code = styles[module]
                if self._usable(bound, module):
                    if self.existing.get(bound) != module:
                        self.needed[bound] = code
                    return _attr_chain(bound, parts[i:])
        # no free alias: the plain dotted name with a plain import of its root
        root = parts[0]
        if self.existing.get(root) != root:
            self.needed.setdefault(root, f"import {root}")
        return _attr_chain(root, parts[1:])

    def source_ref(self, qualname: str) -> cst.BaseExpression:
        """A torch reference that stays torch: fully qualified, so short aliases are freed."""
        parts = qualname.split(".")
        submodule = next((m for m in (".".join(parts[:i]) for i in range(len(parts) - 1, 1, -1))
                          if m in self._source_modules), None)
        if submodule is not None:
            self.needed.setdefault(parts[0], f"import {submodule}")
        elif self.existing.get(parts[0]) != parts[0] or parts[0] in self.guarded:
            self.needed.setdefault(parts[0], f"import {parts[0]}")
        return _attr_chain(parts[0], parts[1:])

    @functools.cached_property
    def _source_modules(self) -> set[str]:
        return source_modules(self.source_tree)

    def mark_generated(self, node: cst.CSTNode) -> None:
        """A MindSpore reference a structural pass wrote (`ms.ops.x`): the table pass leaves it
        and the nodes of its attribute chain alone."""
        while True:
            self.generated.add(id(node))
            self._generated_nodes.append(node)
            if not isinstance(node, cst.Attribute):
                return
            node = node.value

    def define(self, name: str, code: str) -> cst.Name:
        """A reference to the generated function `name` (its code `code`), requesting it."""
        self.definitions.setdefault(name, code)
        return cst.Name(name)

    # --- applying the plan -------------------------------------------------------------
    def apply(self, module: cst.Module) -> cst.Module:
        wanted = self._wanted_definitions(module) if self.definitions else set()
        used = self._used_names(module)
        for name in wanted:   # a generated class may name an import the file's own code does not
            used |= {n.id for n in ast.walk(ast.parse(self.definitions[name])) if isinstance(n, ast.Name)}
        needed = {b: c for b, c in self.needed.items() if b in used}
        remover = _RemoveUnusedSourceImports(used, self.may_import)
        module = module.visit(remover)
        new_stmts = [cst.parse_statement(code, config=module.config_for_parsing)
                     for code in sorted(set(needed.values()), key=_import_order)]
        if wanted and not new_stmts:
            module = self._define_after_imports(module, wanted)
        moved = remover.first_top_level_leading
        if not new_stmts:
            if moved is None or all(line.comment is None for line in moved):
                return module
            # the removed first import's comments stay where it stood
            body, at = list(module.body), remover.first_top_level_index
            if at < len(body):
                body[at] = body[at].with_changes(leading_lines=[*moved, *body[at].leading_lines])
                return module.with_changes(body=body)
            return module.with_changes(footer=[*moved, *module.footer])
        body = list(module.body)
        at = remover.first_top_level_index
        if at is None:
            at = _after_docstring_and_future(body)
        if moved is not None:
            new_stmts[0] = new_stmts[0].with_changes(leading_lines=moved)
        body[at:at] = new_stmts
        module = module.with_changes(body=body)
        if wanted:   # after the MindSpore imports: a generated class derives from nn.Cell when defined
            module = self._define_after_imports(module, wanted, at)
        return module


    def _wanted_definitions(self, module: cst.Module) -> set[str]:
        """The generated definitions the code still names (a later rewrite may have replaced a
        call; `f = msmigrate_nextafter` names one too), and those they call, derive from or pass
        on (`class msmigrate_TanhTransform(msmigrate_Transform):`, `ops.partial(msmigrate_adam_step,
        ...)`). Comment lines (markers quoting a record's note) name none."""
        text, wanted = re.sub(r"(?m)^[ \t]*#.*$", "", module.code), set()
        while True:
            more = {name for name in self.definitions if name not in wanted
                    and re.search(rf"(?<![\w.]){name}\b", text)}
            if not more:
                return wanted
            wanted |= more
            text = "\n".join(self.definitions[name] for name in more)

    def _define_after_imports(self, module: cst.Module, wanted: set[str], start: int | None = None) -> cst.Module:
        """The generated definitions `wanted`, after the file's leading block of imports (or the
        block of imports at `start`: `__author__ = ...` may come before it)."""
        body = list(module.body)
        at = _after_docstring_and_future(body) if start is None else start
        while at < len(body) and isinstance(body[at], cst.SimpleStatementLine) \
                and isinstance(body[at].body[0], (cst.Import, cst.ImportFrom)):
            at += 1
        two_blank = [cst.EmptyLine(), cst.EmptyLine()]
        defs = [cst.parse_statement(code, config=module.config_for_parsing).with_changes(leading_lines=two_blank)
                for name, code in self.definitions.items() if name in wanted]
        if at < len(body):
            leading = list(body[at].leading_lines)
            while leading and leading[0].comment is None:   # its own blank lines: two in all
                leading.pop(0)
            body[at] = body[at].with_changes(leading_lines=[*two_blank, *leading])
        body[at:at] = defs
        return module.with_changes(body=body)

    # --- code generated once per top-level statement ----------------------------------
    def _text(self, module: cst.Module, stmt: cst.CSTNode) -> str:
        hit = self._texts.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            return hit[1]
        text = self.source_text(stmt)
        if text is None:   # a top-level statement's code, as in the module's
            text = module.code_for_node(self.stand_ins(stmt))
        self._texts[id(stmt)] = (stmt, text)
        return text

    def _used_names(self, module: cst.Module) -> set[str]:
        """The identifiers the code uses, as `_used_names`, but parsing only the top-level
        statements whose code mentions a name the plan asks about (a torch alias, a needed
        import); their code is kept for `code`."""
        if self.source_aliases is None or not module.has_trailing_newline:
            return _used_names(module)
        asked = frozenset(self.source_aliases | set(self.needed)) - {""}
        used: set[str] = set()
        texts = [self._text(module, stmt) for stmt in module.body]
        for stmt, text in zip(module.body, texts):
            if not asked:
                break   # every name asked about is known to be used
            if _mentions(asked).search(text):
                names = self.source_names(stmt)
                if names is None:
                    try:
                        tree = ast.parse(text)
                    except SyntaxError:
                        return _used_names(module)
                    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
                used.update(names)
                asked = asked - used
        return used

    def code(self, module: cst.Module) -> str:
        """`module.code`, reusing the code of top-level statements generated before."""
        if not module.has_trailing_newline:
            return module.code
        parts = [module.code_for_node(line) for line in module.header]
        parts += [self._text(module, stmt) for stmt in module.body]
        parts += [module.code_for_node(line) for line in module.footer]
        return "".join(parts) or module.default_newline


@functools.lru_cache(maxsize=256)
def _mentions(names: frozenset[str]) -> re.Pattern:
    return re.compile(r"\b(?:%s)\b" % "|".join(sorted(map(re.escape, names), key=len, reverse=True)))


def _import_order(code: str) -> tuple:
    # `import mindspore as ms` first, then other plain imports, then `from` imports
    return (not code.startswith("import mindspore as"), code.startswith("from"), code)


def _after_docstring_and_future(body: list) -> int:
    i = 0
    if body and isinstance(body[0], cst.SimpleStatementLine) and isinstance(body[0].body[0], cst.Expr) \
            and isinstance(body[0].body[0].value, (cst.SimpleString, cst.ConcatenatedString)):
        i = 1
    while i < len(body) and isinstance(body[i], cst.SimpleStatementLine) and \
            isinstance(body[i].body[0], cst.ImportFrom) and dotted(body[i].body[0].module or cst.Name("_")) == "__future__":
        i += 1
    return i


class _UsedNames(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Import(self, node) -> bool:
        return False

    def visit_ImportFrom(self, node) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _used_names(module: cst.Module) -> set[str]:
    """Every identifier the code mentions outside import statements (ast: ~10x cheaper than
    visiting the CST)."""
    try:
        tree = ast.parse(module.code)
    except SyntaxError:
        v = _UsedNames()
        module.visit(v)
        return v.names
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _is_source_alias(bound_qual: tuple[str, str]) -> bool:
    return bound_qual[1].split(".")[0] in SOURCE_ROOTS


# Nodes other than statements whose children are statements
_HOLDS_STATEMENTS = frozenset({cst.Module, cst.IndentedBlock, cst.SimpleStatementSuite, cst.Else, cst.ExceptHandler,
                               cst.Finally, cst.MatchCase, getattr(cst, "ExceptStarHandler", cst.ExceptHandler)})


class _RemoveUnusedSourceImports(cst.CSTTransformer):
    """Drops torch-family import aliases nobody uses any more; remembers where the first
    top-level one stood so new imports take its place (and its leading comments)."""

    def __init__(self, used: set[str], may_import: Callable[[cst.CSTNode], bool]) -> None:
        self.used = used
        self.may_import = may_import
        self.depth = 0
        self.first_top_level_index: int | None = None
        self.first_top_level_leading = None
        self.orphans: dict[int, list] = {}   # depth -> comment lines of removed imports
        # a statement whose subtree saw no change is returned as the original object, so the
        # code generated for it before is reused
        self.changes = 0
        self._marks: list[int] = []

    def visit_Module(self, node: cst.Module) -> None:
        self._top = {id(s): i for i, s in enumerate(node.body)}

    def on_visit(self, node) -> bool:
        # Only statements and what holds them are visited, and only compound statements whose
        # lines hold an import: leave_SimpleStatementLine reads its import statements itself.
        kind = type(node)
        if is_statement_type(kind):
            self._marks.append(self.changes)
            if kind is cst.SimpleStatementLine or not self.may_import(node):
                return False
        elif kind not in _HOLDS_STATEMENTS:
            return False
        return super().on_visit(node)

    def on_leave(self, original, updated):
        # the comments above a removed import go to the next statement of its block
        kind = type(original)
        if original is updated and not is_statement_type(kind) and kind not in _HOLDS_STATEMENTS:
            return updated   # not visited (and no hooks): nothing to do
        result = super().on_leave(original, updated)
        if isinstance(result, cst.BaseStatement) and self.orphans.get(self.depth):
            result = result.with_changes(leading_lines=[*self.orphans.pop(self.depth), *result.leading_lines])
        if result is not updated:
            self.changes += 1
        if is_statement_type(kind) and self._marks.pop() == self.changes:
            return original   # rebuilt but unchanged
        return result

    def leave_Module(self, original, updated):
        return updated.with_changes(footer=[*self.orphans.pop(0, []), *updated.footer])

    def visit_IndentedBlock(self, node) -> None:
        self.depth += 1

    def leave_IndentedBlock(self, original, updated):
        orphans = self.orphans.pop(self.depth, [])
        if orphans:
            updated = updated.with_changes(footer=[*orphans, *updated.footer])
        self.depth -= 1
        if not updated.body:
            return updated.with_changes(body=[cst.SimpleStatementLine([cst.Pass()])])
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        small = [s for s in updated.body if not isinstance(s, cst.RemovalSentinel)]
        is_source_import = any(
            isinstance(s, (cst.Import, cst.ImportFrom)) and any(map(_is_source_alias, import_bindings(s)))
            for s in original.body)
        if is_source_import and self.depth == 0 and self.first_top_level_index is None:
            idx = self._top.get(id(original))
            if idx is not None:
                self.first_top_level_index = idx
        kept = []
        changed = False
        for s in updated.body:
            if isinstance(s, (cst.Import, cst.ImportFrom)):
                pruned = self._prune(s)
                changed |= pruned is not s
                if pruned is None:
                    continue
                s = pruned
            kept.append(s)
        if not kept:
            if is_source_import and self.depth == 0 and self.first_top_level_leading is None \
                    and self._top.get(id(original)) == self.first_top_level_index:
                self.first_top_level_leading = updated.leading_lines
            elif any(line.comment is not None for line in updated.leading_lines):
                self.orphans.setdefault(self.depth, []).extend(updated.leading_lines)
            return cst.RemoveFromParent()
        if changed or len(kept) != len(small):
            kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return updated.with_changes(body=kept)
        return updated

    def _prune(self, stmt):
        if isinstance(stmt, cst.ImportFrom) and isinstance(stmt.names, cst.ImportStar):
            return stmt
        pairs = import_bindings(stmt)
        if not pairs:
            return stmt
        names = list(stmt.names)
        # Every torch reference was rewritten (converted, or spelled out from its root module),
        # so only a root binding (`import torch`) can still be needed.
        keep = [alias for alias, pair in zip(names, pairs)
                if not _is_source_alias(pair) or (pair[0] in self.used and pair[0] == pair[1])]
        if len(keep) == len(names):
            return stmt
        if not keep:
            return None
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        if isinstance(stmt, cst.ImportFrom) and stmt.rpar is not None and len(keep) == 1:
            return stmt.with_changes(names=keep, lpar=None, rpar=None)
        return stmt.with_changes(names=keep)
