import ast

from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg701_dropout_positional_keep_prob import ms_nn_call


class BatchNormTorchMomentum(Rule):
    """Flags BatchNorm `momentum` values that look like torch's convention.

    ## What it does
    Finds `nn.BatchNorm1d/2d/3d` with a literal `momentum` below 0.5.

    ## Why is this bad?
    MindSpore's momentum weights the *old* running statistics (`new = m * old + (1 - m) *
    batch`), torch's weights the new batch: MindSpore's default 0.9 equals torch's 0.1. A
    copied `momentum=0.1` makes the running mean follow each batch (error 0.87 after one step
    measured); training looks fine, evaluation is wrong.

    ## Example
    ```python
    bn = nn.BatchNorm2d(8, momentum=0.1)
    ```

    ## Use instead
    ```python
    bn = nn.BatchNorm2d(8, momentum=0.9)   # torch momentum m -> 1 - m
    ```

    ## Fix safety
    Unsafe: the fix replaces the literal `m` with `1 - m`, which is wrong if the small value
    was intended with MindSpore's meaning.
    """
    code = "MSG703"
    origin = "ported"
    name = "batchnorm-torch-momentum"
    severity = "error"
    claim = "differs-from-torch"
    fix_safety = "unsafe"

    def visit_Call(self, node, ctx):
        value = next((k.value for k in node.keywords if k.arg == "momentum"), None)
        if value is None and len(node.args) >= 3:
            value = node.args[2]
        if not (isinstance(value, ast.Constant) and isinstance(value.value, (int, float))
                and not isinstance(value.value, bool) and 0 < value.value < 0.5):
            return
        name = ms_nn_call(node, ctx, "BatchNorm1d", "BatchNorm2d", "BatchNorm3d")
        if name:
            fixed = round(1 - value.value, 10)
            self.report(node, f"nn.{name} momentum={value.value} looks like torch's convention; MindSpore's "
                              f"equivalent is {fixed} (1 - m)",
                        ((*ctx.span(value), repr(fixed)),))

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    bn = nn.BatchNorm2d(2, momentum=0.9)
    bn.set_train(True)
    bn(ms.Tensor(np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)))
    return bn.moving_mean.asnumpy()
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    bn = nn.BatchNorm2d(2, momentum=0.1)
    bn.set_train(True)
    bn(ms.Tensor(np.arange(16, dtype=np.float32).reshape(2, 2, 2, 2)))
    return bn.moving_mean.asnumpy()
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    bn = torch.nn.BatchNorm2d(2, momentum=0.1)
    bn.train()
    bn(torch.arange(16, dtype=torch.float32).reshape(2, 2, 2, 2))
    return bn.running_mean
""",
    ]
