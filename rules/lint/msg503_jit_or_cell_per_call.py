import ast

from msmigrate.lint.rule import Rule


def _varies(call: ast.Call, loop) -> bool:
    """Do the constructor's arguments change with the loop (its variables, or names the loop body
    computes from them)? Then each iteration needs its own Cell (`for key in params:
    nn.ParameterUpdate(params[key])`, `for bn in (True, False): Block(bn_layer=bn)`)."""
    targets = {n.id for n in ast.walk(loop.target) if isinstance(n, ast.Name)} if isinstance(loop, ast.For) else set()
    for stmt in loop.body:  # names derived from them in the body (one pass, in order)
        for n in ast.walk(stmt):
            if isinstance(n, ast.Assign) and any(isinstance(v, ast.Name) and v.id in targets
                                                 for v in ast.walk(n.value)):
                targets.update(t.id for tg in n.targets for t in ast.walk(tg) if isinstance(t, ast.Name))
    used = {n.id for a in list(call.args) + [k.value for k in call.keywords] for n in ast.walk(a)
            if isinstance(n, ast.Name)}
    return bool(used & targets)


def _own_nodes(loop):
    """The nodes of `loop`'s body, not inside a nested loop or definition: a Cell built per pass
    of an outer loop and called in an inner one (a model per fold of k-fold cross-validation)
    compiles once per pass and is reused there."""
    stack = list(loop.body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.For, ast.While, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))


class JitOrCellPerCall(Rule):
    """Flags `ms.jit(...)` wrappers and Cells created anew for every call.

    ## What it does
    Finds `ms.jit(fn)` inside a loop or called immediately (`ms.jit(fn)(x)`) inside a function,
    and Cells constructed inside a loop and called in that loop (`net = Net(); net(x)` or
    `Net()(x)`), outside compiled code.

    ## Why is this bad?
    Compiled graphs are cached per jit object and per Cell instance. A new one compiles again
    on every call (4 compiles in 4 calls observed). For Cells MindSpore only logs this at INFO.

    ## Example
    ```python
    for x in batches:
        net = Net()
        y = net(x)
    ```

    ## Use instead
    Create the Cell or the jit wrapper once, outside the loop, and reuse it. (A Cell built from
    the loop's variables, a different Cell each iteration, is not flagged; nor one called only
    in a nested loop or function, as a model built per fold of k-fold cross-validation.)

    ## Fix safety
    No automatic fix.
    """
    code = "MSG503"
    name = "jit-or-cell-per-call"
    severity = "warning"
    claim = "recompile"

    def _is_cell_class(self, func, ctx) -> bool:
        if isinstance(func, ast.Name) and func.id in ctx.model.cell_classes:
            return True
        q = ctx.qualname(func) or ""
        return q.startswith("mindspore.nn.") and q.rsplit(".", 1)[-1][:1].isupper()

    def visit_Call(self, node, ctx):
        if ctx.in_graph:
            return
        f = node.func
        if isinstance(f, ast.Call) and ctx.functions and ctx.model.is_jit(f.func)[0]:
            self.report(node, "ms.jit(...) applied on every call compiles every time: create the wrapper once")
            return
        if isinstance(f, ast.Call) and ctx.loops and self._is_cell_class(f.func, ctx) and \
                not _varies(f, ctx.loops[-1]):
            self.report(node, "a Cell constructed and called in a loop compiles every iteration: create it once")
            return
        if not ctx.loops:
            return
        if ctx.model.is_jit(f)[0] and node.args:
            self.report(node, "ms.jit(...) inside a loop creates a new compiled function each iteration: "
                              "create it once before the loop")

    def visit_Assign(self, node, ctx):
        if ctx.in_graph or not ctx.loops or not isinstance(node.value, ast.Call) or \
                not self._is_cell_class(node.value.func, ctx) or _varies(node.value, ctx.loops[-1]):
            return
        names = {t.id for t in node.targets if isinstance(t, ast.Name)}
        for n in _own_nodes(ctx.loops[-1]):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names:
                self.report(node, f"'{ctx.text(node.value)}' is built and called in the same loop: each new Cell "
                                  "compiles its graph again; build it once before the loop")
                return

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return x * 2

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    net = Net()
    out = []
    for _ in range(3):
        out.append(net(x))
    return out
""",
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    x = ms.Tensor(np.ones((2, 3), np.float32))
    out = []
    for fold in range(1):   # k-fold: a Cell per fold, compiled once per fold, used by its epochs
        net = nn.Dense(3, 1, weight_init="ones")
        for epoch in range(3):
            out.append(net(x))
    return out
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return x * 2

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    out = []
    for _ in range(3):
        net = Net()
        out.append(net(x))
    return out
""",
        """
import numpy as np
import mindspore as ms

def double(x):
    return x * 2

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    out = []
    for _ in range(3):
        out.append(ms.jit(double)(x))
    return out
""",
    ]
