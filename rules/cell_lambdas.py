"""A lambda given to a network class of the project (`LambdaLayer(lambda x: F.pad(x[:, :, ::2, ::2],
...))`, the option-A shortcut of CIFAR ResNets) -> a def just before the statement, the argument its
name: `def msmigrate_fn(x): return ...` / `LambdaLayer(msmigrate_fn)`.

The Cell keeps the function and calls it from its compiled `construct`; MindSpore compiles a function
from the lines that define it, and refuses a lambda that is not the whole of its line ("Parse Lambda
Function Fail. Node type must be Lambda, but got Call"): every step of such a network failed. A def
computes the same (same parameters, defaults evaluated at the same point of the same scope, same
free variables). Left: a lambda inside a comprehension or another lambda (its variables are not
those of the enclosing statement), and a statement of a class body (a def there would be a method).
A structural pass on torch names, after SplitStatementsPass (one statement a line)."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, dotted, fresh_name
from msmigrate.rules.training_loop import ModuleInstances


class _Lambdas(cst.CSTVisitor):
    """The lambdas of one statement that are direct arguments of a call of a network class, outside
    comprehensions and other lambdas."""

    def __init__(self, is_network) -> None:
        self.is_network = is_network
        self.found: list[cst.Lambda] = []
        self.depth = 0

    def _enter(self, node) -> None:
        self.depth += 1

    def _leave(self, node) -> None:
        self.depth -= 1

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _enter
    leave_Lambda = leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        if self.depth == 0 and self.is_network(node.func):
            self.found.extend(a.value for a in node.args if isinstance(a.value, cst.Lambda))


class _Swap(cst.CSTTransformer):
    def __init__(self, names: dict[int, str]) -> None:
        self.names = names

    def leave_Lambda(self, original, updated):
        name = self.names.get(id(original))
        return cst.Name(name) if name is not None else updated


class CellLambdasPass(FocusedTransformer):

    @staticmethod
    def applies(source: str) -> bool:
        return "lambda" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        instances = ModuleInstances(dict(ctx.names.imports), ctx.project)
        ctx.module.visit(instances)
        self.classes = instances.classes
        self.class_bodies: list[bool] = [False]   # the innermost block is a class body

    def _is_network(self, func) -> bool:
        name = dotted(func) or ""
        return name in self.classes or (self.ctx.project.get(name) or "").startswith("torch.nn.Module")

    def visit_ClassDef(self, node) -> None:
        self.class_bodies.append(True)

    def leave_ClassDef(self, original, updated):
        self.class_bodies.pop()
        return updated

    def visit_FunctionDef(self, node) -> None:
        self.class_bodies.append(False)

    def leave_FunctionDef(self, original, updated):
        self.class_bodies.pop()
        return updated

    def leave_IndentedBlock(self, original, updated):
        return updated.with_changes(body=self._hoist(updated.body))

    def leave_Module(self, original, updated):
        return updated.with_changes(body=self._hoist(updated.body))

    def _hoist(self, body) -> list:
        if self.class_bodies[-1]:
            return list(body)
        out = []
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                out.append(stmt)
                continue
            finder = _Lambdas(self._is_network)
            stmt.visit(finder)
            if not finder.found:
                out.append(stmt)
                continue
            names = {}
            for fn in finder.found:
                name = fresh_name("msmigrate_fn", self.ctx.names.taken | set(self.ctx.names.imports))
                self.ctx.names.taken.add(name)
                names[id(fn)] = name
                params = cst.Module([]).code_for_node(fn.params)
                value = cst.Module([]).code_for_node(fn.body)
                if "\n" in value:   # a body spread over lines inside the call's parentheses
                    value = f"({value})"
                define = cst.parse_statement(f"def {name}({params}):\n    return {value}\n")
                out.append(define.with_changes(leading_lines=stmt.leading_lines if len(names) == 1 else []))
            out.append(stmt.visit(_Swap(names)).with_changes(leading_lines=[]))
            self.changes += 1
        return out
