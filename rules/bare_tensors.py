"""Tensors trained by hand: `w = torch.tensor(0.0, requires_grad=True)`, `loss.backward()`, then
`w -= lr * w.grad` under no_grad (or `w.data = w.data - lr * w.grad`, `w.data.sub_(...)`) and
`w.grad.zero_()`. MindSpore keeps no `.grad` on a tensor: the training-loop pass
(rules/training_loop.py) differentiates the loss w.r.t. the Parameters these tensors become, and
this module rewrites what follows the backward pass:

    w.grad / w.grad.data          -> w_grad, the gradient value_and_grad handed back
    w.data                        -> w
    w -= e (no_grad), w.data -= e -> ops.assign_sub(w, e)     (+= -> assign_add, *= /= -> assign)
    w.data = e                    -> ops.assign(w, e)
    w.data.sub_(e) / add_ / copy_ / mul_ / div_ / zero_ -> the matching ops.assign*
    w.grad.zero_(), w.grad = None -> dropped when each step's gradients are fresh and nothing reads
                                     them afterwards, else `w_grad = ops.zeros_like(w)`

Anything else that writes `w` or its gradient raises NotFaithful (the step stays marked)."""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import libcst as cst

from msmigrate.names import dotted, resolve

# in-place updates of the tensor itself: method -> the ops function writing it
_METHOD_UPDATES = {"sub_": "assign_sub", "add_": "assign_add", "copy_": "assign"}
_SCALED_UPDATES = {"mul_": "*", "div_": "/"}
_AUG_UPDATES = {"-=": "assign_sub", "+=": "assign_add"}
_AUG_SCALED = {"*=": "*", "/=": "/"}


class NotFaithful(Exception):
    """An access to a trained tensor or its gradient this rewrite cannot reproduce."""


class TrainableTensors(cst.CSTVisitor):
    """Names bound to a tensor a torch factory makes with requires_grad=True
    (`w = torch.randn(3, requires_grad=True)`: it becomes a Parameter): name -> the assignments
    binding it (original nodes). `made`: names bound to what a torch function or a copy makes
    (`x = torch.ones(2)`, `img = base.clone().detach()`)."""

    def __init__(self, imports: dict[str, str]) -> None:
        self.imports = imports
        self.bindings: dict[str, list[cst.Assign]] = {}
        self.made = set()   # names bound to what a torch function makes (`x = torch.ones(2)`)

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            name = node.targets[0].target.value
            if self._trainable(node.value):
                self.bindings.setdefault(name, []).append(node)
            if isinstance(node.value, cst.Call) and ((resolve(node.value.func, self.imports) or "").startswith("torch.")
                                                     or _copied(node.value)):
                self.made.add(name)

    def visit_Expr(self, node: cst.Expr) -> None:
        # `w.requires_grad_()` as a statement on a tensor a torch function made: w is trained from
        # here (the statement becomes `w = ms.Parameter(w, name='w')`); not a loop's `p` over a
        # model's parameters
        if requires_grad_call(node.value) and isinstance(node.value.func.value, cst.Name) \
                and node.value.func.value.value in self.made:
            self.bindings.setdefault(node.value.func.value.value, []).append(node)

    def _trainable(self, value) -> bool:
        if requires_grad_call(value):   # `w = x.clone().requires_grad_()`
            return True
        return isinstance(value, cst.Call) and (resolve(value.func, self.imports) or "").startswith("torch.") \
            and any(a.keyword is not None and a.keyword.value == "requires_grad" and
                    isinstance(a.value, cst.Name) and a.value.value == "True" for a in value.args)


def _copied(value: cst.Call) -> bool:
    """`y.clone()`, `y.detach()`, `y.clone().detach()`: a new tensor the file makes."""
    return isinstance(value.func, cst.Attribute) and value.func.attr.value in ("clone", "detach") and not value.args


