import ast

from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg501_tensor_sequence_arg import compiled_callee


def _loop_index(loop) -> str | None:
    """The integer counter of `for i in range(...)` / `for i, _ in enumerate(...)`."""
    if not isinstance(loop, ast.For) or not isinstance(loop.iter, ast.Call) or \
            not isinstance(loop.iter.func, ast.Name):
        return None
    if loop.iter.func.id == "range" and isinstance(loop.target, ast.Name):
        return loop.target.id
    if loop.iter.func.id == "enumerate" and isinstance(loop.target, ast.Tuple) and \
            isinstance(loop.target.elts[0], ast.Name):
        return loop.target.elts[0].id
    return None


def _scalar_of(expr, index: str) -> bool:
    """`i`, `i * 0.5`, `base + i`: plain arithmetic on the loop counter (no calls)."""
    names = set()
    for n in ast.walk(expr):
        if isinstance(n, (ast.Call, ast.Subscript, ast.Attribute)):
            return False
        if isinstance(n, ast.Name):
            names.add(n.id)
    return index in names


def _rebound_before(loop, index: str, call) -> bool:
    """Is the counter rebound in the loop body before `call` (`i = ms.Tensor(i)`)? Then the
    call does not see the Python number."""
    return any(isinstance(n, ast.Name) and n.id == index and isinstance(n.ctx, ast.Store) and
               (n.lineno, n.col_offset) < (call.lineno, call.col_offset)
               for stmt in loop.body for n in ast.walk(stmt))


class VaryingPythonScalarArg(Rule):
    """Flags loop counters passed as Python numbers to a jitted function or Cell.

    ## What it does
    Finds calls of a `@jit` function or in-file Cell instance inside `for i in range(...)`
    (or `enumerate`) where an argument is plain arithmetic on the counter (`i`, `i * 0.5`).

    A counter rebound in the loop before the call (`step = ms.Tensor(step)`) is not flagged.

    ## Why is this bad?
    Python scalars are compile-time constants: every distinct value compiles a new graph
    (3 compiles for 3 values observed; a trivial Cell recompile costs ~0.2 s).

    ## Example
    ```python
    @ms.jit
    def f(x, scale):
        return x * scale

    for step in range(1000):
        f(x, step * 0.5)
    ```

    ## Use instead
    Pass a 0-d Tensor (`ms.Tensor(step * 0.5, ms.float32)`) or `ms.mutable(step * 0.5)`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG502"
    name = "varying-python-scalar-arg"
    severity = "warning"
    claim = "recompile"

    def visit_Call(self, node, ctx):
        if ctx.in_graph or not ctx.loops:
            return
        callee = compiled_callee(node, ctx)
        if callee is None:
            return
        for loop in ctx.loops:
            index = _loop_index(loop)
            if index is None or _rebound_before(loop, index, node):
                continue
            for arg in list(node.args) + [k.value for k in node.keywords]:
                if _scalar_of(arg, index):
                    self.report(arg, f"'{ctx.text(arg)}' changes every iteration: each new Python value compiles "
                                     f"'{callee}' again; pass ms.Tensor(...) or ms.mutable(...)")

    VALID = [
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x, scale):
    return x * scale

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    out = []
    for step in range(3):
        out.append(f(x, ms.Tensor(step * 0.5, ms.float32)))
    return out
""",
        # the counter rebound to a Tensor before the call
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x, scale):
    return x * scale

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    out = []
    for step in range(3):
        step = ms.Tensor(step, ms.float32)
        out.append(f(x, step))
    return out
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x, scale):
    return x * scale

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    out = []
    for step in range(3):
        out.append(f(x, step * 0.5))
    return out
""",
    ]
