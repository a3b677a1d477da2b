import ast

from msmigrate.lint.rule import Rule


class TensorStringFormatting(Rule):
    """Flags `str.format` and `%` formatting of tensor values in compiled code.

    ## What it does
    Finds `"...".format(t)` and `"..." % t` where an operand depends on tensor values.

    ## Why is this bad?
    Formatting a tensor cannot be compiled: the default (LAX) mode runs it as Python on every
    call (JIT Fallback) and `fullgraph=True` fails to compile it.

    ## Example
    ```python
    @ms.jit
    def f(x):
        print("sum = {}".format(x.sum()))
        return x + 1
    ```

    ## Use instead
    `print("sum =", x.sum())`, which stays a graph Print op in every mode.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG404"
    name = "tensor-string-formatting"
    severity = "warning"
    claim = "fallback"

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and isinstance(f, ast.Attribute) and f.attr == "format" and \
                isinstance(f.value, ast.Constant) and isinstance(f.value.value, str) and \
                (any(ctx.is_tensor(a) for a in node.args) or any(ctx.is_tensor(k.value) for k in node.keywords)):
            self.report(node, "formatting tensor values falls back to Python on every call and fails under "
                              "fullgraph=True: print the tensor as a separate argument")

    def visit_BinOp(self, node, ctx):
        if ctx.in_graph and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and \
                isinstance(node.left.value, str) and ctx.is_tensor(node.right):
            self.report(node, "'%' formatting of tensor values falls back to Python on every call and fails "
                              "under fullgraph=True: print the tensor as a separate argument")

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    print("sum =", x.sum())
    return x + 1
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    print("sum = {}".format(x.sum()))
    return x + 1
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    print("sum = %s" % x.sum())
    return x + 1
""",
    ]
