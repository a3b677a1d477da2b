import ast

from msmigrate.lint.rule import GraphSyntaxRule


def _has_break(loop) -> bool:
    stack = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Break):
            return True
        if isinstance(node, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Lambda)):
            continue  # a break there belongs to another loop
        stack.extend(ast.iter_child_nodes(node))
    return False


class LoopElse(GraphSyntaxRule):
    """Flags `for ... else` and `while ... else` in compiled code.

    ## What it does
    Finds loops with an `else` clause in functions MindSpore compiles.

    ## Why is this bad?
    `RuntimeError: The 'for...else...' statement is not supported now.` at the first call.

    ## Example
    ```python
    @ms.jit
    def f(x):
        for k in range(3):
            x = x + k
        else:
            x = x * 2
        return x
    ```

    ## Use instead
    Without a `break` in the loop the `else` block always runs: put it after the loop. With a
    `break`, track a flag.

    ## Fix safety
    Safe when the loop contains no `break`: the `else` body is moved after the loop, which is
    exactly when Python runs it. No fix is offered for loops with `break`.
    """
    code = "MSG111"
    name = "loop-else"
    fix_safety = "safe"
    nodes = (ast.For, ast.While)

    def _visit(self, node, ctx):
        if not ctx.in_graph or not node.orelse:
            return
        kind = "for" if isinstance(node, ast.For) else "while"
        self.report(node, f"`{kind} ... else` is not supported in compiled code ({ctx.graph.why})",
                    () if _has_break(node) else self._fix(node, ctx))

    @staticmethod
    def _fix(node, ctx):
        lines = ctx.lines
        first = node.orelse[0].lineno
        else_line = first - 1
        while else_line > node.lineno and not lines[else_line - 1].strip().startswith("else"):
            else_line -= 1
        if lines[else_line - 1].strip() != "else:" or first == else_line:
            return ()
        loop_indent = len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())
        body = lines[first - 1:node.orelse[-1].end_lineno]
        body_indent = len(body[0]) - len(body[0].lstrip())
        cut = body_indent - loop_indent
        if cut <= 0 or any(ln.strip() and len(ln) - len(ln.lstrip()) < body_indent for ln in body):
            return ()
        new = "".join(ln[cut:] if ln.strip() else ln for ln in body)
        start = ctx.offset(else_line, 0)
        end = ctx.offset(node.orelse[-1].end_lineno, 0) + len(lines[node.orelse[-1].end_lineno - 1])
        return ((start, end, new),)

    VALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    for k in range(3):
        x = x + k
    x = x * 2
    return x
""",
    ]
    INVALID = [
        """
import mindspore as ms

@ms.jit
def f(x):
    for k in range(3):
        x = x + k
    else:
        x = x * 2
    return x
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    k = 0
    while k < 3:
        x = x + k
        k += 1
    else:
        x = x * 2
    return x
""",
    ]
