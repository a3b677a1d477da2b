import ast

from msmigrate.lint.rule import GraphSyntaxRule

_TRANSFORMS = frozenset({"mindspore.vjp", "mindspore.grad", "mindspore.value_and_grad", "mindspore.jvp",
                         "mindspore.ops.vjp", "mindspore.ops.grad", "mindspore.ops.value_and_grad",
                         "mindspore.ops.jvp", "mindspore.jacrev", "mindspore.jacfwd"})


def _differentiated(g, model, depth=0) -> bool:
    """Whether this graph function is differentiated by a gradient transform called from compiled
    code, or called (transitively) from one that is."""
    if g is None or depth > 8:
        return False
    if g.why.startswith("differentiated by"):
        return True
    prefix = "called from compiled '"
    why = g.why.removeprefix("called from compiled code: ")
    if not why.startswith(prefix):
        return False
    caller = why[len(prefix):].split("'", 1)[0]
    return any(c.node.name == caller and c is not g and _differentiated(c, model, depth + 1)
               for c in model.graph.values())


class GradientOfGradientInGraph(GraphSyntaxRule):
    """Flags a gradient transform inside a function that a compiled step differentiates again.

    ## What it does
    Finds `ms.vjp`, `ms.grad`, `ms.value_and_grad`, `ms.jvp` (and `jacrev`/`jacfwd`) called in
    a function that compiled code differentiates (`grad_fn = ms.value_and_grad(forward_fn, None,
    weights)` called from a `@ms.jit` step), or in a function called from one: a derivative
    with respect to the input inside the loss (a physics-informed network's residual, a
    gradient penalty), differentiated again with respect to the weights.

    ## Why is this bad?
    MindSpore 2.10 does not compile the forms torch's `create_graph=True` converts to (the
    differentiated function defined inside the step's forward function, closing over the input
    tensor): "For primitive:'TupleGetItem', cannot get item by index from an empty sequence", or
    "input[0] should be Sequence, but got Tensor" for a second derivative; an inner `ms.grad`
    yields a tuple where a Tensor was expected. Some other forms compile: the rule is
    conservative, and PyNative computes the same gradients as torch's `create_graph=True`.

    ## Example
    ```python
    def forward_fn(x):
        u, vjp = ms.vjp(net, x)
        u_x = vjp(ops.ones_like(u))[0]
        return ops.mean(u_x ** 2)

    grad_fn = ms.value_and_grad(forward_fn, None, weights)

    @ms.jit
    def train_step(x):
        return grad_fn(x)
    ```

    ## Use instead
    Run that training step in PyNative (no `@ms.jit`).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG119"
    name = "gradient-of-gradient-in-graph"
    nodes = (ast.Call,)
    message = ("a gradient transform inside a function compiled code differentiates again ({where}): "
               "MindSpore 2.10 does not compile a gradient of a gradient; run this step in PyNative")

    def applies(self, node, ctx) -> bool:
        return ctx.qualname(node.func) in _TRANSFORMS and _differentiated(ctx.graph, ctx.model)

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops

net = nn.Dense(3, 1)

@ms.jit
def saliency(x):
    u, vjp = ms.vjp(net, x)
    return vjp(ops.ones_like(u))[0]

def drive():
    x = Tensor(np.array([[1.0, 2.0, 3.0]], np.float32))
    return [saliency(x).shape[1]]
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import Tensor, nn, ops

net = nn.SequentialCell(nn.Dense(1, 4), nn.Tanh(), nn.Dense(4, 1))
x = Tensor(np.array([[0.0], [0.5], [1.0]], np.float32))

def forward_fn():
    def outputs(x):
        return net(x)
    u, vjp = ms.vjp(outputs, x)
    u_x = vjp(ops.ones_like(u))[0]
    return ops.mean(u_x ** 2)

grad_fn = ms.value_and_grad(forward_fn, None, net.trainable_params())

@ms.jit
def train_step():
    loss, grads = grad_fn()
    return loss

def drive():
    return [float(train_step()) * 0.0]
""",
    ]
