"""Links the libcst statements of a file to the stdlib `ast` statements of the same text.

Two things the converter needs fast, without libcst's PositionProvider (a second, slower code
generation of the whole module, ~2x the cost of parsing it):

- `Positions`: the line and column of a node, computed when asked. A statement's position comes
  from its `ast` twin; an expression's from generating, with position tracking, only the one
  statement (or compound-statement header) around it, started at that statement's known line
  and indentation. The numbers are libcst's own (same codegen), so diagnostics do not change.
  A statement a pass built has no position; any other node this cannot place (an expression
  in a statement a pass rebuilt) falls back to the full PositionProvider once per file.
- `Focus`: which statements can contain something the converter rewrites (a name bound to a
  torch import, a method name of the mapping tables, a class defined in the file...), judged on
  the source lines the statement spans. The rewriter skips the other statements: untouched
  subtrees are neither visited nor rebuilt.
"""
from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Iterable

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata import MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

_NEWLINE = re.compile(r"\r\n?|\n")   # libcst's line breaks

# libcst compound statement -> its stdlib ast twins
_COMPOUND = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.If: (ast.If,),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.Try: (ast.Try,),
    cst.Match: (ast.Match,),
}
if hasattr(cst, "TryStar") and hasattr(ast, "TryStar"):
    _COMPOUND[cst.TryStar] = (ast.TryStar,)

_SMALL = {
    cst.Expr: ast.Expr, cst.Assign: ast.Assign, cst.AnnAssign: ast.AnnAssign,
    cst.AugAssign: ast.AugAssign, cst.Return: ast.Return, cst.Raise: ast.Raise, cst.Pass: ast.Pass,
    cst.Break: ast.Break, cst.Continue: ast.Continue, cst.Import: ast.Import,
    cst.ImportFrom: ast.ImportFrom, cst.Global: ast.Global, cst.Nonlocal: ast.Nonlocal,
    cst.Del: ast.Delete, cst.Assert: ast.Assert,
}

_STUB = cst.SimpleStatementSuite([cst.Pass()])


class _Mismatch(Exception):
    """The two trees do not line up (should not happen; the caller falls back)."""


def _suite(body) -> Iterable:
    return body.body  # IndentedBlock and SimpleStatementSuite both hold `.body`


