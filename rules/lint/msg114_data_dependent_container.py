import ast

from msmigrate.lint.rule import Rule

GROW = frozenset({"append", "extend", "insert", "pop", "remove", "clear"})


class DataDependentContainer(Rule):
    """Flags lists whose length depends on tensor values.

    ## What it does
    Finds `lst.append/extend/insert/pop(...)` and `lst += ...` inside a `while` loop whose
    condition is tensor-valued, on a list bound before the loop.

    ## Why is this bad?
    A list's length is part of its graph type. When the number of iterations depends on data,
    the compiler cannot type the list and the first call fails with a cryptic error such as
    `ValueError: For primitive:'list_getitem', cannot get item by index from an empty sequence.`
    (Appending under a tensor-valued `if` was observed to compile and work in 2.10: not flagged.)

    ## Example
    ```python
    @ms.jit
    def f(x):
        parts = []
        n = x.sum()
        while n > 0:
            parts.append(x)
            n = n - 5
        return parts[-1]
    ```

    ## Use instead
    Keep the length fixed: loop a constant number of times and select values
    (`ops.select(cond, a, b)`), or accumulate into a tensor instead of a list.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG114"
    name = "data-dependent-container"
    severity = "error"
    claim = "compile-error"

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and self._loop(ctx) is not None and isinstance(f, ast.Attribute) and f.attr in GROW \
                and isinstance(f.value, ast.Name) and self._outside(f.value.id, ctx):
            self.report(node, f"'{f.value.id}.{f.attr}()' in a tensor-valued `while` makes the list's "
                              "length data-dependent: keep the length fixed and select values")

    def visit_AugAssign(self, node, ctx):
        if ctx.in_graph and self._loop(ctx) is not None and isinstance(node.op, ast.Add) and \
                isinstance(node.target, ast.Name) and isinstance(node.value, (ast.List, ast.Tuple)) and \
                self._outside(node.target.id, ctx):
            self.report(node, f"'{node.target.id} +=' in a tensor-valued `while` makes the sequence's "
                              "length data-dependent: keep the length fixed and select values")

    @staticmethod
    def _loop(ctx):
        return next((n for n in ctx.tensor_conds if isinstance(n, ast.While)), None)

    def _outside(self, name, ctx) -> bool:
        block = self._loop(ctx)
        lines = ctx.graph.assigned.get(name, ())
        return any(ln < block.lineno for ln in lines)

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    total = x * 0
    n = x.sum()
    while n > 0:
        total = total + x
        n = n - 5
    return total
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = [x]
    if x.sum() > 0:
        parts.append(x * 2)
    return len(parts)
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = []
    n = x.sum()
    while n > 0:
        parts.append(x)
        n = n - 5
    return parts[-1]
""",
    ]
