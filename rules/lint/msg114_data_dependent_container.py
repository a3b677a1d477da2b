import ast

from msmigrate.lint.rule import Rule

GROW = frozenset({"append", "extend", "insert"})
SHRINK = frozenset({"pop", "remove", "clear"})
# builtins that take the whole sequence (measured to fail on a data-dependent list)
WHOLE_BUILTINS = frozenset({"tuple", "sum"})


def _growth(node) -> tuple[str, str] | None:
    """(list name, kind) if `node` changes the length of a named list: kind is the method name,
    '+=' or '+'."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.attr in GROW | SHRINK:
        return node.func.value.id, node.func.attr
    if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name) \
            and isinstance(node.value, (ast.List, ast.Tuple, ast.ListComp)):
        return node.target.id, "+="
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
            and isinstance(node.value, ast.BinOp) and isinstance(node.value.op, ast.Add) \
            and isinstance(node.value.left, ast.Name) and node.value.left.id == node.targets[0].id \
            and isinstance(node.value.right, (ast.List, ast.Tuple, ast.ListComp)):
        return node.targets[0].id, "+"
    return None


def _is_empty_list(node) -> bool:
    return (isinstance(node, ast.List) and not node.elts) or \
        (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "list"
         and not node.args and not node.keywords)


class DataDependentContainer(Rule):
    """Flags uses of a list whose length depends on tensor values, where MindSpore fails.

    ## What it does
    Finds a list that is grown or shrunk (`append`, `extend`, `insert`, `pop`, `remove`,
    `clear`, `lst += [...]`, `lst = lst + [...]`) under a tensor-valued `if`/`while`, or built
    by a comprehension with a tensor-valued filter (`[v for v in ... if v > 0]`), and then used
    in a way that MindSpore 2.10 cannot compile. Measured with `@ms.jit` (GRAPH_MODE, LAX):

    | after growing under a tensor condition | list empty before (`[]`), or shrunk or extended | list non-empty before, grown by append/insert/`+=` |
    |---|---|---|
    | not used afterwards | compiles | compiles |
    | used inside the same branch | compiles | compiles |
    | `ops.stack/concat/addn(lst)`, `tuple(lst)`, `sum(lst)`, `return lst` | fails (flagged) | fails or wrong (flagged) |
    | `len(lst)`, `lst[i]`, `for v in lst`, `if lst` | fails (flagged) | compiles and matches |
    | `lst.extend(...)` in a loop | fails even unused (flagged) | fails even unused (flagged) |
    | `ops.stack(lst)` after a tensor-valued `while` | the process crashed | the process crashed |

    Conditions that are a bare name (`if ys:`) or a membership test (`if i in out_inds:`) are
    not counted: on a tuple argument they are compile-time constants. A tensor-valued `while`
    is the exception: `len(lst)` after it compiled and matched even for
    an empty start (not flagged), indexing did not. Growing the list equally in both branches of
    an `if`/`else` keeps its length fixed and compiles (not flagged); appending a different
    number of times in each branch of an `if`/`else` types the list like a non-empty one.

    ## Why is this bad?
    A list's length is part of its graph type. When it depends on data, the compiler cannot
    type the list and the first call fails with a cryptic error: `TypeError:
    'mindspore._c_expression.typing.TensorType' object is not subscriptable` (`ops.stack`),
    `RuntimeError: The pointer[seq_abs] is null.` (`len`), `The pointer[data_abs] is null`
    (indexing), `ListExtend does not support dynamic length list`. `ops.addn` of such a list
    even compiled and returned a wrong sum (measured [1, -6, 3] for PyNative's [-1, -2, -3]).

    ## Example
    ```python
    @ms.jit
    def f(x):
        out = []
        for i in range(x.shape[0]):
            if x[i] > 0:
                out.append(x[i])
        return ops.stack(out)
    ```

    ## Use instead
    Keep the length fixed and select values: `ops.select(x > 0, x, 0)`, a mask
    (`x * (x > 0)`), or `ops.masked_select(x, x > 0)` for the selected elements (a dynamic
    shape, not a dynamic list); or append in every branch.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG114"
    name = "data-dependent-container"
    severity = "error"
    claim = "compile-error"

    def visit_FunctionDef(self, node, ctx):
        g = ctx.model.graph.get(node)
        if g is None:
            return
        parents = {}
        for parent in ast.walk(node):
            for child in ast.iter_child_nodes(parent):
                parents[child] = parent
        self._check(node, g, parents, ctx)

    visit_AsyncFunctionDef = visit_FunctionDef

    # -- which lists have a data-dependent length, and where
    def _tensor_cond(self, node, fn, parents, g, ctx):
        """The innermost tensor-valued if/while whose body or else holds `node`."""
        child, cur = node, parents.get(node)
        while cur is not None and cur is not fn:
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                return None
            if isinstance(cur, (ast.If, ast.While)) and child is not cur.test and self._data_test(cur.test, g, ctx):
                return cur
            child, cur = cur, parents.get(cur)
        return None

    @staticmethod
    def _data_test(test, g, ctx) -> bool:
        """A condition on tensor values. Not: a bare name or attribute (`if ys:` is as often a
        tuple of tensors, a compile-time constant, as a tensor) and membership tests (`if i in
        out_inds:` on a tuple argument), which native code uses on constants."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            test = test.operand
        if isinstance(test, (ast.Name, ast.Attribute)):
            return False
        if isinstance(test, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in test.ops):
            return False
        return ctx.model.is_tensor(test, g)

    @staticmethod
    def _in_loop(node, fn, parents) -> ast.AST | None:
        cur = parents.get(node)
        while cur is not None and cur is not fn:
            if isinstance(cur, (ast.For, ast.While)):
                return cur
            cur = parents.get(cur)
        return None

    def _check(self, fn, g, parents, ctx):
        sites = {}   # (list name, cond) -> [growth nodes]
        comps = {}   # list name -> Assign of a comprehension with a tensor-valued filter
        for n in ast.walk(fn):
            grown = _growth(n)
            if grown is not None:
                cond = self._tensor_cond(n, fn, parents, g, ctx)
                if cond is not None and any(ln < cond.lineno for ln in g.assigned.get(grown[0], ())):
                    sites.setdefault((grown[0], cond), []).append((n, grown[1]))
            elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                    and isinstance(n.value, ast.ListComp) and any(
                        self._data_test(cond, g, ctx) for gen in n.value.generators for cond in gen.ifs):
                comps.setdefault(n.targets[0].id, n)
        reported = set()
        for (name, cond), growths in sorted(sites.items(), key=lambda kv: kv[0][1].lineno):
            if name in reported or self._balanced(name, cond):
                continue
            for n, kind in growths:
                if kind == "extend" and self._in_loop(cond, fn, parents) is not None or \
                        kind == "extend" and isinstance(cond, ast.While):
                    self.report(n, f"'{name}.extend()' under the tensor-valued `{self._kw(cond)}` at line "
                                   f"{cond.lineno}, in a loop: MindSpore cannot extend a list of data-dependent "
                                   "length (fails to compile even if unused); keep the length fixed")
                    reported.add(name)
                    break
            if name in reported:
                continue
            # shrinking, or extend (measured: len() failed after extending a non-empty list), type
            # the list like an empty one
            empty = any(kind in SHRINK or kind == "extend" for _, kind in growths) or \
                (self._empty_before(name, cond, fn, g, ctx) and not self._grown_both_ways(name, cond))
            use = self._failing_use(name, cond, fn, parents, empty, ctx)
            if use is not None:
                what, at = use
                self.report(at, f"'{name}' grows or shrinks under the tensor-valued `{self._kw(cond)}` at line "
                                f"{cond.lineno}, so its length depends on data: {what} fails to compile (or, returned or "
                                "summed by ops.addn, is wrong) in graph mode; keep the length fixed (select values, mask, or append in every branch)")
                reported.add(name)
        for name, assign in comps.items():
            if name in reported:
                continue
            use = self._failing_use(name, assign, fn, parents, True, ctx)
            if use is not None:
                what, at = use
                self.report(at, f"'{name}' is built with a tensor-valued filter at line {assign.lineno}, so its "
                                f"length depends on data: {what} fails to compile in graph mode; use a mask "
                                "or ops.masked_select instead")

    @staticmethod
    def _kw(cond) -> str:
        return "while" if isinstance(cond, ast.While) else "if"

    @staticmethod
    def _balanced(name, cond) -> bool:
        """An if/else that changes the list the same way in both branches keeps its length fixed."""
        if not isinstance(cond, ast.If) or not cond.orelse:
            return False

        def kinds(stmts):
            return sorted(k for s in stmts for n in ast.walk(s) if (gr := _growth(n)) and gr[0] == name
                          for k in [gr[1]])
        return kinds(cond.body) == kinds(cond.orelse)

    @staticmethod
    def _grown_both_ways(name, cond) -> bool:
        """Both branches of an if/else append to the list: it is not empty after it (measured:
        len() of [] grown by 2 appends in one branch and 1 in the other compiled and matched)."""
        if not isinstance(cond, ast.If) or not cond.orelse:
            return False

        def grows(stmts):
            return any((gr := _growth(n)) and gr[0] == name and gr[1] not in SHRINK
                       for s in stmts for n in ast.walk(s))
        return grows(cond.body) and grows(cond.orelse)

    def _empty_before(self, name, cond, fn, g, ctx) -> bool:
        """Is the list empty when the condition is reached (bound to [] and not grown outside
        tensor conditions in between)?"""
        binds = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.lineno < cond.lineno
                 and any(isinstance(t, ast.Name) and t.id == name for t in n.targets)]
        if not binds:
            return False
        last = max(binds, key=lambda n: n.lineno)
        if not _is_empty_list(last.value):
            return False
        for n in ast.walk(fn):
            gr = _growth(n)
            if gr and gr[0] == name and gr[1] in GROW | {"+=", "+"} and last.lineno < n.lineno < cond.lineno:
                return False
        return True

    def _failing_use(self, name, cond, fn, parents, empty, ctx):
        """The first use of the list after `cond` that MindSpore fails on, as (description, node)."""
        inside = {id(n) for n in ast.walk(cond)}
        loop = self._in_loop(cond, fn, parents)
        in_loop = {id(n) for n in ast.walk(loop)} if loop is not None else set()
        rebound = min((n.lineno for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name
                       and isinstance(n.ctx, ast.Store) and n.lineno > cond.end_lineno and id(n) not in in_loop),
                      default=None)
        uses = sorted((n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name
                       and isinstance(n.ctx, ast.Load) and id(n) not in inside
                       and (n.lineno > cond.end_lineno or id(n) in in_loop)
                       and (rebound is None or n.lineno < rebound)),
                      key=lambda n: (n.lineno, n.col_offset))
        for n in uses:
            p = parents.get(n)
            if isinstance(p, ast.Attribute) and p.attr in GROW | SHRINK and isinstance(parents.get(p), ast.Call):
                continue  # growing it further is not a use of its length
            if isinstance(p, ast.Starred):
                return f"unpacking '*{name}'", n
            if isinstance(p, ast.Call) and n in p.args:
                fname = ctx.qualname(p.func) or ""
                if fname.startswith("mindspore") or (isinstance(p.func, ast.Name) and p.func.id in WHOLE_BUILTINS):
                    return f"'{ctx.text(p)}'", p
                if isinstance(p.func, ast.Name) and p.func.id == "len":
                    if empty and not isinstance(cond, ast.While):
                        return f"'len({name})'", p
                    continue
            if isinstance(p, ast.Return) or (isinstance(p, ast.Tuple) and isinstance(parents.get(p), ast.Return)):
                return f"returning '{name}'", n
            if empty and not (isinstance(p, ast.Call) and isinstance(p.func, ast.Name) and p.func.id == "len"):
                if isinstance(p, ast.Subscript):
                    return f"indexing '{ctx.text(p)}'", p
                return f"reading '{name}'", n
        return None

    VALID = [
        # a tensor-valued while that never reads the list afterwards
        """
import mindspore as ms

@ms.jit
def f(x):
    total = x * 0
    parts = []
    n = x.sum()
    while n > 0:
        parts.append(x)
        total = total + x
        n = n - 5
    return total
""",
        # non-empty before the `if`: its length and elements can be read
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = [x]
    if x.sum() > 0:
        parts.append(x * 2)
    return x * len(parts) + parts[-1]
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = [x[0]]
    for i in range(x.shape[0]):
        if x[i] > 0:
            out.append(x[i])
    s = x[0] * 0
    for v in out:
        s = s + v
    return s * len(out)
""",
        # appended in both branches: fixed length
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    out = []
    for i in range(x.shape[0]):
        if x[i] > 0:
            out.append(x[i])
        else:
            out.append(-x[i])
    return ops.stack(out)
""",
        # grown in both branches, by different amounts: never empty, its length can be read
        """
import mindspore as ms

@ms.jit
def f(x):
    out = []
    if x.sum() > 0:
        out.append(x)
        out.append(x * 2)
    else:
        out.append(x)
    return x * len(out)
""",
        # used only inside the branch that grew it
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    out = []
    if x.sum() > 0:
        out.append(x * 2)
        return ops.stack(out)
    return x
""",
        # the fixed-length way to keep the positive elements
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return ops.select(x > 0, x, ops.zeros_like(x))
""",
    ]
    INVALID = [
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    out = []
    if x.sum() > 0:
        out.append(x)
        out.append(x * 2)
    else:
        out.append(x)
    return ops.stack(out)
""",
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    out = []
    for i in range(x.shape[0]):
        if x[i] > 0:
            out.append(x[i])
    return ops.stack(out)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = []
    for i in range(x.shape[0]):
        if x[i] > 0:
            out.append(x[i])
    return len(out)
""",
        """
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    out = [x]
    if x.sum() > 0:
        out.append(x * 2)
    return ops.stack(out)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = []
    if x.sum() > 0:
        out.append(x * 2)
    return out[0]
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = []
    for i in range(x.shape[0]):
        if x[i] > 0:
            out += [x[i]]
    s = x[0] * 0
    for v in out:
        s = s + v
    return s
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = [x]
    for i in range(x.shape[0]):
        if x[i] > 0:
            out.extend([x])
    return x * 2
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = [x]
    if x.sum() > 0:
        out.extend([x, x])
    return len(out)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = [x[i] for i in range(x.shape[0]) if x[i] > 0]
    return len(out)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    out = [x, x]
    if x.sum() > 0:
        out.pop()
    return len(out)
""",
        """
import mindspore as ms

@ms.jit
def f(x):
    parts = []
    n = x.sum()
    while n > 0:
        parts.append(x)
        n = n - 5
    return parts[-1]
""",
    ]
