
from msmigrate.lint.rule import Rule

THIRD_PARTY = ("numpy.", "math.", "scipy.", "cmath.", "statistics.")
# numpy constructors whose arguments are sizes: a bare parameter passed there is a Python int far
# more often than a tensor (`construct(self, B, H, W)` called with shapes), so they need a value
# computed from a tensor
SIZED = frozenset({"numpy.zeros", "numpy.ones", "numpy.empty", "numpy.full", "numpy.arange", "numpy.eye",
                   "numpy.identity", "numpy.linspace", "numpy.logspace", "numpy.tri", "numpy.indices"})


class ThirdPartyOnTensorValues(Rule):
    """Flags numpy / math / scipy calls on tensor values in compiled code.

    ## What it does
    Finds `np.*`, `math.*`, `scipy.*` calls whose arguments depend on tensor values (through
    `float(t)`, `.asnumpy()`, ...). Calls on shapes and constants are fine and not flagged; the
    sizes given to `np.zeros/ones/empty/full/arange/eye/...` must be computed from a tensor to be
    flagged (a bare parameter there, as in `construct(self, B, H, W)` called with shapes, is a
    Python int), and so must the arguments of `math.*`, which take Python numbers.

    ## Why is this bad?
    The call cannot be compiled, so it runs as Python at run time on every call (JIT
    Fallback); `fullgraph=True` rejects it.

    ## Example
    ```python
    @ms.jit
    def f(x):
        return x * math.sqrt(float(x.abs().sum()))
    ```

    ## Use instead
    Use the `mindspore.ops` equivalent on the tensor (`ops.sqrt(x.abs().sum())`).

    ## Fix safety
    No automatic fix.
    """
    code = "MSG402"
    name = "third-party-on-tensor-values"
    severity = "warning"
    claim = "fallback"

    def visit_Call(self, node, ctx):
        if not ctx.in_graph:
            return
        q = ctx.qualname(node.func)
        test = ctx.is_tensor_derived if q in SIZED or (q or "").startswith("math.") else ctx.is_tensor
        if q and q.startswith(THIRD_PARTY) and (
                any(test(a) for a in node.args) or any(test(k.value) for k in node.keywords)):
            self.report(node, f"'{q}()' on tensor values runs as Python on every call (JIT Fallback) and fails "
                              "under fullgraph=True: use the mindspore.ops equivalent")

    VALID = [
        # sizes passed from the caller's shapes: numpy runs once, at compile time
        """
import numpy as np
import mindspore as ms
from mindspore import nn


class Mask(nn.Cell):
    def construct(self, b, n):
        return ms.Tensor(np.zeros((b, n), np.float32))


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.mask = Mask()

    def construct(self, x):
        return x + self.mask(1, x.shape[0])
""",
        """
import math
import mindspore as ms
from mindspore import nn


class Half(nn.Cell):
    def construct(self, x, n):
        return x[:math.ceil(n / 2)]


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.half = Half()

    def construct(self, x):
        return self.half(x, x.shape[0])
""",
        """
import math
import mindspore as ms
from mindspore import ops

@ms.jit
def f(x):
    return x * ops.sqrt(x.abs().sum()) / math.sqrt(x.shape[-1])
""",
    ]
    INVALID = [
        """
import math
import mindspore as ms

@ms.jit
def f(x):
    return x * math.sqrt(float(x.abs().sum()))
""",
        """
import numpy as np
import mindspore as ms

@ms.jit
def f(x):
    return x * float(np.tanh(x.asnumpy()).sum())
""",
    ]
