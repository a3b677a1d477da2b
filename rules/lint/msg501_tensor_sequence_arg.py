import ast

from msmigrate.lint.rule import Rule


def compiled_callee(node: ast.Call, ctx) -> str | None:
    """Name of the jitted function or in-file Cell instance this call invokes, if any."""
    f = node.func
    if isinstance(f, ast.Name):
        if f.id in ctx.model.jit_entries:
            return f.id
        if f.id in ctx.model.instances:
            return f.id
    return None


class TensorSequenceArg(Rule):
    """Flags tuples or lists of tensors passed directly to a jitted function or Cell.

    ## What it does
    Finds calls of a `@jit` function or an in-file Cell instance with a tuple/list display
    argument whose elements are not all literals, e.g. `f((a, b))`.

    ## Why is this bad?
    Tuples and lists are compile-time constants: a tuple of Tensors is specialised on the
    Tensor *values*, so every call with new values compiles a new graph (3 compiles in 3
    calls observed, with a warning that only appears in the logs).

    ## Example
    ```python
    @ms.jit
    def f(xs):
        return xs[0] + xs[1]

    for a, b in batches:
        f((a, b))
    ```

    ## Use instead
    `f(ms.mutable((a, b)))`, or pass the tensors as separate arguments.

    ## Fix safety
    Unsafe: wraps the sequence in `mindspore.mutable(...)`; needs `mindspore` imported as
    the file already names it, and changes the argument's type inside the graph.
    """
    code = "MSG501"
    name = "tensor-sequence-arg"
    severity = "warning"
    claim = "recompile"
    fix_safety = "unsafe"

    def visit_Call(self, node, ctx):
        if ctx.in_graph:
            return
        callee = compiled_callee(node, ctx)
        if callee is None:
            return
        ms_alias = next((a for a, q in ctx.model.aliases.items() if q == "mindspore"), None)
        for arg in node.args:
            if isinstance(arg, (ast.Tuple, ast.List)) and arg.elts and \
                    not all(isinstance(e, ast.Constant) for e in arg.elts):
                fix = ((*ctx.span(arg), f"{ms_alias}.mutable({ctx.text(arg)})"),) if ms_alias else ()
                self.report(arg, f"a {type(arg).__name__.lower()} passed to compiled '{callee}' is a constant: "
                                 "it recompiles whenever the tensor values change; wrap it in ms.mutable(...)",
                            fix)

    VALID = [
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(xs):
    return xs[0] + xs[1]

def drive():
    out = []
    for k in range(3):
        a = ms.Tensor(np.full(3, k, np.float32))
        b = ms.Tensor(np.full(3, 2 * k, np.float32))
        out.append(f(ms.mutable((a, b))))
    return out
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(xs):
    return xs[0] + xs[1]

def drive():
    out = []
    for k in range(3):
        a = ms.Tensor(np.full(3, k, np.float32))
        b = ms.Tensor(np.full(3, 2 * k, np.float32))
        out.append(f((a, b)))
    return out
""",
    ]
