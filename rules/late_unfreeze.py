"""A network's parameters made trainable again after its optimizer was built, in a program with
one backward pass (a backbone unfrozen after some epochs):

    for p in model.backbone.parameters():
        p.requires_grad = False
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for epoch in range(epochs):
        if epoch == 5:
            for p in model.backbone.parameters():
                p.requires_grad = True

torch's optimizer holds every parameter and skips those without a gradient; the converted one
holds the parameters trainable when it was built (`model.trainable_params()`: a MindSpore
optimizer's are fixed then, and a compiled step differentiates them whatever their flag), so the
unfrozen ones would never train, silently. Marked for manual work (the file stops at its top),
unless an optimizer is built again later in the file.
With several backward passes the toggles are a GAN's (each converted step differentiates its own
optimizer's parameters, the toggles kept in order: rules/training_loop.py), left alone. A
structural pass on torch code that only marks; `net.requires_grad_(True)` is marked by its
record (rules/transforms/models.py)."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.names import PathTransformer
from msmigrate.rules.tensor_aug_assign import loop_tensors

_OPTIMIZER_MADE = re.compile(r"\boptim\.[A-Z]\w*\(")
MESSAGE = ("requires_grad turning training back on after the optimizer was built: the converted optimizer "
           "holds only the parameters trainable when it was built (a MindSpore optimizer's are fixed then), "
           "so these would never train; build the optimizer after unfreezing (or a new one then), or convert "
           "by hand")


def _unfreezes(node, ancestors) -> bool:
    """`p.requires_grad = <anything but False>` with p a loop's tensor of a network
    (`for p in m.parameters()`, `for n, p in m.named_parameters()`)."""
    if not (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Assign)):
        return False
    assign = node.body[0]
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if not (isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and
            isinstance(target.value, cst.Name)):
        return False
    if isinstance(assign.value, cst.Name) and assign.value.value == "False":
        return False
    return any(target.value.value in loop_tensors(a.target, a.iter) for a in ancestors if isinstance(a, cst.For))


class LateUnfreezePass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ".requires_grad =" in source and source.count(".backward(") == 1 and \
            _OPTIMIZER_MADE.search(source) is not None

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        # the lines where optimizers are built
        self.made = [ctx.source.count("\n", 0, m.start()) + 1 for m in _OPTIMIZER_MADE.finditer(ctx.source)]
        self.targets = self.follow(ctx.module, _unfreezes)

    def leave_SimpleStatementLine(self, original, updated):
        if id(original) not in self.targets:
            return updated
        pos = self.ctx.positions.get(original)
        line = pos.start.line if pos is not None else 0
        if not any(m < line for m in self.made) or any(m > line for m in self.made):
            return updated   # before the optimizer is built, or one is built again after it
        marker = self.ctx.reporter.flag("manual", MESSAGE, pos.start.line, pos.start.column + 1)
        return updated.with_changes(leading_lines=[*updated.leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])
