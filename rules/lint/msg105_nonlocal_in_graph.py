import ast

from msmigrate.lint.rule import GraphSyntaxRule


class NonlocalInGraph(GraphSyntaxRule):
    """Flags `nonlocal` in compiled code.

    ## What it does
    Finds `nonlocal` declarations in functions MindSpore compiles (including closures).

    ## Why is this bad?
    `RuntimeError: Unsupported statement 'Nonlocal'.` at the first call.

    ## Example
    ```python
    @ms.jit
    def f(x):
        total = x
        def add(v):
            nonlocal total
            total = total + v
        add(x)
        return total
    ```

    ## Use instead
    Return the new value from the inner function and rebind it in the caller.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG105"
    name = "nonlocal-in-graph"
    nodes = (ast.Nonlocal,)
    message = "`nonlocal` is not supported in compiled code ({where}): return the value instead"
    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    total = x
    def add(v):
        return total + v
    total = add(x)
    return total
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    total = x
    def add(v):
        nonlocal total
        total = total + v
    add(x)
    return total
""",
    ]
