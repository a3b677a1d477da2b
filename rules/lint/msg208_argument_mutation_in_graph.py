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

    Not flagged when every caller in the file ignores the container after the call (nothing
    is lost); flagged when a caller reads it again, or when the callers are in other files.

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

    @staticmethod
    def _caller_reads_after(fn, param, ctx) -> bool:
        """Does a caller in this file read what it passed as `param` after the call? True too
        when no call site is found here (called from another file: unknown). A caller that never
        looks at the container again loses nothing."""
        cache = ctx.__dict__.setdefault("_msg208", {})
        key = (id(fn), param)
        if key in cache:
            return cache[key]
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        method = bool(params) and params[0] in ("self", "cls")
        if method:
            params = params[1:]
        parents = ctx.__dict__.get("_msg208_parents")
        if parents is None:
            parents = {c: p for p in ast.walk(ctx.tree) for c in ast.iter_child_nodes(p)}
            ctx._msg208_parents = parents
        sites, reads = 0, False
        for call in ast.walk(ctx.tree):
            if not isinstance(call, ast.Call):
                continue
            f = call.func
            if not ((isinstance(f, ast.Name) and f.id == fn.name and not method) or
                    (isinstance(f, ast.Attribute) and f.attr == fn.name and method
                     and isinstance(f.value, ast.Name) and f.value.id in ("self", "cls"))):
                continue
            arg = None
            if param in params and params.index(param) < len(call.args):
                arg = call.args[params.index(param)]
            for k in call.keywords:
                if k.arg == param:
                    arg = k.value
            if not isinstance(arg, ast.Name):
                continue
            sites += 1
            caller, loop = parents.get(call), None
            while caller is not None and not isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                if loop is None and isinstance(caller, (ast.For, ast.While)):
                    loop = caller
                caller = parents.get(caller)
            in_loop = {id(n) for n in ast.walk(loop)} if loop is not None else set()
            for n in ast.walk(caller):
                if isinstance(n, ast.Name) and n.id == arg.id and isinstance(n.ctx, ast.Load) and n is not arg and \
                        (n.lineno > call.end_lineno or id(n) in in_loop):
                    reads = True
                    break
            if reads:
                break
        cache[key] = reads or sites == 0
        return cache[key]

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
        if not self._caller_reads_after(ctx.graph.node, name, ctx):
            return
        self.report(node, f"'{what}' in '{ctx.graph.node.name}', called from compiled code: the caller's "
                          f"'{name}' does not change in a static graph; return it and rebind it in the caller")

    VALID = [
        # the caller does not look at the list again: the callee's change is not needed
        """
import numpy as np
import mindspore as ms
from mindspore import ops


def total(store, term):
    store.append(term)
    return ops.stack(store).sum()


@ms.jit
def f(x):
    losses = [x.sum()]
    return total(losses, (x * x).sum())
""",
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
