import ast

from msmigrate.lint.rule import Rule

# list methods after which MindSpore 2.10's graph differentiation drops the gradient of the whole
# list (values stay right); append, `+=`, `lst + [...]` and index assignment keep it
ZERO_GRAD_METHODS = frozenset({"insert", "extend", "pop", "reverse"})


class ListReshuffleGradient(Rule):
    """Flags `list.insert/extend/pop/reverse` in compiled code: their gradients are zero.

    ## What it does
    Finds `lst.insert(...)`, `lst.extend(...)`, `lst.pop(...)` and `lst.reverse()` on a list in
    compiled code (a `construct`, a `@jit` function, a function differentiated by
    `value_and_grad`, or anything they call).

    ## Why is this bad?
    In MindSpore 2.10 graph mode, a list changed by one of these methods computes the right
    values, but differentiation through it yields zero gradients for every element: a loss
    assembled that way (`losses.extend([...])`, then `ops.stack(losses).mean()`) trains nothing,
    silently. PyNative, and `append`, `lst += [t]`, `lst = lst + [t]`, `lst[i] = t`, are right.

    ## Example
    ```python
    @ms.jit
    def step(x):
        def loss_fn(w):
            terms = []
            terms.extend([(x * w).sum(), (x * w * w).sum()])
            return terms[0] + terms[1]
        return ms.grad(loss_fn)(w)        # zeros
    ```

    ## Use instead
    `terms.append(t)` for each term, `terms = [t] + terms` instead of `insert(0, t)`,
    `terms = terms[:-1]` instead of `pop()`, `terms = terms[::-1]` instead of `reverse()`.

    ## Fix safety
    No automatic fix.
    """
    code = "MSG207"
    name = "list-reshuffle-gradient"
    severity = "error"
    claim = "wrong-result"

    def visit_Call(self, node, ctx):
        f = node.func
        if ctx.in_graph and isinstance(f, ast.Attribute) and f.attr in ZERO_GRAD_METHODS \
                and isinstance(f.value, ast.Name) and self._is_list(f.value.id, ctx) \
                and not (f.attr == "pop" and len(node.args) + len(node.keywords) > 1):   # dict.pop(k, d)
            self.report(node, f"'{f.value.id}.{f.attr}()' in compiled code: gradients through this list are "
                              f"zero in MindSpore 2.10 (values are right); use append, `+`, slicing or "
                              f"index assignment")

    @staticmethod
    def _is_list(name, ctx) -> bool:
        """Bound in this function to a list display, `list(...)` or a list comprehension."""
        for stmt in ast.walk(ctx.graph.node):
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                v = stmt.value
                if isinstance(v, (ast.List, ast.ListComp)) or (
                        isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "list"):
                    return True
        return False

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import ops

W = ms.Parameter(ms.Tensor(np.array([1.0, 2.0, 3.0], np.float32)), name="w")

def loss_fn(x):
    terms = []
    terms.append((x * W).sum())
    terms = [(x * W * W).sum()] + terms
    return ops.stack(terms).sum()

grad_fn = ms.value_and_grad(loss_fn, None, [W])

@ms.jit
def step(x):
    loss, grads = grad_fn(x)
    return grads[0]

def drive():
    return [step(ms.Tensor(np.array(v, np.float32))) for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])]
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import ops

W = ms.Parameter(ms.Tensor(np.array([1.0, 2.0, 3.0], np.float32)), name="w")

def loss_fn(x):
    terms = []
    terms.extend([(x * W).sum(), (x * W * W).sum()])
    return ops.stack(terms).sum()

grad_fn = ms.value_and_grad(loss_fn, None, [W])

@ms.jit
def step(x):
    loss, grads = grad_fn(x)
    return grads[0]

def drive():
    return [step(ms.Tensor(np.array(v, np.float32))) for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])]
""",
        """
import numpy as np
import mindspore as ms
from mindspore import nn, ops


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.w = ms.Parameter(ms.Tensor(np.array([1.0, 2.0, 3.0], np.float32)), name="w")

    def construct(self, x):
        terms = [(x * self.w).sum()]
        terms.insert(0, (x * self.w * self.w).sum())
        return terms[0] + terms[1]


net = Net()
grad_fn = ms.value_and_grad(net, None, net.trainable_params())

@ms.jit
def step(x):
    loss, grads = grad_fn(x)
    return grads[0]

def drive():
    return [step(ms.Tensor(np.array(v, np.float32))) for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])]
""",
        """
import numpy as np
import mindspore as ms
from mindspore import ops

W = ms.Parameter(ms.Tensor(np.array([1.0, 2.0, 3.0], np.float32)), name="w")

def loss_fn(x):
    terms = [(x * W).sum(), (x * W * W).sum(), x.sum()]
    terms.pop()
    return terms[0] + terms[1]

grad_fn = ms.value_and_grad(loss_fn, None, [W])

@ms.jit
def step(x):
    loss, grads = grad_fn(x)
    return grads[0]

def drive():
    return [step(ms.Tensor(np.array(v, np.float32))) for v in ([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])]
""",
    ]
