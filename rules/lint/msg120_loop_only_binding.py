import ast

from msmigrate.lint.rule import Rule

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _stored(node) -> set[str]:
    """Names a loop binds in its own scope (its target and body; not nested functions or
    comprehensions, whose names are their own)."""
    names, todo = set(), [node.target] if isinstance(node, ast.For) else []
    todo += node.body
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))
    return names


class LoopOnlyBinding(Rule):
    """Flags names first bound inside a loop and read after it.

    ## What it does
    Finds a `for` or `while` loop in compiled code that binds a variable (the loop target, or an
    assignment in its body) that was not bound before the loop and is read after it: an RNN's
    `for t in range(n): output, hidden = cell(x[t], hidden)` followed by `loss(output, y)`.

    ## Why is this bad?
    MindSpore's graph compiler refuses it, whatever the loop iterates over: `UnboundLocalError:
    The local variable 'output' defined in the 'for' loop body cannot be used outside of the loop
    body. Please define variable 'output' before 'for'.` PyNative and torch run it.

    ## Example
    ```python
    @ms.jit
    def f(x):
        for i in range(3):
            y = x * i
        return y
    ```

    ## Use instead
    Bind the name before the loop (`y = None`: loops over ranges, tuples and tensors are unrolled
    while compiling, so the later assignment replaces it).

    ## Fix safety
    Safe: the fix binds each such name to `None` before a `for` loop, or before a `while` loop
    whose condition is not a tensor (a `while` on a tensor is a real graph loop, where `None`
    and a tensor cannot be joined: no fix). Code after a loop that ran zero times then reads
    `None` where Python raised `UnboundLocalError`.
    """
    code = "MSG120"
    name = "loop-only-binding"
    severity = "error"
    claim = "compile-error"
    fix_safety = "safe"

    def visit_For(self, node, ctx):
        self._check(node, ctx, "for")

    def visit_While(self, node, ctx):
        self._check(node, ctx, "while")

    def _check(self, node, ctx, keyword):
        if not ctx.in_graph:
            return
        fn = ctx.functions[-1] if ctx.functions else ctx.graph.node
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        inside = _stored(node)
        args = fn.args
        before = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        before |= {a.arg for a in (args.vararg, args.kwarg) if a}
        for stmt in ast.walk(fn):
            if isinstance(stmt, (ast.Global, ast.Nonlocal)):
                before.update(stmt.names)
        first_use = {}
        for n in sorted(self._names_outside_scopes(fn), key=lambda n: (n.lineno, n.col_offset)):
            if n.lineno < node.lineno and isinstance(n.ctx, ast.Store):
                before.add(n.id)
            elif n.lineno > node.end_lineno:
                first_use.setdefault(n.id, n.ctx)
        read_after = sorted(name for name in inside - before if isinstance(first_use.get(name), ast.Load))
        if not read_after:
            return
        fix = ()
        if keyword == "for" or not ctx.is_tensor(node.test):
            line = ctx.lines[node.lineno - 1]
            indent = line[:len(line) - len(line.lstrip())]
            newline = "\r\n" if line.endswith("\r\n") else "\n"
            start = ctx.offset(node.lineno, 0)
            fix = ((start, start, "".join(f"{indent}{name} = None{newline}" for name in read_after)),)
        names = ", ".join(f"'{name}'" for name in read_after)
        self.report(node, f"{names} first bound in this `{keyword}` loop and read after it: MindSpore's "
                          f"graph compiler refuses it; bind {'it' if len(read_after) == 1 else 'them'} "
                          f"before the loop", fix)

    @staticmethod
    def _names_outside_scopes(fn):
        todo = list(fn.body)
        while todo:
            n = todo.pop()
            if isinstance(n, ast.Name):
                yield n
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield ast.Name(id=n.name, ctx=ast.Store(), lineno=n.lineno, col_offset=n.col_offset)
            elif not isinstance(n, _SCOPES):
                todo.extend(ast.iter_child_nodes(n))

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    y = None
    for i in range(3):
        y = x * i
    return y
""",
        # bound again after the loop before it is read
        """
import mindspore as ms

@ms.jit
def f(x):
    for i in range(3):
        y = x * i
    y = x + 1
    return y
""",
        # the comprehension's `i` is its own
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    for i in range(2):
        x = x + 1
    return ops.stack([x * i for i in range(2)])
""",
        """
from mindspore import nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 3)

    def construct(self, x):
        h = ops.zeros_like(x)
        for t in range(2):
            h = self.dense(x + h)
        return h
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    for i in range(3):
        y = x * i
    return y
""",
        # the loop target itself
        """
import mindspore as ms

@ms.jit
def f(x):
    for i in range(3):
        x = x + 1
    return x * i
""",
        """
from mindspore import nn, ops

class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.dense = nn.Dense(3, 3)

    def construct(self, x):
        h = ops.zeros_like(x)
        for t in range(2):
            out = self.dense(x + h)
            h = out
        return out * 2
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    i = 0
    while i < 3:
        y = x * i
        i += 1
    return y
""",
    ]
