import ast

from msmigrate.lint.rule import Rule

_CASTS = {"astype", "long", "int", "float", "to", "view", "reshape", "squeeze", "unsqueeze"}
CONSTRUCTORS = ("mindspore.Tensor", "mindspore.tensor", "mindspore.common.tensor.Tensor")


def _module_tensors(model) -> set[str]:
    """Module-level names bound only to MindSpore tensor constructors and ops."""
    cached = getattr(model, "_msg117_tensors", None)
    if cached is not None:
        return cached
    yes, no = set(), set()
    for stmt in model.tree.body:
        if not isinstance(stmt, ast.Assign):
            continue
        v = stmt.value
        if isinstance(v, ast.IfExp):   # `(zeros(...) if isinstance(d, int) else ms.Tensor(d))`
            v = v.orelse
        q = (model.qualname(v.func) or "") if isinstance(v, ast.Call) else ""
        made = q in CONSTRUCTORS or q.startswith("mindspore.ops.")
        for t in stmt.targets:
            if isinstance(t, ast.Name):
                (yes if made else no).add(t.id)
    model._msg117_tensors = found = yes - no
    return found


class TensorOfTensorList(Rule):
    """Flags `ms.Tensor([t, ...])` built from a list or tuple holding tensor values, in compiled code.

    ## What it does
    Finds a Tensor constructor in compiled code whose data is a list or tuple display with a
    tensor-valued element, passed to a layer, loss or function of the program:
    `loss_fn(out, ms.Tensor([label], ms.int64))` for a `label` taken from a tensor, the conversion
    of torch's `torch.LongTensor([label])` (torch copies the values of such a list).

    ## Why is this bad?
    The graph compiler builds that Tensor in Python at run time (JIT Fallback), so its shape is
    not known while compiling: a layer or loss that checks shapes when it compiles fails, e.g.
    `nn.CrossEntropyLoss` with `ValueError: The tensor should have only one element, but got 0`.
    PyNative builds it like torch.

    ## Example
    ```python
    @ms.jit
    def f(logits, labels):
        return loss_fn(logits, ms.Tensor([labels[0]], ms.int32))
    ```

    ## Use instead
    Keep it a tensor operation: `ops.stack([labels[0]]).astype(ms.int32)` or `labels[0:1]`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG117"
    name = "tensor-of-tensor-list"
    severity = "error"
    claim = "compile-error"

    def visit_Call(self, node, ctx):
        # passed to a layer, loss or function of the program (not to a MindSpore op): where a
        # shape checked while compiling meets it
        if not ctx.in_graph or (ctx.qualname(node.func) or "").startswith("mindspore"):
            return
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            while isinstance(arg, ast.Call) and isinstance(arg.func, ast.Attribute) and arg.func.attr in _CASTS:
                arg = arg.func.value
            if isinstance(arg, ast.Call) and arg.args and (ctx.qualname(arg.func) or "") in CONSTRUCTORS:
                data = arg.args[0]
                if isinstance(data, (ast.List, ast.Tuple)) and any(
                        ctx.is_tensor(e) or self._from_tensor_loop(e, ctx) for e in data.elts):
                    self.report(arg, f"'{ctx.text(arg.func)}(...)' of a list holding tensors is built in Python at "
                                     f"run time: its shape is unknown while compiling, and the layer or loss it is "
                                     f"passed to checks it; use ops.stack([...])")

    def _from_tensor_loop(self, e, ctx) -> bool:
        """A name the enclosing function's `for` binds from a module-level tensor
        (`for x, label in zip(inputs, labels)` with `labels = ms.Tensor(...)` at the top)."""
        if not isinstance(e, ast.Name):
            return False
        fn = ctx.functions[-1] if ctx.functions else ctx.graph.node
        tensors = _module_tensors(ctx.model)
        for loop in ast.walk(fn):
            if not isinstance(loop, (ast.For, ast.comprehension)):
                continue
            iters, target = [loop.iter], loop.target
            if isinstance(loop.iter, ast.Call) and isinstance(loop.iter.func, ast.Name) \
                    and loop.iter.func.id in ("zip", "enumerate"):
                iters = list(loop.iter.args)
                if loop.iter.func.id == "enumerate" and isinstance(target, ast.Tuple) and len(target.elts) == 2:
                    target = target.elts[1]
            if isinstance(target, ast.Tuple) and len(target.elts) == len(iters):
                pairs = zip(target.elts, iters)
            else:
                pairs = [(target, it) for it in iters[:1]]
            if any(isinstance(t, ast.Name) and t.id == e.id and isinstance(it, ast.Name) and it.id in tensors
                   for t, it in pairs):
                return True
        return False

    VALID = [
        """
import mindspore as ms
from mindspore import nn, ops

loss_fn = nn.CrossEntropyLoss()


@ms.jit
def f(x):
    logits = x.reshape(1, 3)
    label = x.argmax()
    return loss_fn(logits, ops.stack([label]).astype(ms.int32)) + ms.Tensor([1.0, 2.0], ms.float32).sum()
""",
    ]
    INVALID = [
        """
import mindspore as ms
from mindspore import nn

loss_fn = nn.CrossEntropyLoss()
labels = ms.Tensor([2, 0, 1], ms.int64)


@ms.jit
def f(x):
    logits = x.reshape(1, 3)
    loss = 0
    for label in labels:
        loss += loss_fn(logits, ms.Tensor([label], ms.int32))
    return loss
""",
        """
import mindspore as ms
from mindspore import nn

loss_fn = nn.CrossEntropyLoss()


@ms.jit
def f(x):
    logits = x.reshape(1, 3)
    label = x.argmax()
    return loss_fn(logits, ms.Tensor([label], ms.int32))
""",
    ]
