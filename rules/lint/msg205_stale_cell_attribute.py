import ast

from msmigrate.lint.rule import Rule


class StaleCellAttribute(Rule):
    """Flags changes to a Cell's plain Python attributes that `construct` reads.

    ## What it does
    Finds assignments like `net.scale = 2.0` on an instance of an in-file Cell class, where
    `construct` reads `self.scale` and the attribute is not a `Parameter`. (Writes inside the
    class's own methods are not flagged: they are usually set-up before the first call.)

    ## Why is this bad?
    The compiled graph keeps the value the attribute had at compile time: changing it later
    has no effect and no warning (as documented, and observed: x*1 on every call after
    setting the scale to 2 and 3).

    ## Example
    ```python
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.scale = 1.0

        def construct(self, x):
            return x * self.scale

    net = Net()
    net.scale = 2.0   # ignored by the compiled graph
    ```

    ## Use instead
    Make it a `Parameter(..., requires_grad=False)` and update it with `set_data`, or pass
    the value as a Tensor argument to `construct`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG205"
    name = "stale-cell-attribute"
    severity = "error"
    claim = "wrong-result"

    def finish(self, ctx):
        model = ctx.model
        reads: dict[str, set[str]] = {}
        for cls_name in model.cell_classes:
            construct = model.class_methods(cls_name).get("construct")
            if construct is None:
                continue
            attrs = set()
            for n in ast.walk(construct):
                if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self" \
                        and isinstance(n.ctx, ast.Load):
                    attrs.add(n.attr)
            methods = model.class_methods(cls_name)
            reads[cls_name] = attrs - set(methods) - model.cell_params.get(cls_name, set()) \
                - model.cell_children.get(cls_name, set()) - {"training"}
        if not reads:
            return
        for var, cls_name in model.instances.items():
            if cls_name in reads:
                self._check_writes(ctx.tree, var, cls_name, reads, ctx)

    def _check_writes(self, scope, var, cls_name, reads, ctx):
        for n in ast.walk(scope):
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == var \
                            and t.attr in reads[cls_name] and not self._is_parameter(n):
                        self.report(n, f"'{var}.{t.attr}' is read by {cls_name}.construct, which keeps the value "
                                       "it was compiled with: make it a Parameter and use set_data")

    @staticmethod
    def _is_parameter(assign) -> bool:
        v = assign.value
        return isinstance(v, ast.Call) and (getattr(v.func, "attr", None) or getattr(v.func, "id", "")) == "Parameter"

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import Parameter, Tensor, nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = Parameter(Tensor(1.0, ms.float32), name="scale", requires_grad=False)

    def construct(self, x):
        return x * self.scale

def drive():
    net = Net()
    x = Tensor(np.ones(3, np.float32))
    out = []
    for s in (1.0, 2.0, 3.0):
        net.scale.set_data(Tensor(s, ms.float32))
        out.append(net(x))
    return out
""",
    ]
    INVALID = [
        """
import numpy as np
from mindspore import Tensor, nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def construct(self, x):
        return x * self.scale

def drive():
    net = Net()
    x = Tensor(np.ones(3, np.float32))
    out = []
    for s in (1.0, 2.0, 3.0):
        net.scale = s
        out.append(net(x))
    return out
""",
    ]
