"""Containers filled with a network's outputs before the training step reads them: a policy
gradient keeps `policy.saved_log_probs.append(m.log_prob(action))` during an episode, or
`pi.put_data((r, prob[a]))`, and sums a loss over them at its end. torch differentiates the
graphs those values recorded; MindSpore differentiates only what its gradient function computes,
so a forward_fn reading them gets zero gradients: the program runs and never trains.

Converted (RolloutValuesPass, a structural pass before the training-loop pass): where the values
are kept, each becomes `msmigrate_Recompute(fn, inputs...)`, a function computing it again (the
statements of its block it depends on that call the network; what they read is passed in as it
was then: the state, the sampled action) and its inputs; the training step reads the container
through `msmigrate_recomputed(...)`, which computes them inside the gradient function, and runs
uncompiled (rules/training_loop.py). The parameters have not changed in between: torch would
differentiate the values recorded with them. A network with dropout draws other masks the second
time: marked. Where the values cannot be computed again from their block (a network value coming
from outside it), the training-loop pass refuses the step (MSC102) instead of training on zeros.

Found per function, in order: a name holds a network value when assigned from an expression that
calls one of the networks (or reads such a name), unless the value leaves the graph (`.item()`,
`.detach()`, `float(...)`, a sample, under no_grad); a container is filled when `X.append(v)`
(insert, extend, appendleft, `X += [v]`) gets such a value, also through a method of the file
the value is passed to (`put_data(self, item)` appending `item` to `self.data`). Only containers
read where a loss is differentiated (a function calling .backward()) are converted, never a
function's own list (outputs kept to be logged or concatenated for a metric)."""
from __future__ import annotations

import builtins
from dataclasses import dataclass

import libcst as cst

from msmigrate.dataflow import backward_slice, effects, reads, writes
from msmigrate.names import PathTransformer, dotted, fresh_name
from msmigrate.rules.transforms.common import generated_text

_FILLS = {"append", "insert", "extend", "appendleft"}
# values without a gradient in torch too (a sampled action, an index)
_LEAVES_GRAPH = {"item", "detach", "tolist", "numpy", "sample", "argmax", "argmin", "multinomial"}
_PYTHON_VALUES = {"float", "int", "bool"}
_NO_GRAD = {"no_grad", "inference_mode"}
DROPOUT = ("the kept network outputs are computed again inside the training step (MindSpore "
           "differentiates only what it computes): a dropout layer of the network draws other masks "
           "than during the rollout, so the gradient differs from torch's in its noise; turn dropout "
           "off while collecting (or keep it and accept that)")


@dataclass
class Source:
    """A statement passing network values into a container, or into a method filling one."""
    stmt: cst.SimpleStatementLine
    call: cst.Call
    block: list            # the statements of its block, in order
    tainted: frozenset     # names holding network values there
    method: tuple | None   # (method, parameter index) it passes them to; None: a direct fill
    scope: cst.CSTNode     # its outermost enclosing loop, else its function (or the module)
    function: cst.CSTNode  # its function (or the module)
    container: str = ""    # the container it fills directly


class Analysis:
    """The containers of network values of a module (`stores`) and the statements filling them
    (`sources`), for the networks named."""

    def __init__(self, module: cst.Module, networks: set[str]) -> None:
        definitions = _Definitions()
        module.visit(definitions)
        self.functions = definitions.found
        self.methods = {f.name.value: f for f in definitions.found}
        self.module_names = definitions.module_names
        self.stores: dict[str, list] = {}    # container path -> statements filling it
        self.sources: list[Source] = []
        self.method_fills: dict[tuple, set] = {}   # (method, parameter index) -> containers it fills
        passed: dict[tuple[str, int], bool] = {}   # (method, parameter index) -> fills a container
        # functions of the module returning no network value, whatever they are given (`draw(probs)`
        # returning a sampled int): their calls hold none
        self.plain_functions: set[str] = set()
        for f in definitions.found:
            if f.name.value in definitions.module_names:
                scan = _Function(self, f, networks, {p.name.value for p in f.params.params}, {})
                scan.run(fills=False)
                if not scan.returns_network:
                    self.plain_functions.add(f.name.value)
        for f in [module, *definitions.found]:
            _Function(self, f, networks, set(), passed).run()
        while any(v is None for v in passed.values()):
            key = sorted(k for k, v in passed.items() if v is None)[0]
            f = self.methods[key[0]]
            params = [p.name.value for p in f.params.params]
            before = {k: len(v) for k, v in self.stores.items()}
            if key[1] < len(params):
                _Function(self, f, networks, {params[key[1]]}, passed).run()
            self.method_fills[key] = {k for k, v in self.stores.items() if len(v) > before.get(k, 0)}
            passed[key] = bool(self.method_fills[key])
        self.sources = [s for s in self.sources if s.method is None or passed.get(s.method)]


