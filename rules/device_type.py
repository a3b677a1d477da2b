"""`.type` of a device: made on the spot (`torch.device('cuda:0').type`,
`torch.accelerator.current_accelerator().type`) or read from a name the file binds only to
`torch.device(...)` calls (`device = torch.device(...)` ... `if device.type == 'cuda'`, also
`self.device`, and parameters of that name, which receive it), or the `.device` of anything
else (`x.device.type` of a tensor: MindSpore's is 'CPU'). Converted device values are
strings (see transforms/device.py), which have no `.type`; this pass (on torch names, before the
table pass) replaces such reads by the type string itself (`str(device).split(':')[0]`), which the
table pass then leaves alone or converts."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import Bindings, PathTransformer, dotted, resolve

DEVICE = "torch.device"
CURRENT_ACCELERATOR = "torch.accelerator.current_accelerator"
NAMED_DEVICE = "<a name bound to torch.device>"
TENSOR_DEVICE = "<the .device of a tensor or object>"


class DeviceTypePass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ").type" in source or ("device" in source and ".type" in source)

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        bindings = Bindings(lambda value: isinstance(value, cst.Call) and self._resolve(value.func) == DEVICE)
        ctx.module.visit(bindings)
        self.device_names = bindings.only_chosen
        # only the nodes on the way to a rewritten `.type` are visited (libcst rebuilds every
        # visited node, and a rebuilt statement loses its original position)
        self.follow(ctx.module, lambda node, ancestors: self._target(node) is not None)

    def _target(self, node) -> str | None:
        """The API whose result's `.type` `node` reads, when this pass rewrites it."""
        if isinstance(node, cst.Attribute) and node.attr.value == "type" \
                and isinstance(node.value, (cst.Name, cst.Attribute)) and dotted(node.value) in self.device_names:
            return NAMED_DEVICE
        if isinstance(node, cst.Attribute) and node.attr.value == "type" and isinstance(node.value, cst.Attribute) \
                and node.value.attr.value == "device":
            return TENSOR_DEVICE
        if not (isinstance(node, cst.Attribute) and node.attr.value == "type" and isinstance(node.value, cst.Call)):
            return None
        q = self._resolve(node.value.func)
        return q if q in (DEVICE, CURRENT_ACCELERATOR) else None

    def _resolve(self, func) -> str | None:
        return resolve(func, self.imports)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        q = self._target(original)
        call = updated.value
        if q == NAMED_DEVICE:   # a converted device is its torch string: 'cuda:0' -> 'cuda'
            return cst.parse_expression(f"str({cst.Module([]).code_for_node(call)}).split(':')[0]")
        if q == TENSOR_DEVICE:   # a MindSpore tensor's device is 'CPU' / 'GPU' / 'Ascend'
            return cst.parse_expression(f"str({cst.Module([]).code_for_node(call)}).split(':')[0].lower()")
        if q == CURRENT_ACCELERATOR:   # converts to the type string (None on CPU, as torch)
            return call
        if q != DEVICE:
            return updated
        args = [a for a in call.args if a.keyword is None]
        kind = args[0].value if args else next((a.value for a in call.args if a.keyword and a.keyword.value == "type"), None)
        if kind is None:
            return updated
        if isinstance(kind, cst.SimpleString):   # 'cuda:0' -> 'cuda'
            return cst.SimpleString(repr(kind.evaluated_value.split(":")[0]))
        # a string ('cuda:1') or a device; str() of either starts with the type
        return cst.parse_expression(f"str({cst.Module([]).code_for_node(kind)}).split(':')[0]")
