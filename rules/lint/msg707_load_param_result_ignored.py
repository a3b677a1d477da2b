import ast

from msmigrate.lint.rule import Rule


class LoadParamResultIgnored(Rule):
    """Flags `load_param_into_net` calls whose result is ignored.

    ## What it does
    Finds `mindspore.load_param_into_net(...)` used as a statement (result discarded).

    ## Why is this bad?
    It never raises on missing or unexpected names, even with `strict_load=True`: it returns
    `(params_not_loaded, ckpt_not_loaded)`. torch's `load_state_dict` raises. Ignoring the
    result silently keeps random weights when checkpoint names do not match.

    ## Example
    ```python
    ms.load_param_into_net(net, ms.load_checkpoint("model.ckpt"))
    ```

    ## Use instead
    ```python
    missing, unexpected = ms.load_param_into_net(net, ms.load_checkpoint("model.ckpt"))
    if missing or unexpected:
        raise KeyError(f"checkpoint mismatch: {missing} {unexpected}")
    ```

    ## Fix safety
    No automatic fix.
    """
    code = "MSG707"
    origin = "ported"
    name = "load-param-result-ignored"
    severity = "warning"
    claim = "differs-from-torch"

    def visit_Expr(self, node, ctx):
        call = node.value
        if isinstance(call, ast.Call):
            q = ctx.qualname(call.func) or ""
            if q.startswith("mindspore") and q.rsplit(".", 1)[-1] == "load_param_into_net":
                self.report(node, "load_param_into_net never raises on missing or unexpected parameters: check "
                                  "the (not_loaded, unused) lists it returns")

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    net = nn.Dense(2, 2)
    ckpt = {"weightX": ms.Parameter(ms.Tensor(np.zeros((2, 2), np.float32)), name="weightX")}
    missing, unexpected = ms.load_param_into_net(net, ckpt)
    if missing or unexpected:
        raise KeyError(f"checkpoint mismatch: {missing} {unexpected}")
    return "loaded"
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    net = nn.Dense(2, 2)
    ckpt = {"weightX": ms.Parameter(ms.Tensor(np.zeros((2, 2), np.float32)), name="weightX")}
    ms.load_param_into_net(net, ckpt)
    return "loaded"
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    net = torch.nn.Linear(2, 2)
    net.load_state_dict({"weightX": torch.zeros(2, 2)})
    return "loaded"
""",
    ]
