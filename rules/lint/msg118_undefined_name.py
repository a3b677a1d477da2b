import ast
import builtins

from msmigrate.lint.rule import Rule

# module attributes every module has, besides the builtins
_MODULE_DUNDERS = {"__name__", "__file__", "__doc__", "__package__", "__spec__", "__loader__", "__builtins__",
                   "__path__", "__annotations__", "__dict__", "__class__"}
_BUILTINS = set(dir(builtins)) | _MODULE_DUNDERS


def _bound_anywhere(tree: ast.Module) -> set[str] | None:
    """Every name the module binds in any scope (flow-insensitive); None with a star import."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names


class UndefinedName(Rule):
    """Flags a name that nothing in the file defines, read in compiled code.

    ## What it does
    Finds a name read in compiled code that no scope of the file binds (no assignment, import,
    parameter, `def` or `class` of that name anywhere) and that is not a builtin: a typo such as
    `Variabel(x)` for `Variable(x)`, often on a branch that never runs (`else:` of a CUDA check).
    Files with a star import are not checked.

    ## Why is this bad?
    Python raises NameError only when the line runs; MindSpore's graph compiler resolves every
    name of the function it compiles, on every branch, so the whole step fails to compile
    (`NameError: The name 'Variabel' is not defined, or not supported in graph mode`) even where
    the branch is never taken.

    ## Example
    ```python
    @ms.jit
    def f(x):
        if x.shape[0] > 100:
            x = Variabel(x)
        return x * 2
    ```

    ## Use instead
    Fix the name (or delete the dead code).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG118"
    name = "undefined-name"
    severity = "error"
    claim = "compile-error"

    def visit_Name(self, node, ctx):
        if not ctx.in_graph or not isinstance(node.ctx, ast.Load) or node.id in _BUILTINS:
            return
        bound = getattr(ctx.model, "_msg118_bound", False)
        if bound is False:
            bound = ctx.model._msg118_bound = _bound_anywhere(ctx.model.tree)
        if bound is not None and node.id not in bound:
            self.report(node, f"'{node.id}' is not defined anywhere in this file: the graph compiler resolves every "
                              f"name of compiled code, even on a branch that never runs (Python raises NameError "
                              f"only where the line runs); fix the name")

    VALID = [
        """
import mindspore as ms
from mindspore import ops


@ms.jit
def f(x):
    if x.shape[0] > 100:
        x = ops.abs(x)
    return x * 2 + len([v for v in range(2)])
""",
    ]
    INVALID = [
        """
import mindspore as ms


@ms.jit
def f(x):
    if x.shape[0] > 100:
        x = Variabel(x)
    return x * 2
""",
    ]
