"""Optimizers kept in a list and stepped in a loop (one per parameter group of a model, a body
and a head trained at different rates):

    optimizers = [opt_body, opt_head]
    ...
    for opt in optimizers:
        opt.zero_grad()
    loss.backward()
    for opt in optimizers:
        opt.step()

-> one statement per optimizer, as if the program had written them out:

    opt_body.zero_grad()
    opt_head.zero_grad()
    loss.backward()
    opt_body.step()
    opt_head.step()

The training-loop pass then sees the optimizers that follow the backward pass (one compiled step,
each optimizer applying its part of the gradients); the loop variable would have named no
optimizer it knows. Only a loop whose whole body is that one call, over a list or tuple of names
(written there, or a name the file binds once, to such a list) each bound to a torch.optim
construction. A structural pass on torch code, before the training-loop pass."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, TargetBindings, bound_names, dotted, resolve, walk
from msmigrate.rules.training_loop import OPTIMIZER_PREFIX, SCHEDULER_PREFIX

UNROLLED = ("step", "zero_grad")


class OptimizerListsPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ".step(" in source and "for " in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        self.bound: dict[str, list] = {}   # name -> values bound to it anywhere in the file

    def visit_Module(self, node: cst.Module) -> None:
        bindings = _Bindings()
        node.visit(bindings)
        self.bound = bindings.values

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._unrolled(updated.body))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._unrolled(updated.body))

    def _unrolled(self, body) -> list:
        out = []
        for stmt in body:
            names = self._optimizer_loop(stmt)
            if names is None:
                out.append(stmt)
                continue
            self.changes += 1
            call = stmt.body.body[0].body[0].value
            for i, name in enumerate(names):
                one = call.with_changes(func=call.func.with_changes(value=cst.parse_expression(name)))
                out.append(cst.SimpleStatementLine([cst.Expr(one)],
                                                   leading_lines=stmt.leading_lines if i == 0 else []))
        return out

    def _optimizer_loop(self, stmt) -> list[str] | None:
        """The optimizers of `for opt in OPTIMIZERS: opt.step()` (or zero_grad), else None."""
        if not (isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and stmt.orelse is None
                and isinstance(stmt.body, cst.IndentedBlock) and len(stmt.body.body) == 1):
            return None
        line = stmt.body.body[0]
        small = line.body[0] if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 else None
        call = small.value if isinstance(small, cst.Expr) else None
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute)
                and call.func.attr.value in UNROLLED and isinstance(call.func.value, cst.Name)
                and call.func.value.value == stmt.target.value):
            return None
        if any(isinstance(n, cst.Name) and n.value == stmt.target.value for a in call.args for n in walk(a)):
            return None
        elements = self._elements(stmt.iter)
        if not elements or not all(self._is_optimizer(e) for e in elements):
            return None
        return elements

    def _elements(self, expr, depth: int = 0) -> list[str] | None:
        if isinstance(expr, (cst.List, cst.Tuple)):
            if any(not isinstance(e, cst.Element) or isinstance(e, cst.StarredElement) or dotted(e.value) is None
                   for e in expr.elements):
                return None
            return [dotted(e.value) for e in expr.elements]
        values = self.bound.get(dotted(expr) or "", [])
        if depth == 0 and len(values) == 1 and values[0] is not None:
            return self._elements(values[0], 1)
        return None

    def _is_optimizer(self, name: str) -> bool:
        values = self.bound.get(name, [])
        if not values or not all(isinstance(v, cst.Call) for v in values):
            return False
        for v in values:
            q = resolve(v.func, self.imports) or ""
            if not q.startswith(OPTIMIZER_PREFIX) or q.startswith(SCHEDULER_PREFIX):
                return False
        return True



class _Bindings(TargetBindings):
    """name or dotted attribute (`self.optimizers`) -> the values bound to it; None for a binding
    of no known value (`+=`, a loop or with target, an unpacking)."""

    def __init__(self) -> None:
        self.values: dict[str, list] = {}

    def _bind(self, target, value) -> None:
        name = dotted(target)
        for n in [name] if name is not None else bound_names(target):
            self.values.setdefault(n, []).append(value if name is not None else None)
