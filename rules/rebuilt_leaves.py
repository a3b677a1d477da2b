"""A tensor descended by hand that each pass of the loop makes a new leaf of:

    x = torch.randn(n)
    for i in range(steps):
        x.requires_grad_(True)
        loss = f(x)
        loss.backward()
        with torch.no_grad():
            x = x - lr * x.grad          # (or `x = (x - lr * x.grad).detach()`)

is, as long as nothing keeps the old tensor, the same descent on one tensor updated in place
whose gradient starts from nothing at every pass:

    x.requires_grad_(True)
    for i in range(steps):
        loss = f(x)
        loss.backward()
        with torch.no_grad():
            x.copy_(x - lr * x.grad)
        x.grad = None

which the training-loop pass converts (rules/bare_tensors.py: a Parameter, ops.assign). A
structural pass on torch code, before the training-loop pass; anything else that binds, keeps
(in a container, another name) or reads the tensor's gradient in place leaves the loop as it is
(the training-loop pass then marks it)."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer, bound_name, dotted, resolve, walk
from msmigrate.rules.training_loop import NO_GRAD

def _requires_grad_stmt(stmt) -> str | None:
    """`x.requires_grad_()` / `x.requires_grad_(True)` as a statement: x."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)):
        return None
    call = stmt.body[0].value
    if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and
            call.func.attr.value == "requires_grad_" and isinstance(call.func.value, cst.Name)):
        return None
    if call.args and not (len(call.args) == 1 and isinstance(call.args[0].value, cst.Name) and
                          call.args[0].value.value == "True"):
        return None
    return call.func.value.value


def _rebinding(stmt, name: str) -> cst.BaseExpression | None:
    """`name = <value reading name.grad>`: the value (a trailing `.detach()` taken off)."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or dotted(assign.targets[0].target) != name:
        return None
    value = assign.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "detach" \
            and not value.args:
        value = value.func.value
    reads_grad = any(isinstance(n, cst.Attribute) and n.attr.value == "grad" and dotted(n.value) == name
                     for n in walk(value))
    return value if reads_grad else None


def _backward(stmt) -> bool:
    return any(isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "backward"
               for n in walk(stmt))


def _kept(body: list, name: str, allowed: set[int]) -> bool:
    """Whether the loop body binds `name` other than by the statements `allowed`, or keeps the
    tensor itself somewhere (another name, a container, an append): the old tensor would then
    change with the in-place update."""
    for stmt in body:
        for n in walk(stmt):
            if id(n) in allowed:
                continue
            if isinstance(n, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
                targets = [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target]
                if any(isinstance(t, cst.Name) and t.value == name for t in targets):
                    return True
                if isinstance(n, cst.Assign) and isinstance(n.value, cst.Name) and n.value.value == name:
                    return True
            if isinstance(n, (cst.List, cst.Tuple, cst.Set)) and \
                    any(isinstance(e.value, cst.Name) and e.value.value == name for e in n.elements):
                return True
            if isinstance(n, cst.Dict) and any(isinstance(e, cst.DictElement) and isinstance(e.value, cst.Name) and
                                               e.value.value == name for e in n.elements):
                return True
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and \
                    n.func.attr.value in ("append", "extend", "insert", "add", "put") and \
                    any(isinstance(a.value, cst.Name) and a.value.value == name for a in n.args):
                return True
            if isinstance(n, (cst.For, cst.CompFor)) and any(isinstance(t, cst.Name) and t.value == name
                                                              for t in walk(n.target)):
                return True
    return False


class RebuiltLeavesPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "requires_grad_(" in source and ".grad" in source and ".backward(" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        self.torch = bound_name(self.imports, "torch")
        # id(loop) -> (name, id(requires_grad_ statement), id(rebinding statement), rebinding outside no_grad)
        self.plans: dict[int, tuple] = {}
        outer = self

        class Loops(cst.CSTVisitor):
            def visit_For(self, node) -> None:
                outer._add(node)

            def visit_While(self, node) -> None:
                outer._add(node)

        ctx.module.visit(Loops())
        wanted = set(self.plans) | {i for plan in self.plans.values() for i in plan[1:3]}
        self.follow(ctx.module, lambda node, ancestors: id(node) in wanted)   # only the way to them is rebuilt

    def _add(self, loop) -> None:
        plan = self._plan(loop)
        if plan is not None:
            self.plans[id(loop)] = plan

    def _no_grad(self, stmt) -> bool:
        return isinstance(stmt, cst.With) and all(
            resolve(i.item.func if isinstance(i.item, cst.Call) else i.item, self.imports) in NO_GRAD
            for i in stmt.items)

    def _plan(self, loop):
        body = list(loop.body.body) if isinstance(loop.body, cst.IndentedBlock) else []
        for i, stmt in enumerate(body):
            name = _requires_grad_stmt(stmt)
            if name is None:
                continue
            later = body[i + 1:]
            at = next((k for k, s in enumerate(later) if _backward(s)), None)
            if at is None:
                return None
            for s in later[at + 1:]:
                inner = list(s.body.body) if self._no_grad(s) and isinstance(s.body, cst.IndentedBlock) else [s]
                for t in inner:
                    if _rebinding(t, name) is not None and (t is not s or self.torch):
                        allowed = {id(stmt), id(t), *(id(n) for n in walk(t))}
                        if _kept(body, name, allowed):
                            return None
                        return name, id(stmt), id(t), t is s
            return None
        return None

    def leave_SimpleStatementLine(self, original, updated):
        for name, made, rebinding, bare in self.plans.values():
            if id(original) == made:
                return cst.RemoveFromParent()
            if id(original) == rebinding:
                value = _rebinding(updated, name)
                copy = cst.SimpleStatementLine([cst.Expr(cst.Call(
                    cst.Attribute(cst.Name(name), cst.Name("copy_")), [cst.Arg(value)]))],
                    leading_lines=updated.leading_lines)
                if bare:   # `x = (...).detach()` outside no_grad: the copy under no_grad
                    copy = cst.With([cst.WithItem(cst.parse_expression(f"{self.torch}.no_grad()"))],
                                    cst.IndentedBlock([copy.with_changes(leading_lines=[])]),
                                    leading_lines=updated.leading_lines)
                cleared = cst.parse_statement(f"{name}.grad = None\n")
                return cst.FlattenSentinel([copy, cleared])
        return updated

    def _leave_loop(self, original, updated):
        plan = self.plans.get(id(original))
        if plan is None:
            return updated
        name = plan[0]
        first = cst.parse_statement(f"{name}.requires_grad_(True)\n").with_changes(leading_lines=updated.leading_lines)
        return cst.FlattenSentinel([first, updated.with_changes(leading_lines=[])])

    def leave_For(self, original, updated):
        return self._leave_loop(original, updated)

    def leave_While(self, original, updated):
        return self._leave_loop(original, updated)
