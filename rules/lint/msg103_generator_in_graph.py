import ast

from msmigrate.lint.rule import GraphSyntaxRule


class GeneratorInGraph(GraphSyntaxRule):
    """Flags `yield` / `yield from` in compiled code or in functions it calls.

    ## What it does
    Finds generator functions among the functions MindSpore compiles.

    ## Why is this bad?
    Generators are not supported in graph mode: `RuntimeError: Unsupported expression 'Yield'.`
    Generator *expressions* (`sum(x for x in ...)`) are fine.

    ## Example
    ```python
    def pieces(x):
        yield x
        yield x * 2

    @ms.jit
    def f(x):
        total = x * 0
        for p in pieces(x):
            total = total + p
        return total
    ```

    ## Use instead
    Return a list or tuple, or use a comprehension.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG103"
    name = "generator-in-graph"
    nodes = (ast.Yield, ast.YieldFrom)
    message = "generators are not supported in compiled code ({where}): return a tuple or list instead"
    VALID = [
        """
import mindspore as ms

def pieces(x):
    return [x * k for k in (1, 2)]

@ms.jit
def f(x):
    total = x * 0
    for p in pieces(x):
        total = total + p
    return total
""",
    ]
    INVALID = [
        """
import mindspore as ms

def pieces(x):
    yield x
    yield x * 2

@ms.jit
def f(x):
    total = x * 0
    for p in pieces(x):
        total = total + p
    return total
""",
    ]
