"""A backward pass under a condition, its loss computed before the condition (one function for
training and evaluation, the transfer-learning `phase` loop):

    for inputs, labels in loader:
        outputs = model(inputs)
        loss = criterion(outputs, labels)
        if phase == "train":            # or `if optimizer is not None:`, `if train:`
            loss.backward()
            optimizer.step()
        running_loss += loss.item()

MindSpore differentiates only what its train step computes, so the statements the loss depends
on go into the condition's branch, where the training-loop pass makes them the step, and a copy
into an `else` branch, the evaluation path, as torch ran them:

        if phase == "train":
            outputs = model(inputs)
            loss = criterion(outputs, labels)
            loss.backward()
            optimizer.step()
        else:
            outputs = model(inputs)
            loss = criterion(outputs, labels)

Only inside a loop or a function (not among a module's statements, where the slice would reach
the network's construction), only when the condition reads nothing those statements write (it is then
evaluated before them, with the same value). A structural pass on torch code, before the others."""
from __future__ import annotations

import libcst as cst

from msmigrate.dataflow import backward_slice, reads, writes
from msmigrate.names import FocusedTransformer
from msmigrate.rules.training_loop import _method_stmt


def _loss_of_backward(stmt) -> str | None:
    """`loss` of `loss.backward()` / `scaler.scale(loss).backward()` as a statement."""
    call = _method_stmt(stmt, "backward")
    if call is None:
        return None
    receiver = call.func.value
    if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and \
            receiver.func.attr.value == "scale" and len(receiver.args) == 1:
        receiver = receiver.args[0].value
    return receiver.value if isinstance(receiver, cst.Name) else None


def _conditional_loss(stmt) -> str | None:
    """The loss a statement `if ...:` backpropagates in its first branch, computed before it."""
    if not isinstance(stmt, cst.If) or not isinstance(stmt.body, cst.IndentedBlock):
        return None
    written: set[str] = set()
    for inner in stmt.body.body:
        loss = _loss_of_backward(inner)
        if loss is not None:
            return None if loss in written else loss
        written |= writes(inner)
    return None


class ConditionalStepsPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ".backward(" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.loops = 0   # loops and functions around the visited node

    def visit_For(self, node) -> None:
        self.loops += 1

    def leave_For(self, original, updated):
        self.loops -= 1
        return updated

    def visit_While(self, node) -> None:
        self.loops += 1

    def leave_While(self, original, updated):
        self.loops -= 1
        return updated

    def visit_FunctionDef(self, node) -> None:
        self.loops += 1   # a function called once per batch: its body is a loop's

    def leave_FunctionDef(self, original, updated):
        self.loops -= 1
        return updated

    def leave_IndentedBlock(self, original, updated):
        if not self.loops:
            return updated
        body = list(updated.body)
        i = len(body) - 1
        while i > 0:   # from the end: a rewrite only shortens what comes before i
            body = self._into_branches(body, i)
            i = min(i, len(body)) - 1
        return updated.with_changes(body=body) if body != list(updated.body) else updated

    def _into_branches(self, body: list, i: int) -> list:
        stmt = body[i]
        loss = _conditional_loss(stmt)
        if loss is None:
            return body
        chosen, _ = backward_slice(body[:i], {loss})
        if not chosen:
            return body
        moved = body[chosen[0]:i]
        if reads(stmt.test) & set().union(*(writes(s) for s in moved)) or \
                any(_loss_of_backward(s) for s in moved):
            return body
        copies = [s.deep_clone() for s in moved]
        if stmt.orelse is None:
            orelse = cst.Else(body=cst.IndentedBlock(body=copies))
        elif isinstance(stmt.orelse, cst.Else):
            orelse = stmt.orelse.with_changes(body=stmt.orelse.body.with_changes(
                body=[*copies, *stmt.orelse.body.body]))
        else:   # `elif ...:` -> `else:` the copies, then `if ...:`
            orelse = cst.Else(body=cst.IndentedBlock(body=[*copies, _as_if(stmt.orelse)]))
        self.changes += 1
        branched = stmt.with_changes(body=stmt.body.with_changes(body=[*moved, *stmt.body.body]), orelse=orelse)
        return [*body[:chosen[0]], branched, *body[i + 1:]]


def _as_if(elif_: cst.If) -> cst.If:
    """An `elif` branch as an `if` statement of its own, nested in the new `else` (the comment
    lines above the `elif`, if any, are dropped)."""
    return elif_.with_changes(leading_lines=[])
