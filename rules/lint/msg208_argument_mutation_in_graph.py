import ast

from msmigrate.lint.rule import Rule

MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                      "reverse", "sort", "add", "discard"})


class ArgumentMutationInGraph(Rule):
    """Flags a function called from compiled code that fills a list or dict it was given.

    ## What it does
    Finds, in a function called from compiled code, a mutation of one of its parameters
    (`store.append(t)`, `store[k] = t`, `store.update(...)`) that the function does not hand
    back with `return`.

    ## Why is this bad?
    A static graph passes containers by value: what the callee adds is not seen by the caller.
    `losses = []; add_term(losses, loss)` leaves `losses` empty (then `ops.stack(losses)` fails
    to compile), and `losses = [a]; add_term(losses, b)` leaves it `[a]`: the loss silently
    misses a term. PyNative, like Python, sees the change.

    ## Example
    ```python
    def add_term(store, term):
        store.append(term)

    @ms.jit
    def f(x):
        losses = [x.sum()]
        add_term(losses, (x * x).sum())
        return losses[0] + losses[-1]
    ```

    ## Use instead
    Return the container and rebind it (`losses = add_term(losses, t)` with `return store`),
    or append in the caller.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG208"
    name = "argument-mutation-in-graph"
    severity = "error"
    claim = "wrong-result"

    def _param(self, node, ctx) -> str | None:
        g = ctx.graph
        if g is None or not g.why.startswith("called from"):
            return None
        while isinstance(node, ast.Subscript):
            node = node.value
        if not isinstance(node, ast.Name) or node.id == "self":
            return None
        params = {a.arg for a in g.node.args.args + g.node.args.kwonlyargs}
        if node.id not in params or node.id in g.assigned:
            return None
        returned = any(isinstance(r, ast.Return) and r.value is not None and
                       any(isinstance(n, ast.Name) and n.id == node.id for n in ast.walk(r.value))
                       for r in ast.walk(g.node))
        return None if returned else node.id

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and isinstance(f, ast.Attribute) and f.attr in MUTATORS:
            name = self._param(f.value, ctx)
            if name:
                self._flag(node, name, f"{name}.{f.attr}()", ctx)

    def visit_Assign(self, node, ctx):
        if ctx.in_graph:
            for t in node.targets:
                if isinstance(t, ast.Subscript):
                    name = self._param(t.value, ctx)
                    if name:
                        self._flag(node, name, f"{name}[...] =", ctx)

    def _flag(self, node, name, what, ctx):
        self.report(node, f"'{what}' in '{ctx.graph.node.name}', called from compiled code: the caller's "
                          f"'{name}' does not change in a static graph; return it and rebind it in the caller")

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import ops


def add_term(store, term):
    store.append(term)
    return store


@ms.jit
def f(x):
    losses = [x.sum()]
    losses = add_term(losses, (x * x).sum())
    return losses[0] + losses[-1]
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import ops


def add_term(store, term):
    store.append(term)


@ms.jit
def f(x):
    losses = [x.sum()]
    add_term(losses, (x * x).sum())
    return losses[0] + losses[-1]
""",
    ]
