import ast

from msmigrate.lint.rule import Rule


HOST_BUILTINS = frozenset({"float", "int", "bool"})
HOST_METHODS = frozenset({"item", "tolist", "asnumpy", "numpy"})


class TensorFromPythonValue(Rule):
    """Flags `ms.Tensor(...)` / `ms.tensor(...)` built from tensor-derived Python values in compiled code.

    ## What it does
    Finds Tensor construction inside compiled code from tensor values converted to Python
    (`float(t)`, `int(t)`, `t.item()`, `.tolist()`, `.asnumpy()`), e.g. `ms.Tensor(float(x.sum()))`
    or `ms.tensor([n, n])` with `n = x.sum().item()`. Tensors built from literals or shapes are
    constants and not flagged.

    ## Why is this bad?
    The compiler cannot build a Tensor from a run-time Python value: the default (LAX) mode runs
    the constructor as Python on every call (JIT Fallback), and `fullgraph=True` fails to compile
    it (`When handling script 'Tensor(input_data, dtype, ...)' in graph mode`).

    ## Example
    ```python
    @ms.jit
    def f(x):
        s = float(x.sum())
        return x * ms.Tensor(s, ms.float32)
    ```

    ## Use instead
    Keep the value a tensor: `x * x.sum()`, `ops.cast(t, ms.float32)`, `ops.stack([a, b])`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG405"
    name = "tensor-from-python-value"
    severity = "warning"
    claim = "fallback"

    def visit_Call(self, node, ctx):
        if not ctx.in_graph or not node.args:
            return
        q = ctx.qualname(node.func) or ""
        if q in ("mindspore.Tensor", "mindspore.tensor", "mindspore.common.tensor.Tensor") \
                and ctx.is_tensor(node.args[0]) and self._host_value(node.args[0], ctx):
            self.report(node, f"'{q.rsplit('.', 1)[-1]}(...)' from a run-time value falls back to Python on every "
                              "call and fails under fullgraph=True: keep the value a tensor (ops.cast, ops.stack)")

    def _host_value(self, expr, ctx) -> bool:
        """Does `expr` carry a tensor value converted to Python (float/int/bool/.item/.tolist/.asnumpy)?
        (Tensor(t) of a tensor `t` was not verified and is not flagged.)"""
        fn = ctx.graph.node
        cache = getattr(self, "_host", None)
        if cache is None or cache[0] is not fn:
            names: set[str] = set()
            for _ in range(3):
                for n in ast.walk(fn):
                    if isinstance(n, ast.Assign) and self._converts(n.value, names):
                        names.update(t.id for t in n.targets if isinstance(t, ast.Name))
            self._host = cache = (fn, names)
        return self._converts(expr, cache[1])

    @staticmethod
    def _converts(expr, names) -> bool:
        for n in ast.walk(expr):
            if isinstance(n, ast.Name) and n.id in names:
                return True
            if isinstance(n, ast.Call):
                f = n.func
                if isinstance(f, ast.Name) and f.id in HOST_BUILTINS:
                    return True
                if isinstance(f, ast.Attribute) and f.attr in HOST_METHODS:
                    return True
        return False

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * x.sum() * ms.Tensor([1.0, 2.0, 3.0], ms.float32) / ms.tensor(x.shape[0], ms.float32)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    return x * float(x.sum())
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    s = float(x.sum())
    return x * ms.Tensor(s, ms.float32)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    n = x.sum().item()
    return x * ms.tensor([n, n, n], ms.float32)
""",
    ]
