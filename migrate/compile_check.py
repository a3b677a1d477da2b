"""The converter checks its own output with the lint analysis: a step it compiled with `@ms.jit`
whose code a static graph would compute differently (a `random` draw or a global write frozen at
compile time, MSG2xx) or not compile at all (MSG1xx) is left in PyNative instead, with a marker.
PyNative runs the Python of every call, as torch does; the marker says what to fix to compile it.
Network calls compiled outside the steps (rules.COMPILING_HELPER) run uncompiled then too."""
from __future__ import annotations

import re

from msmigrate.diagnostics import Diagnostic

UNCOMPILED_CODE = "MSC109"
# graph-mode bands whose errors mean "fails to compile" or "computes something else"; Python I/O
# (MSG204: a print runs at compile time only) changes what is shown, not what is computed
_UNSOUND = ("MSG1", "MSG2")
_SHOWN_ONLY = ("MSG204",)
# about code outside any graph that leaving the step uncompiled does not fix (MSG209: set_data
# after a step is lost in PyNative too)
_NOT_THE_STEP = ("MSG209",)
# (a file with CRLF line ends keeps them: `$` alone does not match before "\r\n")
_JIT_DECORATOR = re.compile(r"^([ \t]*)@(?:ms|mindspore)\.jit[ \t]*(?:#[^\r\n]*)?\r?$")


def uncompile_unsound_steps(code: str, source: str, path: str) -> tuple[str, list[Diagnostic]]:
    """`code` with the `@ms.jit` decorators the conversion added replaced by a marker when the
    lint analysis finds unsound graph code in the file, and the diagnostics that say so."""
    from msmigrate.rules import COMPILING_HELPER

    lines = code.splitlines(keepends=True)
    added = [i for i, ln in enumerate(lines) if _JIT_DECORATOR.match(ln) and ln.strip() not in source]
    compiled_calls = f"{COMPILING_HELPER}(" in code and COMPILING_HELPER not in source
    if not added and not compiled_calls:
        return code, []
    from msmigrate.lint import lint_source
    from msmigrate.lint.config import LintConfig
    from msmigrate.lint.runner import fix_until_stable

    config = LintConfig(select=_UNSOUND, ignore=_SHOWN_ONLY + _NOT_THE_STEP)
    try:
        findings = lint_source(code, path, config)
    except SyntaxError:
        return code, []
    if any(f.fixable and f.fix_safe for f in findings):
        # what the linter rewrites safely (a name first bound in a loop bound before it) is
        # written so, as a MindSpore user would; only what is left keeps the step uncompiled
        fixed = fix_until_stable(code, findings, path, config)
        if not fixed.broken:
            code, findings = fixed.text, fixed.diagnostics
            lines = code.splitlines(keepends=True)
            added = [i for i, ln in enumerate(lines) if _JIT_DECORATOR.match(ln) and ln.strip() not in source]
    findings = [f for f in findings if f.severity == "error"]
    if not findings:
        return code, []
    regions = {i: _step_region(lines, i) for i in added}
    unplaced = [f for f in findings if not any(a <= f.line - 1 <= b for a, b in regions.values())]
    if unplaced and compiled_calls:   # the networks called outside the steps run uncompiled too
        return uncompile_unsound_steps("".join(_uncompiled_calls(lines, COMPILING_HELPER)), source, path)
    diagnostics = []
    aliases: set[str] = set()   # names for mindspore of the value_and_grad calls rewritten
    for i in added:
        a, b = regions[i]
        # a finding outside every generated step (the model, a helper) may be reached from any
        own = unplaced or [f for f in findings if a <= f.line - 1 <= b]
        if not own:
            continue
        first = own[0]
        why = (f"{first.code} at line {first.line} of the converted code: {first.message}"
               + (f" (and {len(own) - 1} more)" if len(own) > 1 else ""))
        indent = _JIT_DECORATOR.match(lines[i]).group(1)
        name = _decorated_name(lines, i)
        newline = "\r\n" if lines[i].endswith("\r\n") else "\n"
        lines[i] = (f"{indent}# msmigrate: {UNCOMPILED_CODE} left uncompiled (PyNative) because a static graph would "
                    f"freeze or reject this code: {why}{newline}")
        aliases |= _host_aux_in(lines, a, b)
        line = _source_line(source, code.splitlines()[first.line - 1])
        message = (f"{name} left uncompiled (PyNative, no @ms.jit): {why}; it trains like torch but "
                   f"slower: fix that code, then add @ms.jit back")
        diagnostics.append(Diagnostic(path, line, 1, UNCOMPILED_CODE, " ".join(message.split()),
                                      "warning", False, "review"))
    text = "".join(lines)
    if aliases and f"def {_HOST_AUX}(" not in text:
        text = _with_definition(text, _host_aux_definition(sorted(aliases)[0]))
    return text, diagnostics


