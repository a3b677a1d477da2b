import ast

from msmigrate.lint.rule import GraphSyntaxRule


class ClassDefInGraph(GraphSyntaxRule):
    """Flags `class` statements inside compiled code.

    ## What it does
    Finds a class defined inside `construct`, a `@jit` function, or a function they call.

    ## Why is this bad?
    `RuntimeError: Unsupported statement 'ClassDef'.` at the first call.

    ## Example
    ```python
    @ms.jit
    def f(x):
        class Pair:
            pass
        return x + 1
    ```

    ## Use instead
    Define the class at module level.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG106"
    name = "classdef-in-graph"
    nodes = (ast.ClassDef,)
    message = "defining a class in compiled code is not supported ({where}): move it to module level"
    VALID = [
        """
import mindspore as ms

class Pair:
    pass

@ms.jit
def f(x):
    return x + 1
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    class Pair:
        pass
    return x + 1
""",
    ]
