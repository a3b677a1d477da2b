"""`a; b; c` on one line -> one statement per line. The passes after this one reason about
statements (a training step's forward statements and its backward pass, an in-place method that
becomes an assignment written after its statement): `out = net(x); loss = crit(out, y)` as one
statement read `out` before writing it, and made it an input of the compiled step. Comments stay:
the lines above go with the first statement, the trailing comment with the last.

`(name, preprocess) = ("moments", lambda d: get_moments(d))` -> one assignment per line too:
MindSpore compiles a lambda a compiled step calls from the line that defines it, and refuses one
that is not the whole value of its line ("Parse Lambda Function Fail ... got Tuple"). Only when
no element but the lambdas (whose bodies run later) reads a name the line binds, so that the
values are those Python computed before binding any. A structural pass on torch names, the first."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer


class SplitStatementsPass(FocusedTransformer):
    """(Blocks without such a line keep their identity, and with it their positions.)"""

    @staticmethod
    def applies(source: str) -> bool:
        return ";" in source or "lambda" in source

    def __init__(self, ctx) -> None:
        super().__init__()

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._split(updated.body))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._split(updated.body))

    def _split(self, body) -> list:
        out = []
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) > 1:
                self.changes += 1
                out.extend(_one_per_line(stmt))
            elif isinstance(stmt, cst.SimpleStatementLine) and _lambdas_unpacked(stmt):
                self.changes += 1
                out.extend(_one_per_line(_unpacked(stmt)))
            else:
                out.append(stmt)
        return out


def _one_per_line(stmt: cst.SimpleStatementLine) -> list:
    last = len(stmt.body) - 1
    return [cst.SimpleStatementLine([small.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)],
                                    leading_lines=stmt.leading_lines if i == 0 else [],
                                    trailing_whitespace=stmt.trailing_whitespace if i == last
                                    else cst.TrailingWhitespace())
            for i, small in enumerate(stmt.body)]


def _pairs(stmt: cst.SimpleStatementLine):
    """[(target name, value)] of `a, b = x, y` (parenthesised or not), else None."""
    small = stmt.body[0] if len(stmt.body) == 1 else None
    if not isinstance(small, cst.Assign) or len(small.targets) != 1:
        return None
    target, value = small.targets[0].target, small.value
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(value, (cst.Tuple, cst.List)) or \
            len(target.elements) != len(value.elements):
        return None
    if not all(isinstance(e, cst.Element) and not isinstance(e, cst.StarredElement) and
               isinstance(e.value, cst.Name) for e in target.elements) or \
            any(isinstance(e, cst.StarredElement) for e in value.elements):
        return None
    return [(t.value.value, v.value) for t, v in zip(target.elements, value.elements)]


class _NamesOutsideLambdas(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: set[str] = set()

    def visit_Lambda(self, node) -> bool:
        return False

    def visit_Name(self, node) -> None:
        self.found.add(node.value)


def _lambdas_unpacked(stmt: cst.SimpleStatementLine) -> bool:
    pairs = _pairs(stmt)
    if not pairs or not any(isinstance(v, cst.Lambda) for _, v in pairs):
        return False
    bound = [t for t, _ in pairs]
    if len(set(bound)) != len(bound):
        return False
    for _, value in pairs:
        seen = _NamesOutsideLambdas()
        value.visit(seen)
        if seen.found & set(bound):
            return False
    return True


def _unpacked(stmt: cst.SimpleStatementLine) -> cst.SimpleStatementLine:
    # the line's comment goes with the last assignment (_one_per_line)
    return stmt.with_changes(body=[cst.Assign([cst.AssignTarget(cst.Name(t))],
                                              value.with_changes(lpar=value.lpar, rpar=value.rpar),
                                              semicolon=cst.Semicolon())
                                   for t, value in _pairs(stmt)])
