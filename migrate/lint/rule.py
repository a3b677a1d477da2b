"""The lint rule base class and the per-file context rules report through.

A rule is a class in its own module under `msmigrate.rules.lint`. Its docstring is its
documentation (Ruff's sections: What it does / Why is this bad? / Example / Use instead /
Fix safety); `VALID` and `INVALID` hold example programs that the test suite runs through the
linter and through the MindSpore compiler. A rule subscribes to node types by defining
`visit_<NodeType>(self, node, ctx)`; `finish(self, ctx)` runs after the traversal.
"""
from __future__ import annotations

import ast
import inspect
import re

from msmigrate.diagnostics import Diagnostic

# What the compiler is expected to do with a rule's INVALID examples (checked by tests):
CLAIMS = {
    "compile-error": "INVALID fails to compile in graph mode but runs in PyNative; VALID compiles and matches",
    "wrong-result": "INVALID compiles and runs without error but differs from PyNative; VALID matches",
    "breaks-after-trigger": "INVALID raises once as in PyNative, then every later call fails; VALID matches",
    "fallback": "INVALID matches PyNative in the default (LAX) mode but is rejected by fullgraph=True; "
                "VALID compiles under fullgraph=True and matches",
    "recompile": "INVALID compiles once per call; VALID compiles once and matches",
    "works": "both compile once and match PyNative (information only)",
    "differs-from-torch": "INVALID differs from the PyTorch reference; VALID matches it",
    "fails": "INVALID fails in PyNative and in graph mode; VALID runs",
}
CATEGORIES = {"1": "will not compile", "2": "silently wrong", "3": "breaks after first trigger",
              "4": "slow (Python fallback)", "5": "recompiles", "6": "information",
              "7": "migration trap", "8": "leftover torch"}


class Rule:
    code: str = ""
    name: str = ""
    severity: str = "warning"
    claim: str = ""
    # the compile mode the examples are checked in: "graph" (jit / GRAPH_MODE Cell) or "strict"
    mode: str = "graph"
    # info rules are opt-in (`--select MSG6`); the rest run by default
    default: bool = True
    # "ported": only in files ported from torch (LintConfig.is_ported) unless selected by band or
    # code; "any": every file
    origin: str = "any"
    # "safe", "unsafe" or None: applicability of this rule's fixes
    fix_safety: str | None = None
    VALID: list[str] = []
    INVALID: list[str] = []
    # differs-from-torch rules: one PyTorch program per VALID example, defining drive()
    TORCH_REFERENCE: list[str] = []

    def __init__(self, ctx: "Context"):
        self.ctx = ctx

    def report(self, node: ast.AST, message: str, fix: tuple = ()) -> None:
        self.ctx.report(self, node, message, fix)

    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        doc = inspect.cleandoc(cls.__doc__ or "")
        parts = re.split(r"^## (.+)$", doc, flags=re.M)
        out = {"summary": parts[0].strip()}
        for title, body in zip(parts[1::2], parts[2::2]):
            out[title.strip()] = body.strip()
        return out

    @classmethod
    def documentation(cls) -> str:
        head = f"{cls.code} {cls.name} ({cls.severity}; {CATEGORIES.get(cls.code[3:4], '')})"
        fix = {"safe": "safe fix available", "unsafe": "unsafe fix available (--unsafe-fixes)"}.get(
            cls.fix_safety or "", "no automatic fix")
        if cls.origin == "ported":
            fix += ("\nRuns on code ported from PyTorch: msmigrate's converted output, files importing torch,\n"
                    "files matched by `ported` in [tool.msmigrate.lint]; in native MindSpore files only\n"
                    "when selected by band or code (--extend-select MSG7, MSG7xx).")
        return f"{head}\n{'=' * len(head)}\n{fix}\n\n{inspect.cleandoc(cls.__doc__ or '')}\n"


class Context:
    """Per-file state shared by all rules during the one traversal."""

    def __init__(self, path: str, source: str, tree: ast.Module, model, config):
        self.path = path
        self.source = source
        self.tree = tree
        self.model = model
        self.config = config
        self.lines = source.splitlines(keepends=True)
        self.graph = None          # GraphFunction being traversed, or None outside graph code
        self.tensor_conds: list[ast.AST] = []  # enclosing if/while with tensor-valued tests (graph)
        self.loops: list[ast.AST] = []         # enclosing for/while loops outside graph code
        self.functions: list[ast.AST] = []     # enclosing function definitions
        self.diagnostics: list[Diagnostic] = []
        self._line_starts = None

    @property
    def in_graph(self) -> bool:
        return self.graph is not None

    @property
    def strict(self) -> bool:
        return bool(self.graph is not None and self.graph.strict) or bool(getattr(self.config, "strict", False))

    def is_tensor(self, node: ast.AST) -> bool:
        return self.graph is not None and self.model.is_tensor(node, self.graph)

    def is_tensor_derived(self, node: ast.AST) -> bool:
        return self.graph is not None and self.model.is_tensor_derived(node, self.graph)

    def qualname(self, node: ast.AST) -> str | None:
        return self.model.qualname(node)

    def text(self, node: ast.AST) -> str:
        return ast.get_source_segment(self.source, node) or ""

    def offset(self, line: int, col: int) -> int:
        """Character offset of an ast (line, UTF-8 byte column) position."""
        if self._line_starts is None:
            starts, pos = [0], 0
            for ln in self.lines:
                pos += len(ln)
                starts.append(pos)
            self._line_starts = starts
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        return self._line_starts[line - 1] + len(text.encode("utf-8")[:col].decode("utf-8", "replace"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset))

    def report(self, rule: Rule, node: ast.AST, message: str, fix: tuple = ()) -> None:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if line - 1 < len(self.lines) else ""
        col = len(text.encode("utf-8")[:getattr(node, "col_offset", 0)].decode("utf-8", "replace")) + 1
        self.diagnostics.append(Diagnostic(
            self.path, line, col, rule.code, message, rule.severity, fixable=bool(fix),
            end_line=getattr(node, "end_lineno", line) or line,
            end_col=(getattr(node, "end_col_offset", 0) or 0) + 1,
            fix=tuple(fix), fix_safe=rule.fix_safety == "safe"))


class GraphSyntaxRule(Rule):
    """Base for rules that flag one kind of syntax node inside compiled code."""
    severity = "error"
    claim = "compile-error"
    nodes: tuple = ()
    message = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for node_type in cls.nodes:
            setattr(cls, f"visit_{node_type.__name__}", cls._visit)

    def _visit(self, node, ctx):
        if ctx.in_graph and self.applies(node, ctx):
            self.report(node, self.message.format(where=ctx.graph.why))

    def applies(self, node, ctx) -> bool:
        return True
