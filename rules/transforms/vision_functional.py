"""torchvision.transforms.functional -> the functions of rules/generated/vision_functional.py,
copied into the converted file (MindSpore has no functional image API taking both PIL images and
tensors). The call keeps its arguments, whose names are torchvision's: `TF.hflip(img)` ->
`msmigrate_tv_hflip(img)`. Each generated function works on a PIL image as torchvision does (the
same PIL operations) and on a MindSpore Tensor [..., C, H, W] (NumPy on the last dims)."""
from __future__ import annotations

import inspect

import libcst as cst

from msmigrate.engine import literal_value
from msmigrate.rules.generated import vision_functional as generated_vf
from msmigrate.rules.transforms.common import generated

# every function of the module, helpers first; the converted file keeps only those its code
# (and the functions it keeps) names
_FUNCTIONS = [f for _, f in sorted(((f.__code__.co_firstlineno, f) for name, f in vars(generated_vf).items()
                                    if name.startswith("msmigrate_tv_") and inspect.isfunction(f)),
                                   key=lambda pair: pair[0])]
_BY_NAME = {f.__name__: f for f in _FUNCTIONS}


def helper(site):
    """`TF.<name>(...)` -> `msmigrate_tv_<name>(...)`, the arguments as they are."""
    name = site.qualname.rsplit(".", 1)[1]
    function = _BY_NAME[f"msmigrate_tv_{name}"]
    generated(site, *_FUNCTIONS)
    ref = generated(site, function)
    if site.has("inplace"):
        try:
            inplace = literal_value(site.arg("inplace"))
        except ValueError:
            inplace = None
        target = site.arg(site.record.args[0])
        if inplace is not False and not isinstance(target, (cst.Name, cst.Attribute)):
            # `TF.normalize(batch[i], ..., inplace=True)`: torch writes through the view; a
            # MindSpore index gives a copy
            site.flag("review", f"{site.qualname}(inplace=...) of {site.code(target)}: the result is written "
                                "into that tensor, which in MindSpore may be a copy of the one torch writes "
                                "through; assign the result back where the program relies on the write")
    if not site.is_call:
        return ref
    return site.node.with_changes(func=ref)
