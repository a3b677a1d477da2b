"""`p.data = value` on a network's parameter outside `__init__` (a max-norm constraint of
embeddings after each step, weights clipped or pruned by hand) -> `p.data.copy_(value)`, and
`p.data *= mask` (a PixelCNN's masked weight, in forward) -> `p.data.mul_(mask)`.

In torch the assignment gives the parameter new values. Converted as written it is MindSpore's
Parameter.set_data, which, once a compiled step has used the parameter, detaches it from that
step: the step's later updates go elsewhere and training silently continues from the written
values (TransE's entity renormalisation: loss 10.28 where torch has 4.82 at step 2). copy_
writes into the parameter itself (kept by name: MindSpore's Tensor.copy_ does the same); an
in-place method is written back with ops.assign, which a compiled construct accepts (the
operator form became SetData there: "Unsupported op [SetData] on CPU"). In
`__init__` nothing is compiled yet and `.data =` may change the shape (a pretrained embedding
of another size): left as written.

Only visible parameters: an attribute `weight`/`bias` (`emb.weight`, `self.fc.bias`,
`weight_ih_l0`; `embedding_table`, `gamma`, `beta` as rules/layer_attributes.py renamed them), an attribute the file makes an nn.Parameter (`self.W = nn.Parameter(...)`), or
a loop name bound to a network's tensors (`for p in model.parameters()`): `dataset.data = ...`
is no tensor. A structural pass on torch code."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.names import PathTransformer
from msmigrate.rules.tensor_aug_assign import _METHODS, inplace_method, loop_tensors

# torch names, and the MindSpore names an earlier pass gave them (rules/layer_attributes.py)
PARAMETER_ATTRIBUTE = re.compile(r"(weight|bias|embedding_table|gamma|beta)(_\w+)?")
_WRITE = re.compile(r"\.data\s*[-+*/]?=(?!=)")
_MADE_PARAMETER = re.compile(r"self\.(\w+)\s*=\s*(?:torch\.)?(?:nn\.)?Parameter\(")


class DataWritesPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return bool(_WRITE.search(source))

    def __init__(self, ctx) -> None:
        super().__init__()
        made = set(_MADE_PARAMETER.findall(ctx.source))
        self.targets = self.follow(ctx.module, lambda node, ancestors: _rewritten(node, ancestors, made))

    def leave_AugAssign(self, original, updated):
        if id(original) not in self.targets:
            return updated
        return inplace_method(updated)

    def leave_Assign(self, original, updated):
        if id(original) not in self.targets:
            return updated
        target = updated.targets[0].target
        return cst.Expr(cst.Call(func=cst.Attribute(value=target, attr=cst.Name("copy_")),
                                 args=[cst.Arg(updated.value)]))


def _rewritten(node, ancestors, made: set[str]) -> bool:
    if isinstance(node, cst.AugAssign) and type(node.operator) in _METHODS:
        target = node.target   # (`self.weight.data *= self.mask`, in __init__ too)
        return isinstance(target, cst.Attribute) and target.attr.value == "data" and \
            _is_parameter(target.value, ancestors, made)
    if not (isinstance(node, cst.Assign) and len(node.targets) == 1):
        return False
    target = node.targets[0].target
    if not (isinstance(target, cst.Attribute) and target.attr.value == "data"):
        return False
    if any(isinstance(a, cst.FunctionDef) and a.name.value == "__init__" for a in ancestors):
        return False
    return _is_parameter(target.value, ancestors, made)


def _is_parameter(owner, ancestors, made: set[str]) -> bool:
    if isinstance(owner, cst.Attribute):
        return bool(PARAMETER_ATTRIBUTE.fullmatch(owner.attr.value)) or owner.attr.value in made
    if isinstance(owner, cst.Name):
        return any(owner.value in loop_tensors(a.target, a.iter) for a in ancestors if isinstance(a, cst.For))
    return False
