
from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg701_dropout_positional_keep_prob import ms_nn_call

CONVS = ("Conv1d", "Conv2d", "Conv3d", "Conv1dTranspose", "Conv2dTranspose", "Conv3dTranspose")


class ConvWithoutPadMode(Rule):
    """Flags MindSpore convolutions created without an explicit `pad_mode`.

    ## What it does
    Finds `nn.Conv1d/2d/3d` (and the transposed variants) without `pad_mode=`.

    ## Why is this bad?
    MindSpore defaults to `pad_mode='same'` (and `has_bias=False`); torch pads nothing by
    default. `nn.Conv2d(3, 4, 3)` gave a (1, 4, 8, 8) output where torch gives (1, 4, 6, 6),
    and a non-zero `padding=` is rejected unless `pad_mode='pad'`.

    ## Example
    ```python
    conv = nn.Conv2d(3, 4, 3)
    ```

    ## Use instead
    ```python
    conv = nn.Conv2d(3, 4, 3, pad_mode='valid')            # torch's padding=0
    conv = nn.Conv2d(3, 4, 3, pad_mode='pad', padding=1)   # torch's padding=1
    ```

    ## Fix safety
    Unsafe: the fix adds `pad_mode='pad'` (torch's behaviour for any `padding`), which
    changes the output shape of code that relied on 'same'.
    """
    code = "MSG702"
    origin = "ported"
    name = "conv-without-pad-mode"
    severity = "warning"
    claim = "differs-from-torch"
    fix_safety = "unsafe"

    def visit_Call(self, node, ctx):
        if len(node.args) >= 5 or any(k.arg == "pad_mode" or k.arg is None for k in node.keywords):
            return
        name = ms_nn_call(node, ctx, *CONVS)
        if name:
            end = ctx.offset(node.end_lineno, node.end_col_offset) - 1
            sep = ", " if node.args or node.keywords else ""
            self.report(node, f"nn.{name} without pad_mode defaults to pad_mode='same' (torch pads nothing): "
                              "pass pad_mode explicitly",
                        ((end, end, f"{sep}pad_mode='pad'"),))

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    conv = nn.Conv2d(3, 4, 3, pad_mode='valid')
    return list(conv(ms.Tensor(np.ones((1, 3, 8, 8), np.float32))).shape)
""",
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    conv = nn.Conv2d(3, 4, 3, pad_mode='pad', padding=1)
    return list(conv(ms.Tensor(np.ones((1, 3, 8, 8), np.float32))).shape)
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    conv = nn.Conv2d(3, 4, 3)
    return list(conv(ms.Tensor(np.ones((1, 3, 8, 8), np.float32))).shape)
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    conv = torch.nn.Conv2d(3, 4, 3)
    return list(conv(torch.ones(1, 3, 8, 8)).shape)
""",
        """
import torch

def drive():
    conv = torch.nn.Conv2d(3, 4, 3, padding=1)
    return list(conv(torch.ones(1, 3, 8, 8)).shape)
""",
    ]
