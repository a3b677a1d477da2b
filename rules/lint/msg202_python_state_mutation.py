import ast

from msmigrate.lint.rule import Rule

MUTATORS = frozenset({"append", "extend", "insert", "pop", "remove", "clear", "update", "add",
                      "discard", "setdefault", "popitem", "sort", "reverse"})


class PythonStateMutation(Rule):
    """Flags mutation of module-level Python objects in compiled code.

    ## What it does
    Finds `.append()`/`.update()`/`[k] = v`/`.attr = v` on a module-level object inside a
    function MindSpore compiles.

    Objects whose content the file never reads (a cache that is only written) are not flagged:
    running the write once changes nothing observable.

    ## Why is this bad?
    Python code in a graph runs once, while compiling. `CALLS.append(1); return x + len(CALLS)`
    appended once and returned x+1 on every call (PyNative: x+1, x+2, x+3), without any error.

    ## Example
    ```python
    CALLS = []

    @ms.jit
    def f(x):
        CALLS.append(1)
        return x + len(CALLS)
    ```

    ## Use instead
    Keep state that must change per call in a `Parameter` (updated with `ops.assign`) or
    outside the compiled function. Containers created inside the graph are fine.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG202"
    name = "python-state-mutation"
    severity = "error"
    claim = "wrong-result"

    def _module_object(self, node, ctx) -> str | None:
        if isinstance(node, ast.Name) and node.id in ctx.model.module_names \
                and node.id not in ctx.graph.assigned and node.id not in ctx.graph.tensor_params \
                and self._read(node.id, ctx):
            return node.id
        return None

    @staticmethod
    def _read(name, ctx) -> bool:
        """Is the object's content read anywhere in the file (other than to mutate it)? A
        write-only object (a cache never looked up) changes nothing observable."""
        reads = getattr(ctx, "_msg202_reads", None)
        if reads is None:
            parents, reads = {}, set()
            for p in ast.walk(ctx.tree):
                for c in ast.iter_child_nodes(p):
                    parents[c] = p
            for n in ast.walk(ctx.tree):
                if not (isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)):
                    continue
                p = parents.get(n)
                if isinstance(p, ast.Subscript) and isinstance(p.ctx, (ast.Store, ast.Del)):
                    continue
                if isinstance(p, ast.Attribute) and p.attr in MUTATORS and isinstance(parents.get(p), ast.Call) \
                        and isinstance(parents.get(parents.get(p)), ast.Expr):
                    continue
                reads.add(n.id)
            ctx._msg202_reads = reads
        return name in reads

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and isinstance(f, ast.Attribute) and f.attr in MUTATORS:
            name = self._module_object(f.value, ctx)
            if name:
                self.report(node, f"'{name}.{f.attr}()' mutates module-level state in compiled code: it runs "
                                  "once at compile time, not on every call")

    def visit_Assign(self, node, ctx):
        if not ctx.in_graph:
            return
        for t in node.targets:
            if isinstance(t, (ast.Subscript, ast.Attribute)):
                name = self._module_object(t.value, ctx)
                if name:
                    self.report(node, f"assignment into module-level '{name}' in compiled code runs once at "
                                      "compile time, not on every call")

    VALID = [
        # written, never read: nothing to observe
        """
import mindspore as ms

OPS = {}

@ms.jit
def f(x):
    OPS["double"] = 2
    return x * 2
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = []
    parts.append(x)
    return parts[0] + len(parts)
""",
    ]
    INVALID = [
        """
import mindspore as ms

CALLS = []

@ms.jit
def f(x):
    CALLS.append(1)
    return x + len(CALLS)
""",
        """
import mindspore as ms

STATS = {"calls": 0}

@ms.jit
def f(x):
    STATS["calls"] = STATS["calls"] + 1
    return x + STATS["calls"]
""",
    ]