class SourceMap:
    """original libcst statement (and except handler) -> its ast node, built on first use;
    with the source text, also the text of each original top-level statement."""

    def __init__(self, module: cst.Module, tree: ast.Module | None, source: str | None = None) -> None:
        self.module = module
        self.tree = tree
        self.source = source
        self._nodes: dict[cst.CSTNode, ast.AST] | None = None if tree is not None else {}
        self.elifs: set[cst.CSTNode] = set()
        self.ok = tree is not None
        self._spans: dict[int, tuple[cst.CSTNode, int, int]] | None = None
        self._starts: list[int] | None = None
        self._following: dict[int, tuple] = {}   # id(statement) -> (it, the next one in its block)

    @property
    def nodes(self) -> dict:
        if self._nodes is None:
            self._nodes = {}
            try:
                self._pair(self.module.body, self.tree.body)
            except (_Mismatch, IndexError, AttributeError):
                self._nodes, self.ok = {}, False
        return self._nodes

    def _pair(self, cst_body, ast_body: list) -> None:
        out = self._nodes
        following = self._following
        i = 0
        for k, s in enumerate(cst_body):
            if k + 1 < len(cst_body):
                following[id(s)] = (s, cst_body[k + 1])
            if isinstance(s, cst.SimpleStatementLine):
                out[s] = ast_body[i]
                for small in s.body:
                    self._small(small, ast_body[i])
                    i += 1
            elif isinstance(s, cst.BaseSmallStatement):   # inside a SimpleStatementSuite
                self._small(s, ast_body[i])
                i += 1
            else:
                a = ast_body[i]
                i += 1
                if not isinstance(a, _COMPOUND.get(type(s), ())):
                    raise _Mismatch(type(s).__name__)
                out[s] = a
                self._compound(s, a)
        if i != len(ast_body):
            raise _Mismatch("statement count")

    def _small(self, s, a) -> None:
        expected = _SMALL.get(type(s))
        if expected is not None and not isinstance(a, expected):
            raise _Mismatch(type(s).__name__)
        self._nodes[s] = a

    def _compound(self, s, a) -> None:
        if isinstance(s, cst.Match):
            for case, acase in zip(s.cases, a.cases, strict=True):
                self._pair(_suite(case.body), acase.body)
            return
        self._pair(_suite(s.body), a.body)
        if isinstance(s, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            for h, ah in zip(s.handlers, a.handlers, strict=True):
                self._nodes[h] = ah
                self._pair(_suite(h.body), ah.body)
            if s.finalbody is not None:
                self._pair(_suite(s.finalbody.body), a.finalbody)
        orelse = getattr(s, "orelse", None)
        if isinstance(orelse, cst.If):        # elif: the ast nests it in orelse
            if len(a.orelse) != 1 or not isinstance(a.orelse[0], ast.If):
                raise _Mismatch("elif")
            self._nodes[orelse] = a.orelse[0]
            self.elifs.add(orelse)
            self._compound(orelse, a.orelse[0])
        elif orelse is not None:
            self._pair(_suite(orelse.body), a.orelse)

    def first_line(self, s) -> int:
        """First source line of an original statement (its decorators included)."""
        a = self.nodes[s]
        decorators = getattr(a, "decorator_list", None)
        return decorators[0].lineno if decorators else a.lineno

    # ---- original top-level statements: their text and names without code generation -------
    def top_level_text(self, stmt) -> str | None:
        """The code libcst generates for an original top-level statement (leading comment and
        blank lines, decorators, the body up to the next statement): a slice of the source.
        None for any other node, or when the file's layout is not one this can slice."""
        hit = self.spans.get(id(stmt))
        return self.source[hit[1]:hit[2]] if hit is not None and hit[0] is stmt else None

    def top_level_names(self, stmt) -> set[str] | None:
        """The identifiers (ast.Name ids) an original top-level statement uses, from the ast
        tree (as parsing its `top_level_text` would give); None for any other node."""
        hit = self.spans.get(id(stmt))
        if hit is None or hit[0] is not stmt:
            return None
        twins = [self.nodes[s] for s in stmt.body] if isinstance(stmt, cst.SimpleStatementLine) \
            else [self.nodes[stmt]]
        return {n.id for t in twins for n in ast.walk(t) if type(n) is ast.Name}

    # ---- nested original statements: their text stands in for their code generation ---------
    def with_verbatim(self, node):
        """`node` (a statement of the converted module) with each unchanged original statement
        nested in it that has a next statement in its original block replaced by a stand-in
        whose code is its source text (when generated at its original indentation). Only the
        statements and blocks on the way are rebuilt."""
        if self.source is None or not self.nodes:
            return node
        return self._verbatim(node)

    def _verbatim(self, node):
        if isinstance(node, cst.IndentedBlock):
            body = [self._stand_in(s) for s in node.body]
            changed = any(a is not b for a, b in zip(body, node.body))
            return node.with_changes(body=body) if changed else node
        changes = {}
        for name in ("body", "orelse", "finalbody"):
            child = getattr(node, name, None)
            if isinstance(child, (cst.IndentedBlock, cst.Else, cst.Finally, cst.If)):
                new = self._verbatim(child)
                if new is not child:
                    changes[name] = new
        for name in ("handlers", "cases"):
            children = getattr(node, name, None)
            if children:
                new = [self._verbatim(c) for c in children]
                if any(a is not b for a, b in zip(new, children)):
                    changes[name] = new
        return node.with_changes(**changes) if changes else node

    def _stand_in(self, stmt):
        hit = self._following.get(id(stmt))
        if hit is not None and hit[0] is stmt:
            found = self._nested_text(stmt, hit[1])
            if found is not None:
                return _Verbatim(stmt, *found)
        return self._verbatim(stmt)

    def _nested_text(self, stmt, following) -> tuple[str, str] | None:
        """(source text, indentation) of an original statement up to the next one in its block,
        or None when the layout does not add up (see _top_level_spans)."""
        start, end = self._span_start(stmt), self._span_start(following)
        if start is None or end is None:
            return None
        a, last = self.nodes[stmt], self.nodes.get(stmt.body[-1]) if isinstance(stmt, cst.SimpleStatementLine) \
            else self.nodes[stmt]
        starts = self.line_starts()
        if last is None or getattr(last, "end_lineno", None) is None or starts[last.end_lineno] > end:
            return None
        line = starts[a.lineno - 1]
        indent = self.source[line:line + a.col_offset]
        if not indent or not indent.isascii() or indent.strip(" \t") or \
                self.source[line + a.col_offset:line + a.col_offset + 1] in ("", " ", "\t", "\\", "#", "\n", "\r"):
            return None
        if getattr(stmt, "decorators", None):
            at = starts[self.first_line(stmt) - 1] + len(indent)
            if self.source[starts[self.first_line(stmt) - 1]:at] != indent or self.source[at:at + 1] != "@":
                return None
        return self.source[start:end], indent

    def _span_start(self, stmt) -> int | None:
        if stmt not in self.nodes or _multiline(stmt.leading_lines):
            return None
        decorators = getattr(stmt, "decorators", None)
        if decorators and _multiline(decorators[0].leading_lines):
            return None
        line = self.first_line(stmt) - len(stmt.leading_lines) - (len(decorators[0].leading_lines) if decorators else 0)
        return self.line_starts()[line - 1] if line >= 1 else None

    def line_starts(self) -> list[int]:
        """Offset of each source line's first character (libcst's line breaks)."""
        if self._starts is None:
            self._starts = _line_starts(self.source)
        return self._starts

    @property
    def spans(self) -> dict[int, tuple[cst.CSTNode, int, int]]:
        if self._spans is None:
            self._spans = self._top_level_spans()
        return self._spans

    def _top_level_spans(self) -> dict:
        """id(top-level statement) -> (statement, start, end) offsets in the source. A statement
        starts its leading lines before its first line (one line each: libcst's EmptyLine) and
        ends where the next one starts; the module header and footer are one line per EmptyLine
        too. Anything that does not add up exactly (a backslash in a blank line, a BOM, ast
        and libcst disagreeing) leaves the map empty: the caller generates the code."""
        source, module = self.source, self.module
        if source is None or not module.body or not source.endswith(("\n", "\r")) or not self.nodes:
            return {}
        if _multiline(module.header) or _multiline(module.footer):
            return {}
        starts = self.line_starts()   # starts[-1] == len(source): it ends with a line break
        n_lines = len(starts) - 1
        lines = []          # 1-based first line of each statement's span
        last_code = len(module.header)   # last line holding code so far (the header: none)
        for stmt in module.body:
            a = self.nodes.get(stmt)
            if a is None or _multiline(stmt.leading_lines):
                return {}
            first = self.first_line(stmt)
            decorators = getattr(stmt, "decorators", None)
            start = first - len(stmt.leading_lines) - (len(decorators[0].leading_lines) if decorators else 0)
            if decorators and _multiline(decorators[0].leading_lines):
                return {}
            if (start - 1 != last_code) if not lines else (start <= last_code):
                return {}
            char = source[starts[first - 1]:starts[first - 1] + 1]
            if (char != "@") if decorators else (char in "@ \t\f\\\r\n#" or not char.isascii()):
                return {}
            end = self.nodes.get(stmt.body[-1]) if isinstance(stmt, cst.SimpleStatementLine) else a
            if end is None or getattr(end, "end_lineno", None) is None:
                return {}
            last_code = end.end_lineno
            lines.append(start)
        footer_start = n_lines - len(module.footer) + 1
        if footer_start <= last_code:
            return {}
        bounds = [starts[line - 1] for line in lines] + [starts[footer_start - 1]]
        return {id(stmt): (stmt, bounds[i], bounds[i + 1]) for i, stmt in enumerate(module.body)}


class _Verbatim(cst.BaseStatement):
    """Stands in for an unchanged original statement in code generation only: its source text
    when generated at its original indentation, else the statement's own code."""
    __slots__ = ("indent", "original", "text")

    def __init__(self, original, text: str, indent: str) -> None:
        object.__setattr__(self, "original", original)
        object.__setattr__(self, "text", text)
        object.__setattr__(self, "indent", indent)

    def _visit_and_replace_children(self, visitor):
        return self

    def _codegen_impl(self, state) -> None:
        if "".join(state.indent_tokens) == self.indent:
            state.tokens.append(self.text)
        else:
            self.original._codegen(state)


def _line_starts(source: str) -> list[int]:
    return [0] + [m.end() for m in _NEWLINE.finditer(source)]


def _multiline(empty_lines) -> bool:
    """Can one of these EmptyLines span more than one physical line (a backslash continuation
    in its whitespace)?"""
    return any("\\" in line.whitespace.value for line in empty_lines)


class Positions:
    """`get(node, near=statement)` -> CodeRange, like PositionProvider's mapping: computed for
    the statement `near` (the one being converted) when first asked."""

    def __init__(self, module: cst.Module, source: str, smap: SourceMap) -> None:
        self.module = module
        self.smap = smap
        self._lines: list[str] | None = None
        self._source = source
        self._computed: dict = {}      # filled by libcst's codegen state (provider protocol)
        self._done: set[int] = set()   # ids of statements whose nodes were placed
        self._full = False
        self.fallbacks = 0             # times the whole-module PositionProvider ran (0 or 1)

    def __contains__(self, node) -> bool:
        return self.get(node) is not None

    def __getitem__(self, node):
        found = self.get(node)
        if found is None:
            raise KeyError(node)
        return found

    def _found(self, node):
        found = self._computed.get(node)
        if type(found) is tuple:   # recorded by _Tracking as (line, col, end line, end col)
            found = self._computed[node] = CodeRange(CodePosition(found[0], found[1]),
                                                     CodePosition(found[2], found[3]))
        return found

    def get(self, node, default=None, near=None):
        found = self._found(node)
        if found is not None:
            return found
        if self._full:
            return default
        if not self.smap.ok:
            self._whole_module()
            return self._computed.get(node, default)
        a = self.smap.nodes.get(node)
        if isinstance(node, (cst.BaseStatement, cst.BaseSmallStatement)):
            if a is None and self.smap.ok:
                return default   # every original statement is mapped: this one a pass built
            found = self._statement(node, a) if a is not None else None
            if found is not None:
                return found
        for stmt in (near, node):
            if stmt is not None and id(stmt) not in self._done and stmt in self.smap.nodes:
                self._done.add(id(stmt))
                self._place(stmt)
                found = self._found(node)
                if found is not None:
                    return found
        self._whole_module()
        return self._computed.get(node, default)

    # ---------------------------------------------------------------------------------
    def _line(self, n: int) -> str:
        if self._lines is None:
            self._lines = _NEWLINE.split(self._source)
        return self._lines[n - 1]

    def _char_col(self, line: int, byte_col: int) -> int:
        text = self._line(line)
        return byte_col if text.isascii() else len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace"))

    def _statement(self, node, a) -> CodeRange | None:
        last = self.smap.nodes.get(node.body[-1], a) if isinstance(node, cst.SimpleStatementLine) else a
        if getattr(last, "end_lineno", None) is None:
            return None
        found = CodeRange(CodePosition(a.lineno, self._char_col(a.lineno, a.col_offset)),
                          CodePosition(last.end_lineno, self._char_col(last.end_lineno, last.end_col_offset)))
        self._computed[node] = found
        return found

    def _place(self, stmt) -> None:
        """Generate the code of `stmt` (bodies of compound statements left out) with position
        tracking, starting at its known line and indentation."""
        nodes = self.smap.nodes
        if isinstance(stmt, (cst.Try, getattr(cst, "TryStar", cst.Try))):
            for h in stmt.handlers:
                self._generate(h, h.with_changes(body=_STUB), nodes[h].lineno - len(h.leading_lines), nodes[h])
            return
        if not isinstance(stmt, cst.BaseStatement):
            return   # small statements are placed with their line
        stub = stmt
        if isinstance(stmt, cst.BaseCompoundStatement) and not isinstance(stmt, cst.Match):
            # (a match statement is generated whole: its cases hold the bodies)
            changes = {}
            if isinstance(stmt.body, cst.IndentedBlock):
                changes["body"] = _STUB
            if getattr(stmt, "orelse", None) is not None:
                changes["orelse"] = None
            stub = stmt.with_changes(**changes) if changes else stmt
        # leading comment and blank lines are one line each
        first = self.smap.first_line(stmt) - len(stmt.leading_lines)
        if getattr(stmt, "decorators", None):
            first -= len(stmt.decorators[0].leading_lines)
        self._generate(stmt, stub, first, nodes[stmt])

    def _generate(self, original, stub, first_line: int, a) -> None:
        indent = self._line(a.lineno)[:a.col_offset]   # indentation: ASCII, bytes == chars
        if indent.strip():
            return
        sink = _Sink()
        state = _Tracking(default_indent=self.module.default_indent,
                          default_newline=self.module.default_newline, provider=sink, line=first_line, column=0)
        state.indent_tokens = [indent] if indent else []
        if original in self.smap.elifs:
            stub._codegen(state, is_elif=True)
        else:
            stub._codegen(state)
        got = sink._computed.get(stub) if stub is original else sink._computed.pop(stub, None)
        if got is not None and got[:2] == (a.lineno, len(indent)):
            self._computed.update(sink._computed)   # otherwise the fallback places them

    def _whole_module(self) -> None:
        self._full = True
        self.fallbacks += 1
        computed = MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider)
        self._computed = dict(computed)


