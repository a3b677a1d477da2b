
from msmigrate.lint.rule import Rule


class FstringTensorStrict(Rule):
    """Flags f-strings of tensor values in code compiled with `fullgraph=True` (STRICT).

    ## What it does
    Finds f-strings with a tensor-valued replacement field in functions compiled under STRICT:
    `@ms.jit(fullgraph=True)`, or any compiled code when the project sets `strict = true` in
    `[tool.msmigrate.lint]`.

    ## Why is this bad?
    STRICT cannot format tensors and does not say so: `f"sum = {x.sum()}"` evaluated to `[0]`
    instead of `"sum = 6.0"`, and `print(f"...")` prints `Tensor(shape=[1], dtype=Int64,
    value=[0])` instead of the value. (The default LAX mode formats correctly, through a slow
    Python fallback.)

    ## Example
    ```python
    @ms.jit(fullgraph=True)
    def f(x):
        print(f"sum = {x.sum()}")
        return x + 1
    ```

    ## Use instead
    `print("sum =", x.sum())`, which is a graph Print op in every mode, or return the value
    and format it outside the compiled code.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG206"
    name = "fstring-tensor-strict"
    severity = "error"
    claim = "wrong-result"
    mode = "strict"

    def visit_JoinedStr(self, node, ctx):
        if ctx.in_graph and ctx.strict and ctx.is_tensor(node):
            self.report(node, "under fullgraph=True (STRICT) an f-string of a tensor value does not format the "
                              "value (observed: '[0]'): print the tensor as a separate argument")

    VALID = [
        """
import mindspore as ms

@ms.jit(fullgraph=True)
def f(x):
    return x + 1, x.sum()
""",
        """
import mindspore as ms

@ms.jit(fullgraph=True)
def f(x):
    return x + 1, f"rows = {x.shape[0]}"
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit(fullgraph=True)
def f(x):
    return x + 1, f"sum = {x.sum()}"
""",
    ]
