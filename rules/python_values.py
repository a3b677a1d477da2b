"""Values that are Python floats in torch and Tensors in MindSpore, read back as floats where the
program reads them: `scheduler.get_last_lr()` (a list of floats in torch, of Tensors in
mindspore.experimental.optim) and `optimizer.param_groups[i]['lr']` (a float in torch, a Parameter
there). Logging lines format them (`f"{lr:.6f}"`, `'%.4f' % lr`, `round(lr, 3)`), which fails on a
Tensor. A structural pass on torch names (before the table pass); writes are left alone."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, ScopeStack, dotted

SCHEDULER_PREFIX = "torch.optim.lr_scheduler."
OPTIMIZER_PREFIX = "torch.optim."


class PythonValuesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "get_last_lr" in source or "param_groups" in source

    def __init__(self, ctx) -> None:
        # only statements naming these are visited (and so rebuilt): the rest keep their
        # identity, and with it their original position for later diagnostics
        super().__init__(ctx.statements_naming({"get_last_lr", "param_groups"}))
        self.scopes = ScopeStack(dict(ctx.names.imports))
        self.schedulers: set[str] = set()
        self.optimizers: set[str] = set()
        self.targets: set[int] = set()   # subscripts written to (param_groups[0]['lr'] = ...)

    def visit_Module(self, node: cst.Module) -> None:
        owner = self

        class _Bindings(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                if not isinstance(node.value, cst.Call):
                    return
                q = owner.scopes.resolve(node.value.func) or ""
                kind = (owner.schedulers if q.startswith(SCHEDULER_PREFIX)
                        else owner.optimizers if q.startswith(OPTIMIZER_PREFIX) else None)
                if kind is not None:
                    kind.update(n for n in (dotted(t.target) for t in node.targets) if n)

        node.visit(_Bindings())

    def visit_Assign(self, node: cst.Assign) -> None:
        self.targets.update(id(t.target) for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.targets.add(id(node.target))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get_last_lr" and not updated.args \
                and dotted(func.value) in self.schedulers:
            self.changes += 1
            return cst.parse_expression(f"[float(lr) for lr in {dotted(func.value)}.get_last_lr()]")
        return updated

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        # O.param_groups[i]['lr'] read (not written)
        if id(original) in self.targets or len(updated.slice) != 1:
            return updated
        index = updated.slice[0].slice
        if not (isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString)
                and index.value.evaluated_value == "lr"):
            return updated
        group = updated.value
        if isinstance(group, cst.Subscript) and isinstance(group.value, cst.Attribute) \
                and group.value.attr.value == "param_groups" and dotted(group.value.value) in self.optimizers:
            self.changes += 1
            return cst.Call(cst.Name("float"), [cst.Arg(updated)])
        return updated
