
from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg701_dropout_positional_keep_prob import ms_nn_call


class GeluApproximateDefault(Rule):
    """Flags `nn.GELU()` without `approximate`.

    ## What it does
    Finds `mindspore.nn.GELU` created without an explicit `approximate` argument.

    ## Why is this bad?
    MindSpore's `nn.GELU()` defaults to the tanh approximation; torch's `nn.GELU()` is exact.
    Ported models drift silently (forward error 4.7e-4, gradients 1.9e-3 measured).

    ## Example
    ```python
    act = nn.GELU()
    ```

    ## Use instead
    ```python
    act = nn.GELU(approximate=False)   # torch's default, exact erf form
    ```

    ## Fix safety
    Unsafe: adds `approximate=False`, which changes the numbers of code that wanted the tanh
    approximation.
    """
    code = "MSG704"
    origin = "ported"
    name = "gelu-approximate-default"
    severity = "warning"
    claim = "differs-from-torch"
    fix_safety = "unsafe"

    def visit_Call(self, node, ctx):
        if node.args or any(k.arg in ("approximate", None) for k in node.keywords):
            return
        if ms_nn_call(node, ctx, "GELU"):
            end = ctx.offset(node.end_lineno, node.end_col_offset) - 1
            sep = ", " if node.keywords else ""
            self.report(node, "nn.GELU() defaults to the tanh approximation (torch: exact): pass approximate "
                              "explicitly", ((end, end, f"{sep}approximate=False"),))

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    return nn.GELU(approximate=False)(ms.Tensor(np.linspace(-3, 3, 7).astype(np.float32)))
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    return nn.GELU()(ms.Tensor(np.linspace(-3, 3, 7).astype(np.float32)))
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    return torch.nn.GELU()(torch.linspace(-3, 3, 7))
""",
    ]
