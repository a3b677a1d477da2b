import ast

from msmigrate.lint.rule import Rule


class GlobalWrite(Rule):
    """Flags writes to `global` variables in compiled code.

    ## What it does
    Finds `global X` followed by an assignment to `X` in a function MindSpore compiles.

    ## Why is this bad?
    The write is not part of the graph: it is silently dropped and the value read in the graph
    is frozen at compile time. `COUNTER += 1; return x + COUNTER` returned `x + 0` on every call
    (PyNative: x+1, x+2, x+3), with no error or warning, also under `fullgraph=True`.

    ## Example
    ```python
    COUNTER = 0

    @ms.jit
    def f(x):
        global COUNTER
        COUNTER += 1
        return x + COUNTER
    ```

    ## Use instead
    Keep state in a `Parameter` and update it with `ops.assign`/`ops.assign_add`, or keep the
    counter outside the compiled function and pass it in as a Tensor.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG201"
    name = "global-write"
    severity = "error"
    claim = "wrong-result"

    def _store(self, target, node, ctx):
        if not ctx.in_graph:
            return
        for n in ast.walk(target):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and n.id in ctx.graph.globals:
                self.report(node, f"write to global '{n.id}' in compiled code is dropped: the graph keeps "
                                  "the value seen at compile time; use a Parameter and ops.assign")

    def visit_Assign(self, node, ctx):
        for t in node.targets:
            self._store(t, node, ctx)

    def visit_AugAssign(self, node, ctx):
        self._store(node.target, node, ctx)

    def visit_AnnAssign(self, node, ctx):
        self._store(node.target, node, ctx)

    VALID = [
        """
import mindspore as ms

SCALE = 2.0

@ms.jit
def f(x):
    return x * SCALE
""",
        """
import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.counter = Parameter(Tensor(0.0, ms.float32), name="counter", requires_grad=False)

    def construct(self, x):
        ops.assign_add(self.counter, Tensor(1.0, ms.float32))
        return x + self.counter
""",
    ]
    INVALID = [
        """
import mindspore as ms

COUNTER = 0

@ms.jit
def f(x):
    global COUNTER
    COUNTER += 1
    return x + COUNTER
""",
    ]
