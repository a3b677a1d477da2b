"""`v *= d` on a tensor that a loop takes from a network (`for k, v in ema.state_dict().items()`,
`for p in model.parameters()`): in torch an in-place operator writes the network's own tensor;
in MindSpore it binds `v` to a new tensor and the network keeps its values (an EMA of the weights
that never moves, silently). The statement becomes torch's in-place method (`v.mul_(d)`), which
the tables convert into a write of the tensor itself (ops.assign outside compiled code). Only
loop names that are visibly the tensors of a network or of its state dict are rewritten: a
number in a loop over a dict of metrics stays as it is. A structural pass on torch code."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer

_METHODS = {cst.AddAssign: "add_", cst.SubtractAssign: "sub_", cst.MultiplyAssign: "mul_", cst.DivideAssign: "div_"}
_TENSORS = frozenset({"parameters", "buffers", "values"})          # yield the tensors themselves
_NAMED = frozenset({"named_parameters", "named_buffers", "items"})   # yield (name, tensor)
_TABLES = frozenset({"state_dict"})


def _is_table(node) -> bool:
    """`m.state_dict()`: a network's table of tensors."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in _TABLES


def loop_tensors(target, iterable) -> list[str]:
    """The names `for TARGET in ITERABLE` binds to a network's tensors."""
    if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "zip" \
            and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == len(iterable.args):
        return [n for el, arg in zip(target.elements, iterable.args)
                for n in loop_tensors(el.value, arg.value)]
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Attribute)):
        return []
    method, owner = iterable.func.attr.value, iterable.func.value
    if method in ("values", "items") and not _is_table(owner):
        return []   # a dict of anything
    if method in _TENSORS and isinstance(target, cst.Name):
        return [target.value]
    if method in _NAMED and isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2 \
            and isinstance(target.elements[1].value, cst.Name):
        return [target.elements[1].value.value]
    return []


def inplace_method(node: cst.AugAssign) -> cst.Expr:
    """`t *= d` -> `t.mul_(d)` (an operator of _METHODS)."""
    method = _METHODS[type(node.operator)]
    return cst.Expr(cst.Call(func=cst.Attribute(value=node.target, attr=cst.Name(method)), args=[cst.Arg(node.value)]))


def _rewritten(node, ancestors) -> bool:
    """An operator assignment to a name an enclosing loop binds to a network's tensor."""
    if not (isinstance(node, cst.AugAssign) and type(node.operator) in _METHODS and isinstance(node.target, cst.Name)):
        return False
    return any(node.target.value in loop_tensors(a.target, a.iter) for a in ancestors if isinstance(a, cst.For))


class TensorAugAssignPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ("parameters()" in source or "state_dict()" in source or "buffers()" in source) and \
            any(op in source for op in ("+=", "-=", "*=", "/="))

    def __init__(self, ctx) -> None:
        super().__init__()
        self.targets = self.follow(ctx.module, _rewritten)   # only the way to the rewritten statements is rebuilt

    def leave_AugAssign(self, original, updated):
        if id(original) not in self.targets:
            return updated
        return inplace_method(updated)
