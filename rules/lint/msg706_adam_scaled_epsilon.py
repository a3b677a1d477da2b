
from msmigrate.lint.rule import Rule
from msmigrate.rules.lint.msg701_dropout_positional_keep_prob import ms_nn_call


class AdamScaledEpsilon(Rule):
    """Flags MindSpore's `Adam` optimizers, whose epsilon differs from torch's Adam.

    ## What it does
    Finds `mindspore.nn.Adam` and `mindspore.experimental.optim.Adam`.

    ## Why is this bad?
    Both scale epsilon by 1/sqrt(1 - beta2^t) (the "epsilon hat" form); torch's Adam adds eps
    after bias correction. With small gradients or a large eps the updates differ a lot
    (step 1 with g=1e-3, eps=1e-3: MindSpore -0.003 vs torch -0.05, measured). With the
    default eps=1e-8 the difference is ~5e-6 per step: small, but not the same optimizer.

    ## Example
    ```python
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-3, eps=1e-3)
    ```

    ## Use instead
    For torch semantics, `mindspore.experimental.optim.AdamW(params, lr=..., eps=...,
    weight_decay=0.0)` (matched torch to 1.2e-7); add `wd * p` to the gradients for torch's
    coupled L2 weight decay.

    ## Fix safety
    No automatic fix: the replacement has a different call convention.
    """
    code = "MSG706"
    origin = "ported"
    name = "adam-scaled-epsilon"
    severity = "warning"
    claim = "differs-from-torch"

    def visit_Call(self, node, ctx):
        if ms_nn_call(node, ctx, "Adam"):
            self.report(node, "MindSpore's Adam scales eps by 1/sqrt(1-beta2^t), unlike torch.optim.Adam: for "
                              "torch semantics use mindspore.experimental.optim.AdamW(..., weight_decay=0.0)")

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore.experimental import optim

def drive():
    w = ms.Parameter(ms.Tensor(np.ones(3, np.float32)), name="w")
    opt = optim.AdamW([w], lr=0.1, eps=1e-3, weight_decay=0.0)
    opt((ms.Tensor(np.full(3, 1e-3, np.float32)),))
    return w.asnumpy()
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    w = ms.Parameter(ms.Tensor(np.ones(3, np.float32)), name="w")
    opt = nn.Adam([w], learning_rate=0.1, eps=1e-3)
    opt((ms.Tensor(np.full(3, 1e-3, np.float32)),))
    return w.asnumpy()
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    w = torch.nn.Parameter(torch.ones(3))
    opt = torch.optim.Adam([w], lr=0.1, eps=1e-3)
    w.grad = torch.full((3,), 1e-3)
    opt.step()
    return w
""",
    ]
