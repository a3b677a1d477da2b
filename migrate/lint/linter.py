"""Lint one source text: parse once with `ast`, build the file model, one traversal for all rules."""
from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from functools import lru_cache

from msmigrate.diagnostics import Diagnostic
from msmigrate.lint.analysis import FileModel
from msmigrate.lint.config import LintConfig
from msmigrate.lint.rule import Context, Rule

# Files without any of these cannot contain code MindSpore compiles or MindSpore API calls.
MARKERS = ("construct", "jit", "mindspore")
NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]*(?:\s*,\s*[A-Z]+[0-9]*)*))?", re.I)


@lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    """Rule classes discovered by walking the `msmigrate.rules.lint` package, sorted by code."""
    import msmigrate.rules.lint as pkg

    found = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.code \
                    and obj.__module__ == mod.__name__:
                if obj.code in found:
                    raise RuntimeError(f"duplicate lint code {obj.code}: {found[obj.code]} and {obj}")
                found[obj.code] = obj
    return tuple(found[c] for c in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    for r in all_rules():
        if r.code == code.upper() or r.name == code:
            return r
    return None


def might_compile(source: str) -> bool:
    return any(m in source for m in MARKERS)


def lint_source(code: str, path: str = "<string>", config: LintConfig | None = None,
                external=None) -> list[Diagnostic]:
    """Lint `code` (the text of `path`). Raises SyntaxError if it does not parse.
    `external`: facts from other files linted together (msmigrate.lint.crossfile)."""
    config = config or LintConfig()
    if not might_compile(code):
        return []
    tree = ast.parse(code, filename=path)
    ported = config.is_ported(path, code)
    rules = [r for r in all_rules() if config.enabled(r, path, ported)]
    if not rules:
        return []
    model = FileModel(tree, strict=config.strict, external=external)
    ctx = Context(path, code, tree, model, config)
    instances = [r(ctx) for r in rules]
    dispatch: dict[type, list] = {}
    for inst in instances:
        for attr in dir(type(inst)):
            if attr.startswith("visit_"):
                node_type = getattr(ast, attr[6:], None)
                if node_type is not None:
                    dispatch.setdefault(node_type, []).append(getattr(inst, attr))
    _walk(tree, ctx, dispatch)
    for inst in instances:
        finish = getattr(inst, "finish", None)
        if finish is not None:
            finish(ctx)
    return sorted(_apply_noqa(ctx.diagnostics, ctx.lines))


_FUNC = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _walk(root: ast.AST, ctx: Context, dispatch: dict) -> None:
    model = ctx.model
    graph_defs = model.graph
    iter_children = ast.iter_child_nodes

    def visit(node):
        handlers = dispatch.get(type(node))
        if handlers:
            for h in handlers:
                h(node, ctx)
        t = type(node)
        saved_graph = ctx.graph
        pushed_cond = pushed_loop = pushed_fn = False
        if t is ast.FunctionDef or t is ast.AsyncFunctionDef:
            ctx.functions.append(node)
            pushed_fn = True
            g = graph_defs.get(node)
            if g is not None:
                ctx.graph = g
            elif saved_graph is None:
                ctx.graph = None
            saved_loops, ctx.loops = ctx.loops, []
            saved_conds, ctx.tensor_conds = ctx.tensor_conds, []
        elif ctx.graph is not None and (t is ast.If or t is ast.While) and model.is_tensor(node.test, ctx.graph):
            ctx.tensor_conds.append(node)
            pushed_cond = True
        if ctx.graph is None and (t is ast.For or t is ast.While or t is ast.AsyncFor):
            ctx.loops.append(node)
            pushed_loop = True
        for child in iter_children(node):
            visit(child)
        if pushed_cond:
            ctx.tensor_conds.pop()
        if pushed_loop:
            ctx.loops.pop()
        if pushed_fn:
            ctx.functions.pop()
            ctx.loops = saved_loops
            ctx.tensor_conds = saved_conds
        ctx.graph = saved_graph

    visit(root)


def _apply_noqa(diags: list[Diagnostic], lines: list[str]) -> list[Diagnostic]:
    out = []
    for d in diags:
        text = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
        m = NOQA.search(text) if "noqa" in text.lower() else None
        if m is not None:
            codes = m.group("codes")
            if not codes or any(d.code.startswith(c.strip().upper()) for c in codes.split(",")):
                continue
        out.append(d)
    return out
