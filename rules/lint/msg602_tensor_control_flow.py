
from msmigrate.lint.rule import Rule


class TensorControlFlow(Rule):
    """Reports `if`/`while` on tensor values in compiled code (information).

    ## What it does
    Finds `if`, `while` and conditional expressions whose condition depends on tensor values.

    ## Why is this bad?
    It works (compiles once and matches PyNative, verified), but every such branch becomes a
    control-flow subgraph: longer compiles and fewer fusion opportunities.

    ## Example
    ```python
    @ms.jit
    def f(x):
        if x.sum() > 0:
            return x * 2
        return x
    ```

    ## Use instead
    For small branches, compute both sides and select: `ops.select(x.sum() > 0, x * 2, x)`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG602"
    name = "tensor-control-flow"
    severity = "info"
    claim = "works"
    default = False

    def _check(self, node, ctx):
        if ctx.in_graph and ctx.is_tensor(node.test):
            self.report(node, f"`{type(node).__name__.lower()}` on a tensor value builds control-flow subgraphs: "
                              "for small branches use ops.select")

    visit_If = visit_While = visit_IfExp = _check

    VALID = [
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return ops.select(x > 0, x * 2, x)
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    if x.sum() > 0:
        return x * 2
    return x
""",
    ]
