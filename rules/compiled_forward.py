"""Network calls in loops outside the train step (evaluation, accuracy, sampling:
`for x, y in test_loader: out = model(x)`) become `msmigrate_forward(model, x)`, the call compiled
by ms.jit. MindSpore runs uncompiled code operation by operation (PyNative): on CPU a small
network's forward with a cross-entropy costs ~20 ms uncompiled and ~0.5 ms compiled, so a
periodic evaluation of a few hundred batches took longer than all of training (kp-bigram). The
compiled call computes the same: ms.jit on a Cell compiles per input shape and per training flag
(eval() mode compiles apart), reads the current parameters, and a construct that does not
compile runs uncompiled (the generated helper falls back).

Compiled: a call of a network (an instance of a module class of the project or of
nn.Sequential; a function parameter every call of the function passes one for) inside a loop of
its scope (for, while, a comprehension) that nothing differentiates: it is under no_grad /
inference_mode, or no later statement of any enclosing block (up to its function, then after
every call of that function) calls .backward(), autograd.grad or a function of the file that
does. Not compiled: a loop where an argument grows (`idx = torch.cat((idx, nxt), 1)`: one
compilation per length). A structural pass on torch names, before the training-loop pass and
the table pass."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.names import PathTransformer, dotted, resolve
from msmigrate.rules.training_loop import NO_GRAD, ModuleInstances, network_parameters
from msmigrate.rules.transforms.common import generated_text

_DIFFERENTIATES = re.compile(r"\.backward\(|\bgrad\(")
_GROWS = re.compile(r"\b(cat|concat|concatenate|stack|hstack|vstack|append)\(")
_LOOPS = (cst.For, cst.While, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)
_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_CALLERS_DEPTH = 4


class CompiledForwardPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "for " in source or "while " in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        instances = ModuleInstances(self.imports, ctx.project, extra=self._network_class)
        ctx.module.visit(instances)
        self.networks = instances.names
        self.parameters = self._network_parameters(instances.classes)
        self.differentiating = self._differentiating_functions()
        self.callers: dict[str, list] = {}   # function name -> ancestor chains of its calls
        self.targets = self.follow(ctx.module, lambda node, ancestors: isinstance(node, cst.Call) and
                                   self.compiles(node, ancestors))
        self.helper = generated_text(ctx.plan, "compiled", "msmigrate_forward") if self.targets else None

    @staticmethod
    def _network_class(qualname: str) -> bool:
        """torch.nn.Sequential: a network without a class of the project. (Not losses: their
        calls get call-site conversions, int32 labels, that a wrapped call would not.)"""
        return qualname == "torch.nn.Sequential"

    def _network_parameters(self, classes: set[str]) -> dict[str, set[str]]:
        """Function name -> its parameters every call passes a network for."""
        return network_parameters(self.ctx, self.imports, classes, self._network_class)

    def _differentiating_functions(self) -> set[str]:
        """Functions and methods of the file that differentiate, directly or by calling one."""
        bodies = _Ancestry(lambda node: isinstance(node, cst.FunctionDef))
        self.ctx.module.visit(bodies)
        code = {chain[-1].name.value: self.ctx.module.code_for_node(chain[-1].body) for chain in bodies.chains}
        found: set[str] = set()
        while True:
            more = {name for name, text in code.items() if name not in found and self._differentiates(text, found)}
            if not more:
                return found
            found |= more

    @staticmethod
    def _differentiates(text: str, functions: set[str]) -> bool:
        return bool(_DIFFERENTIATES.search(text)) or any(re.search(rf"\b{re.escape(f)}\(", text) for f in functions)

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if id(original) not in self.targets:
            return updated
        return cst.Call(self.helper, [cst.Arg(updated.func), *updated.args])

    # ---- which calls ----------------------------------------------------------------
    def is_network(self, name: str, ancestors: list) -> bool:
        scope = next((a for a in reversed(ancestors) if isinstance(a, cst.FunctionDef)), None)
        if scope is not None and name in {p.name.value for p in _all_params(scope.params)}:
            return name in self.parameters.get(scope.name.value, set())
        return name in self.networks

    def compiles(self, call: cst.Call, ancestors: list) -> bool:
        name = dotted(call.func)
        if name is None or not self.is_network(name, ancestors):
            return False
        own = _own_ancestors(ancestors)
        loops = [a for a in own if isinstance(a, _LOOPS)]
        if not loops or (isinstance(loops[-1], (cst.For, cst.While)) and self._grows(call, loops[-1])):
            return False
        return self._no_grad(ancestors) or not self._differentiated(ancestors, _CALLERS_DEPTH)

    def _no_grad(self, ancestors: list) -> bool:
        for a in ancestors:
            if isinstance(a, cst.With) and any(self._is_no_grad(i.item) for i in a.items):
                return True
            if isinstance(a, cst.FunctionDef) and any(self._is_no_grad(d.decorator) for d in a.decorators):
                return True
        return False

    def _is_no_grad(self, expr) -> bool:
        return resolve(expr.func if isinstance(expr, cst.Call) else expr, self.imports) in NO_GRAD

    def _differentiated(self, ancestors: list, depth: int, called: str = "") -> bool:
        """Whether a statement after the node in an enclosing block of its scope (or after a call
        of its function, `depth` callers up) differentiates: the node may then feed a loss. The
        statement calling the function (`called`) counts for what else it does: the function's
        own differentiation is what its body shows (`train(model)` of a train() that also
        evaluates)."""
        code = self.ctx.module.code_for_node
        start = max((i for i, a in enumerate(ancestors) if isinstance(a, _SCOPES)), default=0)
        chain = ancestors[start:]
        for parent, child in zip(chain, chain[1:]):
            if isinstance(child, (cst.SimpleStatementLine, cst.BaseSmallStatement)) \
                    and self._differentiates(code(child), self.differentiating - {called}):
                return True
            body = getattr(parent, "body", None)
            if isinstance(body, (list, tuple)):
                at = next((i for i, s in enumerate(body) if s is child), None)
                if at is not None and any(self._differentiates(code(s), self.differentiating) for s in body[at + 1:]):
                    return True
        scope = ancestors[start] if start else None
        if not isinstance(scope, cst.FunctionDef):
            return scope is not None   # a lambda or class body: not followed
        if depth == 0:
            return True
        chains = self.callers.get(scope.name.value)
        if chains is None:   # one scan of the module per function, whatever its calls of networks
            callers = _Callers(scope.name.value)
            self.ctx.module.visit(callers)
            chains = self.callers[scope.name.value] = callers.chains
        return any(self._differentiated(chain, depth - 1, scope.name.value) for chain in chains)

    def _grows(self, call: cst.Call, loop) -> bool:
        """An argument rebound in the loop by a concatenation (a sequence growing per step)."""
        names = {n for a in call.args for n in _names_in(a.value)}
        code = self.ctx.module.code_for_node
        grows = _Assigned(names, lambda value: bool(_GROWS.search(code(value))))
        loop.body.visit(grows)
        return grows.found


def _all_params(params: cst.Parameters) -> list:
    return [*params.posonly_params, *params.params, *params.kwonly_params]


def _own_ancestors(ancestors: list) -> list:
    """The ancestors inside the innermost function, class or lambda (its own blocks)."""
    for i in range(len(ancestors) - 1, -1, -1):
        if isinstance(ancestors[i], _SCOPES):
            return ancestors[i + 1:]
    return ancestors


def _names_in(node) -> set[str]:
    found: set[str] = set()

    class _V(cst.CSTVisitor):
        def visit_Name(self, n) -> None:
            found.add(n.value)

    node.visit(_V())
    return found


class _Assigned(cst.CSTVisitor):
    def __init__(self, names: set[str], test) -> None:
        self.names, self.test, self.found = names, test, False

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(_names_in(t.target) & self.names for t in node.targets) and self.test(node.value):
            self.found = True

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if _names_in(node.target) & self.names and self.test(node.value):
            self.found = True

    def visit_Call(self, node: cst.Call) -> None:   # `seq.append(x)` grows seq in place
        if isinstance(node.func, cst.Attribute) and node.func.attr.value in ("append", "extend") \
                and _names_in(node.func.value) & self.names:
            self.found = True


class _Ancestry(cst.CSTVisitor):
    """The chain of ancestors (module first) of every node `wanted` accepts."""

    def __init__(self, wanted) -> None:
        self.wanted = wanted
        self.stack: list = []
        self.chains: list[list] = []

    def on_visit(self, node) -> bool:
        self.stack.append(node)
        if self.wanted(node):
            self.chains.append(list(self.stack))
        return True

    def on_leave(self, node) -> None:
        self.stack.pop()


class _Callers(_Ancestry):
    """Calls of a function or method named `name` (`f(...)`, `obj.f(...)`)."""

    def __init__(self, name: str) -> None:
        super().__init__(lambda node: isinstance(node, cst.Call) and (
            (isinstance(node.func, cst.Name) and node.func.value == name)
            or (isinstance(node.func, cst.Attribute) and node.func.attr.value == name)))
