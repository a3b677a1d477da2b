"""Report formats: text (ruff-style), json, sarif 2.1.0, github (workflow commands)."""
from __future__ import annotations

import json
from collections import Counter

from msmigrate import __version__
from msmigrate.diagnostics import Diagnostic

SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _public(d: Diagnostic) -> dict:
    out = {"path": d.path, "line": d.line, "col": d.col, "end_line": d.end_line, "end_col": d.end_col,
           "code": d.code, "message": d.message, "severity": d.severity, "fixable": d.fixable}
    if d.fixable:
        out["fix"] = {"applicability": "safe" if d.fix_safe else "unsafe",
                      "edits": [{"start": s, "end": e, "content": c} for s, e, c in d.fix]}
    return out


def render(fmt: str, diags: list[Diagnostic], errors: list[tuple[str, str]], rules) -> str:
    if fmt == "json":
        return json.dumps({"version": __version__, "diagnostics": [_public(d) for d in diags],
                           "errors": [{"path": p, "message": m} for p, m in errors]}, indent=2)
    if fmt == "sarif":
        return json.dumps(_sarif(diags, errors, rules), indent=2)
    if fmt == "github":
        lines = []
        for d in diags:
            level = {"error": "error", "warning": "warning"}.get(d.severity, "notice")
            msg = d.message.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
            lines.append(f"::{level} title=msmigrate ({d.code}),file={d.path},line={d.line},col={d.col},"
                         f"endLine={d.end_line},endColumn={d.end_col}::{d.code} {msg}")
        for p, m in errors:
            lines.append(f"::error title=msmigrate,file={p}::{m}")
        return "\n".join(lines)
    return "\n".join([d.to_text() for d in diags] + [f"{p}:{m}" for p, m in errors])


def _sarif(diags, errors, rules) -> dict:
    used = sorted({d.code for d in diags})
    by_code = {r.code: r for r in rules}
    sarif_rules = []
    for code in used:
        r = by_code.get(code)
        if r is None:
            continue
        sections = r.doc_sections()
        sarif_rules.append({
            "id": code, "name": r.name,
            "shortDescription": {"text": sections.get("summary", r.name)},
            "fullDescription": {"text": sections.get("Why is this bad?", "")},
            "help": {"text": r.documentation()},
            "defaultConfiguration": {"level": SARIF_LEVEL[r.severity]},
        })
    index = {c: i for i, c in enumerate(used)}
    results = [{
        "ruleId": d.code, "ruleIndex": index[d.code], "level": SARIF_LEVEL.get(d.severity, "warning"),
        "message": {"text": d.message},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": d.path.replace("\\", "/")},
            "region": {"startLine": d.line, "startColumn": d.col,
                       "endLine": d.end_line or d.line, "endColumn": d.end_col or d.col}}}],
    } for d in diags]
    notifications = [{"level": "error", "message": {"text": m},
                      "locations": [{"physicalLocation": {"artifactLocation": {"uri": p}}}]} for p, m in errors]
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "msmigrate-lint", "version": __version__,
                                      "informationUri": "https://github.com/msmigrate/msmigrate",
                                      "rules": sarif_rules}},
                  "results": results,
                  "invocations": [{"executionSuccessful": not errors,
                                   "toolExecutionNotifications": notifications}]}],
    }


def statistics(diags: list[Diagnostic], rules) -> str:
    by_code = {r.code: r for r in rules}
    counts = Counter(d.code for d in diags)
    fixable = Counter(d.code for d in diags if d.fixable)
    lines = []
    for code, n in counts.most_common():
        r = by_code.get(code)
        mark = "[*]" if fixable[code] else "   "
        lines.append(f"{n:5d}\t{code}\t{mark} {r.name if r else ''}")
    return "\n".join(lines)
