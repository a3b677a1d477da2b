import ast

from msmigrate.lint.rule import Rule

IMPURE_PREFIXES = ("random.", "numpy.random.", "time.", "datetime.", "uuid.", "secrets.")
IMPURE_EXACT = frozenset({"os.getenv", "os.environ.get", "os.urandom", "os.getpid"})


class ImpurePythonCall(Rule):
    """Flags `random`, `time`, `os.environ` and similar calls in compiled code.

    ## What it does
    Finds calls to `random.*`, `numpy.random.*`, `time.*`, `datetime.*`, `uuid.*`,
    `os.getenv`, `os.environ.get` and reads of `os.environ[...]` in compiled code.

    ## Why is this bad?
    They run once, at compile time, and their result is baked into the graph as a constant:
    `x * random.random()` multiplied by the same number on every call, and a changed
    environment variable is never seen again.

    ## Example
    ```python
    @ms.jit
    def f(x):
        return x * random.random()
    ```

    ## Use instead
    Draw random numbers with MindSpore ops (`ops.uniform`, `ops.standard_normal`), or compute
    the value outside and pass it in as a Tensor argument.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG203"
    name = "impure-python-call"
    severity = "error"
    claim = "wrong-result"

    def visit_Call(self, node, ctx):
        if not ctx.in_graph:
            return
        q = ctx.qualname(node.func)
        if q and (q.startswith(IMPURE_PREFIXES) or q in IMPURE_EXACT):
            self.report(node, f"'{q}()' in compiled code runs once at compile time and its result is frozen "
                              "into the graph; pass the value in as a Tensor or use mindspore.ops")

    def visit_Subscript(self, node, ctx):
        if ctx.in_graph and isinstance(node.ctx, ast.Load) and ctx.qualname(node.value) == "os.environ":
            self.report(node, "os.environ[...] in compiled code is read once at compile time and frozen")

    VALID = [
        """
import random
import mindspore as ms

@ms.jit
def scaled(x, s):
    return x * s

def f(x):
    return scaled(x, ms.Tensor(random.random(), ms.float32))
""",
    ]
    INVALID = [
        """
import random
import mindspore as ms

@ms.jit
def f(x):
    return x * random.random()
""",
        """
import os
import numpy as np
import mindspore as ms

@ms.jit
def f(x):
    return x * float(os.environ.get("MSMIGRATE_SCALE", "1"))

def drive():
    x = ms.Tensor(np.ones(3, np.float32))
    out = []
    for scale in ("1", "2", "3"):
        os.environ["MSMIGRATE_SCALE"] = scale
        out.append(f(x))
    return out
""",
    ]
