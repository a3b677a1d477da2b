import ast

from msmigrate.lint.rule import Rule

MUTATORS = frozenset({"append", "extend", "insert", "update", "add"})
# `add` is a Tensor method too (`x.mul(0.9).add(y, alpha=0.1)`, an EMA's update): a set's only
# when the call gave a container (`d.setdefault(k, set()).add(v)`)
CONTAINER_GETTERS = frozenset({"setdefault", "get", "pop", "copy"})


class MutationOfCallResult(Rule):
    """Flags a container changed through what a method call returned (`d.setdefault(k, []).append(v)`).

    ## What it does
    Finds `obj.method(...).append(...)` (and `extend`, `insert`, `update`, `add`) in compiled
    code: a list or dict fetched by a call, then changed in place. `add` counts only after
    `setdefault`/`get`/`pop`/`copy` (`x.mul(0.9).add(y)` is Tensor.add, which compiles).

    ## Why is this bad?
    MindSpore 2.10's graph parser rejects it: `TypeError: Only supported augassign to attribute
    of self, variable and index value, but got <class 'ast.Call'>`. Grouping loss terms with
    `groups.setdefault(name, []).append(loss)` is common in PyTorch code.

    ## Example
    ```python
    @ms.jit
    def f(x):
        groups = {}
        groups.setdefault("a", []).append(x.sum())
        return groups["a"][0]
    ```

    ## Use instead
    Create the entry first, then change it by subscript: `if "a" not in groups: groups["a"] = []`,
    `groups["a"].append(x.sum())`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG116"
    name = "mutation-of-call-result"
    severity = "error"
    claim = "compile-error"

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and isinstance(f, ast.Attribute) and f.attr in MUTATORS and \
                isinstance(f.value, ast.Call) and isinstance(f.value.func, ast.Attribute) and \
                (f.attr != "add" or f.value.func.attr in CONTAINER_GETTERS):
            self.report(node, f"'{ctx.text(f.value.func)}(...).{f.attr}()' in compiled code does not compile "
                              f"in MindSpore 2.10: create the entry first, then change it by subscript")

    VALID = [
        """
import mindspore as ms


@ms.jit
def f(x):
    return x.mul(0.9).add(x * x, alpha=0.1)   # Tensor.add (an EMA's update): no container
""",
        """
import mindspore as ms


@ms.jit
def f(x):
    groups = {}
    if "a" not in groups:
        groups["a"] = []
    groups["a"].append(x.sum())
    return groups["a"][0]
""",
    ]
    INVALID = [
        """
import mindspore as ms


@ms.jit
def f(x):
    groups = {}
    groups.setdefault("a", []).append(x.sum())
    return groups["a"][0]
""",
    ]
