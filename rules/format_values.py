"""Numbers formatted with a format spec: `'{:.6f}'.format(loss)`, `f"{acc:+.2f}"`. torch formats a
one-element Tensor like the number it holds (Tensor.__format__ calls .item()); MindSpore's
Tensor.__format__ takes no spec ("unsupported format string passed to Tensor.__format__"), and which
logged values are Tensors after conversion (a loss from the compiled step, a sum of correct
predictions) is not known here. Where the spec is a standard numeric one, the value is read as the
number first: float(x) for e/f/g/% (the same text for Python ints, floats, NumPy scalars and
one-element Tensors), int(x) for d/x/X/o/b. Other specs (`{:>8}`, datetime's `%H:%M`), conversions
(`!r`) and fields with attribute or index parts are left alone. A structural pass on torch names
(before the table pass)."""
from __future__ import annotations

import re
import string

import libcst as cst

from msmigrate.names import FocusedTransformer, dotted
from msmigrate.sourcemap import Focus

# [[fill]align][sign][z][#][0][width][grouping][.precision]type
_SPEC = re.compile(r"^(?:.?[<>=^])?[+\- ]?z?#?0?\d*[,_]?(?:\.\d+)?([eEfFgG%dxXob])$")
_FLOAT, _INT = set("eEfFgG%"), set("dxXob")
# already a Python number: nothing to read
_NUMBER_CALLS = {"float", "int", "len", "round", "bool"}


def spec_kind(spec: str) -> str | None:
    """'float' / 'int' for a standard numeric format spec, None otherwise."""
    m = _SPEC.match(spec)
    if not m:
        return None
    return "float" if m.group(1) in _FLOAT else "int"


def _is_number(node: cst.BaseExpression) -> bool:
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.UnaryOperation):
        return _is_number(node.expression)
    if isinstance(node, cst.Subscript) and isinstance(node.value, cst.ListComp):   # [float(v) for v in ...][0]
        return _is_number(node.value.elt)
    if isinstance(node, cst.Call):
        name = dotted(node.func)
        if name in _NUMBER_CALLS:
            return True
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("item", "get_scale") and not node.args:
            return True
    return False


def _read_as(kind: str, node: cst.BaseExpression) -> cst.BaseExpression:
    value = node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node
    return cst.Call(cst.Name(kind), [cst.Arg(value)])


class FormatValuesPass(FocusedTransformer):
    PATTERN = r"\.format\s*\(|\b(?:[fF]|[rR][fF]|[fF][rR])['\"]"

    @staticmethod
    def applies(source: str) -> bool:
        return re.search(FormatValuesPass.PATTERN, source) is not None

    def __init__(self, ctx) -> None:
        smap = getattr(ctx, "source_map", None)
        super().__init__(Focus(ctx.source, smap, (), (), self.PATTERN).wants if smap is not None
                         else (lambda stmt: True))

    # f"{x:.4f}"
    def leave_FormattedStringExpression(self, original, updated):
        if updated.conversion is not None or not updated.format_spec:
            return updated
        if not all(isinstance(p, cst.FormattedStringText) for p in updated.format_spec):
            return updated
        kind = spec_kind("".join(p.value for p in updated.format_spec))
        if kind is None or _is_number(updated.expression):
            return updated
        self.changes += 1
        return updated.with_changes(expression=_read_as(kind, updated.expression))

    # "{:.4f} {name:d}".format(x, name=n)
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "format"
                and isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString))):
            return updated
        if any(a.star for a in updated.args):
            return updated
        text = func.value.evaluated_value
        if not isinstance(text, str):
            return updated
        try:
            fields = [(f, s, c) for _, f, s, c in string.Formatter().parse(text) if f is not None]
        except ValueError:
            return updated
        positional = [i for i, a in enumerate(updated.args) if a.keyword is None]
        keywords = {a.keyword.value: i for i, a in enumerate(updated.args) if a.keyword is not None}
        kinds: dict[int | str, set] = {}
        auto = 0
        for field, spec, conversion in fields:
            if field == "":
                key: int | str = auto
                auto += 1
            elif field.isdigit():
                key = int(field)
            elif field.isidentifier():
                key = field
            else:   # attribute / index parts: the formatted value is not the argument
                key = re.split(r"[.\[]", field, maxsplit=1)[0]
                key = int(key) if key.isdigit() else key
                kinds.setdefault(key, set()).add(None)
                continue
            kind = None if conversion or "{" in (spec or "") else spec_kind(spec or "")
            kinds.setdefault(key, set()).add(kind)
        new_args = list(updated.args)
        for key, seen in kinds.items():
            if len(seen) != 1 or None in seen:
                continue   # not formatted, or formatted in several ways
            kind = next(iter(seen))
            index = (positional[key] if isinstance(key, int) and key < len(positional)
                     else keywords.get(key) if isinstance(key, str) else None)
            if index is None or _is_number(new_args[index].value):
                continue
            new_args[index] = new_args[index].with_changes(value=_read_as(kind, new_args[index].value))
            self.changes += 1
        return updated.with_changes(args=new_args)
