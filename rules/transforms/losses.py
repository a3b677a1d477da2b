"""Loss objects whose calls need a change: class-index targets must be int32 in MindSpore."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible, literal_value


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
    if not _is_cast(y) and not _float_target(site, len(positional) > 1):
        if not isinstance(y, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            y = y.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        y = site.expr("{y}.astype({i32})", y=y, i32="@mindspore.int32")
    ordered = [a.with_changes(keyword=None, equal=cst.MaybeSentinel.DEFAULT) for a in ordered]
    ordered[1] = ordered[1].with_changes(value=y)
    ordered[-1] = ordered[-1].with_changes(comma=args[-1].comma)
    return site.node.with_changes(args=ordered)


def _float_target(site, positional: bool) -> bool:
    """The torch target is visibly a float tensor: class probabilities (soft labels, mixup),
    which MindSpore's CrossEntropyLoss takes as float too; no class-index cast."""
    from msmigrate.rules.transforms.dtypes import kind
    call = site.rw.original_call
    if call is None:
        return False
    given = [a for a in call.args if a.keyword is None][1:2] if positional else \
        [a for a in call.args if a.keyword is not None and a.keyword.value == "target"]
    return bool(given) and kind(site.rw, given[0].value) in ("float", "float64")


def _is_cast(expr) -> bool:
    return (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == "astype")


_LEGACY = ("size_average", "reduce")


def _legacy_reduction(site):
    """What torch makes of `size_average=` / `reduce=` (its _Reduction.legacy_get_string): None
    when neither is given (or both are None), "?" when a value is not a literal bool/None,
    else 'none' / 'mean' / 'sum'. Given, they override `reduction=`."""
    values = {}
    for name in _LEGACY:
        arg = site.bound.get(name)
        if arg is None:
            continue
        try:
            values[name] = literal_value(arg.value)
        except (ValueError, SyntaxError):
            return "?"
        if values[name] not in (True, False, None, 0, 1):
            return "?"
    if all(values.get(name) is None for name in _LEGACY):
        return None
    size_average = True if values.get("size_average") is None else bool(values["size_average"])
    reduce = True if values.get("reduce") is None else bool(values["reduce"])
    return "none" if not reduce else "mean" if size_average else "sum"


def legacy_reduction(value, site):
    """torch's pre-1.0 `size_average=False` / `reduce=False` -> the `reduction=` they stand for
    (MindSpore has only `reduction`): the first legacy argument of the call carries it, the
    other (and any `reduction=`, which torch ignores then) are dropped."""
    legacy = _legacy_reduction(site)
    if legacy is None:
        return None                       # size_average=None / reduce=None: torch's defaults
    if legacy == "?":
        site.flag("MSC105", f"{site.qualname}: size_average/reduce given as a value known only at run "
                            f"time; write reduction='mean'/'sum'/'none' (argument dropped)")
        return None
    first = next(name for name in site.bound if name in _LEGACY)
    if site.bound[first].value is not value:
        return None
    return {"reduction": cst.SimpleString(repr(legacy))}


def reduction(value, site):
    """reduction='elementwise_mean' (torch's name for 'mean' before 1.0, still accepted) -> 'mean';
    MindSpore's losses reject it. Dropped where legacy size_average/reduce decide it."""
    if _legacy_reduction(site) not in (None, "?"):
        return None
    if isinstance(value, cst.SimpleString) and value.evaluated_value == "elementwise_mean":
        return value.with_changes(value=value.value.replace("elementwise_mean", "mean"))
    return value


_REDUCTIONS = ("none", "mean", "sum")   # at::Reduction: 0, 1, 2
_ENUM = {"none": 0, "mean": 1, "elementwise_mean": 1, "sum": 2}   # torch.nn._reduction.get_enum


