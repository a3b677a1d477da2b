"""scikit-learn's utilities that return pieces of the arrays they are given (train_test_split,
shuffle, resample) index them with a NumPy index array inside a tuple, `X[idx, ...]`: a torch
Tensor takes that, a MindSpore Tensor raises TypeError ("For tuple index, the types only support
..."). Their calls are given Tensors as NumPy arrays and give a Tensor's pieces back as Tensors,
as torch's calls do (the generated msmigrate_subsets); whether an argument is a Tensor is decided
when it runs. A structural pass on the other library's names; marks nothing (the call computes
what torch's does: the same rows, drawn from the same NumPy random state)."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer, resolve
from msmigrate.rules.transforms.common import generated_text

# function -> pieces it returns per array given (train_test_split: train and test)
SUBSETTING = {"sklearn.model_selection.train_test_split": 2,
              "sklearn.utils.shuffle": 1,
              "sklearn.utils.resample": 1}


class HostSubsetsPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "sklearn" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        self.helper = None
        self.follow(ctx.module, lambda node, ancestors: isinstance(node, cst.Call) and
                    (resolve(node.func, self.imports) or "") in SUBSETTING)   # only the way to them is rebuilt

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        pieces = SUBSETTING.get(resolve(original.func, self.imports) or "")
        if pieces is None:
            return updated
        if self.helper is None:
            self.helper = generated_text(self.ctx.plan, "host", "msmigrate_subsets")
        return updated.with_changes(func=self.helper, args=[
            cst.Arg(updated.func), cst.Arg(cst.Integer(str(pieces))), *updated.args])
