
from msmigrate.lint.rule import Rule


class TorchInGraph(Rule):
    """Flags leftover `torch` calls in MindSpore compiled code.

    ## What it does
    Finds calls to `torch.*` (any import style) inside a Cell's `construct`, a `@jit`
    function or their callees.

    ## Why is this bad?
    torch functions do not accept MindSpore tensors: the code fails in PyNative and in graph
    mode. It is usually a leftover from a partial migration.

    ## Example
    ```python
    class Net(nn.Cell):
        def construct(self, x):
            return torch.relu(x)
    ```

    ## Use instead
    The MindSpore equivalent (`ops.relu(x)`); `msmigrate convert` maps most torch APIs.

    ## Fix safety
    No automatic fix (run `msmigrate convert`).
    """
    code = "MSG801"
    name = "torch-in-graph"
    severity = "error"
    claim = "fails"

    def visit_Call(self, node, ctx):
        if not ctx.in_graph:
            return
        q = ctx.qualname(node.func) or ""
        if q == "torch" or q.startswith("torch."):
            self.report(node, f"'{q}' in MindSpore compiled code: torch functions do not accept MindSpore "
                              "tensors; use the mindspore.ops equivalent (msmigrate convert)")

    VALID = [
        """
from mindspore import nn, ops

class Net(nn.Cell):
    def construct(self, x):
        return ops.relu(x)
""",
    ]
    INVALID = [
        """
import torch
from mindspore import nn

class Net(nn.Cell):
    def construct(self, x):
        return torch.relu(x)
""",
    ]
