"""Training loops -> MindSpore's functional train step.

A block that calls `loss.backward()` is rewritten the way an expert writes MindSpore 2.x:

    def forward_fn(x, y):                 # the statements the loss depends on (a backward slice)
        out = model(x)
        loss = criterion(out, y)
        return loss, out                  # + whatever the program reads afterwards (has_aux)
    grad_fn = ms.value_and_grad(forward_fn, None, optimizer.parameters, has_aux=True)

    @ms.jit
    def train_step(x, y):                 # compiled once per input shape
        (loss, out), grads = grad_fn(x, y)
        grads = ops.clip_by_global_norm(grads, 1.0)     # clip_grad_norm_ between backward and step
        optimizer(grads)                  # zero_grad / backward / step
        return loss, out

The definitions go before the outermost loop of the enclosing function (or module); the loop
body keeps everything else in its original order, with `loss, out = train_step(x, y)` where the
forward computation was. Variants: gradient accumulation (`step()` under an `if`: gradients are
accumulated in compiled code and applied by a second compiled function exactly where torch
stepped), GradScaler (dynamic loss scaling, update skipped on overflow), manual SGD updates of
`p.data` without an optimizer. This pass runs on torch names, before the table-driven pass, which
then converts what is left inside (layers, losses, ops).
"""
from __future__ import annotations

import re
from collections import Counter
from typing import NamedTuple

import libcst as cst

from msmigrate.arguments import argument_objects, passed_names
from msmigrate.dataflow import backward_slice, effects, names, ordered_reads, reads, related, writes
from msmigrate.names import (TRIVIA_TYPES, ModuleRebinds, PathTransformer, ScopeStack, TargetBindings, dotted, fresh_name, is_source,
                             is_statement_type, params_of, resolve, walk)
from msmigrate.rules import PLAIN_DECORATORS
from msmigrate.rules.closure_steps import CLOSURE_OPTIMIZERS, GENERATED_CLOSURE_OPTIMIZERS, closure_optimizer
from msmigrate.rules.data_writes import PARAMETER_ATTRIBUTE
from msmigrate.rules.bare_tensors import (AfterBackward, NotFaithful, TrainableTensors, clears, grad_touched, grad_uses,
                                          zeroed)
from msmigrate.rules.generated import cells
from msmigrate.rules.rollout_values import network_stores, same_container

OPTIMIZER_PREFIX = "torch.optim."
SCHEDULER_PREFIX = "torch.optim.lr_scheduler."
GRAD_SCALERS = {"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.cpu.amp.GradScaler",
                "torch.amp.grad_scaler.GradScaler", "torch.GradScaler"}
AUTOCASTS = {"torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast",
             "torch.cpu.amp.autocast", "torch.amp.autocast_mode.autocast"}
CLIP_NORM = {"torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_norm",
             "torch.nn.utils.clip_grad.clip_grad_norm_"}
CLIP_VALUE = {"torch.nn.utils.clip_grad_value_", "torch.nn.utils.clip_grad.clip_grad_value_"}
NO_GRAD = {"torch.no_grad", "torch.inference_mode"}
# DDP all-reduces gradients across processes; nn.DataParallel splits batches within one process
# (one device in MindSpore: nothing to reduce)
DATA_PARALLEL = {"torch.nn.parallel.DistributedDataParallel",
                 "torch.nn.parallel.distributed.DistributedDataParallel"}
_BUILTINS = {"tuple", "list", "len", "int", "float", "range", "zip", "enumerate", "min", "max", "abs",
             "round", "sum", "map", "isinstance", "next", "iter"}
# a tensor's size queries: numbers, whatever tensor (`X.size(0)` of the dataset in a batch's bounds)
_SIZE_QUERIES = {"size", "dim", "numel", "nelement", "ndimension"}


def _call_of(stmt) -> cst.Call | None:
    """The call of an expression statement `f(...)` or an assignment `x = f(...)`."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        small = stmt.body[0]
        if isinstance(small, (cst.Expr, cst.Assign)) and isinstance(small.value, cst.Call):
            return small.value
    return None


def writes_of(stmts: list) -> set[str]:
    return set().union(*(writes(s) for s in stmts)) if stmts else set()


def _compiled(defs: list, step: str) -> str:
    """`train_step`, or `train_step, apply_opt_e, apply_opt_d`: the compiled functions a step's
    definitions make (one per optimizer where several share a backward pass), which a factory
    returns and a cache holds together: the step's caller calls them all."""
    extra = [d.name.value for d in defs if isinstance(d, cst.FunctionDef) and d.decorators and d.name.value != step]
    return ", ".join([step, *extra])


def _method_stmt(stmt, method: str) -> cst.Call | None:
    call = _call_of(stmt)
    if call is not None and isinstance(call.func, cst.Attribute) and call.func.attr.value == method:
        if isinstance(stmt.body[0], cst.Expr):
            return call
    return None


def _assigned_name(stmt) -> str | None:
    small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


# methods filling or emptying a Python container (a replay buffer)
_CONTAINER_METHODS = frozenset({"append", "extend", "appendleft", "extendleft", "insert", "pop", "popleft",
                                "clear", "add", "update", "remove"})

# random layers and calls of a network (MindSpore's static graph repeats them at a second call
# when seeded)
_RANDOM_LAYER = re.compile(r"Dropout|RReLU|GaussianNoise")
_RANDOM_CALL = re.compile(r"[Dd]ropout|bernoulli|multinomial|RReLU|rrelu|gumbel|rsample\(")
# draws of a network's forward (in __init__ they initialize parameters once)
_FORWARD_DRAW = re.compile(r"\brand|\bnormal\(")


class _PlaceRefs(cst.CSTTransformer):
    def __init__(self, refs: list[str], plan) -> None:
        self.refs, self.plan = refs, plan

    def leave_Name(self, original, updated):
        if updated.value.startswith("__msref_"):
            ref = self.plan.ref(self.refs[int(updated.value[8:-2])])
            self.plan.mark_generated(ref)
            return ref
        return updated


class _Names:
    """Fresh names for generated functions, unique in the file."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = set(taken)

    def __call__(self, base: str) -> str:
        name = fresh_name(base, self.taken)
        self.taken.add(name)
        return name


def _target_names(target) -> set[str]:
    """The names a `for` target binds (`net`, `(net, opt)`, `[a, (b, c)]`)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_target_names(e.value) for e in target.elements))
    return set()


def _left_as_torch(qualname: str) -> bool:
    """An optimizer class the table pass leaves as torch (no target, no transform)."""
    from msmigrate.mapping import load_table

    rec = load_table().lookup(qualname)
    return rec is not None and not rec.target and not rec.transform


# attributes of a network that hold its parameters (a sub-network's `G.fc(x)` is a call)
_PARAMETER_ATTRIBUTE = re.compile(rf"{PARAMETER_ATTRIBUTE.pattern}|parameters|named_parameters")


def _reads_setting(node) -> bool:
    """`G.in_features` / `G.latent` (read as a value: the caller checks it is not called or gone
    into further): a setting of the network, no use of its parameters (`z = torch.randn(8,
    G.in_features)` draws plain data)."""
    return isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and \
        not _PARAMETER_ATTRIBUTE.fullmatch(node.attr.value)


# torch.nn classes without parameters of their own (losses, activations, pooling, ...)
_PARAMETERLESS = re.compile(r"\w*Loss|\w*Pool\dd|Dropout\w*|Flatten|Unflatten|Identity|Upsample\w*|Pixel\w*|"
                            r"\w*Pad\dd|Softmax\w*|LogSoftmax|Softmin|ReLU6?|LeakyReLU|RReLU|ELU|SELU|CELU|GELU|"
                            r"SiLU|Mish|Sigmoid|LogSigmoid|Tanh|Tanhshrink|Softplus|Softsign|Hard\w+|Softshrink|"
                            r"Threshold|GLU|CosineSimilarity|PairwiseDistance|ChannelShuffle|Fold|Unfold")


def _layer_with_parameters(qualname: str) -> bool:
    parts = qualname.split(".")
    return len(parts) == 3 and parts[:2] == ["torch", "nn"] and parts[2][:1].isupper() and \
        not _PARAMETERLESS.fullmatch(parts[2])


class _Prescan(cst.CSTVisitor):
    """One cheap pass: the nodes on the way to each `.backward()` and `.zero_grad()` call (only
    those are rebuilt, so everything else keeps its identity and its original position), and
    which names hold optimizers and grad scalers."""

    def __init__(self, scopes: ScopeStack, project: dict[str, str], wants=lambda stmt: True,
                 not_tensors=frozenset(), steps=False) -> None:
        self.scopes = scopes
        self.steps = steps   # `x.step()` calls are on the path too (a file without gradients)
        self.not_tensors = not_tensors   # names holding no Tensor: their .backward(...) is not one
        self.project = project   # factories and classes defined in other files -> torch API
        self.wants = wants       # statement -> False when its lines name nothing this looks for
        self.stack: list[int] = []
        self.path: set[int] = set()
        self.scalers: set[str] = set()
        self.optimizers: set[str] = set()
        self.unconvertible: dict[str, str] = {}   # optimizer name -> its torch class, left as torch
        self.closure_optimizers: set[str] = set()   # LBFGS: step(closure) (rules/closure_steps.py)
        self.data_parallel = False

    def on_visit(self, node) -> bool:
        self.stack.append(id(node))
        kind = type(node)
        if kind in TRIVIA_TYPES or (is_statement_type(kind) and not self.wants(node)):
            return False
        if isinstance(node, cst.Call) and self.scopes.resolve(node.func) in DATA_PARALLEL:
            self.data_parallel = True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "backward" \
                and dotted(node.func.value) not in self.not_tensors:
            self.path.update(self.stack)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "zero_grad" \
                and not node.args:
            # its block is visited too: `optimizer.zero_grad()` in a loop with no backward pass
            # (a validation loop) goes as it does beside the steps (_clears_gradients)
            self.path.update(self.stack)
        if self.steps and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                and node.func.attr.value == "step" and not node.args:
            self.path.update(self.stack)
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            q = self.project.get(dotted(node.value.func) or "") or self.scopes.resolve(node.value.func) or ""
            for t in node.targets:
                name = dotted(t.target)
                if name is None:
                    continue
                if q in GRAD_SCALERS:
                    self.scalers.add(name)
                elif not _record_optimizer(self, name, q) and \
                        dotted(node.value.func) in GENERATED_CLOSURE_OPTIMIZERS:
                    self.closure_optimizers.add(name)
        return True

    def on_leave(self, node) -> None:
        self.stack.pop()


class _PerObject(NamedTuple):
    """An optimizer bound anew on each pass of a loop, so the step is built once per object:
    `target` binds it (and the objects beside it); `picked` when a statement of the loop's body
    binds it (the cached step is looked up after that statement), not the loop itself."""
    target: cst.BaseExpression
    picked: bool


def _record_optimizer(owner, name: str, q: str) -> bool:
    """Records `name` as an optimizer of torch class `q` in owner's optimizers (and its
    closure_optimizers, or unconvertible when the class is left as torch); False when `q` is no
    optimizer class. Shared by the scan of assignments and the parameters passed optimizers."""
    if not q.startswith(OPTIMIZER_PREFIX) or q.startswith(SCHEDULER_PREFIX):
        return False
    owner.optimizers.add(name)
    if q in CLOSURE_OPTIMIZERS:
        owner.closure_optimizers.add(name)
    if _left_as_torch(q):
        owner.unconvertible[name] = q
    return True


TENSOR_FROM_DATA = {"torch.tensor", "torch.Tensor", "torch.as_tensor", "torch.from_numpy", "torch.FloatTensor",
                    "torch.LongTensor", "torch.IntTensor", "torch.DoubleTensor", "torch.BoolTensor"}
PARAMETER_METHODS = {"parameters", "named_parameters", "trainable_params", "get_parameters"}


class _ParameterHolders(cst.CSTVisitor):
    """Which objects hold the parameters each optimizer trains: the receivers of `.parameters()`
    in its constructor's arguments, directly or through a name bound to such an expression
    (`params = list(model.parameters()) + list(head.parameters())`)."""

    def __init__(self) -> None:
        self.by_name: dict[str, set[str]] = {}   # assigned name -> holders in its value
        self.all: set[str] = set()
        # method name -> whether it builds from its own object's parameters (a model's
        # `configure_optimizers`): `opt = model.configure_optimizers(cfg)` trains `model`
        self.own_parameters: dict[str, bool] = {}

    def visit_Module(self, node: cst.Module) -> None:
        for cls in (n for n in walk(node) if isinstance(n, cst.ClassDef)):
            for fn in (s for s in cls.body.body if isinstance(s, cst.FunctionDef)):
                own = "self" in self._roots(fn.body)
                self.own_parameters[fn.name.value] = self.own_parameters.get(fn.name.value, own) and own

    def visit_Assign(self, node: cst.Assign) -> None:
        roots = self._roots(node.value)
        value = node.value
        if not roots and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
                self.own_parameters.get(value.func.attr.value) and dotted(value.func.value):
            roots = {dotted(value.func.value)}
        if roots or any(isinstance(n, cst.Name) and n.value in self.by_name for n in walk(node.value)):
            names_ = {n.value for n in walk(node.value) if isinstance(n, cst.Name)}
            for name in names_ & set(self.by_name):
                roots |= self.by_name[name]
            for t in node.targets:
                if dotted(t.target):
                    self.by_name.setdefault(dotted(t.target), set()).update(roots)

    def visit_Call(self, node: cst.Call) -> None:
        self.all |= self._roots(node)

    @staticmethod
    def _roots(expr) -> set[str]:
        out = set()
        for n in walk(expr):
            if not isinstance(n, cst.Call):
                continue
            if isinstance(n.func, cst.Attribute) and n.func.attr.value in PARAMETER_METHODS:
                out.add(dotted(n.func.value))
            elif isinstance(n.func, cst.Name) and n.func.value in cells.NAMES and n.args:
                out.add(dotted(n.args[0].value))   # models.parameters' conversion of m.parameters()
        return out - {None}


def prefixed_networks(holders) -> list[str]:
    """The networks among `holders` (objects whose parameters one optimizer trains, or one
    compiled step uses) that need a parameter-name prefix: MindSpore names a parameter by its path
    in its own network, so two networks (an encoder's and a decoder's `embedding.embedding_table`,
    `0.weight` of two Sequentials) bring two parameters of one name, which an optimizer (a Cell)
    and graph mode reject. Holders under one root (`model.base`, `model.head`) already have
    distinct paths in it: none. Each gets its own path as prefix (`self.` dropped), so a holder
    inside another gets the names the outer one would give it."""
    holders = list(dict.fromkeys(holders))
    roots = {(h[5:] if h.startswith("self.") else h).split(".")[0] for h in holders}
    return holders if len(roots) >= 2 else []


def prefix_statement(holder: str) -> str:
    prefix = holder[5:] if holder.startswith("self.") else holder
    return f"{holder}.update_parameters_name({prefix + '.'!r})"


# methods of a module returning the module itself
RETURNS_MODULE = frozenset({"to", "cuda", "cpu", "float", "double", "half", "eval", "train", "requires_grad_"})


class ModuleInstances(cst.CSTVisitor):
    """Names bound to a new network: `net = Net()`, `eval_net, target_net = Net(), Net()`, where
    Net is a class of this file deriving from a torch.nn class (directly or through another) or
    a module class of another project file. A network a step calls without its parameters ever
    being read (a DQN's target network) is one of them."""

    def __init__(self, imports: dict, project: dict, extra=lambda qualname: False) -> None:
        # extra: torch APIs whose instances count as networks too (no class of the project)
        self.imports, self.project, self.extra = imports, project, extra
        self.classes: set[str] = set()
        self.names: set[str] = set()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        for b in node.bases:
            q = resolve(b.value, self.imports) or ""
            if dotted(b.value) in self.classes or q.startswith("torch.nn.") or \
                    (self.project.get(dotted(b.value) or "") or "").startswith("torch.nn."):
                self.classes.add(node.name.value)

    def _module(self, value) -> bool:
        """A network: an instance of a module class of the project (a bare torch.nn layer or
        loss is no network of its own), also through methods returning it (`Net().to(device)`)."""
        while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                and value.func.attr.value in RETURNS_MODULE and isinstance(value.func.value, cst.Call):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return False
        if resolve(value.func, self.imports) == "copy.deepcopy" and len(value.args) == 1:
            return dotted(value.args[0].value) in self.names   # `target = deepcopy(net)`
        name = dotted(value.func) or ""
        return name in self.classes or (name in self.project and self.project[name] == "torch.nn.Module") \
            or self.extra(resolve(value.func, self.imports) or "")

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            pairs = [(t.target, node.value)]
            if isinstance(t.target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)) \
                    and len(t.target.elements) == len(node.value.elements):
                pairs = [(a.value, b.value) for a, b in zip(t.target.elements, node.value.elements)]
            for target, value in pairs:
                if dotted(target) and self._module(value):
                    self.names.add(dotted(target))


def network_parameters(ctx, imports: dict, classes: set[str], network_api) -> dict[str, set[str]]:
    """Function name -> its parameters every call passes a network for (`train(student,
    teacher, loader)` called with instances of the file's module classes `classes`, or of a
    torch API `network_api` accepts)."""
    if ctx.names.tree is None:
        return {}
    project = {**ctx.project, **{c: "torch.nn.Module" for c in classes}}
    facts = argument_objects(ctx.names.tree, imports, project, RETURNS_MODULE, PLAIN_DECORATORS)
    return {f: {p for p, api in params.items() if api == "torch.nn.Module" or network_api(api)}
            for f, params in facts.items()}


_NOT_PLAIN = ("numpy", "mindspore", "math", "random")   # besides torch's family: no Python objects


class _PythonObjects(cst.CSTVisitor):
    """Names bound to instances of plain Python classes: a class of the project that is no
    module/Cell (`env = Env()`, `self.memory = ReplayBuffer()` imported from another file:
    msmigrate.names.plain_classes), or a library outside torch and NumPy (`env = gym.make(...)`).
    A loss computed through their methods (an RL rollout, a replay buffer's sample) runs Python
    on every step, which a static graph runs once, at compile time."""

    def __init__(self, imports: dict[str, str], plain_classes: set[str]) -> None:
        self.imports = imports
        self.plain_classes = plain_classes
        self.names: set[str] = set()

    def visit_Assign(self, node: cst.Assign) -> None:
        if not isinstance(node.value, cst.Call):
            return
        func = dotted(node.value.func) or ""
        root = self.imports.get(func.split(".")[0], "")
        plain = func in self.plain_classes or (
            "." in func and root and not is_source(root) and root.split(".")[0] not in _NOT_PLAIN)
        if plain:
            self.names.update(dotted(t.target) for t in node.targets if dotted(t.target))


SKIP_AFTER_UPDATE = ("this test of the step's results leaves the loop body before torch's backward pass and "
                     "update (a batch whose loss is not finite, skipped); the converted step has applied the "
                     "update when it runs: a skipped batch still trains (a NaN poisons the weights). Test "
                     "the batch before the step, or apply the update in the step only when the loss is "
                     "finite (ops.isfinite)")
LATE_FORWARD = ("this call of a trained network runs after the compiled step here, with the parameters it "
                "just updated (torch ran it before optimizer.step(), with the old ones; BatchNorm statistics "
                "change in another order too): move it after optimizer.step() in the torch code, or into the loss")


def _jumps(stmts: list) -> bool:
    """Whether these statements may leave the block early (continue, break, return, raise); not
    the body of a def among them (a helper the loss calls), which runs only when called."""
    def leaves(node) -> bool:
        if isinstance(node, (cst.Continue, cst.Break, cst.Return, cst.Raise)):
            return True
        return not isinstance(node, cst.FunctionDef) and any(leaves(c) for c in node.children)

    return any(leaves(s) for s in stmts)


def _only_sets_requires_grad(stmts, functions, local=False) -> bool:
    """Whether these statements do nothing but set requires_grad on parameters or networks
    (`p.requires_grad = flag` in loops and ifs, `net.requires_grad_(flag)`, or a call of a
    function of the file that does only that, binding its own locals on the way): gradient
    routing, which a converted step does by the parameters it differentiates, not values a
    loss depends on."""
    def one(stmt) -> bool:
        if isinstance(stmt, (cst.For, cst.If)):
            return _only_sets_requires_grad(stmt.body.body, functions, local) and \
                (stmt.orelse is None or _only_sets_requires_grad(stmt.orelse.body.body
                                                                 if isinstance(stmt.orelse, cst.Else)
                                                                 else [stmt.orelse], functions, local))
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        for small in stmt.body:
            if isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Attribute) and
                                                    t.target.attr.value == "requires_grad" for t in small.targets):
                continue
            if local and isinstance(small, cst.Assign) and all(isinstance(t.target, cst.Name) for t in small.targets) \
                    and not any(isinstance(n, cst.Call) and not (isinstance(n.func, cst.Name) and n.func.value in _BUILTINS)
                                for n in walk(small.value)):
                continue   # `nets = [nets]` in the function
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.SimpleString):
                continue   # a docstring
            call = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
            if call is None:
                return False
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "requires_grad_" or \
                    isinstance(func, cst.Name) and func.value == "msmigrate_requires_grad_":
                continue
            name = func.value if isinstance(func, cst.Name) else \
                func.attr.value if isinstance(func, cst.Attribute) and dotted(func.value) == "self" else None
            defs = functions.get(name, ())
            if not defs or not all(_only_sets_requires_grad(d.body.body, {}, local=True) for d in defs):
                return False
        return True

    return bool(stmts) and all(one(s) for s in stmts)


