import ast

from msmigrate.lint.rule import Rule

HOST_METHODS = frozenset({"asnumpy", "tolist", "numpy"})


class HostSyncConversion(Rule):
    """Flags `.asnumpy()`, `.tolist()` and `.numpy()` on tensors in compiled code.

    ## What it does
    Finds conversions of tensor values to numpy arrays or Python lists inside compiled code.

    ## Why is this bad?
    The graph cannot express them: MindSpore splits the graph and runs Python at run time on
    every call (JIT Fallback), about 1.4x slower per call in a micro-benchmark, and
    `fullgraph=True` rejects the code (`In JIT strict mode, cannot get attributes asnumpy`).

    ## Example
    ```python
    @ms.jit
    def f(x):
        return x * float(x.sum().asnumpy())
    ```

    ## Use instead
    Stay in tensors: `float(t)`, `int(t)` and `t.item()` compile without fallback, and
    `mindspore.ops` covers the numpy math.

    ## Fix safety
    Safe for `float(t.asnumpy())`, `int(t.asnumpy())` and `t.asnumpy().item()`, which become
    `float(t)`, `int(t)` and `t.item()` with the same value. Other uses have no fix.
    """
    code = "MSG401"
    name = "host-sync-conversion"
    severity = "warning"
    claim = "fallback"
    fix_safety = "safe"

    def visit_Call(self, node, ctx):
        if not ctx.in_graph:
            return
        f = node.func
        if isinstance(f, ast.Name) and f.id in ("float", "int") and len(node.args) == 1 and not node.keywords:
            inner = node.args[0]
            if self._conversion(inner, ctx) and inner.func.attr == "asnumpy":
                recv = inner.func.value
                self.report(inner, "'.asnumpy()' in compiled code falls back to Python on every call: "
                                   f"use {f.id}(tensor) directly",
                            ((*ctx.span(inner), ctx.text(recv)),))
                self._fixed = id(inner)  # the inner call is visited next: report it once, with the fix
                return
        if isinstance(f, ast.Attribute) and f.attr == "item" and not node.args and self._conversion(f.value, ctx) \
                and f.value.func.attr == "asnumpy":
            recv = f.value.func.value
            self.report(f.value, "'.asnumpy()' in compiled code falls back to Python on every call: use .item()",
                        ((*ctx.span(f.value), ctx.text(recv)),))
            self._fixed = id(f.value)
            return
        if self._conversion(node, ctx) and getattr(self, "_fixed", None) != id(node):
            self.report(node, f"'.{f.attr}()' in compiled code falls back to Python on every call and fails "
                              "under fullgraph=True: stay in tensors (float(t), t.item(), mindspore.ops)")

    @staticmethod
    def _conversion(node, ctx) -> bool:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not node.args
                and node.func.attr in HOST_METHODS):
            return False
        # asnumpy is MindSpore-only; tolist/numpy only on values known to be tensors
        return node.func.attr == "asnumpy" or ctx.is_tensor(node.func.value)

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * float(x.sum())
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * x.sum().item()
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * float(x.sum().asnumpy())
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * x.tolist()[0]
""",
    ]
