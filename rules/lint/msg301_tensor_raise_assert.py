
from msmigrate.lint.rule import Rule


class TensorRaiseAssert(Rule):
    """Flags `raise` under a tensor-valued condition and `assert` on tensor values in compiled code.

    ## What it does
    Finds `raise` inside an `if`/`while` whose condition depends on tensor values, and
    `assert <tensor-valued expression>`. Checks on shapes or constants are not flagged, nor
    checks on a bare parameter (it may hold a Python number): the value must come from an op,
    a Tensor method or an expression computed from one.

    ## Why is this bad?
    It compiles and raises correctly the first time (after about 3 s), but afterwards every
    call of the same compiled graph fails, even with valid inputs: `RuntimeError: Invalid
    output number for flatten stub output nodes` / `An error occurred in the previous step`.

    ## Example
    ```python
    @ms.jit
    def f(x):
        if x.sum() > 10:
            raise ValueError("sum too large")
        return x * 2
    ```

    ## Use instead
    Validate values outside the compiled function, or make the code total (clamp or mask).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG301"
    name = "tensor-raise-assert"
    severity = "warning"
    claim = "breaks-after-trigger"

    def visit_Raise(self, node, ctx):
        if ctx.in_graph and any(ctx.is_tensor_derived(c.test) for c in ctx.tensor_conds):
            self.report(node, "raise under a tensor-valued condition: after it fires once, every later call "
                              "of this compiled graph fails; validate outside the graph")

    def visit_Assert(self, node, ctx):
        if ctx.in_graph and ctx.is_tensor_derived(node.test):
            self.report(node, "assert on tensor values: after it fails once, every later call of this "
                              "compiled graph fails; validate outside the graph")

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    if x.shape[0] > 8:
        raise ValueError("too long")
    return x * 2
""",
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return ops.clamp(x, -10.0, 10.0) * 2
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    if x.sum() > 10:
        raise ValueError("sum too large")
    return x * 2
""",
        """
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        assert x.sum() < 10, "sum too large"
        return x * 2
""",
    ]