class _Tracking(PositionProvidingCodegenState):
    """libcst's position-tracking code generation, with cheaper bookkeeping: ranges are kept
    as tuples (made CodeRanges when asked for), tokens without a line break skip the regex,
    and the syntactic-position context is a plain object instead of a generator."""

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:   # indentation holds no line break
            self.tokens.append(token)
            self.column += len(token)

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            segments = _NEWLINE.split(value)
            self.line += len(segments) - 1
            self.column = len(segments[-1])
        else:
            self.column += len(value)

    def before_codegen(self, node) -> None:
        self._stack.append((self.line, self.column))

    def after_codegen(self, node) -> None:
        line, column = self._stack.pop()
        computed = self.provider._computed
        if node not in computed:   # a syntactic position recorded inside wins
            computed[node] = (line, column, self.line, self.column)

    def record_syntactic_position(self, node, *, start_node=None, end_node=None):
        return _Syntactic(self, node, start_node, end_node)


class _Syntactic:
    __slots__ = ("state", "node", "start_node", "end_node", "start")

    def __init__(self, state: _Tracking, node, start_node, end_node) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.start = (self.state.line, self.state.column)

    def __exit__(self, *exc) -> bool:
        state = self.state
        computed = state.provider._computed
        line, column = computed[self.start_node][:2] if self.start_node is not None else self.start
        end = computed[self.end_node][2:] if self.end_node is not None else (state.line, state.column)
        computed[self.node] = (line, column, *end)
        return False


