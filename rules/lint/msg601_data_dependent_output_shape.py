import ast

from msmigrate.lint.rule import Rule

DYNAMIC_OPS = frozenset({"masked_select", "nonzero", "unique", "unique_consecutive", "argwhere",
                         "unique_with_pad"})


class DataDependentOutputShape(Rule):
    """Reports ops whose output shape depends on tensor values (information).

    ## What it does
    Finds `masked_select`, `nonzero`, `unique`, `argwhere` and boolean-mask indexing
    (`x[x > 0]`) in compiled code.

    ## Why is this bad?
    On MindSpore 2.10 CPU these compile once and give correct results (verified), so this is
    not an error. One exception was observed: reducing an *empty* selection
    (`x[x > 0].sum()` with no positive element) returned garbage in PyNative and graph mode. Dynamic shapes can cost performance and portability on other backends
    (Ascend not verified), and block later shape-specialised optimisations.

    ## Example
    ```python
    @ms.jit
    def f(x):
        return x[x > -2] * 2
    ```

    ## Use instead
    Keep shapes static where you can: `ops.where(x > 0, x, ops.zeros_like(x))`,
    `ops.masked_fill`, or multiply by the mask.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG601"
    name = "data-dependent-output-shape"
    severity = "info"
    claim = "works"
    default = False

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and isinstance(f, ast.Attribute) and f.attr in DYNAMIC_OPS and \
                ((ctx.qualname(f) or "").startswith("mindspore") or ctx.is_tensor(f.value)):
            self.report(node, f"'{f.attr}' has a data-dependent output shape: consider a static-shape "
                              "alternative (ops.where, ops.masked_fill, mask multiply)")

    def visit_Subscript(self, node, ctx):
        if ctx.in_graph and isinstance(node.slice, ast.Compare) and ctx.is_tensor(node.slice) \
                and ctx.is_tensor(node.value):
            self.report(node, "boolean-mask indexing has a data-dependent output shape: consider "
                              "ops.where(mask, x, 0) to keep shapes static")

    VALID = [
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return ops.where(x > -2, x * 2, ops.zeros_like(x))
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x[x > -2] * 2
""",
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return ops.masked_select(x, x > -2)
""",
    ]
