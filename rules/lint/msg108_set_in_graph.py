import ast

from msmigrate.lint.rule import GraphSyntaxRule


class SetInGraph(GraphSyntaxRule):
    """Flags set literals and set comprehensions in compiled code.

    ## What it does
    Finds `{a, b}` and `{v for v in ...}` in functions MindSpore compiles.

    ## Why is this bad?
    Graph mode has no `set` type: `RuntimeError: Unsupported expression 'Set'.` (or 'SetComp').

    ## Example
    ```python
    @ms.jit
    def f(x):
        return x * len({1, 2, 3})
    ```

    ## Use instead
    Use a tuple or list (`(1, 2, 3)`); deduplicate outside the graph.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG108"
    name = "set-in-graph"
    nodes = (ast.Set, ast.SetComp)
    message = "sets are not supported in compiled code ({where}): use a tuple or list"
    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * len((1, 2, 3))
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * len({1, 2, 3})
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * len({k for k in (1, 2, 3)})
""",
    ]
