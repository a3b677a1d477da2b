import ast

from msmigrate.lint.rule import Rule


def ms_nn_call(node: ast.Call, ctx, *names: str) -> str | None:
    """The class name if `node` calls one of `mindspore.nn.<names>` (any import style)."""
    q = ctx.qualname(node.func) or ""
    last = q.rsplit(".", 1)[-1]
    if last in names and (q.startswith("mindspore.nn") or q.startswith("mindspore.experimental")):
        return last
    return None


class DropoutPositionalKeepProb(Rule):
    """Flags `nn.Dropout(x)` with a positional argument.

    ## What it does
    Finds `mindspore.nn.Dropout` called with a positional first argument and no `p=`.

    ## Why is this bad?
    MindSpore's first parameter is `keep_prob`, torch's is the drop probability `p`:
    `nn.Dropout(0.1)` zeroes 90% of the activations and scales the rest by 10 (measured:
    zero fraction 0.90 vs torch's 0.10). Nothing fails; training just degrades.

    ## Example
    ```python
    drop = nn.Dropout(0.1)
    ```

    ## Use instead
    ```python
    drop = nn.Dropout(p=0.1)
    ```

    ## Fix safety
    Unsafe: the fix rewrites `nn.Dropout(v)` to `nn.Dropout(p=v)`, which is right for code
    written with torch's meaning and wrong if `v` really was a keep probability.
    """
    code = "MSG701"
    origin = "ported"
    name = "dropout-positional-keep-prob"
    severity = "error"
    claim = "differs-from-torch"
    fix_safety = "unsafe"
    TOLERANCE = 0.03

    def visit_Call(self, node, ctx):
        if node.args and not any(k.arg in ("p", "keep_prob") for k in node.keywords) and \
                ms_nn_call(node, ctx, "Dropout"):
            arg = node.args[0]
            self.report(node, f"nn.Dropout({ctx.text(arg)}) is keep_prob={ctx.text(arg)}, not the drop "
                              f"probability: write nn.Dropout(p=...)",
                        ((*ctx.span(arg), f"p={ctx.text(arg)}"),))

    VALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    ms.set_seed(0)
    drop = nn.Dropout(p=0.1)
    drop.set_train(True)
    y = drop(ms.Tensor(np.ones((100, 100), np.float32)))
    return float((y.asnumpy() == 0).mean())
""",
    ]
    INVALID = [
        """
import numpy as np
import mindspore as ms
from mindspore import nn

def drive():
    ms.set_seed(0)
    drop = nn.Dropout(0.1)
    drop.set_train(True)
    y = drop(ms.Tensor(np.ones((100, 100), np.float32)))
    return float((y.asnumpy() == 0).mean())
""",
    ]
    TORCH_REFERENCE = [
        """
import torch

def drive():
    torch.manual_seed(0)
    drop = torch.nn.Dropout(0.1)
    y = drop(torch.ones(100, 100))
    return float((y == 0).float().mean())
""",
    ]
