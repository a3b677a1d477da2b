import ast

from msmigrate.lint.rule import GraphSyntaxRule


class TryInGraph(GraphSyntaxRule):
    """Flags `try` statements in code MindSpore compiles.

    ## What it does
    Finds `try`/`except`/`finally` in a Cell's `construct`, a `@jit` function, or any function
    they call.

    ## Why is this bad?
    The graph compiler does not support exception handling: the first call fails with
    `RuntimeError: Unsupported statement 'Try'.` (all modes, including through a callee).

    ## Example
    ```python
    @ms.jit
    def f(x):
        try:
            y = x * 2
        except ValueError:
            y = x
        return y
    ```

    ## Use instead
    Handle errors outside the compiled function, around the call.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG101"
    name = "try-in-graph"
    nodes = (ast.Try, getattr(ast, "TryStar", ast.Try))
    message = "`try` is not supported in compiled code ({where}): handle errors outside the graph"
    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * 2
""",
        """
import mindspore as ms

@ms.jit
def double(x):
    return x * 2

def f(x):
    try:
        return double(x)
    except RuntimeError:
        return x
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return y
""",
        """
from mindspore import nn

def safe_double(x):
    try:
        return x * 2
    except ValueError:
        return x

class Net(nn.Cell):
    def construct(self, x):
        return safe_double(x) + 1
""",
    ]