def network_stores(module: cst.Module, networks: set[str]) -> dict[str, list]:
    """Container path (`policy.saved_log_probs`, `self.data`) -> the statements filling it with
    values computed by one of `networks` (names, or "self" for the network's own methods)."""
    return Analysis(module, networks).stores


def same_container(read: str, container: str) -> bool:
    """Whether the path a statement reads is the container (or inside it); `self.data` in the
    network's methods and `pi.data` outside are taken for one."""
    if read == container or read.startswith(container + "."):
        return True
    a, b = read.split("."), container.split(".")
    return len(a) == len(b) == 2 and a[1] == b[1] and "self" in (a[0], b[0])


class _Definitions(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.FunctionDef] = []
        self.module_names: set[str] = set()   # imports, functions and classes of the module
        self.depth = 0

    def visit_FunctionDef(self, node) -> None:
        self.found.append(node)
        if self.depth == 0:
            self.module_names.add(node.name.value)
        self.depth += 1

    def leave_FunctionDef(self, node) -> None:
        self.depth -= 1

    def visit_ClassDef(self, node) -> None:
        if self.depth == 0:
            self.module_names.add(node.name.value)
        self.depth += 1

    def leave_ClassDef(self, node) -> None:
        self.depth -= 1

    def visit_ImportAlias(self, node) -> None:
        if self.depth == 0:
            name = node.asname.name if node.asname else node.name
            self.module_names.add((dotted(name) or "").split(".")[0])


