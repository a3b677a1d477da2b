"""Closure-driven optimizers (torch.optim.LBFGS): which function of the file a `step(closure)` call
hands to such an optimizer.

torch's L-BFGS calls the closure several times per `step()` (up to max_iter, more with a line
search); each call clears the gradients, computes the loss, runs `loss.backward()` and returns the
loss. rules/training_loop.py converts the closure's block like any other step, but its compiled
function only computes the loss and the gradients (ms.value_and_grad over the optimizer's
parameters) and the closure hands the gradients to the optimizer, msmigrate_LBFGS
(rules/generated/optimizers.py), which does the update: the closure's other statements (a print
of the loss, a counter) still run once per evaluation, as in torch."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import dotted, walk

# torch classes whose step(closure) evaluates the closure itself (converted: msmigrate_LBFGS)
CLOSURE_OPTIMIZERS = {"torch.optim.LBFGS", "torch.optim.lbfgs.LBFGS"}
# the class a converted file defines for them: converting that file again sees the same optimizer
GENERATED_CLOSURE_OPTIMIZERS = {"msmigrate_LBFGS"}


def _handed(call: cst.Call) -> cst.BaseExpression | None:
    """The closure argument of `opt.step(closure)` / `opt.step(closure=closure)`."""
    args = [a for a in call.args if a.keyword is None or a.keyword.value == "closure"]
    return args[0].value if len(args) == 1 and len(call.args) == 1 else None


def closure_optimizer(module: cst.Module, function: cst.FunctionDef, optimizers: set[str],
                      method: bool) -> str | None:
    """The closure-driven optimizer (its name, as the file writes it) whose `step()` is handed
    `function` (`opt.step(closure)`; a method: `self.optimizer.step(self.loss_func)`), when
    every such call hands it to the same one; else None."""
    want = f"self.{function.name.value}" if method else function.name.value
    found = set()
    for node in walk(module):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "step":
            handed = _handed(node)
            if handed is not None and dotted(handed) == want:
                found.add(dotted(node.func.value))
    return found.pop() if len(found) == 1 and found <= optimizers else None
