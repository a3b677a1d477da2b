import ast

from msmigrate.lint.rule import Rule


def _bound(stmts) -> set[str]:
    names = set()
    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


def _always_exits(stmts) -> bool:
    return bool(stmts) and isinstance(stmts[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


class BranchOnlyBinding(Rule):
    """Flags names bound in only one branch of an `if` and read after it.

    ## What it does
    Finds an `if` in compiled code where a variable is assigned in one branch only, was not
    bound before the `if`, and is used after it. This applies to tensor-valued conditions and
    also to constant ones (shape tests, module constants, Python flags): MindSpore parses both
    branches before folding. A bare `self.<attr>` test is folded earlier and is not flagged.

    ## Why is this bad?
    The compiler cannot join the branches: `UnboundLocalError: The local variable 'y' is not
    defined in false branch, but defined in true branch.` at the first call, even for inputs
    that take the branch that binds it.

    ## Example
    ```python
    @ms.jit
    def f(x):
        if x.sum() > 0:
            y = x * 2
        return y
    ```

    ## Use instead
    Bind the name before the `if` (or in every branch).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG113"
    name = "branch-only-binding"
    severity = "error"
    claim = "compile-error"

    def visit_If(self, node, ctx):
        if not ctx.in_graph or not self._parsed_both_ways(node.test, ctx):
            return
        body = set() if _always_exits(node.body) else _bound(node.body)
        orelse = set() if _always_exits(node.orelse) else _bound(node.orelse)
        if _always_exits(node.body) and _always_exits(node.orelse):
            return
        one_sided = (body ^ orelse) - ctx.graph.tensor_params
        if _always_exits(node.body):
            one_sided -= orelse
        if _always_exits(node.orelse):
            one_sided -= body
        if not one_sided:
            return
        fn = ctx.functions[-1] if ctx.functions else ctx.graph.node
        before = set(a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs)
        first_use = {}
        # names bound by a comprehension are local to it (`[v[i] for i in ...]` after the `if`
        # reads its own `i`, not the branch's)
        scoped = set()
        for comp in ast.walk(fn):
            if isinstance(comp, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                bound = {t.id for gen in comp.generators for t in ast.walk(gen.target) if isinstance(t, ast.Name)}
                scoped.update(id(n) for n in ast.walk(comp) if isinstance(n, ast.Name) and n.id in bound)
        for n in sorted((n for n in ast.walk(fn) if isinstance(n, ast.Name) and id(n) not in scoped),
                        key=lambda n: (n.lineno, n.col_offset)):
            if n.lineno < node.lineno and isinstance(n.ctx, ast.Store):
                before.add(n.id)
            elif n.lineno > node.end_lineno:
                first_use.setdefault(n.id, n.ctx)
        after = {name for name, c in first_use.items() if isinstance(c, ast.Load)}
        for name in sorted(one_sided - before):
            if name in after:
                self.report(node, f"'{name}' is bound in only one branch of this `if` and used after "
                                  f"it: the graph cannot join the branches; bind it before the `if`")

    @staticmethod
    def _parsed_both_ways(test, ctx) -> bool:
        """Conditions observed to make the compiler join both branches: tensor values, and tests
        built only from the function's parameters, shapes and module-level names. Tests that
        read `self` (folded while parsing, observed to compile) or other locals are not flagged."""
        if ctx.is_tensor(test):
            return True
        fn = ctx.functions[-1] if ctx.functions else ctx.graph.node
        params = {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs} - {"self", "cls"}
        allowed = params | ctx.model.module_names | set(ctx.model.classes) | {"len", "isinstance"}
        names = [n.id for n in ast.walk(test) if isinstance(n, ast.Name)]
        return bool(names) and all(n in allowed for n in names)

    VALID = [
        # the comprehension's `i` is its own, not the loop variable bound in one branch
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x, reverse=False):
    if not reverse:
        y = x * 2
    else:
        y = x
        for i in range(2):
            y = y + i
    return ops.stack([y[i] for i in range(2)])
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    y = x
    if x.sum() > 0:
        y = x * 2
    return y
""",
        """
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.double = True

    def construct(self, x):
        if self.double:
            y = x * 2
        return y
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    if x.sum() > 0:
        return x * 2
    else:
        y = x
    return y
""",
        """
from mindspore import nn

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mode = "double"

    def construct(self, x):
        if self.mode == "double":
            y = x * 2
        elif self.mode is None:
            y = x
        return y
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    if x.sum() > 0:
        y = x * 2
    return y
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    if x.shape[0] > 2:
        y = x * 2
    return y
""",
        """
import mindspore as ms

@ms.jit
def f(x, double=True):
    if double:
        y = x * 2
    return y
""",
    ]
