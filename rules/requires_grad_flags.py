"""`x.requires_grad = True` as a statement, on a tensor the file makes (`x = torch.randn(1, 6)`,
`img = base.clone().detach()`; not a loop's `p` over a network's parameters) -> `x.requires_grad_()`,
its method form, which the passes after this one know: x becomes a leaf the program trains by hand
or with an optimizer (a Parameter: rules/bare_tensors.py, rules/rebuilt_leaves.py), or an input
whose gradient it reads (rules/tape_grad.py). Left as an attribute write, MindSpore's optimizer was
handed a plain Tensor (TypeError) and `x.grad` read nothing. A structural pass on torch names."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.names import PathTransformer
from msmigrate.rules.bare_tensors import TrainableTensors

_FLAG = re.compile(r"\.requires_grad\s*=\s*True\b")


def _flagged(stmt) -> str | None:
    """`x.requires_grad = True` (a statement of its own): x."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not (isinstance(assign.value, cst.Name) and assign.value.value == "True"):
        return None
    target = assign.targets[0].target
    if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and isinstance(target.value, cst.Name):
        return target.value.value
    return None


class RequiresGradFlagsPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return bool(_FLAG.search(source))

    def __init__(self, ctx) -> None:
        super().__init__()
        scan = TrainableTensors(dict(ctx.names.imports))
        ctx.module.visit(scan)
        made = scan.made
        self.targets = self.follow(ctx.module, lambda node, ancestors: _flagged(node) in made)

    def leave_SimpleStatementLine(self, original, updated):
        if id(original) not in self.targets:
            return updated
        name = _flagged(original)
        return updated.with_changes(body=[cst.Expr(cst.parse_expression(f"{name}.requires_grad_()"))])
