"""`a; b; c` on one line -> one statement per line. The passes after this one reason about
statements (a training step's forward statements and its backward pass, an in-place method that
becomes an assignment written after its statement): `out = net(x); loss = crit(out, y)` as one
statement read `out` before writing it, and made it an input of the compiled step. Comments stay:
the lines above go with the first statement, the trailing comment with the last. A structural
pass on torch names, the first."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer


class SplitStatementsPass(FocusedTransformer):
    """(Blocks without such a line keep their identity, and with it their positions.)"""

    @staticmethod
    def applies(source: str) -> bool:
        return ";" in source

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
