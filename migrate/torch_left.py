"""A converted file never mixes frameworks: when its code still uses torch, it stops at its top
(before any torch object can meet a MindSpore one halfway through training) with a comment block
that lists each torch use left and why. Works on the converted text with the stdlib `ast`."""
from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable

from msmigrate.diagnostics import Diagnostic
from msmigrate.mapping import RULES_DIR
from msmigrate.names import SOURCE_ROOTS

STOP_CODE = "MSC108"
HELD = "left for manual work"
with (RULES_DIR / "imports.toml").open("rb") as _fh:
    # torch itself and the libraries built on it (rules/imports.toml)
    TORCH_FAMILY = SOURCE_ROOTS | frozenset(tomllib.load(_fh)["torch_family"]["libraries"])
_ROOTS = "|".join(sorted(TORCH_FAMILY))
# a cheap test before parsing: a line that imports torch (or torchvision...)
_IMPORT_LINE = re.compile(rf"^[ \t]*(?:from[ \t]+(?:{_ROOTS})\b|import[ \t][^\n#]*\b(?:{_ROOTS})\b)", re.M)
STOP_LINE = 'raise RuntimeError("msmigrate: this converted file needs work by hand first; see the comment above")'


UNUSED_IMPORT = "imported, nothing uses it: delete the import"


def torch_uses(code: str) -> list[tuple[int, str, str]]:
    """(line, torch API, note) of every torch reference left in `code`, in order; an import
    nothing uses counts as a use of its module (noted UNUSED_IMPORT)."""
    if not _IMPORT_LINE.search(code):
        return []
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    bound: dict[str, str] = {}
    imports: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in TORCH_FAMILY:
                    name = alias.asname or alias.name.split(".")[0]
                    bound[name] = alias.name if alias.asname else name
                    imports.append((node.lineno, alias.name))
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module \
                and node.module.split(".")[0] in TORCH_FAMILY:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                imports.append((node.lineno, node.module))
    finder = _References(bound)
    finder.visit(tree)
    return [(line, api, "") for line, api in sorted(set(finder.uses))] or \
        [(line, module, UNUSED_IMPORT) for line, module in sorted(set(imports))]