class _Function:
    def __init__(self, analysis: Analysis, scope, networks, tainted, passed) -> None:
        self.analysis, self.scope, self.networks, self.tainted = analysis, scope, networks, set(tainted)
        self.passed = passed
        self.seen: set[int] = set()
        self.loops: list = []
        self.fills = True
        self.returns_network = False

    def run(self, fills: bool = True) -> None:
        self.fills = fills
        body = self.scope.body if isinstance(self.scope, cst.Module) else self.scope.body.body
        for _ in range(2):   # a second round for values carried around a loop
            self._block(body)

    def _block(self, body) -> None:
        for stmt in body:
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(stmt, cst.With) and any(
                    isinstance(i.item, cst.Call) and (dotted(i.item.func) or "").rsplit(".", 1)[-1] in _NO_GRAD
                    for i in stmt.items):
                continue
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    self._small(small, stmt, body)
                continue
            if isinstance(stmt, cst.For) and self.network_value(stmt.iter):
                self.tainted |= {dotted(n) for n in _targets(stmt.target) if dotted(n)}
            self.loops.append(stmt if isinstance(stmt, (cst.For, cst.While)) else None)
            for block in _blocks(stmt):
                self._block(block)
            self.loops.pop()

    def _small(self, small, stmt, body) -> None:
        if isinstance(small, cst.Return) and small.value is not None and self.network_value(small.value):
            self.returns_network = True
        if not self.fills and not isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            return
        if isinstance(small, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and small.value is not None:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            names = {dotted(n) for t in targets for n in _targets(t) if dotted(n)}
            if self.network_value(small.value):
                self.tainted |= names
                if isinstance(small, cst.AugAssign) and self.fills:   # losses += [value]
                    self._fills(dotted(small.target) or "", stmt)
            else:
                self.tainted -= names
            return
        call = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
        if call is None or not isinstance(call.func, cst.Attribute):
            return
        given = [i for i, a in enumerate(call.args) if self.network_value(a.value)]
        if not given:
            return
        method, receiver = call.func.attr.value, dotted(call.func.value)
        scope = next((loop for loop in self.loops if loop is not None), self.scope)
        if method in _FILLS and receiver:
            self._fills(receiver, stmt)
            self._source(Source(stmt, call, body, frozenset(self.tainted), None, scope, self.scope, receiver))
        elif method in self.analysis.methods and len(given) == 1 and not call.args[given[0]].keyword:
            key = (method, given[0] + 1)   # + self
            self.passed.setdefault(key, None)
            self._source(Source(stmt, call, body, frozenset(self.tainted), key, scope, self.scope))

    def _source(self, source: Source) -> None:
        if id(source.stmt) not in self.seen:
            self.seen.add(id(source.stmt))
            self.analysis.sources.append(source)

    def _fills(self, container: str, stmt) -> None:
        fills = self.analysis.stores.setdefault(container, [])
        if not any(f is stmt for f in fills):
            fills.append(stmt)

    def network_value(self, expr) -> bool:
        return network_value(expr, self.networks, self.tainted, self.analysis.plain_functions)


def network_value(expr, networks: set[str], tainted, plain_functions=frozenset()) -> bool:
    """Whether `expr` calls one of the networks or reads a name holding a network value, other
    than inside what leaves the graph (`out.item()`, `float(out)`, a sample, a function of the
    file returning no network value)."""
    if isinstance(expr, cst.Lambda):
        return False
    if isinstance(expr, cst.Call):
        parts = (dotted(expr.func) or "").split(".")
        method = expr.func.attr.value if isinstance(expr.func, cst.Attribute) else None
        if method in _LEAVES_GRAPH or ".".join(parts) in _PYTHON_VALUES | plain_functions:
            return False   # `torch.max(out).item()`, `float(out)`, `draw(probs)`
        if parts[-1] == "forward" and len(parts) > 1:
            parts = parts[:-1]
        if parts[-1] in networks - {"self"} or (parts == ["self"] and "self" in networks):
            return True
    if isinstance(expr, (cst.Name, cst.Attribute)):
        path = dotted(expr)
        if path is not None:
            return any(path == t or path.startswith(t + ".") for t in tainted)
    return any(network_value(c, networks, tainted, plain_functions) for c in expr.children)


def _targets(target):
    if isinstance(target, (cst.Tuple, cst.List)):
        for e in target.elements:
            yield from _targets(e.value)
    elif isinstance(target, (cst.Name, cst.Attribute)):
        yield target


def _blocks(stmt):
    """The statement lists of a compound statement (if/elif/else, loops, try, with)."""
    body = getattr(stmt, "body", None)
    if isinstance(body, cst.IndentedBlock):
        yield body.body
    elif isinstance(body, cst.SimpleStatementSuite):
        yield [cst.SimpleStatementLine(body.body)]
    orelse = getattr(stmt, "orelse", None)
    if isinstance(orelse, (cst.If, cst.Else)):
        yield from _blocks(orelse)
    for handler in getattr(stmt, "handlers", ()):
        yield from _blocks(handler)
    final = getattr(stmt, "finalbody", None)
    if final is not None:
        yield from _blocks(final)




# ---- the conversion -------------------------------------------------------------------------

class RolloutValuesPass(PathTransformer):
    """Kept network values become msmigrate_Recompute records (see the module's docstring); the
    containers they go to are recorded in ctx.recomputed for the training-loop pass."""

    @staticmethod
    def applies(source: str) -> bool:
        return ".backward(" in source and ("append(" in source or "+=" in source)

    def __init__(self, ctx) -> None:
        super().__init__()
        from msmigrate.rules.training_loop import ModuleInstances
        self.ctx = ctx
        instances = ModuleInstances(dict(ctx.names.imports), ctx.project)
        ctx.module.visit(instances)
        networks = {n.rsplit(".", 1)[-1] for n in instances.names} | {"self"}
        analysis = Analysis(ctx.module, networks)
        self.networks, self.module_names = networks, analysis.module_names | set(ctx.names.imports)
        self.plain_functions = analysis.plain_functions
        self.plans: dict[int, tuple] = {}    # id(statement) -> (definitions, its call's new arguments)
        self.after: dict[int, list] = {}     # id(statement) -> statements to insert after it
        taken = set(ctx.names.taken)
        containers = set()
        read_by_steps = _read_where_differentiated(ctx.module, analysis.functions) if analysis.sources else set()
        for source in analysis.sources:
            filled = {source.container} if source.method is None else analysis.method_fills[source.method]
            if not any(same_container(r, c) for r in read_by_steps for c in filled) or \
                    _local(source.container, source.function):
                continue   # no step reads them (a list of values only logged, a local list)
            # where the loss is differentiated in the same loop (or function), the training step
            # holds the statements computing the values already
            if not isinstance(source.scope, cst.Module) and ".backward(" in ctx.module.code_for_node(source.scope):
                continue
            plan = self._plan(source, taken)
            if plan is not None:
                self.plans[id(source.stmt)] = plan
                containers |= filled
        if self.plans:
            self.follow(ctx.module, lambda node, ancestors: id(node) in self.plans or id(node) in self.after)
            ctx.recomputed = containers
            generated_text(ctx.plan, "rollout", "msmigrate_Recompute", "msmigrate_recomputed")
        self.dropout = bool(self.plans) and "ropout" in ctx.source

    def _plan(self, source: Source, taken: set[str]):
        """(definitions, statement) computing the source's network values again, or None when
        they depend on network values from outside its block."""
        k = next(i for i, s in enumerate(source.block) if s is source.stmt)
        defs = []

        def record(expr):
            if isinstance(expr, (cst.Tuple, cst.List)):
                return expr.with_changes(elements=[e.with_changes(value=record(e.value)) for e in expr.elements])
            if not network_value(expr, self.networks, source.tainted, self.plain_functions):
                return expr
            chain, _ = backward_slice(source.block[:k], reads(expr))
            chain = [i for i in chain if effects(source.block[i]).binds & source.tainted]
            # not what only a draw read (`m = Categorical(probs)` before `a = m.sample()`)
            chain = [chain[j] for j in backward_slice([source.block[i] for i in chain], reads(expr))[0]]
            kept = [source.block[i] for i in chain]
            bound = set().union(set(), *(effects(s).binds for s in kept))
            kept_reads = backward_slice(kept, bound)[1] - bound if kept else set()
            _, free = backward_slice(kept, reads(expr))
            inputs = sorted(n for n in free if n not in self.module_names and n != "self"
                            and not hasattr(builtins, n) and n not in self.networks)
            if any(n in source.tainted for n in inputs):
                raise _Outside
            # an input of the kept statements bound again before the values are kept (`pos =
            # step(pos, a)`): taken right after them, as they read it
            between = [s for i, s in enumerate(source.block[:k]) if chain and i > chain[0] and i not in chain]
            early = sorted(n for n in inputs if n in kept_reads and any(n in writes(s) for s in between))
            if set(early) & (reads(expr) - bound):
                raise _Outside
            late = [n for n in inputs if n not in early]
            name = _fresh("msmigrate_recompute", taken)
            defs.append(cst.FunctionDef(cst.Name(name),
                                        cst.Parameters([cst.Param(cst.Name(n)) for n in early + late]),
                                        cst.IndentedBlock([*[s.deep_clone().with_changes(leading_lines=[])
                                                             for s in kept],
                                                           cst.SimpleStatementLine([cst.Return(expr)])])))
            taken_early = []
            if early:
                snapshot = _fresh("msmigrate_inputs", taken)
                self.after.setdefault(id(source.block[chain[-1]]), []).append(
                    cst.parse_statement(f"{snapshot} = ({', '.join(early)},)\n"))
                taken_early = [cst.Arg(cst.Name(snapshot), star="*")]
            return cst.Call(cst.Name("msmigrate_Recompute"),
                            [cst.Arg(cst.Name(name)), *taken_early, *[cst.Arg(cst.Name(n)) for n in late]])

        try:
            args = [a.with_changes(value=record(a.value)) for a in source.call.args]
        except _Outside:
            return None
        if not defs:
            return None
        return defs, args

    def leave_SimpleStatementLine(self, original, updated):
        if id(original) in self.after:
            return cst.FlattenSentinel([updated, *self.after[id(original)]])
        plan = self.plans.get(id(original))
        if plan is None:
            return updated
        defs, args = plan
        call = original.body[0].value if len(original.body) == 1 and isinstance(original.body[0], cst.Expr) \
            else None
        if call is None:
            return updated
        new = updated.with_changes(body=[cst.Expr(call.with_changes(args=args))], leading_lines=[])
        lines = list(updated.leading_lines)
        if self.dropout:
            pos = self.ctx.positions.get(original)
            line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
            lines.append(cst.EmptyLine(comment=cst.Comment(self.ctx.reporter.flag("review", DROPOUT, line, col))))
        defs[0] = defs[0].with_changes(leading_lines=lines)
        return cst.FlattenSentinel([*defs, new])


def _local(container: str, function) -> bool:
    """A plain name the function binds: its own list, out of reach of another function's step."""
    return isinstance(function, cst.FunctionDef) and "." not in container and \
        container in writes(function.body)


def _read_where_differentiated(module: cst.Module, functions: list) -> set[str]:
    """Paths read by the functions (and the module's own statements) that call .backward():
    where a kept value can reach a loss."""
    out: set[str] = set()
    for scope in [module, *functions]:
        body = scope.body if isinstance(scope, cst.Module) else scope.body.body
        stmts = [st for st in body if not isinstance(st, (cst.FunctionDef, cst.ClassDef))]
        if any(".backward(" in module.code_for_node(st) for st in stmts):
            out |= set().union(set(), *(effects(st).read for st in stmts))
    return out


class _Outside(Exception):
    pass


def _fresh(base: str, taken: set[str]) -> str:
    name = fresh_name(base, taken, first=2)
    taken.add(name)
    return name