class _CallableBindings(TargetBindings):
    """name -> the values the file binds to it: a lambda, a def (not a method), the value of
    an assignment (element by element for `a, b = x, y`); None for a binding of no known value
    (a parameter, a loop, with or except target, another unpacking, `+=`)."""

    def __init__(self) -> None:
        self.values: dict[str, list] = {}
        self.classes = 0

    def _bind(self, target, value) -> None:
        if isinstance(target, cst.Name):
            self.values.setdefault(target.value, []).append(value)
        elif isinstance(target, (cst.Tuple, cst.List)) and isinstance(value, (cst.Tuple, cst.List)) and \
                len(target.elements) == len(value.elements) and \
                not any(isinstance(e, cst.StarredElement) for e in (*target.elements, *value.elements)):
            for t, v in zip(target.elements, value.elements):
                self._bind(t.value, v.value)
        else:   # (`self.loader = ...` binds no name; `*rest` and nested unpackings do)
            for name in _target_names(target):
                self.values.setdefault(name, []).append(None)

    def visit_ClassDef(self, node) -> None:
        self.classes += 1

    def leave_ClassDef(self, node) -> None:
        self.classes -= 1

    def visit_FunctionDef(self, node) -> None:
        if not self.classes:   # (a method is no name the file binds)
            self.values.setdefault(node.name.value, []).append(node)
        for name in params_of(node.params):
            self.values.setdefault(name, []).append(None)

    def visit_Lambda(self, node) -> None:
        for name in params_of(node.params):
            self.values.setdefault(name, []).append(None)



class _ReadRecomputed(cst.CSTTransformer):
    """Reads of containers of kept network values -> msmigrate_recomputed(container) (see
    rules/rollout_values.py); not the receiver of a method call, nor a target."""

    def __init__(self, containers: list[str]) -> None:
        self.containers = containers
        self.skip: set[int] = set()

    def visit_Call(self, node) -> None:
        if isinstance(node.func, cst.Attribute):
            self.skip.add(id(node.func.value))

    def visit_Attribute(self, node) -> None:
        self.skip.add(id(node.attr))

    def visit_Param(self, node) -> None:
        self.skip.add(id(node.name))

    def visit_Arg(self, node) -> None:
        if node.keyword is not None:
            self.skip.add(id(node.keyword))

    def visit_For(self, node) -> None:
        self.skip.update(id(n) for n in walk(node.target))

    def visit_CompFor(self, node) -> None:
        self.skip.update(id(n) for n in walk(node.target))

    def visit_AssignTarget(self, node) -> bool:
        return False

    def visit_Del(self, node) -> bool:
        return False

    def _read(self, original, updated):
        path = dotted(original)
        if id(original) in self.skip or path is None or not any(same_container(path, c) and
                                                                  path.count(".") == c.count(".")
                                                                  for c in self.containers):
            return updated
        return cst.Call(cst.Name("msmigrate_recomputed"), [cst.Arg(updated)])

    def leave_Attribute(self, original, updated):
        return self._read(original, updated)

    def leave_Name(self, original, updated):
        return self._read(original, updated)


def _assigned(node) -> list:
    """The targets an assignment statement (`=`, `+=`, annotated) binds or changes; else none."""
    if isinstance(node, cst.Assign):
        return [t.target for t in node.targets]
    return [node.target] if isinstance(node, (cst.AugAssign, cst.AnnAssign)) else []


def _objects_in(stmts: list) -> set[str]:
    """Names the statements call or read attributes of (networks, losses, optimizers): a
    compiled step reads these through its closure (a Cell is no jit argument)."""
    found = set()
    for s in stmts:
        for n in walk(s):
            if isinstance(n, cst.Attribute) and dotted(n.value):
                found.add(dotted(n.value).split(".")[0])
            elif isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
                found.add(n.func.value)
    return found


def _called_names(stmts: list) -> set[str]:
    """Names the statements call (`model(x)`, `criterion(out, y)`)."""
    return {n.func.value for s in stmts for n in walk(s) if isinstance(n, cst.Call) and isinstance(n.func, cst.Name)}


def _writes_beside(loop, inner) -> set[str]:
    """Names the simple statements of `loop`'s body bind outside `inner`, a loop nested in it."""
    found = set()

    def scan(node) -> None:
        for child in node.children:
            if child is inner or isinstance(child, (cst.FunctionDef, cst.ClassDef)):
                continue
            if isinstance(child, cst.SimpleStatementLine):
                found.update(effects(child).binds)   # rebound, not changed in place (model.train())
            elif not isinstance(child, cst.BaseExpression):
                scan(child)
    scan(loop.body)
    return found


