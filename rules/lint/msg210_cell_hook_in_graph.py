import ast

from msmigrate.lint.rule import Rule

_HOOKS = frozenset({"register_forward_hook", "register_forward_pre_hook", "register_backward_hook",
                    "register_backward_pre_hook"})
_GRAPH_MODES = frozenset({"mindspore.GRAPH_MODE", "mindspore.context.GRAPH_MODE"})


class CellHookInGraph(Rule):
    """Flags Cell hooks registered where the Cell runs compiled.

    ## What it does
    Finds `cell.register_forward_hook(...)`, `register_forward_pre_hook`,
    `register_backward_hook` and `register_backward_pre_hook` in a file that compiles code
    (a `@ms.jit` function, `ms.jit(...)`, or `set_context(mode=GRAPH_MODE)`), and in the
    methods of a Cell class, whose `construct` is compiled wherever the Cell is called from
    compiled code.

    ## Why is this bad?
    MindSpore runs Cell hooks in PyNative only: a call of the Cell inside compiled code skips
    them without an error or a warning. Activations a forward hook collects are never
    collected (a later read fails, or reads stale values), an input a pre-hook rewrites is not
    rewritten, a gradient a backward hook clips or records is not (observed in MindSpore 2.10:
    a forward hook appending the output recorded nothing from a `@ms.jit` training step).

    ## Example
    ```python
    acts = []
    net.relu.register_forward_hook(lambda cell, inputs, output: acts.append(output))

    @ms.jit
    def train_step(x, y):
        ...
    ```

    ## Use instead
    Return what the hook would see from `construct` (or compute it there), or run the steps
    that need the hook in PyNative (no `@ms.jit`).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG210"
    name = "cell-hook-in-graph"
    severity = "error"
    claim = "wrong-result"

    def finish(self, ctx):
        compiles = bool(ctx.model.jit_entries) or any(
            isinstance(n, (ast.Attribute, ast.Name)) and ctx.qualname(n) in _GRAPH_MODES for n in ast.walk(ctx.tree))
        cell_methods = {id(fn) for c in ast.walk(ctx.tree) if isinstance(c, ast.ClassDef)
                        and c.name in ctx.model.cell_classes for fn in c.body
                        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self._scan(ctx.tree, compiles, cell_methods, False)

    def _scan(self, node, compiles, cell_methods, in_cell):
        for child in ast.iter_child_nodes(node):
            inside = in_cell or id(child) in cell_methods
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and \
                    child.func.attr in _HOOKS and (compiles or inside):
                self.report(child, f"{child.func.attr}: MindSpore runs Cell hooks in PyNative only; calls of "
                                   "this Cell in compiled code (@ms.jit, GRAPH_MODE) skip it silently: return "
                                   "what it needs from construct, or run those calls uncompiled")
            self._scan(child, compiles, cell_methods, inside)

    VALID = [
        """
import numpy as np
from mindspore import Tensor, nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def construct(self, x):
        h = self.act(x)
        return h * 2, h

def drive():
    out, h = Net()(Tensor(np.array([-1.0, 2.0], np.float32)))
    return [out, h]
""",
    ]
    INVALID = [
        """
import numpy as np
from mindspore import Tensor, nn

seen = []

def record(cell, inputs, output):
    seen.append(output)

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()
        self.act.register_forward_hook(record)

    def construct(self, x):
        return self.act(x) * 2

def drive():
    seen.clear()
    out = Net()(Tensor(np.array([-1.0, 2.0], np.float32)))
    return [out, len(seen)]
""",
    ]
