"""torch layers' own re-initialisation, which MindSpore's layers lack (k-fold cross-validation
resets the network before each fold; a weight-reset function applied with model.apply):

    for layer in model.children():
        if hasattr(layer, "reset_parameters"):
            layer.reset_parameters()
    bn.reset_running_stats()

-> the generated msmigrate_resets_parameters(layer), msmigrate_reset_parameters(layer) and
msmigrate_reset_running_stats(bn) (rules/generated/cells.py). Converted as written, hasattr is
False on every MindSpore layer: the folds silently go on training the previous fold's weights;
the calls raise AttributeError. The helpers draw the parameters again as torch's layers
initialise them (Linear, Conv, BatchNorm, LayerNorm, Embedding, RNN...), and call an object's
own method where it has one (a Cell of the program's). `self.reset_parameters()` and
`super().reset_parameters()` are left as written. A structural pass on torch code."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer
from msmigrate.rules.transforms.common import generated_text

# torch method -> the generated function called with its object instead
RESETS = {"reset_parameters": "msmigrate_reset_parameters",
          "reset_running_stats": "msmigrate_reset_running_stats"}
HELPERS = {"msmigrate_reset_parameters": ("msmigrate_reset_kind", "msmigrate_reset_running_stats",
                                          "msmigrate_reset_parameters"),
           "msmigrate_reset_running_stats": ("msmigrate_reset_running_stats",),
           "msmigrate_resets_parameters": ("msmigrate_reset_kind", "msmigrate_resets_parameters")}


class LayerResetsPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "reset_parameters" in source or "reset_running_stats" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        # (not inside generated helpers: converting converted code changes nothing)
        self.targets = self.follow(ctx.module, lambda node, ancestors: _helper(node) is not None and not any(
            isinstance(a, (cst.FunctionDef, cst.ClassDef)) and a.name.value.startswith("msmigrate_") for a in ancestors))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        helper = _helper(original) if id(original) in self.targets else None
        if helper is None:
            return updated
        func = generated_text(self.ctx.plan, "cells", *HELPERS[helper])
        receiver = updated.args[0].value if helper == "msmigrate_resets_parameters" else updated.func.value
        return cst.Call(func, [cst.Arg(receiver)])


def _helper(node) -> str | None:
    """The generated function replacing `node`: `obj.reset_parameters()`,
    `obj.reset_running_stats()`, `hasattr(obj, "reset_parameters")`. Not on `self` (a class's
    own method, which other passes follow: a method only __init__ calls is never compiled) nor
    on `super()`."""
    if not isinstance(node, cst.Call):
        return None
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value in RESETS and not node.args and \
            not (isinstance(func.value, cst.Name) and func.value.value == "self") and \
            not (isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name)
                 and func.value.func.value == "super"):
        return RESETS[func.attr.value]
    if isinstance(func, cst.Name) and func.value == "hasattr" and len(node.args) == 2 and \
            isinstance(node.args[1].value, cst.SimpleString) and \
            node.args[1].value.evaluated_value == "reset_parameters" and node.args[0].keyword is None:
        return "msmigrate_resets_parameters"
    return None
