import ast

from msmigrate.lint.rule import Rule

IMPURE_PREFIXES = ("random.", "numpy.random.", "time.", "datetime.", "uuid.", "secrets.")
IMPURE_EXACT = frozenset({"os.urandom", "os.getpid"})
ENV_READS = frozenset({"os.getenv", "os.environ.get"})
ENV_WRITES = frozenset({"os.putenv", "os.environ.update", "os.environ.setdefault", "os.environ.pop",
                        "os.environ.clear", "os.unsetenv"})


def writes_environment(ctx) -> bool:
    """Does the file change the environment (os.environ[k] = v, del, update, putenv ...)?"""
    cached = getattr(ctx, "_writes_environment", None)
    if cached is None:
        cached = False
        for n in ast.walk(ctx.tree):
            if isinstance(n, ast.Subscript) and isinstance(n.ctx, (ast.Store, ast.Del)) and \
                    ctx.qualname(n.value) == "os.environ":
                cached = True
            elif isinstance(n, ast.Call) and ctx.qualname(n.func) in ENV_WRITES:
                cached = True
            if cached:
                break
        ctx._writes_environment = cached
    return cached


class ImpurePythonCall(Rule):
    """Flags `random`, `time`, `os.environ` and similar calls in compiled code.

    ## What it does
    Finds calls to `random.*`, `numpy.random.*`, `time.*`, `datetime.*`, `uuid.*` in compiled
    code, and reads of the environment (`os.getenv`, `os.environ.get`, `os.environ[...]`) in
    files that also change it (`os.environ[k] = v`, `os.environ.update`, `os.putenv`, ...). A
    variable set before launch and read as configuration (`if os.getenv('RUN_MODE') ==
    'predict'`, common in native MindSpore code) is frozen harmlessly and not flagged.

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
        if q and (q.startswith(IMPURE_PREFIXES) or q in IMPURE_EXACT or q in ENV_READS and writes_environment(ctx)):
            self.report(node, f"'{q}()' in compiled code runs once at compile time and its result is frozen "
                              "into the graph; pass the value in as a Tensor or use mindspore.ops")

    def visit_Subscript(self, node, ctx):
        if ctx.in_graph and isinstance(node.ctx, ast.Load) and ctx.qualname(node.value) == "os.environ" and \
                writes_environment(ctx):
            self.report(node, "os.environ[...] in compiled code is read once at compile time and frozen")

    VALID = [
        # configuration read from an environment the program does not change
        """
import os
import mindspore as ms

@ms.jit
def f(x):
    if os.getenv("MSMIGRATE_RUN_MODE") == "predict":
        return x * 2
    return x * 3
""",
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
