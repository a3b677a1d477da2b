import ast

from msmigrate.lint.rule import GraphSyntaxRule


class WalrusInGraph(GraphSyntaxRule):
    """Flags assignment expressions (`:=`) in compiled code.

    ## What it does
    Finds the walrus operator in functions MindSpore compiles.

    ## Why is this bad?
    `RuntimeError: Unsupported expression 'NamedExpr'.` at the first call.

    ## Example
    ```python
    @ms.jit
    def f(x):
        y = (z := x * 2) + 1
        return y + z
    ```

    ## Use instead
    Assign in a separate statement.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG107"
    name = "walrus-in-graph"
    nodes = (ast.NamedExpr,)
    message = "`:=` is not supported in compiled code ({where}): assign in a separate statement"
    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    z = x * 2
    y = z + 1
    return y + z
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    y = (z := x * 2) + 1
    return y + z
""",
    ]
