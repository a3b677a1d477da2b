"""Name resolution without libcst's (slow) scope metadata.

`import torch.nn as nn`, `from torch import nn, optim`, `import torch.nn.functional as F`,
`from torch.optim import Adam` all become bindings `alias -> qualified name`. Function and
lambda scopes that bind the same name (a parameter `torch`, a local `nn = ...`) shadow them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

# Packages whose references the converter rewrites.
SOURCE_ROOTS = frozenset({"torch", "torchvision", "torchaudio", "torchtext"})


def dotted(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` -> "a.b.c"; anything that is not a plain dotted name -> None."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if not isinstance(expr, cst.Name):
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def import_bindings(node: cst.Import | cst.ImportFrom) -> list[tuple[str, str]]:
    """The (bound name, qualified name) pairs an import statement creates."""
    out = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted(alias.name)
            if alias.asname is not None:
                out.append((alias.asname.name.value, full))
            else:  # `import torch.nn` binds `torch`
                root = full.split(".")[0]
                out.append((root, root))
    else:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return out
        module = dotted(node.module)
        for alias in node.names:
            name = alias.name.value
            bound = alias.asname.name.value if alias.asname is not None else name
            out.append((bound, f"{module}.{name}"))
    return out


def is_source(qualname: str | None) -> bool:
    return qualname is not None and qualname.split(".")[0] in SOURCE_ROOTS


class _BindingCollector(cst.CSTVisitor):
    """Names a function body binds, not descending into nested scopes."""

    def __init__(self) -> None:
        self.names: dict[str, str | None] = {}

    def _target(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.names[node.value] = None
        elif isinstance(node, (cst.Tuple, cst.List)):
            for el in node.elements:
                self._target(el.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._target(node.name.name)

    def visit_Import(self, node: cst.Import) -> bool:
        self.names.update(import_bindings(node))
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        self.names.update(import_bindings(node))
        return False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names[node.name.value] = None
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names[node.name.value] = None
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.names.pop(item.name.value, None)


def params_of(params: cst.Parameters) -> list[str]:
    out = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    for star in (params.star_arg, params.star_kwarg):
        if isinstance(star, cst.Param):
            out.append(star.name.value)
    return out


@dataclass
class Scope:
    kind: str  # module | class | function
    bindings: dict[str, str | None] = field(default_factory=dict)


class ScopeStack:
    """LEGB lookup over the scopes entered so far (class scopes are skipped from nested functions)."""

    def __init__(self, module_bindings: dict[str, str | None]) -> None:
        self.stack = [Scope("module", module_bindings)]

    def push_function(self, node: cst.FunctionDef | cst.Lambda) -> None:
        bindings: dict[str, str | None] = {n: None for n in params_of(node.params)}
        if isinstance(node, cst.FunctionDef):
            collector = _BindingCollector()
            node.body.visit(collector)
            bindings.update(collector.names)
        self.stack.append(Scope("function", bindings))

    def push_class(self, node: cst.ClassDef) -> None:
        collector = _BindingCollector()
        node.body.visit(collector)
        self.stack.append(Scope("class", collector.names))

    def pop(self) -> None:
        self.stack.pop()

    def resolve_name(self, name: str) -> str | None:
        innermost = len(self.stack) - 1
        for i in range(innermost, -1, -1):
            scope = self.stack[i]
            if scope.kind == "class" and i != innermost:
                continue
            if name in scope.bindings:
                return scope.bindings[name]
        return None

    def resolve(self, expr: cst.BaseExpression) -> str | None:
        """Qualified name of a dotted expression rooted at an imported name, else None."""
        name = dotted(expr)
        if name is None:
            return None
        root, _, rest = name.partition(".")
        target = self.resolve_name(root)
        if target is None:
            return None
        return f"{target}.{rest}" if rest else target


class _AllBindings(_BindingCollector):
    """Every name bound anywhere in the module, nested scopes included."""

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names[node.name.value] = None
        for p in params_of(node.params):
            self.names[p] = None
        return True

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names[node.name.value] = None
        return True

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        for p in params_of(node.params):
            self.names[p] = None
        return True

    def visit_Global(self, node: cst.Global) -> None:
        pass


def module_imports(module: cst.Module) -> dict[str, str]:
    """Bindings made by top-level import statements (also inside top-level if/try blocks)."""
    out: dict[str, str] = {}

    class _Top(cst.CSTVisitor):
        def visit_FunctionDef(self, node) -> bool:
            return False

        def visit_ClassDef(self, node) -> bool:
            return False

        def visit_Import(self, node) -> bool:
            out.update(import_bindings(node))
            return False

        visit_ImportFrom = visit_Import

    module.visit(_Top())
    return out


def taken_names(module: cst.Module) -> set[str]:
    """Names the file binds other than through torch imports: a new alias must avoid them."""
    collector = _AllBindings()
    module.visit(collector)
    return {name for name, qual in collector.names.items() if not is_source(qual)}