def int_reduction(value, site):
    """torch.kl_div, torch.ctc_loss... (ATen's functions under torch.*) take the reduction as
    at::Reduction's int, 0 'none', 1 'mean', 2 'sum': MindSpore's string. An expression is looked
    up at run time; `_Reduction.get_enum(r)` (reduction_enum's `(...).index(r)`) is r."""
    try:
        literal = literal_value(value)
    except (ValueError, SyntaxError):
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value == "index" and len(value.args) == 1 and not value.args[0].keyword:
            try:
                if literal_value(value.func.value) == _REDUCTIONS:
                    return value.args[0].value
            except (ValueError, SyntaxError):
                pass
        return site.expr("('none', 'mean', 'sum')[{v}]", v=value)
    if isinstance(literal, int) and not isinstance(literal, bool) and 0 <= literal < len(_REDUCTIONS):
        return cst.SimpleString(repr(_REDUCTIONS[literal]))
    return value


def reduction_enum(site):
    """torch.nn._reduction.get_enum(reduction) (torch's functional.py: `from torch.nn import
    _reduction as _Reduction`, then torch.kl_div(..., _Reduction.get_enum(reduction))):
    at::Reduction's int for the string, `('none', 'mean', 'sum').index(r)` where it is not a
    literal."""
    if not site.is_call or site.unbound or not site.has("reduction"):
        raise Unconvertible("used without its argument: convert this use by hand")
    arg = site.arg("reduction")
    try:
        literal = literal_value(arg)
    except (ValueError, SyntaxError):
        return site.expr("('none', 'mean', 'sum').index({r})", r=arg)
    if literal not in _ENUM:
        raise Unconvertible(f"{literal!r} is not a valid reduction")
    return cst.Integer(str(_ENUM[literal]))


def distance_function(value, site):
    """A lambda given as TripletMarginWithDistanceLoss's distance_function becomes a def just
    before the statement: MindSpore's graph mode parses a function it calls from its source line
    and fails on a lambda written inside a call (as rules/transforms/function_transforms.py)."""
    if isinstance(value, cst.Lambda):
        from msmigrate.rules.transforms.function_transforms import _named
        return _named(site, value)
    return value


def weighted_bce(site):
    """binary_cross_entropy / BCELoss given a weight: rules/generated/functions.py's versions,
    which broadcast it to the input's shape (MindSpore 2.10's kernel weighs the rows of a (N, C)
    input past the first 0 given a (C,) weight, silently); without one, MindSpore's own."""
    from msmigrate.rules.transforms.torch_functions import call_generated, generated_cell
    weight = site.bound.get("weight") if site.is_call else None
    if weight is None or (isinstance(weight.value, cst.Name) and weight.value.value == "None"):
        return site.call(site.record.target) if site.is_call else site.ref(site.record.target)
    if site.record.torch == "torch.nn.BCELoss":
        return generated_cell(site)
    return call_generated(site, "msmigrate_binary_cross_entropy")


# -inf written by the file (`float("-inf")`, `-math.inf`, ...): a masked class's logit
_NEGATIVE_INFINITY = re.compile(r"""-\s*(?:float\(\s*['"]inf(?:inity)?['"]\s*\)|\b(?:math|np|numpy|torch)\.inf\b)"""
                                r"""|float\(\s*['"]-inf(?:inity)?['"]\s*\)""")


def masked_classes(site):
    """nn.CrossEntropyLoss / F.cross_entropy / nn.NLLLoss / F.nll_loss in a file that writes -inf
    (a masked class: a contrastive loss's diagonal, invalid actions): the generated ones picking
    the target's log-probability (rules/generated/functions.py); MindSpore's add a label-smoothing
    term times 0 whatever the smoothing, and 0 * inf is nan. Elsewhere MindSpore's own."""
    from msmigrate.rules.transforms.torch_functions import call_generated, generated_cell
    if site.is_call and _NEGATIVE_INFINITY.search(site.rw.ctx.source):
        name = site.record.torch.rsplit(".", 1)[1]
        return generated_cell(site) if name[0].isupper() else call_generated(site, "msmigrate_" + name)
    return site.call(site.record.target) if site.is_call else site.ref(site.record.target)
