"""`for i in torch.randint(n, (batch,)):` then `data[i:i + block]`: iterating a tensor yields 0-d
tensors in both frameworks, and torch slices with one as with an int. MindSpore runs a slice with
Tensor bounds as its own dynamic operation, ~20x slower than one with int bounds (32 rows: 110 ms
vs 5 ms on CPU): a GPT's get_batch written as a loop made an evaluation of 400 batches time out
(cn-gpt-self-attention). Where the loop variable is read only as an index or a slice bound, the
loop iterates the values as Python ints (`.tolist()`): the same rows. A structural pass on torch
names, before the table pass."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, ScopeStack

# torch functions returning an integer tensor of indices
INDEX_TENSORS = {"torch.randint", "torch.randperm", "torch.arange", "torch.multinomial"}


class LoopIndicesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "for " in source and any(f.rsplit(".", 1)[1] + "(" in source for f in INDEX_TENSORS)

    def __init__(self, ctx) -> None:
        super().__init__(lambda stmt: not isinstance(stmt, cst.SimpleStatementLine))
        self.scopes = ScopeStack(dict(ctx.names.imports))

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        call = original.iter
        if not (isinstance(original.target, cst.Name) and isinstance(call, cst.Call)
                and self.scopes.resolve(call.func) in INDEX_TENSORS):
            return updated
        uses = _Uses(original.target.value)
        original.body.visit(uses)
        if not uses.indexing or uses.other or (original.orelse is not None):
            return updated
        self.changes += 1
        return updated.with_changes(iter=cst.Call(cst.Attribute(updated.iter, cst.Name("tolist"))))


class _Uses(cst.CSTVisitor):
    """Reads of `name` in a loop body: inside a subscript's index or slice (`indexing`), or
    elsewhere, or bound again (`other`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.depth = 0          # inside subscript elements
        self.indexing = 0
        self.other = 0

    def visit_SubscriptElement(self, node) -> None:
        self.depth += 1

    def leave_SubscriptElement(self, node) -> None:
        self.depth -= 1

    def visit_Name(self, node) -> None:
        if node.value == self.name:
            if self.depth:
                self.indexing += 1
            else:
                self.other += 1

    def visit_AssignTarget(self, node) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == self.name:
            self.other += 1

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False