_HOST_AUX = "msmigrate_value_and_grad_host_aux"
_VALUE_AND_GRAD_AUX = re.compile(r"\b(ms|mindspore)\.value_and_grad\((.*), *has_aux *= *True *\)")


def _host_aux_in(lines: list[str], a: int, b: int) -> set[str]:
    """The step's `grad_fn = ms.value_and_grad(forward_fn, None, params, has_aux=True)` (lines a..b,
    before the step) through msmigrate_value_and_grad_host_aux: uncompiled, PyNative's has_aux
    rejects a Python number among the values after the loss (rules/generated/steps.py). The
    names for mindspore the rewritten calls used."""
    aliases = set()

    def host_aux(m) -> str:
        aliases.add(m.group(1))
        return f"{_HOST_AUX}({m.group(2)})"
    for j in range(a, b + 1):
        lines[j] = _VALUE_AND_GRAD_AUX.sub(host_aux, lines[j])
    return aliases


def _host_aux_definition(alias: str) -> str:
    """rules/generated/steps.py's helper, as text (it imports MindSpore), with the file's name
    for mindspore."""
    from pathlib import Path

    from msmigrate.rules import generated
    text = (Path(generated.__file__).parent / "steps.py").read_text()
    definition = text[text.index(f"def {_HOST_AUX}("):].rstrip() + "\n"
    return definition.replace("ms.value_and_grad(", f"{alias}.value_and_grad(")


def _with_definition(text: str, definition: str) -> str:
    """`definition` placed after the file's leading imports (and its generated definitions'
    place: before the first other top-level statement)."""
    lines = text.splitlines(keepends=True)
    at = 0
    for i, ln in enumerate(lines):
        if re.match(r"(import|from)\s", ln) or (not ln.strip() and at == i):
            at = i + 1
        elif ln.strip() and not ln.startswith(("#", " ", "\t")):
            break
    newline = "\r\n" if lines and lines[0].endswith("\r\n") else "\n"
    head = "".join(lines[:at]).rstrip("\r\n")
    return (head + newline * 3 if head else "") + definition.replace("\n", newline) + newline * 2 \
        + "".join(lines[at:]).lstrip("\r\n")


def _uncompiled_calls(lines: list[str], helper: str) -> list[str]:
    """`helper(net, x)` -> `net(x)` on every line, and the helper's definition removed."""
    call = re.compile(rf"\b{re.escape(helper)}\(([\w.]+)(?:, *)?")
    out, skipping = [], False
    for ln in lines:
        if ln.startswith(f"def {helper}("):
            skipping = True
            continue
        if skipping and (not ln.strip() or ln[0] in " \t"):
            continue
        skipping = False
        out.append(call.sub(lambda m: m.group(1) + "(", ln))
    return out


def _step_region(lines: list[str], at: int) -> tuple[int, int]:
    """Line indices (0-based, inclusive) of the generated definitions of the step decorated at
    `at`: from its forward_fn to the end of the compiled function."""
    indent = len(lines[at]) - len(lines[at].lstrip())
    start = at
    for j in range(at - 1, -1, -1):
        m = re.match(r"([ \t]*)def forward_fn\w*\(", lines[j])
        if m and len(m.group(1)) == indent:
            start = j
            break
    end = at + 1
    while end + 1 < len(lines) and (not lines[end + 1].strip()
                                   or len(lines[end + 1]) - len(lines[end + 1].lstrip()) > indent):
        end += 1
    return start, end


def _decorated_name(lines: list[str], at: int) -> str:
    for ln in lines[at + 1:]:
        m = re.match(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)", ln)
        if m:
            return m.group(1)
    return "the step"


def _source_line(source: str, text: str) -> int:
    """The line of the input that reads `text` (the finding's code, unchanged by the
    conversion in most cases) or makes the same call, else 1."""
    want = text.strip()
    lines = source.splitlines()
    for n, ln in enumerate(lines, 1):
        if want and ln.strip() == want:
            return n
    # the call the finding names, with converted arguments: `losses.insert(0, ops.mse_loss(...`
    head = want.split("(", 1)[0]
    if len(head) >= 6 and "(" in want:
        for n, ln in enumerate(lines, 1):
            if ln.strip().startswith(head + "("):
                return n
    return 1
