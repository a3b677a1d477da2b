import ast

from msmigrate.lint.rule import GraphSyntaxRule


class MatchInGraph(GraphSyntaxRule):
    """Flags `match` statements in compiled code.

    ## What it does
    Finds structural pattern matching in functions MindSpore compiles.

    ## Why is this bad?
    `RuntimeError: Unsupported statement 'Match'.` at the first call.

    ## Example
    ```python
    MODE = "double"

    @ms.jit
    def f(x):
        match MODE:
            case "double":
                return x * 2
            case _:
                return x
    ```

    ## Use instead
    Use `if`/`elif`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG110"
    name = "match-in-graph"
    nodes = (ast.Match,)
    message = "`match` is not supported in compiled code ({where}): use if/elif"
    VALID = [
        """
import mindspore as ms

MODE = "double"

@ms.jit
def f(x):
    if MODE == "double":
        return x * 2
    return x
""",
    ]
    INVALID = [
        """
import mindspore as ms

MODE = "double"

@ms.jit
def f(x):
    match MODE:
        case "double":
            return x * 2
        case _:
            return x
""",
    ]
