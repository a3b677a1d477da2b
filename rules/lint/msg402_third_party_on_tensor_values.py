
from msmigrate.lint.rule import Rule

THIRD_PARTY = ("numpy.", "math.", "scipy.", "cmath.", "statistics.")


class ThirdPartyOnTensorValues(Rule):
    """Flags numpy / math / scipy calls on tensor values in compiled code.

    ## What it does
    Finds `np.*`, `math.*`, `scipy.*` calls whose arguments depend on tensor values (through
    `float(t)`, `.asnumpy()`, ...). Calls on shapes and constants are fine and not flagged.

    ## Why is this bad?
    The call cannot be compiled, so it runs as Python at run time on every call (JIT
    Fallback); `fullgraph=True` rejects it.

    ## Example
    ```python
    @ms.jit
    def f(x):
        return x * math.sqrt(float(x.abs().sum()))
    ```

    ## Use instead
    Use the `mindspore.ops` equivalent on the tensor (`ops.sqrt(x.abs().sum())`).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG402"
    name = "third-party-on-tensor-values"
    severity = "warning"
    claim = "fallback"

    def visit_Call(self, node, ctx):
        if not ctx.in_graph:
            return
        q = ctx.qualname(node.func)
        if q and q.startswith(THIRD_PARTY) and (
                any(ctx.is_tensor(a) for a in node.args) or any(ctx.is_tensor(k.value) for k in node.keywords)):
            self.report(node, f"'{q}()' on tensor values runs as Python on every call (JIT Fallback) and fails "
                              "under fullgraph=True: use the mindspore.ops equivalent")

    VALID = [
        """
import math
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return x * ops.sqrt(x.abs().sum()) / math.sqrt(x.shape[-1])
""",
    ]
    INVALID = [
        """
import math
import mindspore as ms

@ms.jit
def f(x):
    return x * math.sqrt(float(x.abs().sum()))
""",
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x):
    return x * float(np.tanh(x.asnumpy()).sum())
""",
    ]
