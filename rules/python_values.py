"""Values that are Python floats in torch and Tensors in MindSpore, read back as floats where the
program reads them: `scheduler.get_last_lr()` (a list of floats in torch, of Tensors in
mindspore.experimental.optim) and `optimizer.param_groups[i]['lr']` (a float in torch, a Parameter
there). Logging lines format them (`f"{lr:.6f}"`, `'%.4f' % lr`, `round(lr, 3)`), which fails on a
Tensor. A structural pass on torch names (before the table pass).

Writes of a group's learning rate (`for g in opt.param_groups: g['lr'] = lr`, manual warm-up and
decay) go through the generated msmigrate_set_lr: a float assigned to the group would be read by
the compiled train step at its first compile only (the run goes on with the old rate, silently),
the group's lr Parameter is written in place instead."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import returned_bindings
from msmigrate.names import FocusedTransformer, ScopeStack, dotted, walk
from msmigrate.rules.transforms.common import generated_text

SCHEDULER_PREFIX = "torch.optim.lr_scheduler."
OPTIMIZER_PREFIX = "torch.optim."


class PythonValuesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return any(name in source for name in ("get_last_lr", "param_groups", *_SCHEDULER_VALUES))

    def __init__(self, ctx) -> None:
        # only statements naming these are visited (and so rebuilt): the rest keep their
        # identity, and with it their original position for later diagnostics
        naming = ctx.statements_naming({"get_last_lr", "param_groups", *_SCHEDULER_VALUES})
        super().__init__(lambda stmt: naming(stmt) or _names_lr(stmt))
        self.scopes = ScopeStack(dict(ctx.names.imports))
        self.schedulers: set[str] = set()
        self.optimizers: set[str] = set()
        self.targets: set[int] = set()   # subscripts written to (param_groups[0]['lr'] = ...), or floats already
        self.groups: list[set[str]] = []   # names loops and comprehensions around bind to param groups
        self.visited_for: set[int] = set()
        self.ctx = ctx

    def visit_Module(self, node: cst.Module) -> None:
        owner = self

        class _Bindings(cst.CSTVisitor):
            def visit_Assign(self, node: cst.Assign) -> None:
                if not isinstance(node.value, cst.Call):
                    return
                made = owner.ctx.returned.get(node.value.func.value) if isinstance(node.value.func, cst.Name) \
                    and owner.scopes.resolve(node.value.func) is None else None
                if isinstance(made, tuple):   # `opt, sched = build(model)`
                    for name, q in returned_bindings(owner.ctx.returned, owner.scopes, node):
                        kind = (owner.schedulers if q.startswith(SCHEDULER_PREFIX)
                                else owner.optimizers if q.startswith(OPTIMIZER_PREFIX) else None)
                        if kind is not None:
                            kind.add(name)
                    return
                q = made if isinstance(made, str) else owner.scopes.resolve(node.value.func) or ""
                kind = (owner.schedulers if q.startswith(SCHEDULER_PREFIX)
                        else owner.optimizers if q.startswith(OPTIMIZER_PREFIX) else None)
                if kind is not None:
                    kind.update(n for n in (dotted(t.target) for t in node.targets) if n)

        node.visit(_Bindings())

    def visit_Assign(self, node: cst.Assign) -> None:
        self.targets.update(id(t.target) for t in node.targets)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.targets.add(id(node.target))

    def visit_Call(self, node: cst.Call) -> None:
        # `ops.assign(group['lr'], ...)` (converted code: OneCycleLR's start) writes the Parameter;
        # `float(group['lr'])` is read as a float already
        if node.args and (dotted(node.func) or "").rsplit(".", 1)[-1] in ("assign", "float"):
            self.targets.add(id(node.args[0].value))

    def visit_For(self, node: cst.For) -> None:
        self.visited_for.add(id(node))
        self.groups.append(set(_group_names(node.target, node.iter)))

    def leave_For(self, original: cst.For, updated: cst.For) -> cst.For:
        if id(original) in self.visited_for:   # (on_leave runs for statements left unvisited too)
            self.groups.pop()
        return updated

    def _visit_comprehension(self, node) -> None:
        names, comp = set(), node.for_in
        while comp is not None:
            names.update(_group_names(comp.target, comp.iter))
            comp = comp.inner_for_in
        self.groups.append(names)

    def _leave_comprehension(self, original, updated):
        self.groups.pop()
        return updated

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _visit_comprehension
    leave_ListComp = leave_SetComp = leave_GeneratorExp = leave_DictComp = _leave_comprehension

    def _is_group(self, name: str) -> bool:
        return any(name in names for names in self.groups)

    def _group_lr(self, target) -> cst.BaseExpression | None:
        """The group of a `G['lr']` write target, G a param group (`X.param_groups[i]`, or the
        variable of a loop over `X.param_groups`)."""
        if not _writes_lr_of(target):
            return None
        group = target.value
        if isinstance(group, cst.Name) and self._is_group(group.value):
            return group
        if isinstance(group, cst.Subscript) and isinstance(group.value, cst.Attribute) \
                and group.value.attr.value == "param_groups":
            return group
        return None

    def _set_lr(self, group, value) -> cst.Expr:
        self.changes += 1
        helper = generated_text(self.ctx.plan, "optimizers", "msmigrate_set_lr")
        return cst.Expr(cst.Call(helper, [cst.Arg(group), cst.Arg(value)]))

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        group = self._group_lr(updated.targets[0].target) if len(updated.targets) == 1 else None
        return updated if group is None else self._set_lr(group, updated.value)

    def leave_AugAssign(self, original: cst.AugAssign, updated: cst.AugAssign):
        group = self._group_lr(updated.target)
        operator = _BINARY.get(type(updated.operator))
        if group is None or operator is None:
            return updated
        return self._set_lr(group, cst.BinaryOperation(updated.target, operator(), updated.value))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get_last_lr" and not updated.args \
                and dotted(func.value) in self.schedulers:
            self.changes += 1
            return cst.parse_expression(f"[float(lr) for lr in {dotted(func.value)}.get_last_lr()]")
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        # S.last_epoch / S.base_lrs read (not written)
        read_as = _SCHEDULER_VALUES.get(updated.attr.value)
        if read_as is None or id(original) in self.targets or dotted(updated.value) not in self.schedulers:
            return updated
        self.changes += 1
        return cst.parse_expression(read_as.format(dotted(updated)))

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        # O.param_groups[i]['lr'] read (not written)
        if id(original) in self.targets or len(updated.slice) != 1:
            return updated
        if not _is_lr_key(updated):
            return updated
        group = updated.value
        if isinstance(group, cst.Subscript) and isinstance(group.value, cst.Attribute) \
                and group.value.attr.value == "param_groups" and dotted(group.value.value) in self.optimizers \
                or isinstance(group, cst.Name) and self._is_group(group.value):
            # (a group's rate read in a loop or comprehension: `[g['lr'] for g in opt.param_groups]`
            # kept the Parameters themselves, which later updates change, and round() rejects)
            self.changes += 1
            return cst.Call(cst.Name("float"), [cst.Arg(updated)])
        return updated


# a scheduler's attributes that are Python values in torch: how to read MindSpore's as those
_SCHEDULER_VALUES = {"last_epoch": "int({})", "base_lrs": "[float(lr) for lr in {}]"}

_BINARY = {cst.MultiplyAssign: cst.Multiply, cst.DivideAssign: cst.Divide, cst.AddAssign: cst.Add,
           cst.SubtractAssign: cst.Subtract}


def _is_lr_key(subscript: cst.Subscript) -> bool:
    index = subscript.slice[0].slice if len(subscript.slice) == 1 else None
    return isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString) \
        and index.value.evaluated_value == "lr"


def _writes_lr_of(target) -> bool:
    """A write target `G['lr']`."""
    return isinstance(target, cst.Subscript) and _is_lr_key(target)


def _names_lr(stmt) -> bool:
    """A simple statement reading or writing some `G['lr']` (visited although it names no
    param_groups: G may be a loop's group)."""
    return isinstance(stmt, cst.SimpleStatementLine) and any(
        isinstance(n, cst.Subscript) and _is_lr_key(n) for n in walk(stmt))


def _over_groups(iterable) -> bool:
    return isinstance(iterable, cst.Attribute) and iterable.attr.value == "param_groups"


def _group_names(target, iterable) -> list[str]:
    """The names `for TARGET in ITERABLE` binds to param groups: `g` of `for g in
    opt.param_groups`, of `for i, g in enumerate(opt.param_groups)`, of `for g, lr in
    zip(opt.param_groups, lrs)`."""
    if _over_groups(iterable):
        return [target.value] if isinstance(target, cst.Name) else []
    if not (isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name)
            and isinstance(target, (cst.Tuple, cst.List))):
        return []
    args, elements = [a.value for a in iterable.args if a.keyword is None], target.elements
    if iterable.func.value == "enumerate" and len(args) == 1 and len(elements) == 2:
        return _group_names(elements[1].value, args[0])
    if iterable.func.value == "zip" and len(args) == len(elements):
        return [n for e, a in zip(elements, args) for n in _group_names(e.value, a)]
    return []
