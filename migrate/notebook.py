"""Jupyter notebooks (.ipynb, plain JSON: no nbformat dependency).

The code cells of a notebook are one program (an import in cell 1 applies to cell 5), so they
are converted together: joined with a marker statement between cells, IPython lines (`%magic`,
`!shell`, `x = !cmd`, `obj?`) replaced by placeholder statements that keep their line, converted
as one file, then split back at the markers. Markdown and raw cells, outputs, execution counts
and metadata are left exactly as they were; a cell whose code did not change keeps its original
source list. Cells starting with a cell magic (`%%bash`, `%%time`) are not Python and are left
alone. The file is written back as nbformat writes it (indent 1, non-ASCII kept, trailing newline).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from msmigrate.diagnostics import Diagnostic, InputError

CELL_MARK = "__msmigrate_cell__"
MAGIC_MARK = "__msmigrate_magic__"
_MAGIC_LINE = re.compile(r"^\s*(?:[!%]|\?|[\w.]+\s*=\s*[!%]|.*[\w)\]]\?\??\s*$)")
_PLACEHOLDER = re.compile(rf"^(\s*){MAGIC_MARK}\((\d+)\)\s*$")
_BOUNDARY = re.compile(rf"^{CELL_MARK}\((\d+)\)\s*$")


class NotebookError(ValueError):
    pass


@dataclass
class Program:
    """The code cells of a notebook as one Python program."""
    code: str
    cells: list[int]                       # notebook index of each code cell converted
    starts: list[int]                      # program line (1-based) of each cell's first line
    lengths: list[int]                     # lines of each cell
    magics: list[str] = field(default_factory=list)   # original IPython lines, by placeholder index

    def locate(self, line: int) -> tuple[int, int]:
        """(cell number, 1-based, counting every cell of the notebook; line in that cell)."""
        for k in range(len(self.starts) - 1, -1, -1):
            if line >= self.starts[k]:
                return self.cells[k] + 1, min(line - self.starts[k] + 1, max(self.lengths[k], 1))
        return (self.cells[0] + 1 if self.cells else 1), 1


def load(text: str, path: str) -> dict:
    try:
        nb = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(path, f"not a valid notebook: {exc.msg} (repair the JSON, e.g. by re-saving "
                               f"it in Jupyter)", exc.lineno, exc.colno) from None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise InputError(path, "not a notebook: no list of cells (nbformat 4 is supported)")
    return nb


def is_python(nb: dict) -> bool:
    meta = nb.get("metadata") or {}
    lang = (meta.get("kernelspec") or {}).get("language") or (meta.get("language_info") or {}).get("name")
    return lang in (None, "python", "python3")


def cell_text(cell: dict) -> str:
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else str(src)


def program(nb: dict) -> Program:
    lines: list[str] = []
    cells, starts, lengths, magics = [], [], [], []
    for index, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code":
            continue
        text = cell_text(cell)
        if text.lstrip().startswith("%%"):
            continue
        lines.append(f"{CELL_MARK}({index})")
        cells.append(index)
        starts.append(len(lines) + 1)
        body = text.split("\n")
        if body and body[-1] == "":
            body.pop()
        opened = _open_at_line_starts(body + [""])
        for k, ln in enumerate(body):
            # an IPython line neither starts nor ends inside brackets or a string
            if not opened[k] and not opened[k + 1] and _MAGIC_LINE.match(ln) and not _is_python(ln):
                indent = ln[:len(ln) - len(ln.lstrip())]
                lines.append(f"{indent}{MAGIC_MARK}({len(magics)})")
                magics.append(ln)
            else:
                lines.append(ln)
        lengths.append(len(body))
    return Program("\n".join(lines) + "\n", cells, starts, lengths, magics)


# a line Python cannot start this way: `%magic`, `!cmd`, `?obj`, `x = !cmd`, `x = %magic`
_IPYTHON_START = re.compile(r"^\s*(?:[%!?]|[\w.]+\s*=\s*[!%])")


def _open_at_line_starts(lines: list[str]) -> list[bool]:
    """For each line: does it start inside brackets or a triple-quoted string? (`% x` continuing
    a format expression, a docstring line ending in `?` are Python, not IPython.)"""
    out = []
    depth, quote = 0, ""
    for ln in lines:
        out.append(depth > 0 or bool(quote))
        if not out[-1] and _IPYTHON_START.match(ln):
            continue   # `!echo (`: shell or magic text, whose brackets mean nothing to Python
        i = 0
        while i < len(ln):
            c = ln[i]
            if quote:
                if c == "\\":
                    i += 2
                    continue
                if ln.startswith(quote, i):
                    i += len(quote)
                    quote = ""
                    continue
            elif c == "#":
                break
            elif c in "\"'":
                quote = ln[i:i + 3] if ln[i:i + 3] in ('"""', "'''") else c
                i += len(quote)
                continue
            elif c in "([{":
                depth += 1
            elif c in ")]}":
                depth = max(0, depth - 1)
            i += 1
        if quote in ("'", '"'):
            quote = ""   # an unterminated one-line string ends with its line
    return out


def _is_python(line: str) -> bool:
    """Lines the magic pattern catches that are Python after all (`x = a % b` does not start
    with %, but `print(x)  # why?` ends with ?)."""
    import ast

    stripped = line.strip()
    if stripped.startswith(("%", "!", "?")):
        return False
    try:
        ast.parse(stripped)
        return True
    except SyntaxError:
        return False


def split(prog: Program, code: str) -> dict[int, str]:
    """Converted program text -> {notebook cell index: new cell text}."""
    out: dict[int, list[str]] = {}
    current = None
    order = []
    for ln in code.split("\n"):
        m = _BOUNDARY.match(ln)
        if m:
            current = int(m.group(1))
            order.append(current)
            out[current] = []
            continue
        m = _PLACEHOLDER.match(ln)
        if m:
            ln = prog.magics[int(m.group(2))]
        if current is None:
            if ln.strip():   # code the conversion put before the first cell: it goes into it
                out.setdefault(-1, []).append(ln)
            continue
        out[current].append(ln)
    if order != prog.cells:
        raise NotebookError("the conversion moved code across cell boundaries")
    if -1 in out:
        out[prog.cells[0]] = out.pop(-1) + out[prog.cells[0]]
    texts = {}
    for index, lines in out.items():
        while lines and lines[-1] == "":
            lines.pop()
        texts[index] = "\n".join(lines)
    return texts


def apply(nb: dict, texts: dict[int, str]) -> bool:
    """Write the new cell texts into the notebook; True when any cell changed."""
    changed = False
    for index, new in texts.items():
        cell = nb["cells"][index]
        old = cell_text(cell)
        if new.rstrip("\n") == old.rstrip("\n"):
            continue
        if old.endswith("\n") and not new.endswith("\n"):
            new += "\n"
        changed = True
        if isinstance(cell.get("source"), list):
            cell["source"] = new.splitlines(keepends=True)
        else:
            cell["source"] = new
    return changed


def dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def cell_diagnostic(prog: Program, d: Diagnostic) -> tuple[Diagnostic, int]:
    """A diagnostic on the joined program -> the same on its cell's line, and the cell number."""
    cell, line = prog.locate(d.line)
    return Diagnostic(d.path, line, d.col, d.code, d.message, d.severity, d.fixable, d.status), cell
