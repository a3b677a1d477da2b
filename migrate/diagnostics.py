"""Diagnostics shared by `convert` and `lint`: one record type, one set of severities."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

SEVERITIES = ("error", "warning", "info")

# Conversion statuses, from best to worst. A record's status says how far a user can trust it.
AUTO, REVIEW, MANUAL, UNSUPPORTED = "auto", "review", "manual", "unsupported"
STATUSES = (AUTO, REVIEW, MANUAL, UNSUPPORTED)

# Codes of the converter's own diagnostics (lint rules own the MSG band).
CONVERT_CODES = {
    "MSC001": "syntax error: the file could not be parsed",
    "MSC002": "the file could not be read (encoding, permissions, binary content)",
    "MSC101": "converted, but the semantics may differ: review this line",
    "MSC102": "needs manual migration: left as it was",
    "MSC103": "no MindSpore equivalent: left as it was",
    "MSC104": "torch API not in the mapping tables: left as it was",
    "MSC105": "an argument or value has no MindSpore equivalent",
    "MSC106": "the call's arguments could not be matched to the torch signature",
    "MSC107": "internal error while converting this reference: left as it was (please report it)",
    "MSC109": "a step was left uncompiled (PyNative): a static graph would freeze or reject code it runs",
    "MSC108": "the converted file still needs torch at run time: it stops at its top (never mixes frameworks)",
}
STATUS_CODE = {REVIEW: "MSC101", MANUAL: "MSC102", UNSUPPORTED: "MSC103"}


@dataclass(frozen=True, order=True)
class Diagnostic:
    path: str
    line: int
    col: int
    code: str
    message: str
    severity: str = "warning"
    fixable: bool = False
    # convert only: the status of the conversion this diagnostic is about
    status: str = field(default="", compare=False)
    # lint only: where the finding ends, and its fix as text edits ((start, end, new), ...) over
    # character offsets of the source; `fix_safe` is the fix's applicability (safe vs unsafe)
    end_line: int = field(default=0, compare=False)
    end_col: int = field(default=0, compare=False)
    fix: tuple = field(default=(), compare=False, repr=False)
    fix_safe: bool = field(default=False, compare=False)

    def to_text(self) -> str:
        mark = " [*]" if self.fixable else ""
        return f"{self.path}:{self.line}:{self.col}: {self.code}{mark} {self.message}"

    def to_dict(self) -> dict:
        return asdict(self)


class InputError(Exception):
    """A file that cannot be processed: carries the position for `path:line:col: error`."""

    def __init__(self, path: str, message: str, line: int = 1, col: int = 1, code: str = "MSC002"):
        super().__init__(message)
        self.diagnostic = Diagnostic(str(path), line, col, code, message, "error")
