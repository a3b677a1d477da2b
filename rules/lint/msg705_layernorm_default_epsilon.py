
from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg701_dropout_positional_keep_prob import ms_nn_call


class LayerNormDefaultEpsilon(Rule):
    """Flags `nn.LayerNorm` without `epsilon`.

    ## What it does
    Finds `mindspore.nn.LayerNorm` created without an explicit `epsilon` (6th positional).

    ## Why is this bad?
    MindSpore's default epsilon is 1e-7, torch's 1e-5. On small-variance inputs the outputs
    differ a lot (15% relative error for inputs with std 0.01, measured).

    ## Example
    ```python
    norm = nn.LayerNorm((512,))
    ```

    ## Use instead
    ```python
    norm = nn.LayerNorm((512,), epsilon=1e-5)
    ```

    ## Fix safety
    Unsafe: adds `epsilon=1e-5` (torch's default), which changes the numbers of code written
    for MindSpore's default.
    """
    code = "MSG705"
    origin = "ported"
    name = "layernorm-default-epsilon"
    severity = "warning"
    claim = "differs-from-torch"
    fix_safety = "unsafe"
    TOLERANCE = 1e-3

    def visit_Call(self, node, ctx):
        if len(node.args) >= 6 or any(k.arg in ("epsilon", None) for k in node.keywords):
            return
        if ms_nn_call(node, ctx, "LayerNorm"):
            end = ctx.offset(node.end_lineno, node.end_col_offset) - 1
            sep = ", " if node.args or node.keywords else ""
            self.report(node, "nn.LayerNorm defaults to epsilon=1e-7 (torch: 1e-5): pass epsilon explicitly",
                        ((end, end, f"{sep}epsilon=1e-5"),))

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    x = ms.Tensor((np.linspace(-1, 1, 8) * 0.01).astype(np.float32).reshape(1, 8))
    return nn.LayerNorm((8,), epsilon=1e-5)(x)
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    x = ms.Tensor((np.linspace(-1, 1, 8) * 0.01).astype(np.float32).reshape(1, 8))
    return nn.LayerNorm((8,))(x)
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    x = (torch.linspace(-1, 1, 8) * 0.01).reshape(1, 8)
    return torch.nn.LayerNorm(8)(x)
""",
    ]
