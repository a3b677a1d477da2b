import ast

from msmigrate.lint.rule import Rule

LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log"})
IO_CALLS = frozenset({"warnings.warn", "sys.stdout.write", "sys.stderr.write", "tqdm.write",
                      "wandb.log", "mlflow.log_metric"})


class PythonIoInGraph(Rule):
    """Flags logging, warnings and other Python I/O in compiled code.

    ## What it does
    Finds `logging.*` calls, calls on loggers (`logging.getLogger(...)`, mindspore's `logger`),
    `warnings.warn`, `sys.stdout.write`, `open()` and experiment-tracker calls in compiled code.

    ## Why is this bad?
    They run once, while the graph is compiled, and never again: a `LOG.warning("step")` in a
    `@jit` function logged on the first call only. `print` is different: it becomes a graph
    Print op that runs on every call.

    ## Example
    ```python
    LOG = logging.getLogger("train")

    @ms.jit
    def f(x):
        LOG.warning("step")
        return x + 1
    ```

    ## Use instead
    Log outside the compiled function (with returned values), or use `print`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG204"
    name = "python-io-in-graph"
    severity = "error"
    claim = "wrong-result"

    def __init__(self, ctx):
        super().__init__(ctx)
        self.loggers = set()
        for stmt in ctx.tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
                q = ctx.qualname(stmt.value.func) or ""
                if q in ("logging.getLogger", "mindspore.log.get_logger") or q.endswith("get_logger"):
                    self.loggers.update(t.id for t in stmt.targets if isinstance(t, ast.Name))
        for alias, full in ctx.model.aliases.items():
            if full in ("mindspore.log", "mindspore.logger", "logging"):
                self.loggers.add(alias)

    def visit_Call(self, node, ctx):
        if not ctx.in_graph:
            return
        f = node.func
        q = ctx.qualname(f) or ""
        what = None
        if q.startswith("logging.") or q in IO_CALLS:
            what = q
        elif isinstance(f, ast.Attribute) and f.attr in LOG_METHODS and isinstance(f.value, ast.Name) \
                and f.value.id in self.loggers:
            what = f"{f.value.id}.{f.attr}"
        elif isinstance(f, ast.Name) and f.id == "open":
            what = "open"
        if what:
            self.report(node, f"'{what}()' in compiled code runs once at compile time, not on every call; "
                              "log outside the graph or use print")

    VALID = [
        """
import logging
import numpy as np
import mindspore as ms

LOG = logging.getLogger("train")

@ms.jit
def f(x):
    return x + 1

def drive():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    LOG.addHandler(handler)
    x = ms.Tensor(np.ones(3, np.float32))
    for _ in range(3):
        f(x)
        LOG.warning("step")
    LOG.removeHandler(handler)
    return len(records)
""",
    ]
    INVALID = [
        """
import logging
import numpy as np
import mindspore as ms

LOG = logging.getLogger("train")

@ms.jit
def f(x):
    LOG.warning("step")
    return x + 1

def drive():
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    LOG.addHandler(handler)
    x = ms.Tensor(np.ones(3, np.float32))
    for _ in range(3):
        f(x)
    LOG.removeHandler(handler)
    return len(records)
""",
    ]
