import ast

from msmigrate.lint.rule import GraphSyntaxRule


class ImportInGraph(GraphSyntaxRule):
    """Flags `import` statements inside compiled code.

    ## What it does
    Finds `import x` / `from x import y` inside `construct`, `@jit` functions or their callees.

    ## Why is this bad?
    `RuntimeError: Unsupported statement 'Import'.` at the first call.

    ## Example
    ```python
    @ms.jit
    def f(x):
        import math
        return x * math.pi
    ```

    ## Use instead
    Import at module level.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG109"
    name = "import-in-graph"
    nodes = (ast.Import, ast.ImportFrom)
    message = "`import` is not supported in compiled code ({where}): import at module level"
    VALID = [
        """
import math
import mindspore as ms

@ms.jit
def f(x):
    return x * math.pi
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    import math
    return x * math.pi
""",
    ]
