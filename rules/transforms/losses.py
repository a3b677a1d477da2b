"""Loss objects whose calls need a change: class-index targets must be int32 in MindSpore."""
from __future__ import annotations

import libcst as cst


def int32_target(site):
    """`criterion(out, y)` -> `criterion(out, y.astype(mindspore.int32))`: MindSpore's
    CrossEntropyLoss/NLLLoss raise TypeError on int64 class indices, torch's default dtype.
    torch's keywords (input=, target=) become positional: the Cells call them logits, labels."""
    args = list(site.node.args)
    if any(a.star for a in args):
        return site.node
    by_keyword = {a.keyword.value: a for a in args if a.keyword is not None}
    positional = [a for a in args if a.keyword is None]
    ordered = positional + [by_keyword.pop(k) for k in ("input", "target")[len(positional):] if k in by_keyword]
    if len(ordered) < 2 or by_keyword:
        return site.node
    y = ordered[1].value
    if not _is_cast(y):
        if not isinstance(y, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            y = y.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        y = site.expr("{y}.astype({i32})", y=y, i32="@mindspore.int32")
    ordered = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) for a in ordered]
    ordered[1] = ordered[1].with_changes(value=y)
    ordered[-1] = ordered[-1].with_changes(comma=args[-1].comma)
    return site.node.with_changes(args=ordered)


def _is_cast(expr) -> bool:
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "astype")


def reduction(value, site):
    """reduction='elementwise_mean' (torch's name for 'mean' before 1.0, still accepted) -> 'mean';
    MindSpore's losses reject it."""
    if isinstance(value, cst.SimpleString) and value.evaluated_value == "elementwise_mean":
        return value.with_changes(value=value.value.replace("elementwise_mean", "mean"))
    return value
