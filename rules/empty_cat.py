"""`torch.cat` onto an empty placeholder: `acc = torch.FloatTensor()` (or `torch.Tensor()`,
`torch.tensor([])`, `torch.empty(0)`), then `acc = torch.cat((acc, t), 0)` in a loop. torch skips
1-D empty tensors in a concatenation (a legacy rule it keeps), whatever the other tensors' rank;
MindSpore's concat requires equal ranks ("For primitive[Concat], element rank must be same").
Where a concatenated tuple/list names a variable the file binds to such a placeholder, the
sequence becomes `[t for t in (acc, x) if t.shape != (0,)]`: torch's rule spelled out, the same
result in both frameworks (and in compiled code, where shapes are constants). A structural pass
on torch names, before the table pass converts `torch.cat`."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import Bindings, PathTransformer, dotted, resolve

CATS = {"torch.cat", "torch.concat", "torch.concatenate"}
_LEGACY_TYPES = {"Tensor", "FloatTensor", "DoubleTensor", "HalfTensor", "LongTensor", "IntTensor", "ShortTensor",
                 "ByteTensor", "CharTensor", "BoolTensor"}


class EmptyCatPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "cat" in source and ("Tensor()" in source or "[])" in source or "(0)" in source)

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        bindings = Bindings(self._is_placeholder)
        ctx.module.visit(bindings)
        self.placeholders = bindings.chosen   # bound to one at least once (then grown by cat)
        self.targets = self.follow(ctx.module, lambda node, ancestors: self.target(node))

    def _is_placeholder(self, value) -> bool:
        if not isinstance(value, cst.Call):
            return False
        q = resolve(value.func, self.imports) or ""
        head, _, last = q.rpartition(".")
        if head in ("torch", "torch.cuda") and last in _LEGACY_TYPES:
            return not value.args
        args = [a for a in value.args if a.keyword is None]
        if q == "torch.tensor" and len(args) == 1:
            v = args[0].value
            return isinstance(v, (cst.List, cst.Tuple)) and not v.elements
        if q in ("torch.empty", "torch.zeros", "torch.ones") and len(args) == 1:
            v = args[0].value
            return isinstance(v, cst.Integer) and v.value == "0"
        return False

    def target(self, node) -> bool:
        if not (isinstance(node, cst.Call) and node.args and node.args[0].keyword is None
                and resolve(node.func, self.imports) in CATS):
            return False
        seq = node.args[0].value
        return isinstance(seq, (cst.Tuple, cst.List)) and any(
            dotted(e.value) in self.placeholders for e in seq.elements if not isinstance(e, cst.StarredElement))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) not in self.targets:
            return updated
        seq = updated.args[0].value
        items = cst.Tuple([e.with_changes(comma=cst.MaybeSentinel.DEFAULT) for e in seq.elements])
        used = {n.value for n in _names(seq)}
        var = next(v for v in ("t", "t_", "part", "part_") if v not in used)
        filtered = cst.parse_expression(f"[{var} for {var} in X if {var}.shape != (0,)]")
        filtered = filtered.with_changes(for_in=filtered.for_in.with_changes(iter=items))
        return updated.with_changes(args=[updated.args[0].with_changes(value=filtered), *updated.args[1:]])


def _names(node) -> list:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Name(self, n) -> None:
            found.append(n)

    node.visit(_V())
    return found
