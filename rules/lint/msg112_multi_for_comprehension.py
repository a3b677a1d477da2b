import ast

from msmigrate.lint.rule import GraphSyntaxRule


class MultiForComprehension(GraphSyntaxRule):
    """Flags comprehensions with more than one `for` clause in compiled code.

    ## What it does
    Finds list/dict comprehensions and generator expressions with two or more `for` clauses.

    ## Why is this bad?
    The graph compiler supports a single generator per comprehension:
    `TypeError: The 'generators' supports 1 'comprehension' in ListComp/GeneratorExp, but got 2 comprehensions.`

    ## Example
    ```python
    @ms.jit
    def f(x):
        parts = [x * i * j for i in range(2) for j in range(2)]
        return parts[0] + parts[3]
    ```

    ## Use instead
    Nest plain `for` loops and `append`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG112"
    name = "multi-for-comprehension"
    nodes = (ast.ListComp, ast.DictComp, ast.GeneratorExp)
    message = "comprehensions with several `for` clauses do not compile ({where}): use nested loops"

    def applies(self, node, ctx):
        return len(node.generators) > 1

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = []
    for i in range(2):
        for j in range(2):
            parts.append(x * i * j)
    return parts[0] + parts[3]
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = [x * i * j for i in range(2) for j in range(2)]
    return parts[0] + parts[3]
""",
    ]
