import ast

from msmigrate.lint.rule import Rule


class NonParameterSelfAssign(Rule):
    """Flags `self.attr = ...` on non-Parameter attributes inside `construct` and other compiled methods.

    ## What it does
    Finds assignments to attributes of `self` in compiled code, where the attribute is not a
    `Parameter` created in `__init__`.

    ## Why is this bad?
    The default (LAX) mode runs the assignment as Python at run time on every call (JIT
    Fallback): correct, but slow. `fullgraph=True` / STRICT rejects it.

    ## Example
    ```python
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.step = 0

        def construct(self, x):
            self.step = self.step + 1
            return x + self.step
    ```

    ## Use instead
    Keep the state in a `Parameter(..., requires_grad=False)` and update it with
    `ops.assign`/`ops.assign_add`, or keep Python counters outside the compiled code.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG403"
    name = "non-parameter-self-assign"
    severity = "warning"
    claim = "fallback"

    def _check(self, target, node, ctx):
        if not (ctx.in_graph and ctx.graph.cls is not None):
            return
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
            if target.attr not in ctx.model.cell_params.get(ctx.graph.cls.name, ()):
                self.report(node, f"'self.{target.attr} = ...' in compiled code runs as Python on every call "
                                  "and fails under fullgraph=True: use a Parameter and ops.assign")

    def visit_Assign(self, node, ctx):
        for t in node.targets:
            self._check(t, node, ctx)

    def visit_AugAssign(self, node, ctx):
        self._check(node.target, node, ctx)

    VALID = [
        """
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.step = Parameter(Tensor(0.0, ms.float32), name="step", requires_grad=False)

    def construct(self, x):
        ops.assign_add(self.step, Tensor(1.0, ms.float32))
        return x + self.step
""",
    ]
    INVALID = [
        """
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.step = 0

    def construct(self, x):
        self.step = self.step + 1
        return x + self.step
""",
    ]