class _References(ast.NodeVisitor):
    """References to torch-bound names, outside functions that bind the same name locally."""

    def __init__(self, bound: dict[str, str]) -> None:
        self.bound = bound
        self.uses: list[tuple[int, str]] = []

    def visit_FunctionDef(self, node) -> None:
        local = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        declared = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                local.add(sub.id)
            elif isinstance(sub, (ast.Global, ast.Nonlocal)):
                declared.update(sub.names)
        shadowed = (local - declared) & self.bound.keys()
        if not shadowed:
            self.generic_visit(node)
            return
        outer = self.bound
        self.bound = {k: v for k, v in outer.items() if k not in shadowed}
        self.generic_visit(node)
        self.bound = outer

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Attribute(self, node: ast.Attribute) -> None:
        parts, value = [node.attr], node.value
        while isinstance(value, ast.Attribute):
            parts.append(value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in self.bound:
            self.uses.append((node.lineno, ".".join([self.bound[value.id], *reversed(parts)])))
        else:
            self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in self.bound:
            self.uses.append((node.lineno, self.bound[node.id]))


def stop_at_top(code: str, diagnostics: Iterable[Diagnostic], path: str,
                stops: Iterable[str] = ()) -> tuple[str, Diagnostic | None]:
    """`code` with the stop block inserted after its docstring and `__future__` imports when it
    still uses torch, or holds code marked with one of the `stops` markers (code that cannot run
    on the converted objects), and the file-level diagnostic that says so; else `code` unchanged."""
    code, earlier = _without_stop_block(code)   # converting a converted file again renews the block
    uses = torch_uses(code)
    again = [f"# msmigrate: {why}" for why in earlier.pop(HELD, {})]
    used_at = {line for line, _, _ in uses}
    held = [(n, why) for n, why in _marked_lines(code, [*stops, *again]) if n not in used_at]
    if not uses and not held:
        return code, None
    lines = code.splitlines(keepends=True)
    at = _insertion_line(code)
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    reasons = {**_reasons(diagnostics), **earlier}
    by_api: dict[str, list[int]] = {}
    for line, api, note in uses:
        by_api.setdefault(api, []).append(line)
        reasons.setdefault(api, note or "left as torch")
    entries = [(api, sorted(set(ls))) for api, ls in by_api.items()]
    header_len = 3 + len(entries) + len(held)
    need = "still needs torch at run time" if entries else "holds torch-style code MindSpore objects cannot run"
    block = [f"# msmigrate: {STOP_CODE} this file {need}; rather than mix torch and MindSpore",
             "# objects it stops here. Convert these by hand (or drop them), then delete the raise below:"]
    for api, ls in entries:
        where = ", ".join(str(n + header_len if n > at else n) for n in ls)
        block.append(f"#   line{'s' if len(ls) > 1 else ''} {where}: {api}: {reasons[api]}")
    block += [f"#   line {n + header_len if n > at else n}: {HELD}: {why}" for n, why in held]
    block.append(STOP_LINE)
    assert len(block) == header_len
    new = "".join(lines[:at]) + "".join(b + newline for b in block) + "".join(lines[at:])
    names = ", ".join([api for api, _ in entries] + ["code left as torch" for _ in held[:1]])
    what = "still needs torch" if entries else "holds code that cannot run on MindSpore objects"
    diag = Diagnostic(path, 1, 1, STOP_CODE, f"the converted file {what} ({names}): it stops at its top "
                                        f"until these are converted by hand", "error", False, "manual")
    return new, diag


_ENTRY = re.compile(r"^#   lines? [\d, ]+: ([\w.]+|[^:]+): (.*)$")


def _marked_lines(code: str, markers: Iterable[str]) -> list[tuple[int, str]]:
    """(line of the statement under the marker, what the marker says) for each marker in code."""
    wanted = {m.strip(): m.split(" ", 2)[-1] for m in markers}   # "CODE message"
    if not wanted:
        return []
    lines = code.splitlines()
    out = []
    for i, ln in enumerate(lines):
        if ln.strip() in wanted:
            j = i + 1
            while j < len(lines) and lines[j].lstrip().startswith("#"):   # other markers above it
                j += 1
            out.append((j + 1, wanted[ln.strip()]))
    return out


def _without_stop_block(code: str) -> tuple[str, dict[str, str]]:
    """`code` without a stop block an earlier conversion put there, and that block's reasons
    (converting the output again must change nothing, though the diagnostics behind them are gone)."""
    if STOP_LINE not in code:
        return code, {}
    lines = code.splitlines(keepends=True)
    end = next(i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == STOP_LINE)
    start = end
    while start > 0 and lines[start - 1].startswith("#") and not lines[start].startswith(f"# msmigrate: {STOP_CODE} this file"):
        start -= 1
    reasons = {}
    for m in map(_ENTRY.match, lines[start:end]):
        if m and m.group(1) == HELD:   # several of these: keep each marker's text
            reasons.setdefault(HELD, {})[m.group(2)] = True
        elif m:
            reasons[m.group(1)] = m.group(2)
    return "".join(lines[:start] + lines[end + 1:]), reasons


def _insertion_line(code: str) -> int:
    """How many lines precede the stop block: the module docstring and `__future__` imports."""
    try:
        body = ast.parse(code).body
    except SyntaxError:   # newer syntax than this Python's (libcst reads it): nothing to skip over
        return 0
    at = 0
    for i, stmt in enumerate(body):
        is_doc = i == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
            and isinstance(stmt.value.value, str)
        if is_doc or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            at = stmt.end_lineno
        else:
            break
    return at


def _reasons(diagnostics: Iterable[Diagnostic]) -> dict[str, str]:
    """torch API -> why it was left (diagnostic messages start with the API they are about)."""
    out: dict[str, str] = {}
    for d in sorted(diagnostics, key=lambda d: d.status == "review"):   # manual work explains best
        api, _, why = d.message.partition(" ")
        api = api.rstrip(":")
        if api.split(".")[0] in TORCH_FAMILY and api not in out:
            out[api] = f"{d.code} {why.lstrip(': ')}".strip()
    return out
