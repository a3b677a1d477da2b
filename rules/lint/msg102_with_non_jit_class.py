import ast

from msmigrate.lint.rule import GraphSyntaxRule


class WithNonJitClass(GraphSyntaxRule):
    """Flags `with` blocks in compiled code whose context manager is not a `@ms.jit_class` object.

    ## What it does
    Finds `with X:` in compiled code where `X` is created from a known non-`jit_class` type:
    `contextlib.*`, `mindspore._no_grad()`, `open(...)`, torch context managers, or an in-file
    class not decorated with `@ms.jit_class`.

    ## Why is this bad?
    Graph mode only supports `with` on `@ms.jit_class` instances. Anything else fails to compile:
    `TypeError: Only support jit_class instance, but got PythonObject(...)`.

    ## Example
    ```python
    @ms.jit
    def f(x):
        with contextlib.nullcontext():
            y = x + 1
        return y
    ```

    ## Use instead
    Drop the block (gradient scoping is done by `ms.grad`/`value_and_grad`, not by context
    managers), or decorate your own context manager class with `@ms.jit_class`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG102"
    name = "with-non-jit-class"
    nodes = (ast.With,)
    message = "`with` on a non-jit_class object does not compile ({where}): remove it or use a @ms.jit_class"

    def applies(self, node, ctx):
        model = ctx.model
        for item in node.items:
            expr = item.context_expr
            if not isinstance(expr, ast.Call):
                continue
            func = expr.func
            if isinstance(func, ast.Name) and func.id in model.classes:
                if func.id not in model.jit_classes and func.id not in model.cell_classes:
                    return True
                continue
            if isinstance(func, ast.Name) and func.id == "open":
                return True
            q = ctx.qualname(func)
            if q and not q.startswith("."):
                last = q.rsplit(".", 1)[-1]
                if q.startswith("mindspore") and last not in ("_no_grad", "no_grad"):
                    continue
                return True
        return False

    VALID = [
        """
import mindspore as ms

@ms.jit_class
class Scale:
    def __init__(self, k):
        self.k = k

    def __enter__(self):
        return self.k

    def __exit__(self, *exc):
        return None

@ms.jit
def f(x):
    with Scale(2.0) as k:
        y = x * k
    return y
""",
    ]
    INVALID = [
        """
import contextlib
import mindspore as ms

@ms.jit
def f(x):
    with contextlib.nullcontext():
        y = x + 1
    return y
""",
        """
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        with ms._no_grad():
            y = x * 2
        return y
""",
    ]
