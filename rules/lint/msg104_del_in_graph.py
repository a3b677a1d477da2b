import ast

from msmigrate.lint.rule import GraphSyntaxRule


class DelInGraph(GraphSyntaxRule):
    """Flags `del` statements in compiled code.

    ## What it does
    Finds `del name` / `del x[i]` / `del obj.attr` in compiled code.

    ## Why is this bad?
    Graph mode does not support `del`: `RuntimeError: Unsupported statement 'Delete'.`
    Freeing memory is the compiler's job inside a graph anyway.

    ## Example
    ```python
    @ms.jit
    def f(x):
        tmp = x * 2
        y = tmp + 1
        del tmp
        return y
    ```

    ## Use instead
    Remove the `del`; rebind the name if you need to drop a reference.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG104"
    name = "del-in-graph"
    nodes = (ast.Delete,)
    message = "`del` is not supported in compiled code ({where}): remove it"
    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    tmp = x * 2
    y = tmp + 1
    return y
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    tmp = x * 2
    y = tmp + 1
    del tmp
    return y
""",
    ]