class _AttributesAsNames(cst.CSTTransformer):
    """`self.beta` -> `self_beta` (the step's argument carrying it)."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def leave_Attribute(self, original, updated):
        name = self.names.get(dotted(original) or "")
        return cst.Name(name) if name else updated


class TrainingLoopPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ".backward(" in source or ".zero_grad(" in source or (".step(" in source and "optim" in source)

    def __init__(self, ctx) -> None:
        super().__init__()
        module = self.module = ctx.module
        self.ctx = ctx
        self.config = module.config_for_parsing
        self.plan = ctx.plan
        self.reporter = ctx.reporter
        self.positions = ctx.positions
        self.originals: dict[int, cst.CSTNode] = {}   # id(rebuilt statement) -> original
        self.scopes = ScopeStack(dict(ctx.names.imports))
        self.fresh = _Names(ctx.names.taken | set(ctx.names.imports))
        self.loops: list[list[cst.CSTNode]] = [[]]     # enclosing loops, per function scope
        self.home = None   # the loop the step being rewritten is defined before (_home_loop)
        self.funcs: list[cst.CSTNode] = [module]       # enclosing function (original) or module
        self.classes: list[cst.ClassDef] = []          # enclosing classes (original)
        self._data_method_memo: dict[int, set[str]] = {}
        self._callables = None                 # _CallableBindings of the module, built when first needed
        self._module_plain_classes = None   # see _plain_classes
        self.pending: dict[int, list] = {}             # id(original loop) -> definitions
        # accumulating steps: (optimizer, its accumulated-gradient Parameters, the original loops
        # around the step), for the zero_grad() calls of those loops (_cleared_accumulators)
        self.accumulators: list[tuple[str, str, tuple]] = []
        self.ready: dict[int, list] = {}               # id(updated loop) -> definitions
        # the scan resolves through module-level imports and project names only: a statement
        # naming neither (nor `backward`) holds nothing it records
        words = {b for b, q in ctx.names.imports.items() if is_source(q)}
        words |= {part for key in ctx.project for part in key.split(".")} | {"backward", "zero_grad"}
        words |= GENERATED_CLOSURE_OPTIMIZERS
        # no gradient anywhere in the file, nor in another file of the project that a function
        # called here could compute (a learning-rate schedule traced with optimizer.step() calls):
        # torch's step skips parameters without a gradient, so its steps change nothing
        self.gradient_free = not ctx.project and not re.search(r"\.backward\(|\bautograd\b|\.grad\b", ctx.source)
        if self.gradient_free:
            words.add("step")
        scan = _Prescan(ScopeStack(dict(ctx.names.imports)), ctx.project, ctx.statements_naming(words),
                        ctx.not_tensors, steps=self.gradient_free)
        module.visit(scan)
        self.path, self.scalers, self.optimizers = scan.path, scan.scalers, scan.optimizers
        self.unconvertible = scan.unconvertible
        self.closure_optimizers = scan.closure_optimizers
        self.aliases = self._passed_aliases(ctx)
        self._add_passed_optimizers(ctx)
        self.data_parallel = scan.data_parallel
        self.autocast = None   # (autocast call, region body, condition) met while building a forward_fn
        self.refs: list[str] = []  # MindSpore qualnames behind the __msref_N__ placeholders
        self._holder_scan = None   # _ParameterHolders of the module, built when first needed
        self._bindings = None      # name -> values bound to it in the module (_module_bindings)
        self._module_scan = None   # ModuleInstances of the module, built when first needed
        self._renamed: set[str] = set()   # networks given a parameter-name prefix so far
        self._objects = None       # _PythonObjects of the module, built when first needed
        self._generators = None    # _host_generators, found when first needed
        self._assigned_calls = None   # _constructions, found when first needed
        self._trainable = None     # TrainableTensors of the module, built when first needed
        self._rebinds = None       # module-level names bound more than once (ModuleRebinds)
        self._stores: dict = {}    # networks -> containers of their kept outputs (_kept_outputs_read)
        self.later: dict[int, list] = {}   # id(original statement of an outer block) -> its replacement
        self._blocks_of: dict[int, list] | None = None   # id(statement) -> its block (original nodes)
        self.later_reads: set[str] = set()   # names a later step of the block may compute again from
        self.branches: list[cst.If] = []   # the `if` statements around the visited node
        self.branch_depth: dict[int, int] = {}   # id(loop) -> how many of them are around it

    # ---- bookkeeping ----------------------------------------------------------------
    def visit_FunctionDef(self, node) -> None:
        self.scopes.push_function(node, self.ctx.known_scope(node))
        self.loops.append([])
        self.funcs.append(node)

    def leave_FunctionDef(self, original, updated):
        self.scopes.pop()
        self.loops.pop()
        self.funcs.pop()
        defs = self.pending.pop(id(original), None)   # a step's factory: before the function
        if defs:
            self.ready[id(updated)] = defs
        return updated

    def visit_ClassDef(self, node) -> None:
        self.scopes.push_class(node, self.ctx.known_scope(node))
        self.classes.append(node)

    def leave_ClassDef(self, original, updated):
        self.scopes.pop()
        self.classes.pop()
        return updated

    def _data_methods(self) -> set[str]:
        """Methods of the enclosing class that only handle data: no `self(...)`, no attribute
        of `self` bound to a torch object (a layer, a parameter, an optimizer) or to a call of a
        network, and no other method of the class but such ones (`self.make_batch()` turning
        the transitions it kept into tensors: inside the compiled step its Python would run once)."""
        if not self.classes:
            return set()
        cls = self.classes[-1]
        if id(cls) in self._data_method_memo:
            return self._data_method_memo[id(cls)]
        methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        torch_attrs = set()
        for n in walk(cls):
            if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call):
                made = n.value
                while isinstance(made.func, cst.Attribute) and isinstance(made.func.value, cst.Call):
                    made = made.func.value   # `Net(...).to(device)`, `nn.Sequential(...).double()`
                q = self._q(made.func)
                if q.startswith("torch.") or (dotted(made.func) or "") in self.ctx.names.classes:
                    torch_attrs |= {t.target.attr.value for t in n.targets if isinstance(t.target, cst.Attribute)
                                    and dotted(t.target.value) == "self"}

        def uses(fn) -> tuple[set[str], bool]:
            attrs, calls_self = set(), False
            for n in walk(fn.body):
                if isinstance(n, cst.Attribute) and dotted(n.value) == "self":
                    attrs.add(n.attr.value)
                elif isinstance(n, cst.Call) and dotted(n.func) == "self":
                    calls_self = True
            return attrs, calls_self

        data = set()
        for name, fn in methods.items():
            if name.startswith("__") or name in ("forward", "construct"):
                continue
            attrs, calls_self = uses(fn)
            if not calls_self and not attrs & torch_attrs:
                data.add(name)
        changed = True
        while changed:   # a method calling another that is no data method is none either
            changed = False
            for name in list(data):
                if uses(methods[name])[0] & (set(methods) - data):
                    data.discard(name)
                    changed = True
        self._data_method_memo[id(cls)] = data
        return data

    def visit_For(self, node) -> None:
        self.loops[-1].append(node)
        self.branch_depth[id(node)] = len(self.branches)

    def visit_While(self, node) -> None:
        self.loops[-1].append(node)
        self.branch_depth[id(node)] = len(self.branches)

    def visit_If(self, node) -> None:
        self.branches.append(node)

    def leave_If(self, original, updated):
        self.branches.pop()
        return updated

    def _conditional_in(self, loop) -> bool:
        """Whether the block being rewritten runs under an `if` inside `loop` (the step of one
        phase: `if optimizer is not None:` in a function also evaluating): what builds the step
        (reading the optimizer) goes there too, not before the loop."""
        return len(self.branches) > self.branch_depth.get(id(loop), 0)

    def _leave_loop(self, original, updated):
        self.loops[-1].pop()
        defs = self.pending.pop(id(original), None)
        if defs:
            self.ready[id(updated)] = defs
        return updated

    leave_For = _leave_loop
    leave_While = _leave_loop

    def _q(self, expr) -> str:
        found = self.scopes.resolve(expr)
        if found is None and isinstance(expr, cst.Attribute):
            # a draw of a host generator object (`g = np.random.RandomState(0)`: g.randn) is
            # NumPy's / random's: a compiled step would draw it once
            module = self._host_generators().get(dotted(expr.value) or "")
            return f"{module}.{expr.attr.value}" if module else ""
        return found or ""

    # constructors of generator objects drawing on the host
    _GENERATOR_CLASSES = {"numpy.random.RandomState": "numpy.random", "numpy.random.default_rng": "numpy.random",
                          "numpy.random.Generator": "numpy.random", "random.Random": "random"}

    def _host_generators(self) -> dict[str, str]:
        """The names (and self. attributes) the file binds to a NumPy or `random` generator
        object, and the module whose draws theirs are."""
        if self._generators is None:
            self._generators = {}
            for target, calls in self._constructions().items():
                for call in calls:
                    module = self._GENERATOR_CLASSES.get(self.scopes.resolve(call.func) or "")
                    if module:
                        self._generators[target] = module
        return self._generators

    def _constructions(self) -> dict[str, list]:
        """`model = Net(...).to(device)`, `self.enc = nn.Sequential(...)`, `g = np.random.RandomState(0)`:
        the calls each name (or self. attribute) is assigned in the file, built once."""
        if self._assigned_calls is None:
            self._assigned_calls = {}
            for n in walk(self.module):
                if isinstance(n, cst.Assign) and len(n.targets) == 1 and isinstance(n.value, cst.Call):
                    target = dotted(n.targets[0].target)
                    if target is not None:
                        self._assigned_calls.setdefault(target, []).append(n.value)
        return self._assigned_calls

    def _pos(self, node) -> tuple[int, int]:
        # a statement whose children were rebuilt is a new node: find its original's position
        found = self.positions.get(node) or self.positions.get(self.originals.get(id(node)))
        return (found.start.line, found.start.column + 1) if found is not None else (1, 1)

    def _flag(self, stmt, status: str, message: str):
        line, col = self._pos(stmt)
        marker = self.reporter.flag(status, message, line, col)
        existing = {ln.comment.value for ln in stmt.leading_lines if ln.comment is not None}
        # a step already marked for manual migration by an earlier conversion, whose torch
        # context (e.g. the GradScaler) is gone now, is not judged again
        if marker in existing or any(c.startswith("# msmigrate: MSC102 ") for c in existing):
            return stmt
        return stmt.with_changes(leading_lines=[*stmt.leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])

    def _stmt(self, code: str):
        """Parse generated code; `__msref_N__` placeholders become MindSpore references that
        the table-driven pass leaves alone (their short names may still mean torch there)."""
        stmt = cst.parse_statement(code, config=self.config)
        return stmt.visit(_PlaceRefs(self.refs, self.plan)) if "__msref_" in code else stmt

    def _code(self, node) -> str:
        return self.module.code_for_node(node)

    def _ref(self, qualname: str) -> str:
        self.refs.append(qualname)
        return f"__msref_{len(self.refs) - 1}__"

    # ---- blocks ----------------------------------------------------------------------
    def leave_IndentedBlock(self, original, updated):
        self.originals.update(zip(map(id, updated.body), original.body))
        return updated.with_changes(body=self._block(list(updated.body)))

    def leave_Module(self, original, updated):
        self.originals.update(zip(map(id, updated.body), original.body))
        return updated.with_changes(body=self._block(list(updated.body)))

    def _block(self, body: list) -> list:
        # (`a; loss.backward(); b` lines were split by rules/split_statements.py)
        # (as the prescan: `accelerator.backward(loss)` of a name holding no Tensor is none)
        backwards = [i for i, stmt in enumerate(body) if _method_stmt(stmt, "backward") is not None
                     and dotted(_method_stmt(stmt, "backward").func.value) not in self.ctx.not_tensors]
        if len(backwards) == 1:
            body = self._rewrite(body, backwards[0])
        elif backwards:
            body = self._rewrite_several(body, backwards)
        out = []
        for stmt in body:
            out.extend(self.ready.pop(id(stmt), ()))
            if backwards or not (self._clears_gradients(stmt) or self._changes_nothing(stmt)):   # (a refused step keeps its own)
                out.extend(self.later.pop(id(self.originals.get(id(stmt), stmt)), [stmt]))
            elif self._clears_gradients(stmt):
                out.extend(self._cleared_accumulators(stmt))
        return out or [cst.SimpleStatementLine([cst.Pass()])]

    def _network_names(self) -> set[str]:
        """Names the module binds to networks (ModuleInstances), scanned when first needed."""
        if self._module_scan is None:
            self._module_scan = ModuleInstances(dict(self.ctx.names.imports), self.ctx.project)
            self.module.visit(self._module_scan)
        return self._module_scan.names

    def _clears_gradients(self, stmt) -> bool:
        """`optimizer.zero_grad()` (or a network's) outside a step, before a loop of steps:
        MindSpore keeps no gradients between steps, and its optimizers and Cells have no
        zero_grad (AttributeError mid-run)."""
        call = _method_stmt(stmt, "zero_grad")
        if call is None or any(a.keyword is None or a.keyword.value != "set_to_none" for a in call.args):
            return False
        receiver = dotted(call.func.value)
        if self._is_optimizer(receiver):
            return True
        return receiver in self._network_names() or \
            (receiver or "").rsplit(".", 1)[-1] in self._leaves(sorted(self.optimizers))

    def _cleared_accumulators(self, stmt) -> list:
        """`optimizer.zero_grad()` in a loop around an accumulating step (at each epoch's start):
        torch drops the gradients of the batches since the last update there (an epoch whose
        batch count is no multiple of the accumulation); the step's accumulated gradients are
        cleared the same way, or the next epoch's first update would apply them too."""
        receiver = dotted(_method_stmt(stmt, "zero_grad").func.value)
        around = {id(loop) for loop in self.loops[-1]}
        out = []
        for optimizer, accum, loops in self.accumulators:
            if (receiver == optimizer or not self._is_optimizer(receiver)) and around & set(map(id, loops)):
                out.append(self._stmt(f"for acc in {accum}:   # {self._code(stmt.body[0]).strip()}\n"
                                      f"    {self._ref('mindspore.ops.assign')}(acc, "
                                      f"{self._ref('mindspore.ops.zeros_like')}(acc))\n"))
        if out:
            out[0] = out[0].with_changes(leading_lines=stmt.leading_lines)
        return out

    def _changes_nothing(self, stmt) -> bool:
        """`optimizer.step()` of an optimizer the file makes, in a file computing no gradient: no
        parameter has one, torch's step skips them all; MindSpore's optimizers have no step()."""
        return self.gradient_free and self._optimizer_step(stmt) in self.optimizers

    # ---- several backward passes in one block ------------------------------------------
    def _rewrite_several(self, body: list, backwards: list[int]) -> list:
        """A block with several backward passes (GANs: a discriminator step, then a generator
        step): one compiled step per optimizer step, in torch's order. The backward passes
        before one optimizer step add up their gradients: one step differentiates their sum.
        Each step's forward_fn computes again what it needs from an earlier step and depends on
        its own parameters (`fake = G(z)` for the generator's step); what does not (a detached
        fake for the discriminator) comes in as the value torch used."""
        groups, waiting = [], []
        for i, stmt in enumerate(body):
            if i in backwards:
                waiting.append(i)
            elif waiting and self._optimizer_step(stmt) is not None:
                end = i + 1
                while end < len(body) and self._optimizer_step(body[end]) is not None:
                    end += 1
                groups.append((waiting, i, end))
                waiting = []
        why = None
        if waiting:
            why = ("several backward passes in one block, the last without an optimizer step after it: "
                   "convert this step by hand with ms.value_and_grad")
        else:
            for bws, _, _ in groups:
                for i in bws:
                    call = _method_stmt(body[i], "backward")
                    if any(a.keyword is None or a.keyword.value != "retain_graph" for a in call.args):
                        why = (f"backward({self._code(call.args[0].value) if call.args else ''}...) with "
                               f"arguments, among several backward passes: convert this step by hand")
        for bws, _, _ in groups:
            between = "".join(self._code(body[j]) for j in range(bws[0], bws[-1]))
            if why is None and (".step(" in between or ".grad" in between):
                why = ("several backward passes in one block, with an update between them that is no "
                       "plain optimizer step: convert this step by hand")
        if why is None:
            why = self._accumulated_elsewhere(body, groups)
        if why is not None:
            for i in backwards:
                body[i] = self._flag(body[i], "manual", why)
            return body

        # what a later step may compute again reads names an earlier step binds: that step
        # hands them back (`noise` of `fake = netG(noise)`, both inside the discriminator's step)
        leaves, tainted = self._leaves(list(self.optimizers)), set()
        self.later_reads = set()
        for stmt in body:
            e = effects(stmt)
            if self._names_network(stmt, leaves) or any(related(r, t) for r in e.read for t in tainted):
                tainted |= e.changed
                self.later_reads |= reads(stmt)
        out, earlier, start = [], {"stmts": [], "steps": []}, 0
        renames = self._renames(list(dict.fromkeys(o for _, s, e in groups for o in
                                                   map(self._optimizer_step, body[s:e]) if o)))
        for k, (bws, step_at, end) in enumerate(groups):
            end = end if k < len(groups) - 1 else len(body)
            window = list(body[start:end])
            last = bws[-1] - start
            if len(bws) > 1:   # loss1.backward(); loss2.backward(): the gradient of their sum
                receivers = [_method_stmt(body[i], "backward").func.value for i in bws]
                terms = " + ".join(self._code(r) if isinstance(r, (cst.Name, cst.Attribute)) else f"({self._code(r)})"
                                   for r in receivers)
                summed = self._stmt(f"({terms}).backward()").with_changes(leading_lines=body[bws[-1]].leading_lines)
                self.originals[id(summed)] = self.originals.get(id(body[bws[-1]]), body[bws[-1]])
                window[last] = summed
                window = [s for j, s in enumerate(window) if j + start not in bws[:-1]]
                last -= len(bws) - 1
            window_earlier = {"stmts": list(earlier["stmts"]), "steps": list(earlier["steps"]),
                              "at": bws[0]}
            out += self._rewrite(window, last, window_earlier if k else None, renames if k == 0 else ())
            for j in range(start, end):
                stmt = body[j]
                if j in bws or self._is_zero_grad(stmt):
                    continue
                opt = self._optimizer_step(stmt)
                if opt is not None:
                    earlier["steps"].append((j, opt, stmt))
                elif j < bws[-1]:
                    earlier["stmts"].append((j, stmt))
            start = end
        self.later_reads = set()
        return out

    def _data_input(self, stmt, inputs: list[str]):
        """`z = torch.randn(..., requires_grad=True)` passed into the step and never used for its
        own gradient (no `z.grad`, no optimizer over it): plain data there. As a Parameter (what
        requires_grad=True becomes) every new one would compile the step again."""
        name = _assigned_name(stmt)
        call = _call_of(stmt)
        if name is None or name not in inputs or call is None or not self._q(call.func).startswith("torch."):
            return stmt
        keep = [a for a in call.args if not (a.keyword is not None and a.keyword.value == "requires_grad"
                                             and self._code(a.value) == "True")]
        if len(keep) == len(call.args) or self._gradient_used(name):
            return stmt
        keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        new = stmt.with_changes(body=[stmt.body[0].with_changes(value=call.with_changes(args=keep))])
        return self._rebuilt(stmt, new)

    def _gradient_used(self, name: str) -> bool:
        """Whether the program reads `name.grad` / `name.requires_grad`, differentiates w.r.t. it
        or builds an optimizer over it."""
        code = self.module.code
        if re.search(rf"\b{re.escape(name)}\.(grad|requires_grad)\b", code) or "autograd.grad" in code:
            return True
        for n in walk(self.module):
            if isinstance(n, cst.Call) and self._q(n.func).startswith(OPTIMIZER_PREFIX) and \
                    any(name in reads(a.value) for a in n.args):
                return True
        return False

    def _names_network(self, stmt, leaves: set[str]) -> bool:
        """Whether a statement calls or names one of these networks, or calls a function of
        this file that names one."""
        if not leaves:
            return False
        nodes = list(walk(stmt))
        gone_into = {id(n.func) for n in nodes if isinstance(n, cst.Call)} | \
            {id(n.value) for n in nodes if isinstance(n, (cst.Attribute, cst.Subscript))}
        settings = {id(n.value) for n in nodes if _reads_setting(n) and id(n) not in gone_into}
        for n in nodes:
            if isinstance(n, cst.Name) and n.value in leaves - {"self"} and id(n) not in settings:
                return True
            if isinstance(n, cst.Attribute) and n.attr.value in leaves and dotted(n.value) == "self":
                return True
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
                fn = self._functions().get(n.func.value)
                if fn is not None and any(isinstance(m, cst.Name) and m.value in leaves - {"self"}
                                          for m in walk(fn.body)):
                    return True
        return False

    def _functions(self) -> dict:
        if getattr(self, "_module_functions", None) is None:
            self._module_functions = {s.name.value: s for s in self.module.body if isinstance(s, cst.FunctionDef)}
        return self._module_functions

    def _sets_requires_grad(self, stmt) -> bool:
        """A requires_grad toggle (`set_requires_grad(D, False)` of a GAN's generator step): it
        stays where it is in the loop, out of every step (inside a forward_fn it would freeze
        the network that step trains; each converted step differentiates only its own
        optimizer's parameters, which is what the toggles arrange in torch)."""
        if getattr(self, "_toggle_defs", None) is None:
            defs: dict[str, list] = {}
            for s in self.module.body:
                for d in [s] if isinstance(s, cst.FunctionDef) else \
                        [m for m in s.body.body if isinstance(m, cst.FunctionDef)] if isinstance(s, cst.ClassDef) else []:
                    defs.setdefault(d.name.value, []).append(d)
            self._toggle_defs = defs
        return _only_sets_requires_grad([stmt], self._toggle_defs)

    def _leaves(self, optimizers: list[str]) -> set[str]:
        return {h.rsplit(".", 1)[-1] for h in self._holders(optimizers)}

    def _data_callable(self, name: str, leaves: set[str]) -> bool:
        """Whether every value the file binds to `name` is a function naming none of the
        networks `leaves`: a lambda, a def, a function of this file, what a function of this
        file returns when it returns a lambda or a def of its own (`d_sampler =
        get_distribution_sampler(mu, sigma)` drawing with NumPy), or an object of a plain class
        of the file with a `__call__`."""
        values = self._callable_bindings().get(name)
        if not leaves or not values:
            return False
        for value in values:
            if isinstance(value, cst.Name) and value.value in self._functions():
                value = self._functions()[value.value]
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and \
                    value.func.value in self._callable_classes():
                if self._names_network(self._callable_classes()[value.func.value], leaves):
                    return False
            elif isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                fn = self._functions().get(value.func.value)
                if fn is None or not self._returns_function(fn):
                    return False
            elif not isinstance(value, (cst.Lambda, cst.FunctionDef)):
                return False
            if self._names_network(value, leaves):
                return False
        return True

    def _callable_bindings(self) -> dict[str, list]:
        """name -> the values the file binds to it (_CallableBindings), scanned once."""
        if self._callables is None:
            self._callables = _CallableBindings()
            self.module.visit(self._callables)
        return self._callables.values

    def _plain_classes(self) -> dict:
        """Plain classes of this file (ctx.plain_classes): name -> ClassDef."""
        if self._module_plain_classes is None:
            self._module_plain_classes = {s.name.value: s for s in self.module.body if isinstance(s, cst.ClassDef)
                                          and s.name.value in self.ctx.plain_classes}
        return self._module_plain_classes

    def _callable_classes(self) -> dict:
        """Plain classes of this file whose objects are called: a `__call__` method
        (`noise = UniformNoise(rng)`, then `noise(m, n)`)."""
        return {name: c for name, c in self._plain_classes().items()
                if any(isinstance(f, cst.FunctionDef) and f.name.value == "__call__" for f in c.body.body)}

    def _data_object(self, name: str, leaves: set[str]) -> bool:
        """Whether every value the file binds to `name` is an object of a plain class of the file
        that names none of the networks `leaves` (`batch = loader.next()` of an infinite loader
        class: inside the compiled step its Python would run once)."""
        values = self._callable_bindings().get(name)
        classes = self._plain_classes()
        return bool(leaves and values) and all(
            isinstance(v, cst.Call) and isinstance(v.func, cst.Name) and v.func.value in classes
            and not self._names_network(classes[v.func.value], leaves) for v in values)

    @staticmethod
    def _returns_function(fn: cst.FunctionDef) -> bool:
        defs, returned, todo = set(), [], list(fn.body.children)
        while todo:   # its own statements, not those of the functions it defines
            n = todo.pop()
            if isinstance(n, cst.FunctionDef):
                defs.add(n.name.value)
            elif isinstance(n, cst.Return):
                returned.append(n.value)
            elif not isinstance(n, (cst.Lambda, cst.ClassDef)):
                todo.extend(n.children)
        return bool(returned) and all(isinstance(v, cst.Lambda) or (isinstance(v, cst.Name) and v.value in defs)
                                      for v in returned)

    def _host_call(self, stmt, leaves: set[str]) -> bool:
        """Whether a statement calls what a compiled step could only run once, at compile time:
        a function of this file or one the file binds (a lambda, a closure), a data method of
        the class, NumPy or `random`."""
        for n in walk(stmt):
            if not isinstance(n, cst.Call):
                continue
            func = n.func
            if isinstance(func, cst.Name) and (func.value in self._functions() or
                                               self._data_callable(func.value, leaves)):
                return True
            if isinstance(func, cst.Attribute) and dotted(func.value) == "self" and \
                    func.attr.value in self._data_methods():
                return True
            if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and \
                    self._data_object(func.value.value, leaves):
                return True
            if self._q(func).startswith(("numpy.", "random.")):
                return True
        return False

    def _recompute(self, earlier: dict, free: set[str], step):
        """The statements of earlier steps that this step computes again (original nodes, in
        order), or why it cannot: a value it needs depends on its own parameters and was
        computed before another optimizer changed parameters it was computed with (torch
        differentiates the graph it recorded then), or it draws random numbers."""
        stmts = [s for _, s in earlier["stmts"]]
        chain, _ = backward_slice(stmts, free & writes_of(stmts))
        mine = self._leaves([step["optimizer"], *step.get("others", ())])
        tainted: set[str] = set()
        out = []
        for i in chain:
            pos, stmt = earlier["stmts"][i]
            if self._sets_requires_grad(stmt):
                continue   # (stays in the loop, in order)
            e = effects(stmt)
            if not (any(related(r, t) for r in e.read for t in tainted) or self._names_network(stmt, mine)):
                continue   # a constant for this step: it comes in as torch computed it
            tainted |= e.changed
            line = f"'{', '.join(sorted(e.binds or e.changed))}' (line {self._pos(stmt)[0]})"
            if self._draws_random(stmt):
                return (f"the loss of this step depends on {line}, computed before an earlier "
                        f"optimizer step of this block and drawing random numbers: computing it again "
                        f"inside this step would draw other ones; convert this step by hand")
            for at, opt, step_stmt in earlier["steps"]:
                changed = self._leaves([opt])
                if pos < at < earlier["at"] and self._names_network(stmt, changed):
                    return (f"the loss of this step depends on {line}, computed with parameters that "
                            f"{opt}.step() (line {self._pos(step_stmt)[0]}) changes before this "
                            f"backward pass: torch differentiates the values computed before the update "
                            f"(recent torch raises 'modified by an inplace operation' here), a step computing "
                            f"them again would use the updated ones; compute them after {opt}.step(), or "
                            f"convert this step by hand")
            out.append(stmt)
        return out

    def _draws_random(self, stmt) -> bool:
        for n in walk(stmt):
            if isinstance(n, cst.Call):
                q = self._q(n.func)
                leaf = q.rsplit(".", 1)[-1]
                if q.startswith("torch.") and (leaf.startswith(("rand", "normal", "bernoulli", "multinomial"))
                                               or "dropout" in leaf):
                    return True
        return False

    def _accumulated_elsewhere(self, body: list, groups) -> str | None:
        """Why the gradients an optimizer step applies are not those of its own backward passes
        alone: another backward pass whose loss reaches its parameters runs after its last
        zero_grad (torch adds the two up)."""
        losses = {}
        for bws, _, _ in groups:
            for i in bws:
                receiver = _method_stmt(body[i], "backward").func.value
                needed = reads(receiver)
                stmts = [s for s in body[:i] if _method_stmt(s, "backward") is None]
                chain, _ = backward_slice(stmts, needed)
                losses[i] = [stmts[j] for j in chain] + [body[i]]
        for bws, step_at, end in groups:
            opts = [o for o in map(self._optimizer_step, body[step_at:end]) if o]
            leaves = self._leaves(opts)
            holders = self._holders(opts) | set(opts)
            n = len(body)
            for back in range(1, n):
                j = (bws[0] - back) % n
                call = _method_stmt(body[j], "zero_grad")
                if call is not None and (dotted(call.func.value) in holders or
                                         (dotted(call.func.value) or "").rsplit(".", 1)[-1] in leaves):
                    break
                if j in losses and j not in bws and any(self._names_network(s, leaves) for s in losses[j]):
                    return (f"several backward passes in one block: {', '.join(opts)} would apply the gradients "
                            f"of the backward pass at line {self._pos(body[j])[0]} too (no zero_grad of "
                            f"{', '.join(opts)} between them, so torch adds them up): convert this step by hand")
        return None

    # ---- the rewrite -------------------------------------------------------------------
    def _rewrite(self, body: list, b: int, earlier=None, renames=()) -> list:
        backward_stmt = body[b]
        self.home = self.loops[-1][0] if self.loops[-1] else None   # until _home_loop decides
        call = _method_stmt(backward_stmt, "backward")
        receiver = call.func.value
        scaler = None
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute) and \
                receiver.func.attr.value == "scale" and dotted(receiver.func.value) in self.scalers:
            scaler = dotted(receiver.func.value)
            receiver = receiver.args[0].value
        pre = [s for s in body[:b] if not self._is_zero_grad(s)]
        post = [s for s in body[b + 1:] if not self._is_zero_grad(s)]

        step = self._find_step(post, scaler)
        if step is None:   # the block of a closure handed to LBFGS's step(closure)
            step = self._closure_step(body, post)
            if isinstance(step, str):
                body[b] = self._flag(backward_stmt, "manual", step)
                return body
        read = next((t for s in post for t in grad_touched(s, self._trainable_tensors())), None) \
            if step is not None and step.get("kind") != "closure" else None
        if read is not None:   # (an optimizer's own tensor: `img` of Adam([img]), its `img.grad` printed)
            body[b] = self._flag(backward_stmt, "manual", f"{read}.grad is read after the backward pass of an "
                                 f"optimizer step, where MindSpore keeps no gradient on the tensor: return it "
                                 f"from the step (ms.value_and_grad), or convert this step by hand")
            return body
        for opt in ([step.get("optimizer"), *step.get("others", ())] if step is not None else []):
            if opt in self.closure_optimizers and step["kind"] != "closure":
                body[b] = self._flag(backward_stmt, "manual", f"{opt}.step() without a closure: torch's L-BFGS "
                                     f"evaluates the loss through the closure it is given (step(closure)); "
                                     f"write the step that way, then convert")
                return body
            if opt in self.unconvertible:
                body[b] = self._flag(backward_stmt, "manual", f"{self.unconvertible[opt]} "
                                     f"({opt}) has no MindSpore counterpart: the training "
                                     f"step is left as it was; rewrite it by hand")
                return body
        if step is not None and step.get("others"):
            why = None
            if self.data_parallel:
                why = "with DistributedDataParallel"
            elif any(self._binding_loop(o) for o in [step["optimizer"], *step["others"]]):
                why = "bound by a loop"
            else:
                step["clip_parts"] = self._clip_parts(step)
                if step["clip_parts"] is None:
                    why = "with a gradient clip over parameters of some of them"
            if why:
                body[b] = self._flag(backward_stmt, "manual", f"several optimizers stepped after one "
                                     f"backward pass ({', '.join([step['optimizer'], *step['others']])}) "
                                     f"{why}: convert this step by hand")
                return body
        if step is None:
            step = self._bare_step(body, b, call, post)
            if isinstance(step, str):
                body[b] = self._flag(backward_stmt, "manual", step)
                return body
            if step is not None:
                pre = [s for s in pre if id(s) not in step["cleared"]]
        if step is None:
            step = self._step_after_loop(post, scaler)
        if step is None:
            body[b] = self._flag(backward_stmt, "manual", "loss.backward() without an optimizer step "
                                 "or parameter update in the same block: rewrite this step by hand "
                                 "with ms.value_and_grad")
            return body
        if scaler and step["kind"] == "manual":
            body[b] = self._flag(backward_stmt, "manual", "GradScaler with a hand-written parameter "
                                 "update (no optimizer): rewrite this step by hand with ms.value_and_grad")
            return body

        loss_name = receiver.value if isinstance(receiver, cst.Name) else self.fresh("loss")
        loss_stmt = None
        if not isinstance(receiver, cst.Name):
            loss_stmt = self._stmt(f"{loss_name} = {self._code(receiver)}")
        chosen, free = backward_slice(pre + ([loss_stmt] if loss_stmt else []), {loss_name})
        if loss_stmt is not None and len(pre) in chosen:
            chosen.remove(len(pre))
        eff = [effects(s) for s in pre]
        trained = set(step.get("tensors", ()))   # a statement computing with them is no data
        leaves = self._leaves([o for o in (step.get("optimizer"), *step.get("others", ())) if o]) | trained
        if step["kind"] == "manual":   # updated by hand: the network is the one it names
            leaves.add(step["model"].rsplit(".", 1)[-1])
        holders = self._recomputed_holders()
        # a tensor trained by hand is made before its step (`w = x.clone().requires_grad_()`), not in it
        chosen = [i for i in chosen if not (eff[i].writes & trained)]
        # so are the networks and optimizers it trains: a step with no loop around it (a module's
        # top level, one update) has their construction in its block, before everything it computes
        # (an optimizer made between the loss's inputs and its step is not in the loss's slice)
        made = [i for i in range(len(pre)) if eff[i].binds & (leaves | {o for o in (step.get("optimizer"),
                                                                                *step.get("others", ())) if o})]
        if made and not self.loops[-1]:
            chosen = [i for i in chosen if i > made[-1]]
        # so is what picks (or makes anew) the objects of a step built per object (_picked_in_loop:
        # `if epoch == 2: model, opt = build()`): before the step's lookup, not in it
        picked = self._picked_in_loop(step["optimizer"]) if step.get("optimizer") else None
        rebinds = [i for i in range(len(pre)) if picked is not None and eff[i].binds & set(_target_names(picked))]
        if rebinds:
            chosen = [i for i in chosen if i > rebinds[-1]]
        def mutated(i: int) -> set[str]:
            """What pre[i] may change in place: `buffer.append(obs)` of a Python container
            changes the container, not what goes into it."""
            call = _call_of(pre[i])
            container = self._container_filled(call) if call is not None else None
            return {container} if container else eff[i].mutated

        while chosen and (self._prepares_data(pre[chosen[0]], leaves) and
                          not (reads(pre[chosen[0]]) & (trained | holders)) and
                          self._kept_outputs_read([pre[chosen[0]]], leaves) is None and
                          not (eff[chosen[0]].writes & set().union(*(mutated(i) for i in chosen[1:])))
                          or self._writes_before_step(pre[chosen[0]], [pre[i] for i in chosen[1:]])):
            # stays outside: the compiled step takes the batch as tensors (but a container the
            # step fills, `losses = []`, is part of the step)
            chosen.pop(0)
        chosen = [i for i in self._keep_order(eff, chosen) if not self._sets_requires_grad(pre[i])]
        # later in the step, a draw by what the compiled step could not run on every call (a
        # NumPy draw, a lambda or function of the file: `z = gi_sampler(m, n)` after the real
        # batch's loss) that depends on none of the step's statements before it: drawn before
        # the step too, and passed in
        drawn_before = []

        def runs_first(k: int) -> bool:
            """Whether pre[k] may run before the statements from the step's first one on (those
            not moved already): it depends on none of them and changes nothing they use."""
            between = [j for j in range(chosen[0], k) if j not in drawn_before]
            later = set().union(*(eff[i].mutated for i in chosen if i > k))
            return not (eff[k].changed & later or _jumps([pre[j] for j in between]) or any(
                any(related(r, w) for r in eff[k].read for w in eff[j].changed) or
                any(related(w, o) for w in eff[k].changed for o in eff[j].read | eff[j].changed)
                for j in between))

        for k in chosen[1:]:
            if not (self._prepares_data(pre[k], leaves) and self._host_call(pre[k], leaves)) or \
                    reads(pre[k]) & trained:
                continue
            if runs_first(k):
                drawn_before.append(k)
        # a tensor trained by hand is made after the step's first statement when the loss reads
        # something bound before it (`k = 2.0`, a helper, a Cell): the step differentiates w.r.t.
        # it, so it is made before the step too (left after it, the step read it unbound)
        for k in range(chosen[0] + 1, len(pre)) if chosen and trained else ():
            if k in chosen or not eff[k].writes & trained:
                continue
            if not runs_first(k):
                body[b] = self._flag(backward_stmt, "manual", f"the tensor trained at line {self._pos(pre[k])[0]} "
                                     f"is made after statements of the loss it depends on or changes: the step "
                                     f"needs it first; make it before them, then convert")
                return body
            drawn_before.append(k)
        drawn_before.sort()
        chosen = [i for i in chosen if i not in drawn_before]
        jumping = [j for j in range(chosen[0] + 1, chosen[-1]) if j not in chosen and _jumps([pre[j]])] \
            if chosen else []
        if jumping:   # it would run after the step, which torch may never have reached
            body[b] = self._flag(backward_stmt, "manual", f"the statement at line {self._pos(pre[jumping[0]])[0]} "
                                 f"may leave the loop body (continue/break/return) between statements the "
                                 f"compiled step runs together: move it before or after them, then convert")
            return body
        if chosen:
            free = backward_slice([pre[i] for i in chosen] + ([loss_stmt] if loss_stmt else []),
                                  {loss_name})[1]
        slice_stmts = [pre[i] for i in chosen]
        hoisted = []
        if loss_stmt is None:
            slice_stmts, hoisted = self._hoist_indexing(slice_stmts, free)
            if hoisted:
                free = backward_slice(slice_stmts, {loss_name})[1]
        rest_pre = [s for i, s in enumerate(pre) if i not in chosen and i not in drawn_before]
        first_slice_at = first_step_at = chosen[0] if chosen else len(pre)
        # requires_grad toggles among the step's statements arrange its backward pass: before it
        toggles = [pre[j] for j in range(first_slice_at + 1, len(pre))
                   if j not in chosen and j not in drawn_before and self._sets_requires_grad(pre[j])]
        # left out of the step after its first statement: it runs after the update, so a call of
        # a trained network there sees the new parameters where torch's saw the old ones
        late = {id(pre[j]) for j in range(first_slice_at + 1, len(pre))
                if j not in chosen and j not in drawn_before and self._names_network(pre[j], leaves)
                and all(pre[j] is not t for t in toggles)}
        if toggles:
            rest_pre = rest_pre[:first_slice_at] + toggles + \
                [s for s in rest_pre[first_slice_at:] if all(s is not t for t in toggles)]
            first_slice_at += len(toggles)
        rest_pre = [self._flag(s, "review", LATE_FORWARD) if id(s) in late else s for s in rest_pre]
        # after the step's statements, a test of what they compute that leaves the loop body
        # (`if not torch.isfinite(loss): continue`): torch skipped the update, the converted
        # step has applied it when the test runs
        computed = writes_of([pre[i] for i in chosen]) | {loss_name}
        guards = {id(pre[j]) for j in range(chosen[-1] + 1, len(pre)) if chosen and j not in drawn_before
                  and _jumps([pre[j]]) and reads(pre[j]) & computed} if chosen else set()
        rest_pre = [self._flag(s, "review", SKIP_AFTER_UPDATE) if id(s) in guards else s for s in rest_pre]
        own_stmts = slice_stmts
        recomputed = []
        if earlier is not None and free & writes_of([s for _, s in earlier["stmts"]]):
            # values an earlier step of this block computed: those that depend on this step's
            # parameters are computed again inside it, the others come in as they are
            recomputed = self._recompute(earlier, free, step)
            if isinstance(recomputed, str):
                body[b] = self._flag(backward_stmt, "manual", recomputed)
                return body
            if recomputed:
                slice_stmts = recomputed + slice_stmts
                free = backward_slice(slice_stmts + ([loss_stmt] if loss_stmt else []), {loss_name})[1]

        self.home = self._home_loop(step, slice_stmts + ([loss_stmt] if loss_stmt else []), leaves)
        inputs = self._inputs(slice_stmts + ([loss_stmt] if loss_stmt else []), free,
                              (set().union(*(writes(h) for h in hoisted)) if hoisted else set()) |
                              step.get("varying", set()))
        changing = self._changing_attributes(slice_stmts + ([loss_stmt] if loss_stmt else []), inputs)
        if changing:   # `self.beta` annealed by another method: read through an argument
            slice_stmts = [self._rebuilt(s, s.visit(_AttributesAsNames(changing))) for s in slice_stmts]
            loss_stmt = self._rebuilt(loss_stmt, loss_stmt.visit(_AttributesAsNames(changing))) if loss_stmt else None
            inputs = inputs + list(changing.values())
        step["arguments"] = {name: path for path, name in changing.items()}
        # `logits, self.loss = model(x, y)` of a trainer object: written in the step, a plain
        # object's attribute would be set once, while compiling (every later read stale); a
        # local of the step instead, returned and written back after it
        written = self._written_attributes(slice_stmts, leaves)
        if written:
            slice_stmts = [self._rebuilt(s, s.visit(_AttributesAsNames(written))) for s in slice_stmts]
            loss_stmt = self._rebuilt(loss_stmt, loss_stmt.visit(_AttributesAsNames(written))) if loss_stmt else None
            own_stmts = [s for s in slice_stmts if s not in recomputed]
        python_object = self._python_objects_in([pre[i] for i in chosen] + recomputed)
        if python_object is None:
            python_object = self._distribution_in(slice_stmts + ([loss_stmt] if loss_stmt else []))
        if python_object is None:
            python_object = self._host_function_in(slice_stmts + ([loss_stmt] if loss_stmt else []))
        if python_object is None:
            python_object = self._random_callee_twice(slice_stmts + ([loss_stmt] if loss_stmt else []))
        if python_object is None:
            python_object = self._varying_reader_in(slice_stmts + ([loss_stmt] if loss_stmt else []), trained)
        if python_object is None:
            python_object = self._forward_state_read_in(slice_stmts + ([loss_stmt] if loss_stmt else []))
        cut = self._cut_input(step, inputs, [pre[i] for i in chosen] + recomputed)
        if cut is not None:
            name, where = cut
            body[b] = self._flag(backward_stmt, "manual", f"the loss depends on '{name}', computed by the "
                                 f"network at line {self._pos(where)[0]} outside the statements the training "
                                 f"step can hold: its gradient would be cut (zero); compute '{name}' in the "
                                 f"same block as loss.backward(), or convert this step by hand")
            return body
        read = set().union(*(effects(self.originals.get(id(s), s)).read for s in slice_stmts))
        recomputing = sorted(c for c in self.ctx.recomputed if any(same_container(r, c) for r in read))
        recomputing += sorted(holders & set().union(set(), *(reads(st) for st in slice_stmts)))
        if not slice_stmts and loss_stmt is None and step["kind"] != "bare":
            # nothing to differentiate: the loss came in computed (from values kept earlier)
            body[b] = self._flag(backward_stmt, "manual", f"the loss '{loss_name}' is computed before this "
                                 f"step from values no network call of this block computes (kept from earlier "
                                 f"calls?): MindSpore differentiates only what the step computes, so the "
                                 f"gradients would be zero; compute the network's outputs in the block of "
                                 f"loss.backward(), or convert this step by hand")
            return body
        if recomputing and python_object is None:
            python_object = f"msmigrate_recomputed({recomputing[0]})"
        kept = self._kept_outputs_read(slice_stmts + ([loss_stmt] if loss_stmt else []), leaves)
        if kept is not None and kept[1] is not None:
            path, where = kept
            body[b] = self._flag(backward_stmt, "manual", f"the loss reads '{path}', filled at line "
                                 f"{self._pos(where)[0]} with values the network computed before this step: "
                                 f"MindSpore differentiates only what the step computes, so their gradients "
                                 f"would be zero (the program would run and not train); keep the network's "
                                 f"inputs there instead and compute its outputs in the step (the block of "
                                 f"loss.backward()), or convert this step by hand")
            return body
        # `for net, opt in zip(nets, opts):` one compiled step per optimizer object, built inside
        # that loop; what the loop binds is read by the step's closure, not passed to it (a Cell
        # is no jit argument)
        per_object = self._per_object(step["optimizer"]) if "optimizer" in step else None
        # the trained tensors are read by forward_fn where they live, never passed to it
        inputs = [n for n in inputs if n not in step.get("tensors", ())]
        if per_object is not None:
            inputs = [n for n in inputs if n not in _target_names(per_object.target)]
        if per_object is None and not self.loops[-1]:
            # a function's step, run once per call: the objects among its parameters (called:
            # `model(x)`, `loss.forward(out, y)`) are read by the step's closure, which is built
            # once per objects (below); a Cell passed to a compiled function compiles it again
            objects = self._called_params(slice_stmts + ([loss_stmt] if loss_stmt else []))
            inputs = [n for n in inputs if n not in objects]
        # bound again before the step on every pass (`state = env.reset()` left outside it as data
        # preparation): a value the step leaves in such a name is not carried to the next step
        bound_before = set().union(set(), *(eff[j].binds - eff[j].read for j in range(len(pre))
                                            if j < first_step_at or j in drawn_before))
        outputs = self._outputs(own_stmts + ([backward_stmt] if loss_stmt else []), loss_name, free,
                                bound_before)
        # (the loss itself, `self.cost.backward()`: written back from the step's loss)
        loss_alias = {n for n in written.values() if loss_stmt is not None and self._code(loss_stmt).strip() == f"{loss_name} = {n}"}
        outputs += [n for n in written.values() if n not in outputs and n != loss_name and n not in loss_alias]
        names = {"forward": self.fresh("forward_fn"), "grad": self.fresh("grad_fn"),
                 "step": self.fresh("train_step")}
        if step["kind"] == "accumulate" and (reads(step["if"].test) & (writes_of(slice_stmts) | {loss_name})):
            body[b] = self._flag(backward_stmt, "manual", "the accumulation condition depends on this "
                                 "step's results: convert this step by hand")
            return body
        if step["kind"] == "accumulate" and any(self._is_zero_grad(s) for s in body[:b]):
            # `opt.zero_grad()` before the backward pass of every batch, `if cond: opt.step()`:
            # torch applies one batch's gradients, the accumulation below all since the last update
            flagged = self._flag(backward_stmt, "review", "zero_grad() before this backward pass clears "
                                 "the gradients of every batch, and the update under the condition applies "
                                 "only this batch's; the converted step accumulates the gradients of every "
                                 "batch since the last update and applies their sum: move zero_grad() after "
                                 "the update (gradient accumulation), or convert this step by hand")
            step["markers"] = list(flagged.leading_lines[len(backward_stmt.leading_lines):])   # on the step's call
        manual = step["kind"] == "manual"
        step["update_inputs"] = self._update_inputs(([step["loop"]] if manual else []) + list(step.get("clips", ())),
                                                    inputs, {step["param"]} if manual else set())
        step["compile"] = python_object is None
        defs, call_stmts, post = self._generate(step, names, slice_stmts, loss_stmt, loss_name,
                                                inputs, outputs, post, scaler)
        call_stmts += [self._stmt(f"{path} = {loss_name if name in loss_alias else name}") for path, name in written.items()]
        self._pass_on_arguments([names["forward"], names["step"]], inputs)
        if recomputing:   # the kept values are computed inside the gradient function
            defs = [d.visit(_ReadRecomputed(recomputing)) if isinstance(d, cst.FunctionDef)
                    and d.name.value == names["forward"] else d for d in defs]
        if python_object is not None and step["kind"] != "bare":
            defs = self._uncompiled(defs, names["step"], python_object, backward_stmt)
        renames = list(renames) + self._renames([o for o in (step.get("optimizer"), *step.get("others", ())) if o],
                                                slice_stmts + ([loss_stmt] if loss_stmt else []))
        if renames:   # the blank line before the definitions goes before the renames
            renames = [renames[0].with_changes(leading_lines=defs[0].leading_lines), *renames[1:]]
            defs[0] = defs[0].with_changes(leading_lines=[])
        defs = self._mixed_precision() + list(renames) + defs
        call_stmts[0] = call_stmts[0].with_changes(leading_lines=(own_stmts[0].leading_lines if own_stmts
                                                                  else backward_stmt.leading_lines))
        if step.get("markers"):
            call_stmts[0] = call_stmts[0].with_changes(leading_lines=[*call_stmts[0].leading_lines, *step["markers"]])
        again = [s for s in recomputed if self._names_network(s, self._leaves(list(self.optimizers)))]
        if again and "BatchNorm" in self.module.code:
            line, col = self._pos(backward_stmt)
            marker = self.reporter.flag("review", f"this step computes line {self._pos(again[0])[0]} again "
                                        f"(it differentiates through it): a BatchNorm in that network updates "
                                        f"its running statistics once more per iteration than in torch", line, col)
            call_stmts[0] = call_stmts[0].with_changes(
                leading_lines=[*call_stmts[0].leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])
        rest_pre = [self._data_input(s, inputs) for s in rest_pre]
        drawn = [self._data_input(pre[k], inputs) for k in drawn_before]
        new_body = rest_pre[:first_slice_at] + drawn + hoisted + call_stmts + rest_pre[first_slice_at:] + post

        loop = self.home
        scope = self.funcs[-1]
        if step["kind"] == "closure":
            return self._place_closure_step(defs, new_body, names["step"], free - set(inputs), step["optimizer"])
        if step["kind"] == "bare":   # nothing compiled: built once, before the outermost loop
            if loop is not None:
                self.pending.setdefault(id(loop), []).extend(defs)
                return new_body
            # no loop: just before the step, after what it reads is bound (`w = torch.randn(3,
            # requires_grad=True)` ... `loss.backward()` at a module's top level)
            at = len(rest_pre[:first_slice_at]) + len(drawn) + len(hoisted)
            return new_body[:at] + defs + new_body[at:]
        if loop is None and isinstance(scope, cst.Module):   # one step at a module's top level: the same
            at = len(rest_pre[:first_slice_at]) + len(drawn) + len(hoisted)
            return new_body[:at] + defs + new_body[at:]
        if per_object is not None:
            cache = self.fresh("train_steps")
            bound = sorted(_target_names(per_object.target), key=self._code(per_object.target).find)
            factory = self._factory(defs, self.fresh(f"make_{names['step']}"), names["step"], bound)
            self.pending.setdefault(id(loop), []).extend([factory, self._stmt(f"{cache} = {{}}")])
            lookup = self._cached_per_object(defs, factory.name.value, bound, names["step"], cache, step["optimizer"])
            # after the statement picking the optimizer, when the loop's body does (_picked_in_loop)
            at = next((i + 1 for i, st in enumerate(new_body) if set(bound) & writes(st)), 0) \
                if per_object.picked else 0
            return new_body[:at] + lookup + new_body[at:]
        if isinstance(scope, cst.FunctionDef) and self._captures_only_self(scope, free - set(inputs)):
            # a method: build the compiled step once per object, not on every call
            defs = self._cached_on_self(defs, names["step"])
            if loop is not None and not self._conditional_in(loop):
                self.pending.setdefault(id(loop), []).extend(defs)
            else:
                new_body = defs + new_body
        elif (owner := self._captures_only_params(scope, defs)) is not None:
            # `def train(model, loss, optimizer, x, y)` called once per batch (or `def
            # train_one_epoch(model, loader, optimizer)` looping over batches, called once per
            # epoch): the step is built once per object it closes over (a factory and a cache
            # before the function), not compiled again on every call
            cache = self.fresh("train_steps")
            factory = self._factory(defs, self.fresh(f"make_{names['step']}"), names["step"], owner)
            factory = factory.with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
            self._pass_on_arguments([factory.name.value], owner)
            self.pending.setdefault(id(scope), []).extend([factory, self._stmt(f"{cache} = {{}}")])
            lookup = [self._stmt(f"if {self._ids(owner)} not in {cache}:\n"
                                 f"    {cache}[{self._ids(owner)}] = {factory.name.value}({', '.join(owner)})\n"),
                      self._stmt(f"{_compiled(defs, names['step'])} = {cache}[{self._ids(owner)}]")]
            if loop is not None and not self._conditional_in(loop):
                self.pending.setdefault(id(loop), []).extend(lookup)
            else:
                new_body = lookup + new_body
        elif self._reads_only_settled_globals(scope, defs):
            # `def train(epoch)` whose step reads only module-level names bound before the
            # function and never after: the same step on every call, built once before it
            defs[0] = defs[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)] * 2)
            self.pending.setdefault(id(scope), []).extend(defs)
        elif loop is not None:
            self.pending.setdefault(id(loop), []).extend(defs)
        else:
            defs[0] = self._flag(defs[0], "review", "the training step is defined inside this "
                                 "function, so it is compiled again on every call: move the "
                                 "definitions to where the model and optimizer are created")
            new_body = defs + new_body
        return new_body

    @staticmethod
    def _keep_order(eff: list, chosen: list[int]) -> list[int]:
        """The statements left out of the step run after it. One that reads what a later
        statement of the step changes would see the changed value there: it joins the step
        instead, so that every statement sees what it saw in torch. `eff`: the effects of
        each statement of the block."""
        chosen = list(chosen)
        changed = True
        while changed and chosen:
            changed = False
            for j in range(chosen[0] + 1, chosen[-1]):
                if j in chosen:
                    continue
                later = set().union(*(eff[i].changed for i in chosen if i > j))
                if any(related(r, w) for r in eff[j].read for w in later):
                    chosen = sorted({*chosen, j})
                    changed = True
                    break
        return chosen

    def _cut_input(self, step, inputs: list[str], slice_stmts: list):
        """(name, statement) when a value passed into the step was computed by calling the network
        outside it (earlier in the loop body or in an enclosing block): differentiating the
        step would see it as a constant. None when no input comes from the network."""
        if not inputs or step["kind"] == "bare":
            return None
        if self._holder_scan is None:
            self._holder_scan = _ParameterHolders()
            self.module.visit(self._holder_scan)
        scan = self._holder_scan
        holders = {step["model"]} if step["kind"] == "manual" else \
            self._holders([step.get("optimizer") or "", *step.get("others", ())])
        leaves = {h.rsplit(".", 1)[-1] for h in holders}
        if not leaves:
            return None
        inside = {id(n) for s in slice_stmts for n in walk(self.originals.get(id(s), s))}
        inside |= {id(n) for s in slice_stmts for n in walk(s)}
        loop = self.loops[-1][0] if self.loops[-1] else None
        scope = loop if loop is not None else self.funcs[-1]
        wanted = set(inputs)
        for stmt in self._statements(scope.body if not isinstance(scope, cst.Module) else scope):
            if id(stmt) in inside or not (writes(stmt) & wanted) or self._detached(stmt):
                continue
            if self._calls_network(stmt, leaves):
                return sorted(writes(stmt) & wanted)[0], stmt
        return None

    def _recomputed_holders(self) -> set[str]:
        """Names the enclosing loops bind to kept network values (`for r, prob in self.data:`
        over a container whose values the step computes again, rules/rollout_values.py)."""
        out: set[str] = set()
        for loop in self.loops[-1]:
            if isinstance(loop, cst.For) and any(same_container(r, c) for r in effects(
                    cst.SimpleStatementLine([cst.Expr(loop.iter)])).read for c in self.ctx.recomputed):
                out |= _target_names(loop.target)
        return out

    def _step_after_loop(self, post: list, scaler: str | None = None):
        """`for r, prob in data: ...; loss.backward()` with `optimizer.step()` after the loop: the
        update applies the sum of the loop's gradients (torch adds them up in .grad). The step
        dict (kind "loop_sum"; _generate makes the rest): each pass returns its gradients, the loop
        adds them up in a fresh name (None before the loop) and the statement of optimizer.step()
        applies the sum. Between the loop and the step, gradient clipping (also under an `if`) and
        GradScaler's unscale_ apply to the sum; with a GradScaler (`scaler.scale(loss).backward()`
        in the loop, `scaler.step(optimizer)` and `scaler.update()` after it: gradient
        accumulation over micro-batches) the sum is unscaled and applied only when finite. The
        block's zero_grad() calls of that optimizer go. None when the loop clears gradients itself
        or is followed by no plain step of one optimizer."""
        loop = self.loops[-1][-1] if self.loops[-1] else None
        if loop is None or re.search(r"\.zero_grad\(|\bgrad\b\s*=", self.module.code_for_node(loop)):
            return None
        if self._blocks_of is None:
            self._blocks_of = {}
            for node in walk(self.module):
                block = node.body if isinstance(node, (cst.Module, cst.IndentedBlock)) else None
                if isinstance(block, (list, tuple)):
                    self._blocks_of.update((id(st), list(block)) for st in block)
        block = self._blocks_of.get(id(loop))
        if block is None:
            return None
        after = block[next(i for i, st in enumerate(block) if st is loop) + 1:]
        at = next((i for i, st in enumerate(after) if self._step_of(st, scaler) is not None), None)
        if at is None or any(_method_stmt(st, "backward") is not None or _jumps([st]) for st in after[:at]):
            return None
        optimizer = self._step_of(after[at], scaler)
        if at + 1 < len(after) and self._optimizer_step(after[at + 1]) not in (None, optimizer):
            return None   # several optimizers stepped: not followed here
        clips, gone = [], []
        for st in after[:at]:
            clip = self._clip_region(st, scaler)
            if clip is not None:
                clips.append(clip)
                gone.append(st)
        gone += [st for st in block if self._is_zero_grad(st) and
                 dotted(_method_stmt(st, "zero_grad").func.value) == optimizer]
        gone += [st for st in after[at + 1:] if scaler and self._is_scaler_update(st, scaler)]
        return {"kind": "loop_sum", "optimizer": optimizer, "clips": [], "before": list(post), "after": [],
                "loop": loop, "step_stmt": after[at], "sum_clips": clips, "gone": gone}

    def _step_of(self, stmt, scaler: str | None) -> str | None:
        """The optimizer of `opt.step()`, or of `scaler.step(opt)` for the scaler given."""
        call = _method_stmt(stmt, "step")
        if scaler and call is not None and dotted(call.func.value) == scaler and len(call.args) == 1:
            return self._code(call.args[0].value)
        return self._optimizer_step(stmt)

    def _clip_region(self, stmt, scaler: str | None):
        """(condition or None, clip statements) for a gradient clip statement, or an `if` whose body
        is only clips (and GradScaler's unscale_); (None, []) for a lone unscale_; else None."""
        call = _call_of(stmt)
        if call is not None and self._q(call.func) in CLIP_NORM | CLIP_VALUE:
            return None, [stmt]
        if scaler and call is not None and isinstance(call.func, cst.Attribute) and \
                call.func.attr.value == "unscale_" and dotted(call.func.value) == scaler:
            return None, []
        if isinstance(stmt, cst.If) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock):
            parts = [self._clip_region(st, scaler) for st in stmt.body.body]
            if parts and all(part is not None and part[0] is None for part in parts):
                clips = [c for part in parts for c in part[1]]
                return (stmt.test, clips) if clips else (None, [])
        return None

    def _bound_to_number(self, name: str) -> bool:
        """Whether the enclosing function (or module) binds `name` to a number literal."""
        scope = self.funcs[-1]
        for n in walk(scope):
            if isinstance(n, cst.Assign) and any(dotted(t.target) == name for t in n.targets):
                value = n.value.expression if isinstance(n.value, cst.UnaryOperation) else n.value
                if isinstance(value, (cst.Integer, cst.Float)):
                    return True
        return False

    def _kept_outputs_read(self, stmts: list, leaves: set[str]):
        """(container, statement filling it) when `stmts` read a container of network outputs
        kept before the step (filled elsewhere, see rules/rollout_values.py, or holding values
        the step computes again), else None."""
        key = frozenset(leaves)
        if key not in self._stores:
            networks = set(leaves)
            if "self" in networks:   # the optimizer lives in the network's class: its instances too
                networks |= {n.rsplit(".", 1)[-1] for n in self._network_names()}
            self._stores[key] = network_stores(self.module, networks)
        # a container whose values the step computes again has no statement (None); the others'
        # fills come first
        stores = [*self._stores[key].items(), *((c, [None]) for c in sorted(self.ctx.recomputed))]
        if not stores:
            return None
        inside = {id(n) for s in stmts for n in (*walk(self.originals.get(id(s), s)), *walk(s))}
        read = set().union(*(effects(self.originals.get(id(s), s)).read for s in stmts))
        for path, fills in stores:
            outside = [f for f in fills if id(f) not in inside]
            if outside and any(same_container(r, path) for r in read):
                return path, outside[0]
        return None

    def _holders(self, optimizers: list[str]) -> set[str]:
        """The networks these optimizers train (every network holding parameters an optimizer
        is built from, when one of them is not known), under their own names and under the
        parameter names a function of the file receives them by."""
        if self._holder_scan is None:
            self._holder_scan = _ParameterHolders()
            self.module.visit(self._holder_scan)
        scan = self._holder_scan
        found = [scan.by_name.get(o) or scan.by_name.get(self.aliases.get(o)) for o in optimizers]
        holders = set().union(*found) if all(found) else set(scan.all)
        return holders | {p for p, name in self.aliases.items() if name in holders}

    @staticmethod
    def _passed_aliases(ctx) -> dict[str, str]:
        """Parameter -> the top-level name every call of its function passes (`og` of `def
        train_step(gen, disc, og, od)` called as `train_step(G, D, opt_G, opt_D)`); a parameter
        name two functions receive different names by is left out."""
        if ctx.names.tree is None:
            return {}
        out: dict[str, str | None] = {}
        for params in passed_names(ctx.names.tree, ctx.names.imports, PLAIN_DECORATORS).values():
            for p, name in params.items():
                if p != name:
                    out[p] = name if out.get(p, name) == name else None
        return {p: name for p, name in out.items() if name is not None}

    def _add_passed_optimizers(self, ctx) -> None:
        """Parameters every call passes an optimizer for are optimizers, whatever their name
        (`_is_optimizer` guesses only from names like `optimizer`)."""
        for p, name in self.aliases.items():
            if name in self.optimizers:
                self.optimizers.add(p)
                if name in self.closure_optimizers:
                    self.closure_optimizers.add(p)
                if name in self.unconvertible:
                    self.unconvertible[p] = self.unconvertible[name]
        for params in ctx.arguments.values():
            for p, q in params.items():
                _record_optimizer(self, p, q)

    def _statements(self, node):
        """Simple statements under `node` (in every branch: elif/else, try/except/finally), not
        inside nested functions, classes or no_grad blocks."""
        for child in node.children:
            if isinstance(child, (cst.FunctionDef, cst.ClassDef)) or self._is_no_grad(child):
                continue
            if isinstance(child, cst.SimpleStatementLine):
                yield child
            elif not isinstance(child, cst.BaseExpression):   # statements live in blocks only
                yield from self._statements(child)

    def _writes_before_step(self, stmt, later: list) -> bool:
        """A no_grad block first in the step that changes tensors in place and binds nothing
        the step reads (`with torch.no_grad(): emb.weight.data = F.normalize(...)`, a max-norm
        constraint before the forward): an update of the parameters, not part of the loss. It
        stays before the compiled step; inside the differentiated function MindSpore would take
        the gradient with the write (or reject it in graph mode: SetData)."""
        if not self._is_no_grad(stmt):
            return False
        e = effects(stmt)
        return bool(e.mutated) and not any(related(r, b) for b in e.binds for s in later for r in reads(s))

    def _is_no_grad(self, stmt) -> bool:
        """`with torch.no_grad():` (or inference_mode) and nothing else."""
        return isinstance(stmt, cst.With) and all(
            self._q(i.item.func if isinstance(i.item, cst.Call) else i.item) in NO_GRAD for i in stmt.items)

    @staticmethod
    def _detached(stmt) -> bool:
        small = stmt.body[0] if len(stmt.body) == 1 else None
        value = getattr(small, "value", None)
        return isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in ("detach", "item", "tolist", "numpy")

    @staticmethod
    def _calls_network(stmt, leaves: set[str]) -> bool:
        for n in walk(stmt):
            if isinstance(n, cst.Call) and dotted(n.func):
                parts = dotted(n.func).split(".")
                if parts[-1] == "forward" and len(parts) > 1:
                    parts = parts[:-1]
                if parts[-1] in leaves - {"self"} or (parts == ["self"] and "self" in leaves):
                    return True
        return False

    def _loop_indices(self) -> set[str]:
        """Names that hold Python ints in the enclosing loops: `for i in range(...)` and the
        counter of `for i, batch in enumerate(...)`."""
        out = set()
        for loop in self.loops[-1]:
            if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
                continue
            fn = dotted(loop.iter.func)
            if fn == "range" and isinstance(loop.target, cst.Name):
                out.add(loop.target.value)
            elif fn == "enumerate" and isinstance(loop.target, cst.Tuple) and \
                    isinstance(loop.target.elements[0].value, cst.Name):
                out.add(loop.target.elements[0].value.value)
        return out

    def _hoist_indexing(self, stmts: list, free: set[str]) -> tuple[list, list]:
        """`Y[i:i + 8]` inside the loss, with `i` a loop integer: computed before the step and
        passed in as a tensor, so the step is not compiled again for every value of `i`."""
        indices = self._loop_indices() & free
        if not indices:
            return stmts, []
        written = set().union(*(writes(s) for s in stmts)) if stmts else set()
        hoisted: dict[str, str] = {}   # code -> the name it is computed into
        uses: dict[str, int] = {}

        outer = self

        class _Hoist(cst.CSTTransformer):
            def _name(self, code: str, base: str) -> cst.Name:
                if code not in hoisted:
                    hoisted[code] = outer.fresh(f"{base.lower()}_batch")
                uses[code] = uses.get(code, 0) + 1
                return cst.Name(hoisted[code])

            def leave_Subscript(self, original, updated):
                base = updated.value
                used = set(names(updated.slice[0] if len(updated.slice) == 1 else updated)[0]) \
                    if isinstance(base, cst.Name) else {None}
                if not isinstance(base, cst.Name) or base.value in written or not used or \
                        not used <= indices | set(_BUILTINS):
                    return updated
                return self._name(outer._code(updated), base.value)

            def leave_Call(self, original, updated):
                # `ms.tensor(Y[i])` of a NumPy array or list: the tensor is the step input
                # (@ms.jit rejects an ndarray argument), not the indexed value
                if not (updated.args and outer._q(updated.func) in TENSOR_FROM_DATA
                        and isinstance(updated.args[0].value, cst.Name)
                        and isinstance(original.args[0].value, cst.Subscript)):
                    return updated
                inner = outer._code(original.args[0].value)
                if hoisted.get(inner) != updated.args[0].value.value:
                    return updated
                if any(names(a.value)[0] for a in updated.args[1:]):
                    return updated   # dtype=x.dtype: depends on values of the step
                uses[inner] -= 1
                code = outer._code(original)
                if not uses[inner] and code not in hoisted:   # its name goes to the tensor
                    hoisted[code] = hoisted.pop(inner)
                return self._name(code, original.args[0].value.value.value)

        new = [s.visit(_Hoist()) for s in stmts]
        return new, [self._stmt(f"{name} = {code}") for code, name in hoisted.items() if uses.get(code)]

    def _prepares_data(self, stmt, leaves: set[str] = frozenset()) -> bool:
        """A statement that only moves, slices or draws data: no call but builtins, torch
        functions, NumPy / `random` draws, methods of the loop's own values (`x.to(device)`,
        `X[i:i + 16]`, `h.detach()`, `z = Tensor(np.random.normal(0, 1, (n, d)))`) and functions
        of this file that name none of the trained networks `leaves` (`x, y = random_batch()`:
        inside the compiled step its NumPy draws would be frozen at compile time), or lambdas and
        closures the file binds that name none (`_data_callable`); an input's gradient computed
        for an adversarial example (the vjp of ctx.input_gradients: a constant in torch's graph)."""
        gradients = self.ctx.input_gradients   # an input's gradient, a constant in torch (rules/tape_grad.py)
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in gradients:
            return True
        if isinstance(stmt, (cst.For, cst.While)) and stmt.orelse is None and isinstance(stmt.body, cst.IndentedBlock) \
                and any(isinstance(n, cst.FunctionDef) and n.name.value in gradients for n in walk(stmt)):
            # a PGD attack's loop of input-gradient steps, with data preparation around them
            header = stmt.iter if isinstance(stmt, cst.For) else stmt.test
            return self._prepares_data(cst.SimpleStatementLine([cst.Expr(header)]), leaves) and \
                all(self._prepares_data(s, leaves) for s in stmt.body.body)
        if isinstance(stmt, cst.Try) and isinstance(stmt.body, cst.IndentedBlock):
            # `try: batch = next(it)` / `except StopIteration: it = iter(loader); batch = next(it)`
            blocks = [stmt.body, *(h.body for h in stmt.handlers), *(b.body for b in (stmt.orelse, stmt.finalbody) if b)]
            return all(isinstance(b, cst.IndentedBlock) and all(self._prepares_data(s, leaves) for s in b.body)
                       for b in blocks)
        if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock):
            # `if i + bs > n: x, y = X[i:], Y[i:]` / `else: x, y = X[i:i + bs], ...`: a batch a
            # branch chooses (inside the step, every branch would slice the whole dataset there)
            branches = [stmt.body.body]
            orelse = stmt.orelse
            if isinstance(orelse, cst.Else) and isinstance(orelse.body, cst.IndentedBlock):
                branches.append(orelse.body.body)
            elif isinstance(orelse, cst.If):
                branches.append([orelse])
            return self._prepares_data(cst.SimpleStatementLine([cst.Expr(stmt.test)]), leaves) and \
                all(self._prepares_data(s, leaves) for block in branches for s in block)
        if not isinstance(stmt, cst.SimpleStatementLine):
            return False
        loop = self.loops[-1][0] if self.loops[-1] else None
        varying = writes(loop) if loop is not None else set()
        # a comprehension's own values are the data it goes over (`[t.to(device) for t in batch]`)
        varying = varying | {n.value for c in walk(stmt) if isinstance(c, cst.CompFor)
                             for n in walk(c.target) if isinstance(n, cst.Name)}

        class _Calls(cst.CSTVisitor):
            ok = True

            def visit_Call(v, node: cst.Call) -> None:
                func = node.func
                if isinstance(func, cst.Name) and func.value in _BUILTINS | gradients:
                    return
                if isinstance(func, cst.Name) and func.value in self._functions() and leaves \
                        and not self._names_network(node, leaves):
                    return
                if isinstance(func, cst.Name) and self._data_callable(func.value, leaves) \
                        and not self._names_network(node, leaves):
                    return   # `d_sampler(n)`, a lambda or closure of the file that names no network
                if isinstance(func, cst.Attribute) and dotted(func.value) == "self" \
                        and func.attr.value in self._data_methods() and not self._names_network(node, leaves):
                    return
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                        and self._data_object(func.value.value, leaves) and not self._names_network(node, leaves):
                    return   # `loader.next()`, an object of a data class of the file
                q = self._q(func)
                # torch's tensor functions, NumPy, `random`: data, never the network
                if q.startswith(("torch.", "numpy.", "random.")) and not q.startswith("torch.nn."):
                    return
                if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
                    return   # a method of a call's result (`torch.zeros(n).fill_(1.0)`): that call decides
                if isinstance(func, cst.Attribute) and func.attr.value in _SIZE_QUERIES \
                        and isinstance(func.value, cst.Name) and func.value.value not in leaves:
                    return   # `X.size(0)` of the dataset: a number
                if self._container_filled(node) not in (None, *leaves) and not self._names_network(node, leaves):
                    return   # `buffer.append(transition)`: a replay buffer, a list of the program's
                if isinstance(func, cst.Attribute):
                    root = func.value
                    while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                        root = root.value if not isinstance(root, cst.Call) else root.func
                    if isinstance(root, cst.Name) and root.value in varying:
                        return
                v.ok = False

        visitor = _Calls()
        stmt.visit(visitor)
        return visitor.ok

    def _container_filled(self, call: cst.Call) -> str | None:
        """The name of the Python container (see _host_container) a call fills or empties
        (`buffer.append(obs)`), else None."""
        func = call.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) \
                and func.attr.value in _CONTAINER_METHODS and self._host_container(func.value.value):
            return func.value.value
        return None

    def _host_container(self, name: str) -> bool:
        """`name` is bound only to Python containers in the file (`buffer = []`, `deque(maxlen=n)`,
        `dict()`): what is put into one is data, never the network's."""
        values = [v.left if isinstance(v, cst.BinaryOperation) else v   # `[[0.0] * 4] * 4`
                  for v in self._module_bindings().get(name, ())]
        return bool(values) and all(
            isinstance(v, (cst.List, cst.Dict, cst.Set)) or (isinstance(v, cst.Call) and (
                self._q(v.func) in ("collections.deque", "builtins.list", "builtins.dict", "builtins.set")
                or dotted(v.func) in ("list", "dict", "set", "deque"))) for v in values)

    def _captures_only_self(self, scope: cst.FunctionDef, captured: set[str]) -> bool:
        params = params_of(scope.params)
        if not params or params[0] != "self":
            return False
        local = (writes(scope.body) | set(params)) - {"self"}
        return not (captured & local)

    def _pass_on_arguments(self, functions: list[str], passed_on: list[str]) -> None:
        """The enclosing function's parameters known to hold one kind of object at every call
        (ctx.arguments: `loss` of `def train(model, loss, ...)`, a CrossEntropyLoss) are passed
        on by the same names to the generated functions (forward_fn, train_step, the step's
        factory): they hold it there too."""
        scope = self.funcs[-1]
        if not isinstance(scope, cst.FunctionDef):
            return
        facts = self.ctx.arguments.get(scope.name.value, {})
        passed = {p: q for p, q in facts.items() if p in passed_on and p not in writes(scope.body)}
        if passed:
            for fn in functions:
                self.ctx.arguments[fn] = passed

    def _called_params(self, stmts: list) -> set[str]:
        """Parameters of the enclosing module-level function, never rebound in it, that the
        statements call (`model(x)`) or call `forward`/`construct` of."""
        scope = self.funcs[-1]
        if not isinstance(scope, cst.FunctionDef) or len(self.funcs) != 2 or \
                any(sc.kind == "class" for sc in self.scopes.stack):
            return set()
        candidates = set(params_of(scope.params)) - writes(scope.body)
        found: set[str] = set()

        class _Calls(cst.CSTVisitor):
            def visit_Call(self, node) -> None:
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in ("forward", "construct"):
                    func = func.value
                if isinstance(func, cst.Name) and func.value in candidates:
                    found.add(func.value)

        for stmt in stmts:
            stmt.visit(_Calls())
        return found

    def _captures_only_params(self, scope, defs: list) -> list[str] | None:
        """The parameters of a module-level function the step's definitions close over, when
        those are all they read of the function (every other name is a global) and the function
        never rebinds them: the same objects make the same step, so it is built once per
        objects. None otherwise (a local computed in the function could differ per call)."""
        if not isinstance(scope, cst.FunctionDef) or len(self.funcs) != 2 or \
                any(sc.kind == "class" for sc in self.scopes.stack):
            return None
        bound, free = set(), set()
        for d in defs:
            if isinstance(d, cst.FunctionDef):
                inner = set(params_of(d.params)) | writes(d.body)
                free |= reads(d.body) - inner
                free |= set().union(*(reads(dec) for dec in d.decorators)) if d.decorators else set()
                bound.add(d.name.value)
            else:
                free |= reads(d) - bound
                bound |= writes(d)
        params = params_of(scope.params)
        local = writes(scope.body) | set(params)
        captured = (free - bound) & local
        if not captured or captured & writes(scope.body) or not captured <= set(params):
            return None
        return [p for p in params if p in captured]

    def _reads_only_settled_globals(self, scope, defs: list) -> bool:
        """The step's definitions, moved from a module-level function to just before it, compute
        the same: they read nothing of the function, what they read when defined (the optimizer
        in value_and_grad's arguments, decorators) is bound by module-level statements before
        the function, and no module-level statement after it, nor a `global` in a function,
        binds a name they read (a compiled step would keep the first object)."""
        if not isinstance(scope, cst.FunctionDef) or len(self.funcs) != 2 or \
                any(sc.kind == "class" for sc in self.scopes.stack):
            return False
        body = list(self.funcs[0].body)
        at = next((i for i, s in enumerate(body) if s is scope), None)
        if at is None:
            return False
        bound, free, at_definition = set(), set(), set()
        for d in defs:
            if isinstance(d, cst.FunctionDef):
                inner = set(params_of(d.params)) | writes(d.body)
                free |= reads(d.body) - inner
                decorators = set().union(*(reads(dec) for dec in d.decorators)) if d.decorators else set()
                free |= decorators - bound
                at_definition |= decorators - bound
                bound.add(d.name.value)
            else:
                read = reads(d) - bound
                free |= read
                at_definition |= read
                bound |= writes(d)
        free -= bound
        if free & (writes(scope.body) | set(params_of(scope.params))):
            return False
        before = set().union(*(writes(s) for s in body[:at])) if at else set()
        # (what the module binds after its last call of the function, `model = restored` to
        # evaluate a reloaded network, no step sees; a use inside another def may come later)
        uses = [i for i, s in enumerate(body) if i > at and
                any(isinstance(n, cst.Name) and n.value == scope.name.value for n in walk(s))]
        end = uses[-1] + 1 if uses and not any(isinstance(body[i], (cst.FunctionDef, cst.ClassDef))
                                                for i in uses) else len(body)
        after = set().union(*(writes(s) for s in body[at + 1:end])) if at + 1 < end else set()
        if free & after or re.search(r"\bglobal\b", self.funcs[0].code):
            return False
        # names read at definition: bound before the function, or nowhere in the module
        # (builtins, imports the conversion adds)
        return all(n in before or n not in after for n in at_definition)

    @staticmethod
    def _ids(names: list[str]) -> str:
        """The cache key: the objects' identities (the cached step holds them: no id is reused)."""
        return f"id({names[0]})" if len(names) == 1 else "(" + ", ".join(f"id({n})" for n in names) + ")"

    def _binding_loop(self, name: str):
        """The innermost enclosing `for` whose target binds `name`, if any."""
        for loop in reversed(self.loops[-1]):
            if isinstance(loop, cst.For) and name in _target_names(loop.target):
                return loop
        return None

    def _per_object(self, name: str) -> _PerObject | None:
        """How an enclosing loop binds the optimizer `name` anew each pass, if it does: as its
        target (`for net, opt in zip(nets, opts)`) or by a statement of its body (_picked_in_loop)."""
        loop = self._binding_loop(name)
        if loop is not None:
            return _PerObject(loop.target, picked=False)
        target = self._picked_in_loop(name)
        return _PerObject(target, picked=True) if target is not None else None

    def _picked_in_loop(self, name: str):
        """`opt = optimizers[step % 2]` (or `a if c else b`) in the body of an enclosing loop,
        before the step: one compiled step per object it picks, as for a loop binding it (see
        per_object); a step made once would keep the first one. Only existing objects (picked
        from a container or a name): an optimizer made anew each pass is not cached. Also one
        made anew under an `if` of the body of the loop around the step (`if epoch == unfreeze_at:
        optimizer = SGD(model.parameters(), ...)`, `model, optimizer = build()` to restart): the
        step of the first optimizer would keep training its parameters at its rate, silently (in
        an outer loop's body the step is built after it, in that loop). Returns the assignment's
        target."""
        for loop in reversed(self.loops[-1]):
            if not isinstance(getattr(loop, "body", None), cst.IndentedBlock):
                continue
            for stmt in loop.body.body:
                small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
                if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                        isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == name and \
                        isinstance(small.value, (cst.Subscript, cst.Name, cst.IfExp)):
                    return small.targets[0].target
                if isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock) and loop is self.loops[-1][-1]:
                    for inner in stmt.body.body:
                        small = inner.body[0] if isinstance(inner, cst.SimpleStatementLine) and len(inner.body) == 1 \
                            else None
                        if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                                isinstance(small.value, cst.Call) and name in _target_names(small.targets[0].target):
                            return small.targets[0].target
        return None

    def _factory(self, defs: list, name: str, step: str, params: list[str]):
        """`def make_train_step(net, opt): <defs>; return train_step`: each object's step closes
        over its own network, optimizer and grad_fn (definitions rebound by a loop would leave
        an earlier step calling the latest grad_fn when it is compiled again)."""
        factory = self._stmt(f"def {name}({', '.join(params)}):\n    return {_compiled(defs, step)}\n")
        body = [d.with_changes(leading_lines=[]) if i == 0 else d for i, d in enumerate(defs)]
        return factory.with_changes(body=factory.body.with_changes(body=[*body, *factory.body.body]),
                                    leading_lines=[cst.EmptyLine(indent=False)])

    def _cached_per_object(self, defs: list, factory: str, params: list[str], step: str, cache: str,
                           key: str) -> list:
        """Build the step once per `key` object (first time the loop meets it), then reuse it."""
        return [self._stmt(f"if id({key}) not in {cache}:\n    {cache}[id({key})] = {factory}({', '.join(params)})\n"),
                self._stmt(f"{_compiled(defs, step)} = {cache}[id({key})]")]

    def _cached_on_self(self, defs: list, step: str) -> list:
        """Wrap the definitions in `if not hasattr(self, '_<step>'):` and bind the step."""
        attr = f"_msmigrate_{step}"
        guard = self._stmt(f"if not hasattr(self, {attr!r}):\n    pass\n")
        body = [d.with_changes(leading_lines=[]) if i == 0 else d for i, d in enumerate(defs)]
        body.append(self._stmt(f"self.{attr} = {_compiled(defs, step)}"))
        guard = guard.with_changes(body=guard.body.with_changes(body=body),
                                   leading_lines=[cst.EmptyLine(indent=False)])
        return [guard, self._stmt(f"{_compiled(defs, step)} = self.{attr}")]

    def _is_zero_grad(self, stmt) -> bool:
        return _method_stmt(stmt, "zero_grad") is not None

    def _inputs(self, stmts: list, free: set[str], extra: set[str]) -> list[str]:
        varying = self._varying(stmts, extra)
        order = []
        for s in stmts:
            for n in ordered_reads(s):
                if n in free and n in varying and n not in order:
                    order.append(n)
        return order

    def _home_loop(self, step, stmts: list, leaves: set[str]):
        """The loop before which a step's definitions go (None: no enclosing loop): the
        outermost, or, where an enclosing loop binds an object the step closes over (its
        optimizer, a network or loss it calls: `for fold in range(k): model = Net(); optimizer =
        SGD(...); for epoch ...`), the loop inside the innermost such one: the step is built
        again on each of that loop's passes, for the objects of that pass."""
        loops = self.loops[-1]
        if not loops:
            return None
        captured = {o for o in (step.get("optimizer"), *step.get("others", ())) if o} | leaves | _called_names(stmts)
        home = 0
        for k in range(len(loops) - 1):
            if _writes_beside(loops[k], loops[k + 1]) & captured:
                home = k + 1
        return loops[home]

    def _varying(self, stmts: list, extra: set[str]) -> set[str]:
        """Names the step reads whose value may change between its calls: bound in the
        enclosing loop or function, or module-level names the program binds again (`beta`
        annealed per epoch, `lr` decayed): a compiled step keeps the value it was compiled
        with, so these come in as arguments. Objects the step calls or reads attributes of
        (networks, losses) are read by its closure: a Cell is no jit argument."""
        loop = self.home
        scope = self.funcs[-1]
        if loop is not None:
            varying = writes(loop) | extra
        elif isinstance(scope, cst.FunctionDef):
            # a method's `self` is read by the step's closure (a Python object is no jit argument)
            varying = (writes(scope.body) | set(params_of(scope.params)) | extra) - {"self"}
        else:
            varying = set(extra)
        if self._rebinds is None:
            scan = ModuleRebinds()
            self.module.visit(scan)
            self._rebinds = scan.rebound
        local = writes(scope.body) | set(params_of(scope.params)) if isinstance(scope, cst.FunctionDef) else set()
        return varying | (self._rebinds - local - _objects_in(stmts))

    def _rebuilt(self, old, new):
        """`new`, remembered as a rebuilt `old` (its diagnostics keep old's position)."""
        self.originals[id(new)] = self.originals.get(id(old), old)
        return new

    def _changing_attributes(self, stmts: list, inputs: list[str]) -> dict[str, str]:
        """`self.X` read as a value by a method's step (not called, no attribute of it read)
        where X is assigned by a method other than `__init__` (a weight annealed per epoch): a
        compiled step keeps the value it saw when compiled. Path -> the argument's name."""
        scope = self.funcs[-1]
        if not self.classes or not isinstance(scope, cst.FunctionDef) or "self" not in params_of(scope.params):
            return {}
        assigned = set()
        for method in self.classes[-1].body.body:
            if isinstance(method, cst.FunctionDef) and method.name.value != "__init__":
                for n in walk(method):
                    assigned |= {dotted(t) for t in _assigned(n) if isinstance(t, cst.Attribute) and
                                 isinstance(t.value, cst.Name) and t.value.value == "self"}
        if not assigned:
            return {}
        read, skipped = [], set()
        for s in stmts:   # one the step itself sets (`self.cost = criterion(...)`) is its output
            for n in walk(s):
                skipped |= {dotted(t) for t in _assigned(n)}
        for s in stmts:
            for n in walk(s):
                if isinstance(n, cst.Attribute) and isinstance(n.value, cst.Attribute):
                    skipped.add(dotted(n.value))
                elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute):
                    skipped.add(dotted(n.func))
                elif isinstance(n, cst.Attribute) and dotted(n) in assigned and dotted(n) not in read:
                    read.append(dotted(n))
        taken = set(inputs)
        out = {}
        for path in read:
            if path not in skipped:
                out[path] = self.fresh(path.replace(".", "_"))
                taken.add(out[path])
        return out

    def _update_inputs(self, stmts: list, inputs: list[str], own: set[str]) -> list[str]:
        """What the update after the gradients (a hand-written loop over the parameters,
        clipping, a hand-trained tensor's `ops.assign*`) reads that changes between steps (`lr`
        decayed in the loop), but for the names it binds itself (`own`): arguments of the
        compiled step after the forward function's."""
        varying = self._varying(stmts, set()) - _objects_in(stmts) - own - set(inputs) if stmts else set()
        return [n for n in dict.fromkeys(n for s in stmts for n in ordered_reads(s)) if n in varying]

    def _written_attributes(self, stmts: list, leaves: set[str]) -> dict[str, str]:
        """Attributes of Python objects (not of the trained networks, not of a network's own
        `self`) that these statements assign before reading them: path -> a fresh local name."""
        in_network = bool(self.classes) and self.classes[-1].name.value not in self.ctx.plain_classes
        found, seen = {}, set()
        for stmt in stmts:
            targets = [t.target for small in (stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ())
                       if isinstance(small, cst.Assign) for t in small.targets]
            stored = {id(n) for t in targets for n in walk(t)
                      if isinstance(n, cst.Attribute) and not any(n is a.value for a in walk(t) if isinstance(a, cst.Attribute))}
            for n in walk(stmt):
                path = dotted(n) if isinstance(n, cst.Attribute) else None
                if not path or path in seen:
                    continue
                root = path.split(".")[0]
                if id(n) in stored and root not in leaves and not (root == "self" and in_network) \
                        and not any(path == h or path.startswith(h + ".") for h in leaves):
                    found[path] = self.fresh(path.replace(".", "_"))
                seen.add(path)
        return found

    def _outputs(self, slice_stmts: list, loss_name: str, free: set[str], bound_before=frozenset()) -> list[str]:
        scope = self.funcs[-1]
        total = names(scope.body if isinstance(scope, cst.FunctionDef) else scope)[0]
        inside = Counter()
        written: list[str] = []
        for s in slice_stmts:
            r, w = names(s)
            inside += r
            for n in sorted(w, key=lambda n: self._code(s).find(n)):
                if n not in written:
                    written.append(n)
        outside = total - inside
        # loop targets are rebound by the loop itself: not carried from one step to the next
        rebound = set(bound_before)
        for loop in self.loops[-1]:
            if isinstance(loop, cst.For):
                rebound |= writes(cst.SimpleStatementLine([cst.Expr(loop.target)])) | set(names(loop.target)[0])
        return [n for n in written if n != loss_name and (outside[n] > 0 or n in self.later_reads
                                                          or (n in free and n not in rebound))]

    # ---- the optimizer step and what surrounds it -----------------------------------------
    def _find_step(self, post: list, scaler: str | None):
        """Scan the statements after backward. Returns a dict describing the update or None."""
        clips, rest = [], []
        for i, stmt in enumerate(post):
            if isinstance(stmt, cst.If) and (self._clip_region(stmt, scaler) or (None,))[0] is not None:
                clips.append(stmt)   # `if args.clip > 0: clip_grad_norm_(...)`: clipped under that test
                continue
            call = _call_of(stmt)
            if call is not None:
                q = self._q(call.func)
                if q in CLIP_NORM or q in CLIP_VALUE:
                    clips.append(stmt)
                    continue
                if isinstance(call.func, cst.Attribute):
                    recv, meth = dotted(call.func.value), call.func.attr.value
                    if scaler and recv == scaler and meth == "unscale_":
                        continue
                    if scaler and recv == scaler and meth == "step":
                        opt = self._code(call.args[0].value)
                        tail = [s for s in post[i + 1:] if not self._is_scaler_update(s, scaler)]
                        return {"kind": "plain", "optimizer": opt, "clips": clips, "before": rest,
                                "after": tail}
                    if meth == "step" and not call.args and self._is_optimizer(recv):
                        # `encoder_optimizer.step(); decoder_optimizer.step()` after one backward:
                        # one step over both optimizers' parameters
                        others, j = [], i + 1
                        while j < len(post) and self._optimizer_step(post[j]) not in (None, recv, *others):
                            others.append(self._optimizer_step(post[j]))
                            j += 1
                        return {"kind": "plain", "optimizer": recv, "others": others, "clips": clips,
                                "before": rest, "after": post[j:]}
            if isinstance(stmt, cst.If):
                inner = self._find_step(list(stmt.body.body), scaler)
                if inner is not None and inner["kind"] == "plain":
                    inner_after = [s for s in inner["after"] if not self._is_zero_grad(s)]
                    return {"kind": "accumulate", "optimizer": inner["optimizer"],
                            "clips": clips + inner["clips"], "before": rest, "if": stmt,
                            "if_before": inner["before"], "if_after": inner_after,
                            "after": post[i + 1:]}
            manual = self._manual_update(stmt)
            if manual is not None:
                return {"kind": "manual", "clips": clips, "before": rest, "after": post[i + 1:], **manual}
            rest.append(stmt)
        return None

    def _closure_step(self, body: list, post: list):
        """The block of a function handed to a closure-driven optimizer's `step(closure)` (LBFGS):
        a step computing the loss and gradients, which the closure hands to the optimizer; a
        refusal (str) where it does not clear the gradients (torch adds them up across calls)."""
        scope = self.funcs[-1]
        if not isinstance(scope, cst.FunctionDef) or not self.closure_optimizers:
            return None
        method = bool(self.classes) and params_of(scope.params)[:1] == ["self"]
        opt = closure_optimizer(self.module, scope, self.closure_optimizers, method)
        if opt is None:
            return None
        if not any(self._is_zero_grad(s) for s in body):
            return (f"the closure handed to {opt}.step() does not clear the gradients: torch adds each "
                    f"evaluation's to the last ones; clear them first (zero_grad), then convert")
        clips = [s for s in post if _call_of(s) is not None and self._q(_call_of(s).func) in CLIP_NORM | CLIP_VALUE]
        varying = set()
        if len(self.loops) > 1 and self.loops[-2]:   # bound by the loops around the closure's definition
            varying = writes(self.loops[-2][0]) - _objects_in(body)
        return {"kind": "closure", "optimizer": opt, "clips": clips, "before": [], "varying": varying,
                "after": [s for s in post if all(s is not c for c in clips)]}

    def _place_closure_step(self, defs: list, new_body: list, step: str, captured: set[str], opt: str) -> list:
        """A closure's step: built once per object in a method, else before the outermost loop
        around the closure's definition where the loop binds nothing it reads from there (what
        else it reads of the loop comes in as arguments), else just before that definition, or
        just after the optimizer where that is made after it (value_and_grad reads its parameters)."""
        scope = self.funcs[-1]
        if self.classes and self._captures_only_self(scope, captured):
            return self._cached_on_self(defs, step) + new_body
        outer = self.loops[-2] if len(self.loops) > 1 else []
        if outer and not (captured & writes(outer[0])):
            self.pending.setdefault(id(outer[0]), []).extend(defs)
            return new_body
        owner = self.funcs[-2] if len(self.funcs) > 1 else None
        block = list(owner.body.body if isinstance(owner, cst.FunctionDef) else owner.body) if owner else []
        at = next((i for i, st in enumerate(block) if st is scope), None)
        root = opt.split(".")[0]
        if at is not None and not any(root in writes(st) for st in block[:at]):
            made = next((st for st in block[at + 1:] if root in writes(st)), None)
            if made is not None:   # `def closure(): ...` before `opt = LBFGS(...)`
                self.later[id(made)] = [made, *defs]
                return new_body
        self.pending.setdefault(id(scope), []).extend(defs)
        return new_body

    def _optimizer_step(self, stmt) -> str | None:
        """The optimizer of a statement `opt.step()`, else None."""
        call = _method_stmt(stmt, "step")
        if call is None or call.args:
            return None
        recv = dotted(call.func.value)
        return recv if self._is_optimizer(recv) else None

    def _is_optimizer(self, name: str | None) -> bool:
        if name is None:
            return False
        if name in self.optimizers:
            return True
        # an optimizer passed in as an argument: anything named like one, not a scheduler
        leaf = name.rsplit(".", 1)[-1].lower()
        return ("optim" in leaf or leaf in ("opt", "optimiser")) and "sched" not in leaf

    def _is_scaler_update(self, stmt, scaler: str) -> bool:
        call = _method_stmt(stmt, "update")
        return call is not None and dotted(call.func.value) == scaler

    def _manual_update(self, stmt):
        """`for p in model.parameters(): p.data -= lr * p.grad` (optionally under no_grad)."""
        if self._is_no_grad(stmt):
            inner = list(stmt.body.body)
            return self._manual_update(inner[0]) if len(inner) == 1 else None
        if not (isinstance(stmt, cst.For) and isinstance(stmt.target, cst.Name) and isinstance(stmt.iter, cst.Call)
                and isinstance(stmt.iter.func, cst.Attribute) and stmt.iter.func.attr.value == "parameters"):
            return None
        body = self._code(stmt.body)
        if ".grad" not in body:
            return None
        # the loop must write the parameter; one that only reads p.grad (asserts, logging) is no update
        p = re.escape(stmt.target.value)
        if not re.search(rf"\b{p}(\.data)?(\s*[-+*/]?=(?!=)|\.(add_|sub_|mul_|copy_|addcmul_|addcdiv_)\()", body):
            return None
        return {"param": stmt.target.value, "model": self._code(stmt.iter.func.value), "loop": stmt}

    # ---- tensors trained by hand (rules/bare_tensors.py) -----------------------------------
    def _trainable_tensors(self) -> dict:
        if self._trainable is None:
            self._trainable = TrainableTensors(dict(self.ctx.names.imports))
            self.module.visit(self._trainable)
        return self._trainable.bindings

    def _bare_step(self, body: list, b: int, call, post: list):
        """A backward pass whose gradients the program reads from tensors it made with
        requires_grad=True (`w -= lr * w.grad` under no_grad, `w.data = w.data - lr * w.grad`,
        `print(w.grad)`): a dict describing the step (the statements after the backward pass
        rewritten), a reason it cannot be converted faithfully, or None (no such tensor)."""
        tensors = self._trainable_tensors()
        touched = {t for s in post for t in grad_touched(s, tensors)}
        if not touched:
            return None
        order = [t for t in tensors if t in touched]   # creation order
        cleared = {t: [i for i, s in enumerate(body) if t in clears(s, {t: 0})] for t in order}
        why = self._bare_refusal(body, b, call, order, cleared)
        if why is not None:
            return why
        # each backward pass starts from zero when the block clears the gradient before it, or
        # after it with no jump out of the block in between (else the clearing is emulated)
        fresh = {t: any(i < b or not _jumps(body[b + 1:i + 1]) for i in cleared[t]) for t in order}
        if not self.loops[-1]:
            # run once: the gradient is the first one torch computes when this is its only backward pass
            once = isinstance(self.funcs[-1], cst.Module) and \
                len(re.findall(r"\.backward\(", self.module.code)) == 1
            if not all(fresh.values()) and not once:
                t = next(t for t in order if not fresh[t])
                where = (f"calls of {self.funcs[-1].name.value}()" if isinstance(self.funcs[-1], cst.FunctionDef)
                         else "the file's backward passes")
                return (f"{t}.grad may add up across {where} (no {t}.grad.zero_() in this block), which this "
                        f"conversion does not follow: clear it after each update, or convert this step by hand")
            fresh = dict.fromkeys(order, True)
        elif isinstance(self.funcs[-1], cst.FunctionDef):
            inside = {id(n) for n in walk(self.funcs[-1])}
            for t in order:
                if not fresh[t] and not any(id(a) in inside for a in self._trainable_tensors()[t]):
                    return (f"{t}.grad adds up across calls of {self.funcs[-1].name.value}() (no "
                            f"{t}.grad.zero_() in this block), which this conversion does not follow: "
                            f"clear it after each update, or convert this step by hand")
        grads = {t: self.fresh(f"{t}_grad") for t in order}
        try:   # a dry run first: a refusal must leave no MindSpore import behind
            AfterBackward(grads, fresh, cst.parse_statement, lambda q: q.rsplit(".", 1)[-1],
                          self._is_no_grad).rewrite(post)
        except NotFaithful as exc:
            return f"{exc}: convert this step by hand with ms.value_and_grad"
        after = AfterBackward(grads, fresh, self._stmt, self._ref, self._is_no_grad).rewrite(post)
        return {"kind": "bare", "tensors": order, "grads": grads, "fresh": fresh, "before": [], "after": after,
                "cleared": {id(body[i]) for t in order if fresh[t] for i in cleared[t]
                            if i < b and zeroed(body[i], {t: 0}) == t}}

    def _bare_refusal(self, body: list, b: int, call, tensors: list[str], cleared: dict) -> str | None:
        """Why the gradients of these tensors cannot be taken in this block's step, or None."""
        if call.args:
            return (f"backward({self._code(call.args[0].value)}...) with arguments on tensors trained by hand: "
                    f"convert this step by hand with ms.value_and_grad")
        loop = self.loops[-1][0] if self.loops[-1] else None
        inside = {id(n) for n in walk(loop)} if loop is not None else set()
        in_block = sum((grad_uses(s, tensors) for s in body), Counter())
        everywhere = grad_uses(self.module, tensors)
        for t in tensors:
            if any(id(a) in inside for a in self._trainable_tensors()[t]):
                return (f"{t} is made again inside the training loop (line {self._pos(loop)[0]}): its gradient "
                        f"is taken w.r.t. the tensor of each pass; convert this step by hand")
            if everywhere[t] != in_block[t]:
                return (f"{t}.grad is read outside the block of its backward pass, where MindSpore keeps no "
                        f"gradient on the tensor: convert this step by hand with ms.value_and_grad")
            ahead = [s for i, s in enumerate(body[:b]) if t in grad_touched(s, {t: 0}) and i not in cleared[t]]
            if ahead:
                return (f"{t}.grad is read before the backward pass (line {self._pos(ahead[0])[0]}): convert "
                        f"this step by hand with ms.value_and_grad")
        return None

    # ---- code generation -----------------------------------------------------------------
    def _fills_rebound(self, stmts: list) -> list:
        """`label.fill_(0.0)` / `label.zero_()` in a forward_fn, of a tensor the forward made
        (DCGAN's one label for the real and the fake loss): bound again to a new tensor
        (ops.full_like / zeros_like). Differentiated in PyNative (a step left uncompiled, parity),
        MindSpore 2.10 computes the earlier loss's gradient with the written value."""
        made: set[str] = set()
        out = []
        for stmt in stmts:
            call = _call_of(stmt)
            if call is not None and isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name) \
                    and call.func.value.value in made and isinstance(stmt, cst.SimpleStatementLine) \
                    and isinstance(stmt.body[0], cst.Expr) and len(stmt.body) == 1:
                name, method = call.func.value.value, call.func.attr.value
                if method == "fill_" and len(call.args) == 1 and not call.args[0].keyword:
                    value = self._code(call.args[0].value)
                    stmt = stmt.with_changes(body=self._stmt(
                        f"{name} = {self._ref('mindspore.ops.full_like')}({name}, {value})").body)
                elif method == "zero_" and not call.args:
                    stmt = stmt.with_changes(body=self._stmt(
                        f"{name} = {self._ref('mindspore.ops.zeros_like')}({name})").body)
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if isinstance(small, cst.Assign) and isinstance(small.value, cst.Call):
                        made.update(t.target.value for t in small.targets if isinstance(t.target, cst.Name))
                    elif isinstance(small, cst.Assign):   # `alias = label`: a write would reach both
                        made.difference_update(n.value for n in walk(small.value) if isinstance(n, cst.Name))
            out.append(stmt)
        return out

    def _generate(self, step, names, slice_stmts, loss_stmt, loss_name, inputs, outputs, post, scaler):
        ms_ = lambda q: self._ref(q)  # noqa: E731
        args = ", ".join(inputs)
        rets = [loss_name, *outputs]
        aux = bool(outputs) or scaler is not None
        # MindSpore's value_and_grad(has_aux=True) rejects an output that is a Python number
        # (a running sum carried from one step to the next, started at 0) unless the outputs
        # after the loss come as one tuple
        numbers = [n for n in outputs if n in inputs and self._bound_to_number(n)]
        packed = [loss_name, "(" + ", ".join(outputs) + ",)"] if numbers else rets
        fwd_ret = ", ".join(([f"{scaler}.scale({loss_name})"] if scaler else []) + packed)
        forward = self._stmt(f"def {names['forward']}({args}):\n    return {fwd_ret}\n")
        body_stmts = [inner for s in slice_stmts for inner in self._strip_autocast(s)]
        body_stmts += [loss_stmt] if loss_stmt else []
        body_stmts = self._fills_rebound(body_stmts)
        forward = forward.with_changes(body=forward.body.with_changes(body=[*body_stmts, *forward.body.body]))
        if step.get("others"):
            return self._generate_union(step, names, forward, loss_name, inputs, outputs, post)
        if step["kind"] == "bare":
            return self._generate_bare(step, names, forward, loss_name, inputs, outputs)

        if step["kind"] == "manual":
            params = self.fresh("params")
            param_src = f"{ms_('mindspore.ParameterTuple')}({step['model']}.trainable_params())"
            params_def = [self._stmt(f"{params} = {param_src}")]
            wrt = params
        else:
            params_def = []
            wrt = f"{step['optimizer']}.parameters"
        grad = self._stmt(f"{names['grad']} = {ms_('mindspore.value_and_grad')}({names['forward']}, None, "
                          f"{wrt}{', has_aux=True' if aux else ''})")

        unpack = ", ".join((["_"] if scaler else []) + packed)
        lines = [f"({unpack}), grads = {names['grad']}({args})" if aux else f"{loss_name}, grads = {names['grad']}({args})"]
        if self.data_parallel:   # DDP's gradient all-reduce (mean), before clipping as in torch
            # built only when communication was initialized, as torch's DDP needs its process
            # group: a DDP script run as one process skips both (the reducer would crash there)
            reducer = self.fresh("grad_reducer")
            params_def.append(self._stmt(
                f"{reducer} = {ms_('mindspore.nn.DistributedGradReducer')}({wrt}, mean=True) "
                f"if {ms_('mindspore.communication')}.GlobalComm.INITED else None"))
            lines.append(f"if {reducer} is not None:")
            lines.append(f"    grads = {reducer}(grads)")
        extra_returns: list[str] = []
        clip_lines, norm_names = self._clip_lines(step["clips"])
        if scaler and step["kind"] not in ("loop_sum", "accumulate"):
            lines.append(f"grads = {scaler}.unscale(grads)")
            lines.append(f"is_finite = {ms_('mindspore.amp.all_finite')}(grads)")
            lines.append("if is_finite:")
            lines += ["    " + c for c in clip_lines]
            lines.append(f"    {step['optimizer']}(grads)")
            lines.append(f"{scaler}.adjust(is_finite)")
            if norm_names:
                lines = [lines[0], *[f"{n} = {ms_('mindspore.ops.zeros')}(())" for n in norm_names], *lines[1:]]
            extra_returns = norm_names
        elif step["kind"] == "plain":
            lines += clip_lines
            lines.append(f"{step['optimizer']}(grads)")
            extra_returns = norm_names
        elif step["kind"] == "loop_sum":   # the update is applied after the loop (see _step_after_loop)
            extra_returns = ["grads"]
        elif step["kind"] == "closure":   # handed to the optimizer by the closure (rules/closure_steps.py)
            lines += clip_lines
            extra_returns = norm_names + ["grads"]
        elif step["kind"] == "manual":
            lines += clip_lines
            update = self._manual_body(step)
            lines.append(f"for {step['param']}, grad in zip({params}, grads):")
            lines += ["    " + u for u in update]
            extra_returns = norm_names
        ret = ", ".join(rets + extra_returns)

        defs = [*params_def, forward, grad]
        update_inputs = step.get("update_inputs", [])
        step_args = ", ".join([*inputs, *update_inputs])
        call_pre: list = []
        # a state fed back (see _as_jit_argument), not what an enclosing loop binds anew (a batch)
        step["carried"] = {n for n in set(outputs) & set(inputs) if self._binding_loop(n) is None}
        if step["kind"] == "accumulate":
            # One compiled step: gradients accumulate in Parameters, and torch's own condition,
            # evaluated in Python where torch evaluated it, decides (as a bool tensor, so the
            # graph is compiled once) whether the accumulated update is applied.
            accum = self.fresh("accum_grads")
            self.accumulators.append((step["optimizer"], accum, tuple(self.loops[-1])))
            flag = self.fresh("apply_update")
            defs.insert(len(params_def), self._stmt(
                f'{accum} = {step["optimizer"]}.parameters.clone(prefix="{accum}", init="zeros")'))
            lines.append(f"for acc, grad in zip({accum}, grads):")
            lines.append(f"    {ms_('mindspore.ops.assign_add')}(acc, grad)")
            lines += [f"{n} = {ms_('mindspore.ops.zeros')}(())" for n in norm_names]
            lines.append(f"if {flag}:")
            applied = [*(re.sub(r"\bgrads\b", "accumulated", c) for c in clip_lines), f"{step['optimizer']}(accumulated)"]
            if scaler:   # torch's scaler.step: the scaled sum unscaled, applied when finite; update()
                lines.append(f"    accumulated = {scaler}.unscale(tuple({accum}))")
                lines.append(f"    is_finite = {ms_('mindspore.amp.all_finite')}(accumulated)")
                lines.append("    if is_finite:")
                lines += ["        " + a for a in applied]
                lines.append(f"    {scaler}.adjust(is_finite)")
            else:
                lines.append(f"    accumulated = tuple({accum})")
                lines += ["    " + a for a in applied]
            lines.append(f"    for acc in {accum}:")
            lines.append(f"        {ms_('mindspore.ops.assign')}(acc, {ms_('mindspore.ops.zeros_like')}(acc))")
            extra_returns = norm_names
            ret = ", ".join(rets + extra_returns)
            step_args = ", ".join([*inputs, *update_inputs, flag])
            call_pre = [self._stmt(f"{flag} = {self._code(step['if'].test)}")]
            call_args = ", ".join(a for a in (self._call_arguments(step, [*inputs, *update_inputs]),
                                              f"{ms_('mindspore.Tensor')}({flag})") if a)
        else:
            call_args = self._call_arguments(step, [*inputs, *update_inputs])
        at = defs.index(grad) + 1
        defs.insert(at, self._jit_def(names["step"], step_args, lines + [f"return {ret}"]))
        defs[0] = defs[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *defs[0].leading_lines])

        targets = ", ".join(rets + extra_returns)
        if step["kind"] == "closure":
            step["grads"] = self.fresh("grads")
            targets = ", ".join(rets + norm_names + [step["grads"]])
        call_stmts = [*call_pre, self._stmt(f"{targets} = {names['step']}({call_args})")]
        if step["kind"] == "closure":
            call_stmts.append(self._stmt(f"{step['optimizer']}.msmigrate_set_gradients({step['grads']})"))
        if step["kind"] == "loop_sum":   # (only now: a step refused before this leaves its statements)
            total = self.fresh("summed_grads")
            call_stmts.append(self._stmt(f"{total} = grads if {total} is None else "
                                         f"tuple(a + g for a, g in zip({total}, grads))"))
            self.pending.setdefault(id(step["loop"]), []).append(self._stmt(f"{total} = None"))
            self.later[id(step["step_stmt"])] = [self._stmt(self._apply_sum(step, total, scaler))]
            for st in step["gone"]:
                self.later[id(st)] = []
        new_post = list(step["before"])
        if step["kind"] == "accumulate":
            if_stmt = step["if"]
            rest = [*step["if_before"], *step["if_after"]]
            if rest:   # what else torch did when it stepped, under the same condition
                new_post.append(if_stmt.with_changes(test=cst.Name(flag),
                                                     body=if_stmt.body.with_changes(body=rest)))
        new_post += step["after"]
        return defs, call_stmts, new_post

    def _apply_sum(self, step, total: str, scaler: str | None) -> str:
        """The statement applying a loop's summed gradients where torch stepped (see
        _step_after_loop): unscaled, clipped (under torch's conditions) and applied when finite."""
        lines = []
        if scaler:
            lines += [f"{total} = {scaler}.unscale({total})",
                      f"is_finite = {self._ref('mindspore.amp.all_finite')}({total})"]
        for test, clips in step["sum_clips"]:
            clip_lines = [re.sub(r"\bgrads\b", total, c) for c in self._clip_lines(clips)[0]]
            if test is not None:
                clip_lines = [f"if {self._code(test)}:", *["    " + c for c in clip_lines]]
            lines += clip_lines
        apply = f"{step['optimizer']}({total})"
        lines += [f"if is_finite:", f"    {apply}", f"{scaler}.adjust(is_finite)"] if scaler else [apply]
        return f"if {total} is not None:\n" + "".join(f"    {line}\n" for line in lines)

    def _generate_bare(self, step, names, forward, loss_name, inputs, outputs):
        """`grad_fn = ms.value_and_grad(forward_fn, None, (w, b))` and, where the forward computation
        was, `l, (w_grad, b_grad) = grad_fn(x)`. Uncompiled: the statements after the backward
        pass read the gradients and update the tensors in torch's order, in Python. A gradient
        torch adds up (no clear in the block) starts at zero before the loop and adds each step's."""
        tensors, grads, fresh = step["tensors"], step["grads"], step["fresh"]
        wrt = f"({', '.join(tensors)}{',' if len(tensors) == 1 else ''})"
        grad = self._stmt(f"{names['grad']} = {self._ref('mindspore.value_and_grad')}({names['forward']}, None, "
                          f"{wrt}{', has_aux=True' if outputs else ''})")
        totals = [self._stmt(f"{grads[t]} = {self._ref('mindspore.ops.zeros_like')}({t})")
                  for t in tensors if not fresh[t]]
        defs = [forward, grad, *totals]
        defs[0] = defs[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *defs[0].leading_lines])
        value = f"({', '.join([loss_name, *outputs])})" if outputs else loss_name
        args = ", ".join(step.get("arguments", {}).get(n, n) for n in inputs)
        updates = self._compiled_updates(step) if step.get("compile") and all(fresh.values()) else None
        if updates is not None:
            # the gradients and the updates that use only them in one compiled step: a step
            # run in PyNative launches every kernel from Python (~0.1 s a step)
            names_ = ", ".join(grads[t] for t in tensors) + ("," if len(tensors) == 1 else "")
            updates, update_stmts = updates
            extra = self._update_inputs(update_stmts, inputs, {*tensors, *grads.values()})
            lines = [f"{value}, ({names_}) = {names['grad']}({', '.join(inputs)})"]
            for u in update_stmts:   # (a no_grad block: its comments, then its statements)
                lines += [e.comment.value for e in u.leading_lines if e.comment]
                if not isinstance(u, cst.With):
                    lines.append(self._code(u.with_changes(leading_lines=[])).strip())
            lines.append(f"return {value}")
            defs.append(self._jit_def(names["step"], ", ".join([*inputs, *extra]), lines))
            call = self._call_arguments(step, [*inputs, *extra])
            return defs, [self._stmt(f"{value} = {names['step']}({call})")], step["after"][updates:]
        if all(fresh.values()):
            names_ = ", ".join(grads[t] for t in tensors) + ("," if len(tensors) == 1 else "")
            return defs, [self._stmt(f"{value}, ({names_}) = {names['grad']}({args})")], step["after"]
        g = self.fresh("grads")
        call_stmts = [self._stmt(f"{value}, {g} = {names['grad']}({args})")]
        call_stmts += [self._stmt(f"{grads[t]} = {g}[{i}]" if fresh[t] else f"{grads[t]} = {grads[t]} + {g}[{i}]")
                       for i, t in enumerate(tensors)]
        return defs, call_stmts, step["after"]

    def _compiled_updates(self, step) -> tuple[int, list] | None:
        """The statements after a hand-trained step's gradients that are its updates
        (`ops.assign*(w, ...)` of a trained tensor, under no_grad or not), when nothing after
        them reads a gradient: how many of `after` they are, and their statements (a no_grad
        block's after it), for the compiled step. None when the step stays in Python."""
        after, n, updates = step["after"], 0, []
        while n < len(after):
            stmt = after[n]
            inner = list(stmt.body.body) if isinstance(stmt, cst.With) and self._is_no_grad(stmt) else [stmt]
            if not inner or not all(self._is_update(u, step["tensors"]) for u in inner):
                break
            updates += [stmt, *inner] if inner[0] is not stmt else [stmt]
            n += 1
        grads = set(step["grads"].values())
        return (n, updates) if updates and not any(grads & reads(s) for s in after[n:]) else None

    def _is_update(self, stmt, tensors: list[str]) -> bool:
        call = _call_of(stmt)
        if call is None or not isinstance(stmt.body[0], cst.Expr) or not call.args:
            return False
        func = self._code(call.func)
        ref = re.fullmatch(r"__msref_(\d+)__", func)
        leaf = self.refs[int(ref.group(1))] if ref else func
        return leaf.rsplit(".", 1)[-1] in ("assign", "assign_sub", "assign_add") and \
            self._code(call.args[0].value) in tensors

    def _call_arguments(self, step, inputs: list[str]) -> str:
        """The compiled step's call arguments: its inputs, an attribute it reads through an
        argument (`self.beta`) by its path."""
        paths = step.get("arguments", {})
        carried = step.get("carried", ())
        return ", ".join(paths[n] if n in paths else self._as_jit_argument(n, n in carried) for n in inputs)

    def _as_jit_argument(self, name: str, carried: bool = False) -> str:
        """A step input that may be a Python list (`word, tag = data` over a list of
        `("The dog".split(), ["DET", "NN"])`) goes in as a tuple: @ms.jit reuses its compiled
        graph for an equal tuple, but compiles again on every call given a list. A state the
        step returns and takes back (an LSTM's `hidden = (h, c)`) goes in as a mutable tuple:
        the Tensors of a plain tuple are constants of the graph, compiled again every call."""
        if carried:
            return f"{self._ref('mindspore.mutable')}({name}) if isinstance({name}, tuple) else {name}"
        if not self._maybe_list(name, set()):
            return name
        return f"tuple({name}) if isinstance({name}, list) else {name}"

    def _maybe_list(self, name: str, seen: set) -> bool:
        if name in seen:
            return False
        seen.add(name)
        return any(self._value_maybe_list(v, seen) for v in self._module_bindings().get(name, []))

    def _module_bindings(self) -> dict[str, list]:
        """name -> the values the module binds to it anywhere (an assignment's whole value, a
        `for`'s iterable), built once."""
        if self._bindings is None:
            found: dict[str, list] = {}
            for n in walk(self.module):
                pairs = []
                if isinstance(n, cst.Assign):
                    pairs = [(t.target, n.value) for t in n.targets]
                elif isinstance(n, (cst.For, cst.CompFor)):
                    pairs = [(n.target, n.iter)]
                for target, value in pairs:
                    for t in walk(target):
                        if isinstance(t, cst.Name):
                            found.setdefault(t.value, []).append(value)
            self._bindings = found
        return self._bindings

    def _value_maybe_list(self, value, seen: set) -> bool:
        """Whether a bound value is, holds, or is derived from a Python list: a list literal or
        comprehension, `str.split()`, or a name bound to one (through iteration, unpacking,
        indexing)."""
        while isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Name):
            return self._maybe_list(value.value, seen)
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value in ("zip", "enumerate"):
            return any(self._value_maybe_list(a.value, seen) for a in value.args)
        if isinstance(value, (cst.List, cst.Tuple)):
            return any(isinstance(n, (cst.List, cst.ListComp)) or
                       (isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "split")
                       for n in walk(value))
        return False

    def _generate_union(self, step, names, forward, loss_name, inputs, outputs, post):
        """One backward, several optimizers stepped after it: one compiled step differentiates
        the loss w.r.t. all their parameters and hands back the gradients; each optimizer
        applies its part in its own compiled function (two optimizers in one graph would
        bring two Parameters of one name, e.g. both learning rates)."""
        ms_ = lambda q: self._ref(q)  # noqa: E731
        opts = [step["optimizer"], *step["others"]]
        args = ", ".join(inputs)
        rets = [loss_name, *outputs]
        aux = bool(outputs)
        wrt = " + ".join(f"{o}.parameters" for o in opts)
        grad = self._stmt(f"{names['grad']} = {ms_('mindspore.value_and_grad')}({names['forward']}, None, "
                          f"{wrt}{', has_aux=True' if aux else ''})")
        unpack = f"({', '.join(rets)}), grads" if aux else f"{loss_name}, grads"
        lines = [f"{unpack} = {names['grad']}({args})"]
        global_clips, own_clips = step["clip_parts"]
        clip_lines, norm_names = self._clip_lines(global_clips)
        lines += clip_lines
        lines.append(f"return {', '.join(rets + norm_names)}, grads")
        defs = [forward, grad, self._jit_def(names["step"], args, lines)]
        defs[0] = defs[0].with_changes(leading_lines=[cst.EmptyLine(indent=False), *defs[0].leading_lines])
        grads = self.fresh("grads")
        call_stmts = [self._stmt(f"{', '.join(rets + norm_names)}, {grads} = {names['step']}"
                                 f"({self._call_arguments(step, inputs)})")]
        offset = "0"
        for opt in opts:
            apply = self.fresh(f"apply_{opt.rsplit('.', 1)[-1]}")
            part_lines, part_norms = self._clip_lines(own_clips.get(opt, []))
            ret = [f"return {', '.join(part_norms)}"] if part_norms else []
            defs.append(self._jit_def(apply, "grads", [*part_lines, f"{opt}(grads)", *ret]))
            end = f"len({opt}.parameters)" if offset == "0" else f"{offset} + len({opt}.parameters)"
            target = f"{', '.join(part_norms)} = " if part_norms else ""
            # mutable: a tuple of Tensors passed as such is a constant of the graph (compiled again every call)
            call_stmts.append(self._stmt(f"{target}{apply}({ms_('mindspore.mutable')}("
                                         f"{grads}[{'' if offset == '0' else offset}:{end}]))"))
            offset = end
        return defs, call_stmts, [*step["before"], *step["after"]]

    def _clip_parts(self, step):
        """The clips of a step over several optimizers: those over every optimizer's parameters
        (clipped together, as torch does) and those over one optimizer's (clipped with it).
        None when a clip's parameters are neither."""
        if self._holder_scan is None:
            self._holder_scan = _ParameterHolders()
            self.module.visit(self._holder_scan)
        opts = [step["optimizer"], *step["others"]]
        holders = {o: self._holder_scan.by_name.get(o, set()) for o in opts}
        whole, own = [], {}
        for clip in step["clips"]:
            calls = [_call_of(c) for c in (self._clip_region(clip, None)[1] if isinstance(clip, cst.If) else [clip])]
            roots = set()
            for call in calls:
                first = call.args[0].value if call.args else None
                roots |= _ParameterHolders._roots(first) if first is not None else set()
                if isinstance(first, cst.Name) and first.value in self._holder_scan.by_name:
                    roots |= self._holder_scan.by_name[first.value]
            mine = [o for o in opts if roots and holders[o] and roots <= holders[o]]
            if len(mine) == 1:
                own.setdefault(mine[0], []).append(clip)
            elif roots and all(holders[o] and holders[o] <= roots for o in opts):
                whole.append(clip)
            else:
                return None
        return whole, own

    def _renames(self, optimizers: list[str], stmts: list = ()) -> list:
        """`G.update_parameters_name('G.')` for every network trained by these optimizers or
        called by these statements (a WGAN critic's step runs the generator too): see
        prefixed_networks. Once per network; networks an optimizer's construction already
        prefixes (optim.trainable_params: several networks in one optimizer) are left."""
        if self._holder_scan is None:
            self._holder_scan = _ParameterHolders()
            self.module.visit(self._holder_scan)
        holders = []
        for opt in optimizers:
            own = self._holder_scan.by_name.get(opt) or self._holder_scan.by_name.get(self.aliases.get(opt), set())
            self._renamed.update(prefixed_networks(own))   # renamed where the optimizer is made
            for h in sorted(own):
                if h not in holders:
                    holders.append(h)
        code = "\n".join(self._code(st) for st in stmts)
        called = self._holder_scan.all | self._network_names() | self._network_arguments() | self._torch_layers()
        if self.classes and self.classes[-1].name.value in self.ctx.plain_classes:
            called = called - {"self"}   # a trainer's `self` holds no parameters of its own
        holders += [h for h in sorted(called - set(holders))
                    if re.search(rf"(?<![\w.]){re.escape(h)}\b", code)]
        out = []
        for h in prefixed_networks(holders):
            if h in self._renamed:
                continue
            self._renamed.add(h)
            out.append(self._stmt(prefix_statement(h)))
        return out

    def _torch_layers(self) -> set[str]:
        """Names bound to a torch.nn layer with parameters built in the file (`nn.Sequential(...)`
        of a distillation's teacher and student, both `0.weight`; a frozen `nn.Linear` projection
        before a trained one, both `weight`): networks too when a step calls them."""
        if getattr(self, "_layer_scan", None) is None:
            self._layer_scan = ModuleInstances(dict(self.ctx.names.imports), self.ctx.project,
                                               extra=_layer_with_parameters)
            self.module.visit(self._layer_scan)
        return self._layer_scan.names

    def _network_arguments(self) -> set[str]:
        """Parameters of the function holding this step that every call passes a network for
        (a distillation's `teacher_model`, called in the student's step): their parameter
        names collide with the trained network's too."""
        fn = self.funcs[-1] if self.funcs else None
        if not isinstance(fn, cst.FunctionDef) or self.classes:   # (a method's parameters: not followed)
            return set()
        if getattr(self, "_passed_networks", None) is None:
            self._network_names()
            self._passed_networks = network_parameters(self.ctx, dict(self.ctx.names.imports),
                                                       self._module_scan.classes, lambda api: False)
        return self._passed_networks.get(fn.name.value, set())

    def _jit_def(self, name: str, args: str, lines: list[str]):
        code = f"@{self._ref('mindspore.jit')}\ndef {name}({args}):\n" + "".join(f"    {ln}\n" for ln in lines)
        return self._stmt(code)

    # builtins a step calls (no random draws of their own)
    _PLAIN_CALLS = frozenset({"len", "range", "int", "float", "bool", "print", "isinstance", "zip", "list", "tuple",
                              "dict", "sum", "min", "max", "abs", "getattr", "enumerate", "round", "str"})

    def _random_callee_twice(self, stmts: list) -> str | None:
        """`z1, z2 = model(aug(x)), model(aug(x))` in a program seeding its generator: called
        twice in one static graph, a network with dropout or a function drawing random numbers
        draws the same numbers at both calls in MindSpore 2.10 when a global seed is set (torch:
        two draws; two views of SimCLR, R-Drop). 'name(...) twice' of the first such callee."""
        source = self.ctx.source
        # what seeds MindSpore's global generator in the output (random.seed / np.random.seed do not)
        if not re.search(r"\bmanual_seed(_all)?\(|\bset_seed\(|\bseed_everything\(", source):
            return None
        functions = {f.name.value: f for f in walk(self.module) if isinstance(f, cst.FunctionDef)}
        classes = {c.name.value: c for c in walk(self.module) if isinstance(c, cst.ClassDef)}
        built = self._constructions()

        def code(node) -> str:
            return cst.Module([]).code_for_node(node)

        def class_draws(name: str, seen: set) -> bool:
            """A network class drawing: a random layer or call in its body, or a layer it builds
            from another class of the file that does."""
            leaf = name.rsplit(".", 1)[-1]
            if leaf in seen:
                return False
            seen.add(leaf)
            if leaf not in classes:
                return _RANDOM_LAYER.search(leaf) is not None
            methods = [m for m in classes[leaf].body.body if isinstance(m, cst.FunctionDef)]
            return (any(m.name.value != "__init__" and _FORWARD_DRAW.search(code(m)) for m in methods)
                    or construction_draws(code(classes[leaf]), seen))

        def construction_draws(text: str, seen: set) -> bool:
            return (_RANDOM_CALL.search(text) is not None
                    or any(class_draws(c, seen) for c in re.findall(r"\b([A-Z]\w*)\(", text)))

        def draws(name: str) -> bool:
            """A function of the file drawing random numbers, or a network whose layers draw; a
            callee built nowhere in sight (a parameter) draws if the file has random layers."""
            fn = functions.get(name.rsplit(".", 1)[-1])
            if fn is not None and (name.startswith("self.") or "." not in name):
                return re.search(r"rand|dropout|bernoulli|multinomial|normal|uniform", code(fn.body)) is not None
            if name in built:
                return any(construction_draws(code(call), set()) for call in built[name])
            return _RANDOM_CALL.search(source) is not None
        counts: dict[str, int] = {}
        for stmt in stmts:
            for n in walk(stmt):
                if isinstance(n, cst.Call):
                    name = dotted(n.func)
                    if name is not None and not is_source(self._q(n.func)) and "." not in name.replace("self.", "", 1):
                        counts[name] = counts.get(name, 0) + 1
        twice = [name for name, k in counts.items() if k > 1 and name not in self._PLAIN_CALLS and draws(name)]
        return f"twice:{twice[0]}" if twice else None

    def _uncompiled(self, defs: list, step: str, python_object: str, backward_stmt) -> list:
        """The definitions with the step's @jit replaced by a marker: its loss is computed
        through a plain Python object (or a torch.distributions object built in the step)."""
        what = ("network outputs kept before the step and computed again inside it (msmigrate_Recompute: "
                "a static graph cannot call the kept Python functions)"
                if python_object.startswith("msmigrate_recomputed(") else
                "a distribution built in the step or in the network's forward (MindSpore builds its distributions in a static graph "
                "only from constants, and msmigrate's generated ones are plain Python)"
                if python_object.endswith("(...)") else
                "a function whose host code (NumPy or `random` draws, .tolist(), .numpy()) runs on every "
                "step (a static graph would run it once, or not compile)"
                if python_object.endswith("()") else
                "a Python object whose methods run on every step (a static graph would run them once, "
                "or not compile)")
        message = (f"{step} left uncompiled (PyNative, no @ms.jit): the loss is computed through "
                   f"'{python_object}', {what}: it trains like torch but slower")
        if python_object.startswith("reads:"):
            _, function, name = python_object.split(":")
            message = (f"{step} left uncompiled (PyNative, no @ms.jit): it calls '{function}', which reads "
                       f"'{name}', a value the program changes between steps; a compiled step would keep the "
                       f"value it saw when compiled: it trains like torch but slower (pass '{name}' to "
                       f"'{function}' as an argument to compile it)")
        if python_object.startswith("state:"):
            message = (f"{step} left uncompiled (PyNative, no @ms.jit): it reads '{python_object[6:]}', which "
                       f"the network's forward sets on itself; a compiled step sets no attribute while it runs "
                       f"and would read the value it had when compiled: it trains like torch but slower "
                       f"(return the value from forward to compile it)")
        if python_object.startswith("twice:"):
            message = (f"{step} left uncompiled (PyNative, no @ms.jit): '{python_object[6:]}' is called "
                       f"more than once in it, and with a global seed MindSpore 2.10's static graph draws "
                       f"the same random numbers (dropout masks, noise) at each call where torch draws anew: "
                       f"it trains like torch but slower")
        self.reporter.flag("MSC109", message, *self._pos(backward_stmt))
        defs = [self._host_aux(d) for d in defs]
        marker = cst.EmptyLine(comment=cst.Comment(f"# msmigrate: MSC109 {message}"))
        return [d.with_changes(decorators=[], leading_lines=[*d.leading_lines, marker])
                if isinstance(d, cst.FunctionDef) and d.name.value == step else d for d in defs]

    def _host_aux(self, stmt):
        """`grad_fn = ms.value_and_grad(forward_fn, None, params, has_aux=True)` of a step left
        uncompiled: through msmigrate_value_and_grad_host_aux, which takes what forward_fn
        returns after the loss as it is (PyNative's has_aux rejects a Python number there)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Assign)
                and isinstance(stmt.body[0].value, cst.Call)):
            return stmt
        call = stmt.body[0].value
        aux = [a for a in call.args if a.keyword is not None and a.keyword.value == "has_aux"]
        if not aux or self._code(aux[0].value) != "True" or not self._code(call.func).endswith("value_and_grad"):
            return stmt
        from msmigrate.rules.transforms.common import generated_text
        func = generated_text(self.ctx.plan, "steps", "msmigrate_value_and_grad_host_aux")
        args = [a for a in call.args if a is not aux[0]]
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return stmt.with_changes(body=[stmt.body[0].with_changes(value=call.with_changes(func=func, args=args))])

    def _distribution_in(self, stmts: list) -> str | None:
        """`Categorical(...)` where the step's statements build a torch.distributions object, or
        the forward of a network class of the file does (a VAE's `Normal(mu, std).rsample()`),
        with the methods it calls on self."""
        imports = self.ctx.names.imports

        def built(nodes) -> str | None:
            for node in nodes:
                for n in walk(node):
                    if isinstance(n, cst.Call):
                        name = dotted(n.func) or ""
                        head, _, rest = name.partition(".")
                        q = imports.get(head, "")
                        if (f"{q}.{rest}" if rest and q else q).startswith("torch.distributions."):
                            return f"{name.rsplit('.', 1)[-1]}(...)"
            return None

        return built(stmts) or built(self._forward_methods())

    def _forward_methods(self) -> list:
        """The `forward` methods of the file's network classes and the methods of theirs they call
        on self (what a call of one of their instances runs)."""
        self._network_names()
        found = []
        for cls in walk(self.module):
            if not isinstance(cls, cst.ClassDef) or cls.name.value not in self._module_scan.classes:
                continue
            methods = {f.name.value: f for f in cls.body.body if isinstance(f, cst.FunctionDef)}
            if "forward" not in methods:
                continue
            called = {n.func.attr.value for n in walk(methods["forward"]) if isinstance(n, cst.Call)
                      and isinstance(n.func, cst.Attribute) and dotted(n.func.value) == "self"}
            found += [methods["forward"], *(methods[c] for c in sorted(called) if c in methods)]
        return found

    def _forward_state_read_in(self, stmts: list) -> str | None:
        """`state:model.kl` when the step reads an attribute of a network that the network's
        forward sets on itself (`self.kl = ...`, a VAE's or a Bayesian layer's loss term): a
        compiled step sets no Python attribute while it runs and would read the value the
        attribute had when it was compiled (the term silently left the loss)."""
        networks = self._network_names()
        stored = {t.target.attr.value for fn in self._forward_methods() for n in walk(fn)
                  if isinstance(n, cst.Assign) for t in n.targets
                  if isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self"}
        if not stored or not networks:
            return None
        for stmt in stmts:
            for n in walk(stmt):
                if isinstance(n, cst.Attribute) and n.attr.value in stored and dotted(n.value) in networks:
                    return f"state:{dotted(n)}"
        return None

    def _callable_bodies(self, name: str) -> list:
        """The lambdas and defs the file binds to `name` (through a function returning one)."""
        out = []
        for value in self._callable_bindings().get(name, ()):
            if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
                value = self._functions().get(value.func.value)   # what it returns is in its body
            if isinstance(value, (cst.Lambda, cst.FunctionDef)):
                out.append(value)
        return out

    def _varying_reader_in(self, stmts: list, trained: set[str]) -> str | None:
        """`reads:loss_fn:weight` when the step calls a function of the file (or a def the
        enclosing function binds, or one they call) that reads as a value a name the program
        changes between steps: a global set each step, an enclosing function's local the loop
        rebinds, a batch the loop binds and the function reads as a global. A compiled step keeps
        the value it saw when compiled (read in the step itself, such a name comes in as an
        argument; read in the function, it cannot). Tensors the step trains (`trained`, updated
        in place) are no such value."""
        varying = self._varying(stmts, set()) - trained - set(self._trainable_tensors())
        if not varying:
            return None

        def reader(fn, seen: set) -> str | None:
            body = fn.body
            own = set(params_of(fn.params)) | writes(body)
            free = reads(body) - own - _objects_in([body])
            found = sorted(free & varying)
            if found:
                return found[0]
            for n in walk(body):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value not in seen:
                    seen.add(n.func.value)
                    for inner in self._callable_bodies(n.func.value):
                        name = reader(inner, seen)
                        if name is not None:
                            return name
            return None

        for stmt in stmts:
            for n in walk(stmt):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
                    for fn in self._callable_bodies(n.func.value):
                        name = reader(fn, {n.func.value})
                        if name is not None:
                            return f"reads:{n.func.value}:{name}"
        return None

    def _host_function_in(self, stmts: list) -> str | None:
        """`preprocess()` when the step calls a function of the file, or a lambda or def the file
        binds, that runs host code: draws with NumPy or `random`, or reads values out of a tensor
        (.tolist(), .numpy()); so do the functions of the file it calls."""
        bodies = self._callable_bodies

        def host(node, seen: set) -> bool:
            for n in walk(node):
                if not isinstance(n, cst.Call):
                    continue
                if isinstance(n.func, cst.Attribute) and n.func.attr.value in ("tolist", "numpy"):
                    return True
                if self._q(n.func).startswith(("numpy.random.", "random.")):
                    return True
                if isinstance(n.func, cst.Name) and n.func.value not in seen:
                    seen.add(n.func.value)
                    if any(host(b, seen) for b in bodies(n.func.value)):
                        return True
            return False

        for stmt in stmts:
            for n in walk(stmt):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and \
                        any(host(b, {n.func.value}) for b in bodies(n.func.value)):
                    return f"{n.func.value}()"
        return None

    def _python_objects_in(self, stmts: list) -> str | None:
        """The first plain Python object (see _PythonObjects) whose method the step calls."""
        if self._objects is None:
            self._objects = _PythonObjects(dict(self.ctx.names.imports), self.ctx.plain_classes)
            self.module.visit(self._objects)
        if not self._objects.names:
            return None
        for stmt in stmts:
            for n in walk(stmt):
                if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and \
                        dotted(n.func.value) in self._objects.names:
                    return dotted(n.func.value)
        return None

    def _clip_lines(self, clips: list) -> tuple[list[str], list[str]]:
        out, norms = [], []
        for stmt in clips:
            if isinstance(stmt, cst.If):   # a conditional clip: the same test, in the step
                test, inner = self._clip_region(stmt, None)
                lines, inner_norms = self._clip_lines(inner)
                out += [f"if {self._code(test)}:"] + ["    " + line for line in lines]
                norms += inner_norms
                continue
            call = _call_of(stmt)
            q = self._q(call.func)
            args = {a.keyword.value if a.keyword else i: a.value for i, a in enumerate(call.args)}
            if q in CLIP_NORM:
                max_norm = self._code(args.get(1, args.get("max_norm")))
                norm_type = args.get(2, args.get("norm_type"))
                if norm_type is not None and self._code(norm_type) not in ("2", "2.0"):
                    out.append(f"# msmigrate: MSC105 clip_grad_norm_ norm_type={self._code(norm_type)} "
                               f"is clipped with the L2 norm here")
                target = _assigned_name(stmt)
                if target:
                    norms.append(target)
                    out.append(f"{target} = {self._ref('mindspore.ops.sqrt')}(sum("
                               f"{self._ref('mindspore.ops.sum')}({self._ref('mindspore.ops.square')}(g)) for g in grads))")
                out.append(f"grads = {self._ref('mindspore.ops.clip_by_global_norm')}(grads, {max_norm})")
            else:
                clip = self._code(args.get(1, args.get("clip_value")))
                out.append(f"grads = {self._ref('mindspore.ops.clip_by_value')}(grads, -({clip}), {clip})")
        return out, norms

    def _manual_body(self, step) -> list[str]:
        """Rewrite the update loop body with `grad` for `p.grad` and MindSpore assignments."""
        p = step["param"]
        ops = lambda n: self._ref(f"mindspore.ops.{n}")  # noqa: E731
        lines = []
        for stmt in step["loop"].body.body:
            code = self._code(stmt).strip()
            code = code.replace(f"{p}.grad.data", "grad").replace(f"{p}.grad", "grad").replace(f"{p}.data", p)
            small = cst.parse_statement(code).body[0] if not code.startswith(("if", "for", "with")) else None
            if isinstance(small, cst.AugAssign) and self._code(small.target) == p:
                op = {"-=": "assign_sub", "+=": "assign_add"}.get(self._code(small.operator).strip())
                if op:
                    lines.append(f"{ops(op)}({p}, {self._code(small.value)})")
                    continue
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                    isinstance(small.value.func, cst.Attribute) and self._code(small.value.func.value) == p:
                meth = small.value.func.attr.value
                cargs = {a.keyword.value if a.keyword else i: self._code(a.value) for i, a in enumerate(small.value.args)}
                if meth in ("add_", "sub_") and 0 in cargs:
                    alpha = cargs.get("alpha")
                    value = f"({alpha}) * {cargs[0]}" if alpha else cargs[0]
                    lines.append(f"{ops('assign_add' if meth == 'add_' else 'assign_sub')}({p}, {value})")
                    continue
                if meth == "copy_" and 0 in cargs:
                    lines.append(f"{ops('assign')}({p}, {cargs[0]})")
                    continue
            if isinstance(small, cst.Assign) and self._code(small.targets[0].target) == p:
                lines.append(f"{ops('assign')}({p}, {self._code(small.value)})")
                continue
            if "grad" in code and ("zero_" in code or "= None" in code):
                continue
            lines.append(f"# msmigrate: MSC102 update not converted: {code.splitlines()[0]}")
        if all(line.startswith("#") for line in lines):
            lines.append("pass")    # comments alone are no loop body
        return lines

    def _strip_autocast(self, stmt):
        """`with autocast(...):` inside the forward computation: MindSpore applies mixed
        precision to the network (`amp.auto_mixed_precision`), so the region goes and the model
        called first inside it is cast once, before the training step is defined."""
        if isinstance(stmt, cst.With):
            casts = [i for i in stmt.items if isinstance(i.item, cst.Call) and self._q(i.item.func) in AUTOCASTS]
            if casts and len(casts) == len(stmt.items):
                self.autocast = (casts[0].item, list(stmt.body.body), None)
                return list(stmt.body.body)
            named = self._named_autocast(stmt.items[0].item) if len(stmt.items) == 1 else None
            if named is not None:
                self.autocast = (named[0], list(stmt.body.body), named[1])
                return list(stmt.body.body)
        return [stmt]

    def _named_autocast(self, item):
        """(autocast call, condition or None) for `with ctx:` where the file binds ctx once, to an
        autocast region or to `nullcontext() if cond else autocast(...)` (the usual device switch):
        the region is mixed precision where cond says so; None for anything else."""
        if not isinstance(item, cst.Name):
            return None
        values = self._module_bindings().get(item.value, [])
        if len(values) != 1:
            return None
        value = values[0]
        is_cast = lambda e: isinstance(e, cst.Call) and self._q(e.func) in AUTOCASTS  # noqa: E731
        is_null = lambda e: isinstance(e, cst.Call) and self._q(e.func) == "contextlib.nullcontext"  # noqa: E731
        if is_cast(value):
            return value, None
        if isinstance(value, cst.IfExp):
            if is_cast(value.body) and is_null(value.orelse):
                return value.body, value.test
            if is_null(value.body) and is_cast(value.orelse):
                return value.orelse, cst.UnaryOperation(cst.Not(), value.test.with_changes(
                    lpar=[cst.LeftParen()], rpar=[cst.RightParen()]))
        return None

    def _mixed_precision(self) -> list:
        """`net = amp.auto_mixed_precision(net, 'O1', dtype=...)` for the autocast region seen."""
        if self.autocast is None:
            return []
        call, body, guard = self.autocast
        self.autocast = None
        kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
        pos = [a.value for a in call.args if a.keyword is None]
        q = self._q(call.func)
        if q == "torch.autocast" or q.startswith("torch.amp."):
            device = pos[0] if pos else kw.get("device_type")
            enabled = kw.get("enabled", pos[2] if len(pos) > 2 else None)
            dtype = kw.get("dtype", pos[1] if len(pos) > 1 else None)
        else:  # torch.cuda.amp.autocast(enabled=True, dtype=torch.float16)
            device = None
            enabled = kw.get("enabled", pos[0] if pos else None)
            dtype = kw.get("dtype", pos[1] if len(pos) > 1 else None)
        if dtype is not None:
            dtype_q = self._q(dtype)
        else:
            on_cpu = device is not None and "cpu" in self._code(device)
            dtype_q = "torch.bfloat16" if on_cpu else "torch.float16"
        ms_dtype = {"torch.float16": "float16", "torch.half": "float16",
                    "torch.bfloat16": "bfloat16"}.get(dtype_q, "float16")
        net = None
        for stmt in body:
            call_ = _call_of(stmt)
            if call_ is not None and dotted(call_.func) and not self._q(call_.func):
                net = dotted(call_.func)
                break
        if net is None:
            return []
        cast = (f"{net} = {self._ref('mindspore.amp.auto_mixed_precision')}({net}, 'O1', "
                f"dtype={self._ref('mindspore.' + ms_dtype)})")
        if enabled is not None and self._code(enabled) in ("False", "0"):
            return []
        conditions = [self._code(c) for c in (enabled, guard) if c is not None and self._code(c) not in ("True", "1")]
        if conditions:
            test = conditions[0] if len(conditions) == 1 else " and ".join(f"({c})" for c in conditions)
            cast = f"if {test}:\n    {cast}\n"
        stmt = self._stmt(cast)
        if ms_dtype == "bfloat16":
            stmt = self._flag(stmt, "review", "bfloat16 mixed precision has no CPU kernels in "
                              "MindSpore 2.10: use float16 on CPU")
        return [stmt]
