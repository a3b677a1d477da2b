"""A network copied again into the name that holds an earlier copy: `target = deepcopy(net)` made
once, then refreshed the same way in the training loop (a DQN's target network, an EMA/best
copy). In torch the name simply gets a new module. In MindSpore a compiled step that calls the
copy has it frozen into its graph: a new Cell object bound to the name is never seen by the step,
which keeps computing with the first copy (and a second copy of a prefixed network brings
parameter names that collide with the original's). A refresh written as
`target.load_state_dict(net.state_dict())` copies the values into the same Cell, in place, which
is what the compiled step reads: the later copies are rewritten so (the first one stays a
deepcopy). Only where the source is a network of the file and every binding of the name is a
deepcopy of that same network. A structural pass on torch names, before the training loop."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, TargetBindings, dotted, resolve
from msmigrate.rules.training_loop import ModuleInstances

_DEEPCOPY = "copy.deepcopy"


def _copied(value, imports: dict) -> str | None:
    """`S` of `copy.deepcopy(S)` (S a dotted name), else None."""
    if isinstance(value, cst.Call) and resolve(value.func, imports) == _DEEPCOPY and len(value.args) == 1 \
            and value.args[0].keyword is None and not value.args[0].star:
        return dotted(value.args[0].value)
    return None


class _Copies(TargetBindings):
    """Every binding of each dotted name: the network it copies (None: anything else)."""

    def __init__(self, imports: dict) -> None:
        self.imports = imports
        self.bindings: dict[str, list[str | None]] = {}

    def _bind(self, target, value) -> None:
        if isinstance(target, (cst.Tuple, cst.List)):
            for e in target.elements:
                self._bind(e.value, None)
            return
        name = dotted(target)
        if name is not None:
            self.bindings.setdefault(name, []).append(_copied(value, self.imports) if value is not None else None)


class NetworkCopiesPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "deepcopy" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        copies = _Copies(self.imports)
        ctx.module.visit(copies)
        networks = ModuleInstances(self.imports, ctx.project)
        ctx.module.visit(networks)
        # name -> the network every binding of it copies
        self.refreshed = {name: found.pop() for name, sources in copies.bindings.items()
                          if len(sources) > 1 and len(found := set(sources)) == 1 and None not in found
                          and next(iter(found)) in networks.names}
        self.seen: set[str] = set()

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign):
        if len(original.targets) != 1:
            return updated
        name = dotted(original.targets[0].target)
        if name not in self.refreshed:
            return updated
        if name not in self.seen:   # the first copy (in the file's order) makes the Cell
            self.seen.add(name)
            return updated
        self.changes += 1
        source = self.refreshed[name]
        return cst.Expr(cst.parse_expression(f"{name}.load_state_dict({source}.state_dict())"))
