"""Names bound to a legacy tensor type, often picked by device:

    Tensor = torch.cuda.FloatTensor if cuda else torch.FloatTensor
    valid = Tensor(imgs.size(0), 1).fill_(1.0)        # a constructor
    real = imgs.type(Tensor)                           # a cast

The name stands for the type wherever it is read (the branches differ only in device, which is
global in MindSpore), so this pass (on torch names, before the table pass) writes the CPU type
there: `torch.FloatTensor(imgs.size(0), 1)`, `imgs.type(torch.FloatTensor)`, which the tables then
convert like any spelled-out use. A name also bound to anything else, or whose branches differ in
dtype, is left alone."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import Bindings, FocusedTransformer, bound_name, dotted, resolve

TYPES = ("FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "LongTensor", "IntTensor",
         "ShortTensor", "CharTensor", "ByteTensor", "BoolTensor")


class TensorTypeNamesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "Tensor" in source

    def __init__(self, ctx) -> None:
        self.imports = dict(ctx.names.imports)
        self.torch = bound_name(self.imports, "torch")
        bindings = Bindings(lambda value: self._type_of(value) is not None)
        ctx.module.visit(bindings)
        kinds: dict[str, set[str]] = {}
        for stmt in _assignments(ctx.module):
            kind = self._type_of(stmt.value)
            for t in stmt.targets:
                if kind is not None and dotted(t.target) is not None:
                    kinds.setdefault(dotted(t.target), set()).add(kind)
        self.types = {} if self.torch is None else \
            {n: next(iter(kinds[n])) for n in bindings.only_chosen if len(kinds.get(n, ())) == 1}
        super().__init__(ctx.statements_naming({n.split(".")[-1] for n in self.types} or {"\0"}))
        self._not_reads: set[int] = set()   # assignment targets, attribute names, keywords

    def _resolve(self, expr) -> str | None:
        return resolve(expr, self.imports)

    def _type_of(self, value) -> str | None:
        """'FloatTensor' for torch.FloatTensor / torch.cuda.FloatTensor / `a if c else b` of those."""
        if isinstance(value, cst.IfExp):
            body, orelse = self._type_of(value.body), self._type_of(value.orelse)
            # `torch.cuda.FloatTensor if cuda else torch.Tensor`: torch.Tensor is the default type
            body = body or ("FloatTensor" if orelse == "FloatTensor" and self._default_type(value.body) else None)
            orelse = orelse or ("FloatTensor" if body == "FloatTensor" and self._default_type(value.orelse) else None)
            return body if body is not None and body == orelse else None
        q = self._resolve(value)
        if q is None:
            return None
        leaf = q.rsplit(".", 1)[-1]
        return leaf if leaf in TYPES and q in (f"torch.{leaf}", f"torch.cuda.{leaf}") else None

    def _default_type(self, value) -> bool:
        return self._resolve(value) == "torch.Tensor"

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._not_reads.add(id(node.target))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._not_reads.add(id(node.attr))

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._not_reads.add(id(node.keyword))

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        kind = self._type_of(original.value)
        if kind is None or not any(dotted(t.target) in self.types for t in original.targets):
            return updated
        self.changes += 1   # the name stays bound (to the CPU type) for reads this pass cannot see
        return updated.with_changes(value=cst.parse_expression(f"{self.torch}.{kind}"))

    def _substitute(self, original, updated):
        name = dotted(original)
        if name not in self.types or id(original) in self._not_reads:
            return updated
        self.changes += 1
        return cst.parse_expression(f"{self.torch}.{self.types[name]}")

    leave_Name = _substitute
    leave_Attribute = _substitute


def _assignments(module: cst.Module) -> list[cst.Assign]:
    found = []

    class V(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            found.append(node)

    module.visit(V())
    return found