class _Sink:
    """Receives the positions one generation records (libcst's provider protocol)."""

    def __init__(self) -> None:
        self._computed: dict = {}


class Focus:
    """Which original statements can hold a reference the converter rewrites, judged by the
    identifiers on the source lines they span."""

    def __init__(self, source: str, smap: SourceMap, names: Iterable[str], methods: Iterable[str],
                 pattern: str | None = None) -> None:
        self.smap = smap
        names = sorted({n for n in names if n.isidentifier()}, key=len, reverse=True)
        methods = sorted({m for m in methods if m.isidentifier()}, key=len, reverse=True)
        parts = []
        if names:   # the lookahead rejects most positions before the alternation is tried
            first = "".join(sorted({n[0] for n in names}))
            parts.append(r"(?=[%s])\b(?:%s)\b" % (first, "|".join(names)))
        if methods:
            parts.append(r"\.\s*(?:%s)\b" % "|".join(methods))
        if pattern:
            parts.append(pattern)
        self.hits: list[int] = []
        if parts:
            found = re.compile("|".join(parts), re.M)
            starts = smap.line_starts() if smap.source is source else _line_starts(source)
            line = 0
            for m in found.finditer(source):
                line = bisect.bisect_right(starts, m.start(), lo=line)   # 1-based line of the hit
                if not self.hits or self.hits[-1] != line:
                    self.hits.append(line)

    def hits_between(self, first: int, last: int) -> bool:
        i = bisect.bisect_left(self.hits, first)
        return i < len(self.hits) and self.hits[i] <= last

    def wants(self, stmt) -> bool:
        """False only for an original statement whose lines hold none of the identifiers."""
        if not self.smap.ok:
            return True
        a = self.smap.nodes.get(stmt)
        if a is None or getattr(a, "end_lineno", None) is None:
            return True
        return self.hits_between(self.smap.first_line(stmt), a.end_lineno)
