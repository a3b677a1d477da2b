"""`loss.data[0]`: PyTorch <= 0.3's way to read a loss as a number (a loss was a one-element 1-D
Variable then). Since 0.4 a reduced loss is 0-d and torch raises IndexError ("invalid index of a
0-dim tensor. Use `tensor.item()`"), MindSpore a TypeError ("Cannot iterate over a scalar
tensor"): the logging line of many old tutorials. Where the receiver is visibly a one-element
loss, the read becomes `.item()` (the number the author meant), with a review marker, since
torch 2 raises there:

- a name whose `.backward()` is called with no gradient in the same function (or at module
  level): backward without a gradient needs a one-element tensor;
- a call of a torch loss (`F.nll_loss(out, y, size_average=False).data[0]`, `criterion(out, y)`
  with `criterion = nn.XLoss(...)`) that does not keep the elements (reduction='none', reduce=False).

Any other `.data[0]` (a 1-D tensor's first element) is left alone. A structural pass on torch
names (before the training-loop pass, which then sees `loss.item()` after the step)."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import Bindings, dotted, resolve

_FUNCTIONAL = "torch.nn.functional."
_LOSS_FUNCTIONS = {"cross_entropy", "nll_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits",
                   "kl_div", "poisson_nll_loss", "gaussian_nll_loss"}
MESSAGE = ("`{r}.data[0]` reads a one-element loss the PyTorch <= 0.3 way (torch >= 0.4 raises IndexError "
           "on a 0-d tensor): read as `{r}.item()`, the number it meant")


def _keeps_elements(call: cst.Call) -> bool:
    """reduction='none' / reduce=False: the loss keeps one value per element."""
    for arg in call.args:
        if arg.keyword is None:
            continue
        key, value = arg.keyword.value, arg.value
        if key == "reduction" and not (isinstance(value, cst.SimpleString)
                                       and value.evaluated_value in ("mean", "sum", "elementwise_mean")):
            return True
        if key == "reduce" and not (isinstance(value, cst.Name) and value.value == "True"):
            return True
    return False


def _data_zero(node) -> cst.BaseExpression | None:
    """The receiver R of `R.data[0]`, else None."""
    if not (isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.value, cst.Attribute)
            and node.value.attr.value == "data"):
        return None
    index = node.slice[0].slice
    if isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0":
        return node.value.value
    return None


class LegacyScalarIndexPass(cst.CSTTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ".data[0]" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        self.reporter = ctx.reporter
        self.positions = ctx.positions
        criteria = Bindings(lambda v: isinstance(v, cst.Call) and self._is_loss_class(v))
        ctx.module.visit(criteria)
        self.criteria = criteria.only_chosen
        scan = _Prescan(self)
        ctx.module.visit(scan)
        self.targets, self.path = scan.targets, scan.path
        self.notes: list[list[str]] = []

    def _is_loss_class(self, call: cst.Call) -> bool:
        q = resolve(call.func, self.imports) or ""
        return q.startswith("torch.nn.") and q.endswith("Loss") and q.count(".") == 2 and not _keeps_elements(call)

    def is_loss_call(self, node) -> bool:
        if not isinstance(node, cst.Call) or _keeps_elements(node):
            return False
        q = resolve(node.func, self.imports) or ""
        if q.startswith(_FUNCTIONAL):
            name = q[len(_FUNCTIONAL):]
            return name in _LOSS_FUNCTIONS or name.endswith("_loss")
        return dotted(node.func) in self.criteria

    # only the nodes on the way to a rewritten read are visited (a rebuilt statement loses its
    # original position)
    def on_visit(self, node) -> bool:
        if id(node) not in self.path:
            return False
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self.notes.append([])
        return super().on_visit(node)

    def on_leave(self, original, updated):
        if id(original) not in self.path:
            return updated
        result = super().on_leave(original, updated)
        if isinstance(original, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            notes = self.notes.pop()
            if notes and isinstance(result, cst.CSTNode):
                pos = self.positions.get(original)
                line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
                lines = list(result.leading_lines)
                existing = {ln.comment.value for ln in lines if ln.comment is not None}
                for message in dict.fromkeys(notes):
                    marker = self.reporter.flag("review", message, line, col)
                    if marker not in existing:
                        lines.append(cst.EmptyLine(comment=cst.Comment(marker)))
                result = result.with_changes(leading_lines=lines)
        return result

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        if id(original) not in self.targets:
            return updated
        receiver = updated.value.value
        text = (receiver.value if isinstance(receiver, cst.Name)
                else f"{cst.Module([]).code_for_node(receiver.func)}(...)")
        if self.notes:
            self.notes[-1].append(MESSAGE.format(r=text))
        return cst.Call(cst.Attribute(receiver, cst.Name("item")), [])


class _Prescan(cst.CSTVisitor):
    """The `R.data[0]` reads to rewrite and the nodes on the way to them. Names whose
    `.backward()` is called without a gradient are collected per function (module) first."""

    def __init__(self, owner: LegacyScalarIndexPass) -> None:
        super().__init__()
        self.owner = owner
        self.stack: list[int] = []
        self.path: set[int] = set()
        self.targets: set[int] = set()
        self.scopes: list[set[str]] = []

    @staticmethod
    def _backward_names(scope) -> set[str]:
        found: set[str] = set()

        class _Calls(cst.CSTVisitor):
            def visit_FunctionDef(self, node) -> bool:
                return node is scope
            visit_ClassDef = visit_Lambda = lambda self, node: False   # noqa: E731

            def visit_Call(self, node: cst.Call) -> None:
                f = node.func
                if isinstance(f, cst.Attribute) and f.attr.value == "backward" and isinstance(f.value, cst.Name) \
                        and not any(a.keyword is None or a.keyword.value == "gradient" for a in node.args):
                    found.add(f.value.value)

        scope.visit(_Calls())
        return found

    def visit_Module(self, node) -> None:
        self.scopes.append(self._backward_names(node))

    def visit_FunctionDef(self, node) -> None:
        self.scopes.append(self._backward_names(node))

    def leave_FunctionDef(self, node) -> None:
        self.scopes.pop()

    def on_visit(self, node) -> bool:
        self.stack.append(id(node))
        receiver = _data_zero(node)
        if receiver is not None and (
                (isinstance(receiver, cst.Name) and receiver.value in self.scopes[-1])
                or self.owner.is_loss_call(receiver)):
            self.targets.add(id(node))
            self.path.update(self.stack)
        return super().on_visit(node)

    def on_leave(self, node) -> None:
        super().on_leave(node)
        self.stack.pop()
