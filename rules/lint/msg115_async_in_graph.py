
from msmigrate.lint.rule import Rule


class AsyncInGraph(Rule):
    """Flags `async def`, `await`, `async for` and `async with` in compiled code.

    ## What it does
    Finds coroutine syntax in a Cell's `construct`, a `@jit` function, or their callees.

    ## Why is this bad?
    Graph mode has no coroutines; the compiler rejects them at the first call, with a cryptic
    message for an `async def construct` (`TypeError: Parse Lambda Function Fail. Node type
    must be Lambda, but got NoneType.`) while PyNative silently returns a coroutine object.

    ## Example
    ```python
    class Net(nn.Cell):
        async def construct(self, x):
            return x + 1
    ```

    ## Use instead
    Plain `def`; run asynchronous I/O outside the compiled code.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG115"
    name = "async-in-graph"
    severity = "error"
    claim = "compile-error"

    def visit_AsyncFunctionDef(self, node, ctx):
        if ctx.in_graph or node in ctx.model.graph:
            self.report(node, "`async def` cannot be compiled: use a plain function")

    def _inner(self, node, ctx):
        if ctx.in_graph:
            self.report(node, f"`{type(node).__name__}` is not supported in compiled code ({ctx.graph.why})")

    visit_Await = visit_AsyncFor = visit_AsyncWith = _inner

    VALID = [
        """
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return x + 1
""",
    ]
    INVALID = [
        """
from mindspore import nn

class Net(nn.Cell):
    async def construct(self, x):
        return x + 1
""",
    ]