def requires_grad_call(value) -> bool:
    """`x.requires_grad_()` / `x.requires_grad_(True)`: x made a leaf that requires grad."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "requires_grad_" and len(value.args) <= 1):
        return False
    return not value.args or (isinstance(value.args[0].value, cst.Name) and value.args[0].value.value == "True")


def _strip_data(expr):
    while isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return expr


def access(expr, tensors) -> tuple[str, str] | None:
    """('grad', w) for `w.grad` / `w.grad.data`, ('value', w) for `w` / `w.data`, else None."""
    expr = _strip_data(expr)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "grad" and isinstance(expr.value, cst.Name) \
            and expr.value.value in tensors:
        return "grad", expr.value.value
    if isinstance(expr, cst.Name) and expr.value in tensors:
        return "value", expr.value
    return None


def grad_uses(node, tensors) -> Counter:
    """How many times `node` names `t.grad`, per tensor t, in order of first appearance."""
    found = Counter()

    class _Find(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            if n.attr.value == "grad" and isinstance(n.value, cst.Name) and n.value.value in tensors:
                found[n.value.value] += 1

    node.visit(_Find())
    return found


def grad_touched(node, tensors) -> list[str]:
    """The tensors whose gradient `node` reads or writes, in order of appearance."""
    return list(grad_uses(node, tensors))


def clears(stmt, tensors) -> set[str]:
    """The tensors whose gradient a statement clears every time it runs: zeroed() of the
    statement, or of one in the body of a `with` statement."""
    if isinstance(stmt, cst.With):
        return set().union(*(clears(s, tensors) for s in stmt.body.body)) \
            if isinstance(stmt.body, cst.IndentedBlock) else set()
    found = zeroed(stmt, tensors)
    return {found} if found else set()


def zeroed(stmt, tensors) -> str | None:
    """The tensor whose gradient a statement `w.grad.zero_()` / `w.grad.data.zero_()` /
    `w.grad = None` (or `if w.grad is not None: w.grad.zero_()`) clears, else None."""
    if isinstance(stmt, cst.If):
        return _guarded_clear(stmt, tensors)
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    return _zeroed_small(stmt.body[0], tensors)


def _guarded_clear(stmt: cst.If, tensors) -> str | None:
    """`if w.grad is not None: w.grad.zero_()` -> w."""
    test = stmt.test
    if stmt.orelse is not None or not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    comp = test.comparisons[0]
    if not (isinstance(comp.operator, cst.IsNot) and isinstance(comp.comparator, cst.Name)
            and comp.comparator.value == "None"):
        return None
    found = access(test.left, tensors)
    inner = stmt.body.body
    if isinstance(stmt.body, cst.IndentedBlock):
        inner = inner[0].body if len(inner) == 1 and isinstance(inner[0], cst.SimpleStatementLine) else []
    if found and found[0] == "grad" and len(inner) == 1 and _zeroed_small(inner[0], tensors) == found[1]:
        return found[1]
    return None


def _zeroed_small(small, tensors) -> str | None:
    if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and not small.value.args:
        func = small.value.func
        if isinstance(func, cst.Attribute) and func.attr.value == "zero_":
            found = access(func.value, tensors)
            return found[1] if found and found[0] == "grad" else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
            isinstance(small.value, cst.Name) and small.value.value == "None":
        found = access(small.targets[0].target, tensors)
        if found and found[0] == "grad" and not isinstance(small.targets[0].target.value, cst.Attribute):
            return found[1]
    return None


class _Reads(cst.CSTTransformer):
    """`w.grad(.data)` -> the gradient's name, `w.data` -> `w` (reads only: the statement-level
    rewrite decides what a write becomes)."""

    def __init__(self, grads: dict[str, str]) -> None:
        self.grads = grads

    def leave_Attribute(self, original, updated):
        found = access(original, self.grads)
        if found is None or original.attr.value not in ("grad", "data"):
            return updated
        kind, name = found
        return cst.Name(self.grads[name] if kind == "grad" else name)


class AfterBackward:
    """Rewrites the statements that follow `loss.backward()` in its block (see the module doc).
    `grads`: tensor -> its gradient's name; `fresh`: tensor -> whether every backward pass
    starts from a zero gradient (so a top-level clear no later statement reads goes away);
    `parse`: code -> statement (placeholders for MindSpore names resolved); `ref`: qualname ->
    placeholder."""

    def __init__(self, grads: dict[str, str], fresh: dict[str, bool], parse: Callable, ref: Callable,
                 no_grad: Callable) -> None:
        self.grads, self.fresh, self.parse, self.ref, self.is_no_grad = grads, fresh, parse, ref, no_grad

    def rewrite(self, stmts: list, later: list = (), no_grad: bool = False) -> list:
        """The statements rewritten; `later`: what runs after them in the block (a `with`
        statement's body is rewritten like the block around it)."""
        out = []
        for i, stmt in enumerate(stmts):
            rest = [*stmts[i + 1:], *later]
            t = zeroed(stmt, self.grads)
            if t is not None and self.fresh[t] and not any(t in grad_touched(s, self.grads) for s in rest):
                continue   # the next backward pass starts from zero anyway
            if isinstance(stmt, cst.With) and isinstance(stmt.body, cst.IndentedBlock):
                self._check_writes(stmt)
                body = self.rewrite(list(stmt.body.body), rest, no_grad or self.is_no_grad(stmt))
                if not body and self.is_no_grad(stmt):
                    continue   # `with torch.no_grad(): w.grad.zero_()` alone goes
                out.append(stmt.with_changes(items=[item.visit(_Reads(self.grads)) for item in stmt.items],
                                             body=stmt.body.with_changes(body=body or [self.parse("pass")])))
                continue
            new = self._statement(stmt, no_grad)
            # a statement that reads no gradient stays the original node, with its position
            out.append(stmt if new.deep_equals(stmt) else new)
        return out

    # ---- statements ------------------------------------------------------------------
    def _statement(self, stmt, no_grad: bool):
        if isinstance(stmt, cst.SimpleStatementLine):
            return stmt.with_changes(body=[self._small(s, no_grad) for s in stmt.body])
        if isinstance(stmt, cst.With) and self.is_no_grad(stmt):
            no_grad = True
        return self._compound(stmt, no_grad)

    def _compound(self, stmt, no_grad: bool):
        """A compound statement: its header reads are rewritten, its blocks statement by statement."""
        outer, reads = self, _Reads(self.grads)

        class _Blocks(cst.CSTTransformer):
            def visit_IndentedBlock(self, node) -> bool:
                return False

            def leave_IndentedBlock(self, original, updated):
                return updated.with_changes(body=[outer._statement(s, no_grad) for s in original.body])

            def visit_SimpleStatementSuite(self, node) -> bool:
                return False

            def leave_SimpleStatementSuite(self, original, updated):
                return updated.with_changes(body=[outer._small(s, no_grad) for s in original.body])

            def visit_FunctionDef(self, node) -> bool:
                raise NotFaithful("a function defined after the backward pass")

            def leave_Attribute(self, original, updated):
                return reads.leave_Attribute(original, updated)

        self._check_writes(stmt)
        return stmt.visit(_Blocks())

    def _small(self, small, no_grad: bool):
        t = _zeroed_small(small, self.grads)
        if t is not None:
            return self._small_code(f"{self.grads[t]} = {self.ref('mindspore.ops.zeros_like')}({t})", small)
        update = self._update(small, no_grad)
        if update is not None:
            return self._small_code(update, small)
        self._check_writes(small)
        return small.visit(_Reads(self.grads))

    def _small_code(self, code: str, small):
        new = self.parse(code).body[0]
        return new.with_changes(semicolon=small.semicolon) if hasattr(small, "semicolon") else new

    def _code(self, node) -> str:
        return cst.Module([]).code_for_node(node.visit(_Reads(self.grads)))

    # ---- updates of the tensor ------------------------------------------------------
    def _update(self, small, no_grad: bool) -> str | None:
        """The ops.assign* call an update of a trained tensor becomes, else None."""
        ops = lambda n: self.ref(f"mindspore.ops.{n}")  # noqa: E731
        if isinstance(small, cst.AugAssign):
            target = self._value_target(small.target, no_grad)
            if target is None:
                return None
            op = small.operator.__class__.__name__
            sym = {"SubtractAssign": "-=", "AddAssign": "+=", "MultiplyAssign": "*=", "DivideAssign": "/="}.get(op)
            value = self._code(small.value)
            if sym in _AUG_UPDATES:
                return f"{ops(_AUG_UPDATES[sym])}({target}, {value})"
            if sym in _AUG_SCALED:
                return f"{ops('assign')}({target}, {target} {_AUG_SCALED[sym]} ({value}))"
            raise NotFaithful(f"'{cst.Module([]).code_for_node(small).strip()}' changes {target} in place")
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target = small.targets[0].target
            if isinstance(target, cst.Attribute) and target.attr.value == "data" and \
                    (found := access(target, self.grads)) and found[0] == "value":
                return f"{ops('assign')}({found[1]}, {self._code(small.value)})"
            return None
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                isinstance(small.value.func, cst.Attribute):
            call = small.value
            target = self._value_target(call.func.value, no_grad)
            if target is None:
                return None
            meth = call.func.attr.value
            args = {a.keyword.value if a.keyword else i: self._code(a.value) for i, a in enumerate(call.args)}
            if meth in _METHOD_UPDATES and 0 in args:
                value = f"({args['alpha']}) * {args[0]}" if "alpha" in args else args[0]
                return f"{ops(_METHOD_UPDATES[meth])}({target}, {value})"
            if meth in _SCALED_UPDATES and 0 in args:
                return f"{ops('assign')}({target}, {target} {_SCALED_UPDATES[meth]} ({args[0]}))"
            if meth == "zero_" and not args:
                return f"{ops('assign')}({target}, {ops('zeros_like')}({target}))"
        return None

    def _value_target(self, expr, no_grad: bool) -> str | None:
        """The tensor an update writes: `w.data` anywhere, `w` itself under no_grad only (torch
        refuses an in-place change of a leaf that requires grad elsewhere)."""
        found = access(expr, self.grads)
        if found is None or found[0] != "value":
            return None
        if not no_grad and not (isinstance(expr, cst.Attribute) and expr.attr.value == "data"):
            return None
        return found[1]

    def _check_writes(self, node) -> None:
        """Raise NotFaithful on a write this rewrite does not know: rebinding a trained tensor,
        assigning to its gradient, an in-place method on either."""
        grads = self.grads

        class _Writes(cst.CSTVisitor):
            def visit_IndentedBlock(self, n) -> bool:
                return False   # the statements inside are checked one by one

            def visit_SimpleStatementSuite(self, n) -> bool:
                return False

            def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
                self._target(n.target)

            def visit_AugAssign(self, n: cst.AugAssign) -> None:
                self._target(n.target)

            def visit_For(self, n: cst.For) -> None:
                self._target(n.target)

            def _target(self, target) -> None:
                for t in ([e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List))
                          else [target]):
                    if access(t, grads) is not None:
                        raise NotFaithful(f"'{cst.Module([]).code_for_node(t)}' is assigned after the backward "
                                          f"pass (a new tensor, or a gradient set by hand), which this "
                                          f"conversion does not reproduce")

            def visit_Call(self, n: cst.Call) -> None:
                func = n.func
                if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and \
                        not func.attr.value.endswith("__") and access(func.value, grads) is not None:
                    raise NotFaithful(f"'{dotted(func) or func.attr.value}(...)' changes a trained tensor or "
                                      f"its gradient in place")

        node.visit(_Writes())
