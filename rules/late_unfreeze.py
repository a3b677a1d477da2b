"""A network's parameters made trainable again after its optimizer was built, in a program with
one backward pass (a backbone unfrozen after some epochs), or frozen after it was built:

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
unfrozen ones would never train, silently; frozen ones would keep training (the step
differentiates every parameter of the optimizer). Marked for manual work (the file stops at its
top), unless an optimizer is built again later in the file. A toggle in a module-level function
(`set_requires_grad(model, flag)`) runs where the function is called.
With several backward passes the toggles are a GAN's (each converted step differentiates its own
optimizer's parameters, the toggles kept in order: rules/training_loop.py), left alone. A
structural pass on torch code that only marks; `net.requires_grad_(True)` is marked by its
record (rules/transforms/models.py)."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.names import PathTransformer, walk
from msmigrate.rules.tensor_aug_assign import loop_tensors

_OPTIMIZER_MADE = re.compile(r"\boptim\.[A-Z]\w*\(")
MESSAGE = ("requires_grad turning training back on after the optimizer was built: the converted optimizer "
           "holds only the parameters trainable when it was built (a MindSpore optimizer's are fixed then), "
           "so these would never train; build the optimizer after unfreezing (or a new one then), or convert "
           "by hand")
FREEZE_MESSAGE = ("requires_grad = False after the optimizer was built: torch's optimizer skips these "
                  "parameters (they get no gradient), the converted step differentiates and updates every "
                  "parameter its optimizer was built with, whatever their flag, so they would keep training; "
                  "freeze them before building the optimizer (model.trainable_params() then leaves them out), "
                  "or build a new one after freezing")

EITHER_MESSAGE = ("requires_grad set after the optimizer was built: the converted step differentiates and updates "
                  "exactly the parameters trainable when its optimizer was built, whatever their flag later "
                  "(frozen ones would keep training, unfrozen ones never train); set the flags before building "
                  "the optimizer (or build a new one after), or convert by hand")


def _toggles(node, ancestors) -> bool:
    """`p.requires_grad = ...` with p a loop's tensor of a network (`for p in m.parameters()`,
    `for n, p in m.named_parameters()`)."""
    if not (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1 and isinstance(node.body[0], cst.Assign)):
        return False
    assign = node.body[0]
    target = assign.targets[0].target if len(assign.targets) == 1 else None
    if not (isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and
            isinstance(target.value, cst.Name)):
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
        self.targets = self.follow(ctx.module, _toggles)
        self.function_of = {}   # id of a toggling statement -> the module-level function holding it
        for fn in ctx.module.body:
            if isinstance(fn, cst.FunctionDef):
                for n in walk(fn):
                    if id(n) in self.targets:
                        self.function_of[id(n)] = fn.name.value

    def _run_at(self, original, line: int) -> list[int]:
        """The lines where the statement runs: its own, or those calling the function holding it
        (`set_requires_grad(model[0], False)` after the optimizer is built)."""
        name = self.function_of.get(id(original))
        if name is None:
            return [line]
        return [self.ctx.source.count("\n", 0, m.start()) + 1
                for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\(", self.ctx.source)
                if not self.ctx.source[max(0, m.start() - 4):m.start()].endswith("def ")]

    def leave_SimpleStatementLine(self, original, updated):
        if id(original) not in self.targets:
            return updated
        pos = self.ctx.positions.get(original)
        line = pos.start.line if pos is not None else 0
        if not any(any(m < at for m in self.made) and not any(m > at for m in self.made)
                   for at in self._run_at(original, line)):
            return updated   # before the optimizer is built, or one is built again after it
        value = original.body[0].value
        literal = value.value if isinstance(value, cst.Name) and value.value in ("True", "False") else None
        message = {"False": FREEZE_MESSAGE, "True": MESSAGE}.get(literal, EITHER_MESSAGE)
        marker = self.ctx.reporter.flag("manual", message, pos.start.line, pos.start.column + 1)
        return updated.with_changes(leading_lines=[*updated.leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])
