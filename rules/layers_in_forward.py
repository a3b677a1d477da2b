"""Layers built and called in `forward` (graykode's BERT: `nn.Linear(n_heads * d_v, d_model)(context)`,
`nn.LayerNorm(d_model)(output + residual)`).

torch builds a new layer on every call: a Linear with freshly drawn, untrained weights (torch's
default init, U(-1/sqrt(in), 1/sqrt(in)) for weight and bias), a LayerNorm with weight 1 and bias
0. A Cell built in MindSpore's compiled `construct` makes its Parameters once, while compiling,
named `weight` / `gamma` whatever layer they sit in (two such layers in one step: "its name
'weight' already exists"), and keeps the first draw. This pass (on torch names, before the table
pass) writes what torch computes as functional calls the tables then convert:
`F.linear(x, (torch.rand(out, in) * 2 - 1) * in ** -0.5, ...)` (a new draw on every call, also in
a graph) and `F.layer_norm(x, shape, eps=eps)`. The Linear is marked: its weights never train,
in torch either.
"""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import kwarg
from msmigrate.names import FocusedTransformer, resolve

_LINEAR_ARGS = ("in_features", "out_features", "bias", "device", "dtype")
_NORM_ARGS = ("normalized_shape", "eps", "elementwise_affine", "bias", "device", "dtype")


def _bound(call: cst.Call, names: tuple[str, ...]) -> dict | None:
    """Arguments by name; None for * / ** arguments or unknown keywords."""
    out = {}
    for i, a in enumerate(call.args):
        if a.star:
            return None
        if a.keyword is None:
            if i >= len(names):
                return None
            out[names[i]] = a.value
        elif a.keyword.value in names:
            out[a.keyword.value] = a.value
        else:
            return None
    return out


def _paren(node: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(node, (cst.Name, cst.Integer, cst.Attribute, cst.Call, cst.Subscript)):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


class LayersInForwardPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "Linear(" in source or "LayerNorm(" in source

    def __init__(self, ctx) -> None:
        super().__init__(ctx.statements_naming({"Linear", "LayerNorm", "forward"}))
        self.imports = dict(ctx.names.imports)
        self.reporter = ctx.reporter
        self.positions = ctx.positions
        self.config = ctx.module.config_for_parsing
        torch = next((b for b, q in self.imports.items() if q == "torch"), None)
        nn = next((b for b, q in self.imports.items() if q == "torch.nn"), None)
        self.functional = f"{torch}.nn.functional" if torch else (f"{nn}.functional" if nn else None)
        self.torch = torch
        self.scopes: list[tuple[int, str]] = []   # (id, "class" / function name), innermost last
        self.notes: list[tuple[int, list[str]]] = []  # (id, notes) per enclosing statement visited

    # ---- where: a method named forward --------------------------------------------------
    def visit_ClassDef(self, node) -> None:
        self.scopes.append((id(node), "class"))

    def leave_ClassDef(self, original, updated):
        return self._leave_scope(original, updated)

    def visit_FunctionDef(self, node) -> None:
        self.scopes.append((id(node), node.name.value))

    def leave_FunctionDef(self, original, updated):
        return self._leave_scope(original, updated)

    def _leave_scope(self, original, updated):
        if self.scopes and self.scopes[-1][0] == id(original):   # else one the focus skipped
            self.scopes.pop()
        return updated

    def _in_forward(self) -> bool:
        return len(self.scopes) >= 2 and self.scopes[-1][1] == "forward" and self.scopes[-2][1] == "class"

    # ---- markers on the statement -------------------------------------------------------
    def visit_SimpleStatementLine(self, node) -> None:
        self.notes.append((id(node), []))

    def leave_SimpleStatementLine(self, original, updated):
        if not self.notes or self.notes[-1][0] != id(original):
            return updated   # a statement the focus skipped
        notes = self.notes.pop()[1]
        if not notes:
            return updated
        pos = self.positions.get(original)
        line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
        lines = list(updated.leading_lines)
        for message in dict.fromkeys(notes):
            marker = self.reporter.flag("review", message, line, col)
            lines.append(cst.EmptyLine(comment=cst.Comment(marker)))
        return updated.with_changes(leading_lines=lines)

    # ---- the rewrite ----------------------------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call):
        if not self._in_forward() or self.functional is None or not isinstance(updated.func, cst.Call):
            return updated
        if len(updated.args) != 1 or updated.args[0].keyword is not None or updated.args[0].star:
            return updated
        layer = resolve(original.func.func, self.imports)
        x = updated.args[0].value
        if layer == "torch.nn.Linear":
            new = self._linear(updated.func, x)
        elif layer == "torch.nn.LayerNorm":
            new = self._layer_norm(updated.func, x)
        else:
            return updated
        if new is None:
            return updated
        self.changes += 1
        return new

    def _linear(self, ctor: cst.Call, x):
        args = _bound(ctor, _LINEAR_ARGS)
        if self.torch is None or args is None or "in_features" not in args or "out_features" not in args \
                or "device" in args or "dtype" in args:
            return None
        bias = args.get("bias")
        if bias is not None and not (isinstance(bias, cst.Name) and bias.value in ("True", "False")):
            return None
        n_in, n_out = _paren(args["in_features"]), _paren(args["out_features"])
        code = lambda node: cst.Module([]).code_for_node(node)  # noqa: E731
        draw = lambda shape: (f"({self.torch}.rand({shape}) * 2 - 1) * {code(n_in)} ** -0.5")  # noqa: E731
        w = draw(f"{code(n_out)}, {code(n_in)}")
        b = "None" if isinstance(bias, cst.Name) and bias.value == "False" else draw(code(n_out))
        if self.notes:
            self.notes[-1][1].append(
                "torch.nn.Linear built in forward: torch makes a new layer, with new untrained weights, "
                "on every call; converted to that (a linear map with weights drawn like nn.Linear's "
                "default init on every call): to train it, make it a child in __init__")
        call = cst.parse_expression(f"{self.functional}.linear(X, {w}, {b})", config=self.config)
        return call.with_changes(args=[call.args[0].with_changes(value=x), *call.args[1:]])

    def _layer_norm(self, ctor: cst.Call, x):
        args = _bound(ctor, _NORM_ARGS)
        if args is None or "normalized_shape" not in args or "device" in args or "dtype" in args:
            return None
        shape = args["normalized_shape"]
        if not isinstance(shape, (cst.Tuple, cst.List)):   # an int (a tuple in a name: the ints it holds)
            shape = cst.Tuple([cst.Element(shape)])
        new = [cst.Arg(x), cst.Arg(shape)]
        if "eps" in args:
            new.append(kwarg("eps", args["eps"]))
        # weight 1 and bias 0 (elementwise_affine or not): no affine part
        return cst.parse_expression(f"{self.functional}.layer_norm(X)", config=self.config).with_changes(args=new)
