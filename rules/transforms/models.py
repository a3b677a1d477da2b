"""nn.Module -> nn.Cell: class bodies, training mode, buffers, module traversal."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible, creates_cell
from msmigrate.names import dotted
from msmigrate.rules.generated import cells
from msmigrate.rules.transforms.common import generated, generated_text


def module_subclass(cls: cst.ClassDef, site) -> cst.ClassDef:
    """`forward` is called `construct` in a Cell, and `self(x)` in its other methods (a flow's
    `log_prob`) `self.construct(x)`: a static graph cannot call the Cell it compiles a method of
    ("The object is not callable"). An `__init__` that adds children to a container after it
    became an attribute ends by naming the parameters by their paths."""
    body = []
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value != "__init__":
            stmt = stmt.visit(_SelfCalls())
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward":
            stmt = stmt.with_changes(name=cst.Name("construct"))
        elif isinstance(stmt, cst.FunctionDef) and stmt.name.value == "train" and _overrides_train(stmt):
            # `model.train()` converts to set_train(True): the override (keeping a frozen part
            # in eval mode) is what it must call, as torch's train() and eval() do
            stmt = stmt.with_changes(name=cst.Name("set_train"))
        elif isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__" and _adds_children(stmt, site):
            stmt = _name_parameters_at_end(stmt)
        body.append(stmt)
    return cls.with_changes(body=cls.body.with_changes(body=body))


def _overrides_train(fn: cst.FunctionDef) -> bool:
    """`def train(self, mode=True)`: torch's Module.train overridden (one argument, its mode; a
    method of another meaning, `def train(self, epochs=10)`, keeps its name)."""
    params = fn.params.params
    return len(params) == 2 and not isinstance(fn.params.star_arg, cst.Param) and not fn.params.kwonly_params \
        and params[1].default is not None and params[1].name.value == "mode"


class _SelfCalls(cst.CSTTransformer):
    """`self(...)` -> `self.construct(...)`, not in nested classes (another `self`)."""

    def visit_ClassDef(self, node) -> bool:
        return False

    def leave_Call(self, original, updated):
        if isinstance(updated.func, cst.Name) and updated.func.value == "self":
            return updated.with_changes(func=cst.Attribute(updated.func, cst.Name("construct")))
        return updated


def module_dict(site):
    """nn.ModuleDict(...) -> nn.CellDict where its values are seen (a dict of layers; one of
    containers was made a plain Module by rules/layer_attributes.py); built empty and filled
    later, or from a comprehension, the generated msmigrate_ModuleDict, which holds any Cell
    (CellDict rejects SequentialCell/CellList/CellDict values: a dict of Sequential heads
    crashed)."""
    modules = site.arg("modules")
    if modules is not None and not isinstance(modules, cst.DictComp):
        return site.call(site.record.target)
    func = generated_text(site.rw.imports, "containers", "msmigrate_ModuleDict")
    return cst.Call(func, [cst.Arg(modules)] if modules is not None else [])


# torch containers whose MindSpore Cell names a child's parameters from its siblings' names when
# the child is added (append/extend/insert/add_module/[key] = ...): empty, it has none to go by
_CONTAINERS = {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"}
_ADDS = {"append", "extend", "insert", "insert_child_to_cell", "update"}


def _adds_children(init: cst.FunctionDef, site) -> bool:
    """Does `__init__` add a child to `self` (`self.add_module(n, m)`) or to one of its containers
    (`self.layers.append(m)`, `self.conv.add_module(n, m)`, `self.heads[k] = m`, `+=`)?
    MindSpore names the parameters of such a child from the container alone ('0.weight', not
    torch's 'layers.0.weight'; `self.add_module('fc', m)`: 'weight'), so two containers filled
    that way hold parameters of the same names, which an optimizer rejects (ValueError: its
    name '0.weight' already exists)."""
    def container(expr, *more) -> bool:
        name = dotted(expr)
        rec = site.rw.instances.get(name) if name and name.startswith("self.") else None
        return rec is not None and (rec.torch in _CONTAINERS or rec.torch in more)

    for node in _own_statements(init.body):
        for small in node.body if isinstance(node, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) and \
                    isinstance(small.value.func, cst.Attribute) and small.value.func.attr.value in _ADDS:
                receiver = small.value.func.value
                if container(receiver) or (isinstance(receiver, cst.Name) and receiver.value == "self"
                                           and small.value.func.attr.value == "insert_child_to_cell"):
                    return True
            elif isinstance(small, cst.AugAssign) and container(small.target):
                return True
            elif isinstance(small, cst.Assign) and any(
                    isinstance(t.target, cst.Subscript) and container(t.target.value) for t in small.targets):
                return True
            elif isinstance(small, cst.Assign) and any(   # `self.enc.fc = ...` (a ModuleDict made a Module)
                    isinstance(t.target, cst.Attribute) and container(t.target.value, "torch.nn.Module")
                    for t in small.targets):
                return True
    return False


def _own_statements(block):
    """The statements of a function body, in nested blocks too, not in nested defs/classes."""
    stack = [block]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.SimpleStatementLine):
            yield node
            continue
        for child in node.children:
            if isinstance(child, (cst.BaseSuite, cst.BaseCompoundStatement, cst.SimpleStatementLine,
                                  cst.Else, cst.ExceptHandler, cst.Finally)):
                stack.append(child)


def _name_parameters_at_end(init: cst.FunctionDef) -> cst.FunctionDef:
    """`self.update_parameters_name()` (no prefix: every parameter takes its path under `self`,
    torch's name) as the last statement of `__init__` (before a final bare `return`)."""
    stmts = list(init.body.body)
    call = cst.parse_statement("self.update_parameters_name()   # children added to containers: "
                               "parameters named by their paths, as in torch\n")
    last = stmts[-1] if stmts else None
    at = len(stmts)
    if isinstance(last, cst.SimpleStatementLine) and len(last.body) == 1 and isinstance(last.body[0], cst.Return):
        at -= 1
    stmts.insert(at, call)
    return init.with_changes(body=init.body.with_changes(body=stmts))


def layer_subclass(cls: cst.ClassDef, site) -> cst.ClassDef:
    """A class deriving from a layer (`class MyLinear(nn.Linear)`): `forward` -> `construct`, and
    its `super().__init__(in, out, bias, ...)` maps arguments like a call of the layer would
    (positional torch arguments are not MindSpore's: `bias` -> has_bias, device/dtype dropped)."""
    cls = module_subclass(cls, site)
    body = []
    resets = any(isinstance(s, cst.FunctionDef) and s.name.value == "reset_parameters" for s in cls.body.body)
    has_init = False
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
            has_init = True
            stmt = stmt.visit(_SuperInit(site, resets))
        body.append(stmt)
    if resets and not has_init:
        site.flag("review", f"{site.qualname} subclass: torch's constructor calls the reset_parameters() "
                            f"defined here, MindSpore's does not: call self.reset_parameters() after "
                            f"construction")
    return cls.with_changes(body=cls.body.with_changes(body=body))


class _SuperInit(cst.CSTTransformer):
    """`super().__init__(...)` of a layer subclass: arguments converted; when the class overrides
    reset_parameters(), a call of it follows (torch's layer constructors end with one)."""

    def __init__(self, site, resets: bool) -> None:
        super().__init__()
        self.site = site
        self.resets = resets

    def visit_FunctionDef(self, node) -> bool:
        return node.name.value == "__init__"   # not nested functions

    def leave_SimpleStatementLine(self, original, updated):
        if not self.resets or not any(isinstance(s, cst.Expr) and _is_super_init(s.value) for s in original.body):
            return updated
        return cst.FlattenSentinel([updated, cst.parse_statement("self.reset_parameters()\n")])

    def leave_Call(self, original, updated):
        return constructor_call(self.site, updated) if _is_super_init(updated) else updated


def _is_super_init(call) -> bool:
    func = call.func if isinstance(call, cst.Call) else None
    return (isinstance(func, cst.Attribute) and func.attr.value == "__init__" and
            isinstance(func.value, cst.Call) and isinstance(func.value.func, cst.Name) and
            func.value.func.value == "super")


def constructor_call(site, call: cst.Call) -> cst.Call:
    """`call` (a `super().__init__(...)` or a call of a subclass that inherits the layer's
    constructor) with its arguments converted as for the layer itself; its callee is kept."""
    from msmigrate.engine import Site
    from msmigrate.mapping import transform_function

    rec = site.record
    if not rec.args or not rec.target:
        return call
    inner = Site(site.rw, rec, rec.torch, call)
    try:
        out = transform_function(rec.transform)(inner) if rec.transform else inner.call(rec.target)
    except Unconvertible as exc:
        site.flag(exc.status, f"{rec.torch} (constructor of a subclass): {exc}")
        return call
    if not isinstance(out, cst.Call):
        site.flag("manual", f"{rec.torch} (constructor of a subclass): its conversion is not a call; "
                            f"convert the arguments by hand")
        return call
    return call.with_changes(args=out.args)


def set_train_after_construction(site, name: str | None):
    """torch modules start in training mode, Cells in eval mode: say so where the model is made
    (children follow their parent, so in a Cell `self.x = ...`, and locals of `__init__` that
    become children, need nothing). `name` None: made as an argument of a call (`train(Net(), data)`),
    the construction itself becomes `Net().set_train(True)` (set_train returns the Cell)."""
    cls = site.rw.class_nodes[-1][0] if site.rw.class_nodes else None
    in_cell = cls is not None and cls.name.value not in site.rw.ctx.plain_classes
    if in_cell and (site.rw.functions[-1:] == ["__init__"] or (name or "").startswith("self.")):
        return None   # a plain object's (a Trainer's) `self.model = Net()` is no child: said below
    if name is None:
        return site.expr("{c}.set_train(True)", c=site.node)
    site.after(f"{name}.set_train(True)", implicit=True)
    return None


def train(site):
    mode = site.arg("mode", cst.Name("True"))
    return _set_train(site, mode)


def eval_(site):
    return _set_train(site, cst.Name("False"))


# a network class of the file overriding torch's train(mode) (module_subclass renames it set_train)
_TRAIN_OVERRIDE = re.compile(r"^[ \t]+def train\(\s*self\s*,\s*mode\s*(?::\s*bool\s*)?=", re.M)


def _set_train(site, mode):
    """`net.train(mode)` / `net.eval()` -> net.set_train(mode); where a class of the file
    overrides train(), msmigrate_set_train, which also calls the overrides of sub-networks (a
    backbone keeping its BatchNorm in inference mode), as torch's train() does."""
    receiver = site.receiver
    calls_super = isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super"
    if _TRAIN_OVERRIDE.search(site.rw.ctx.source) and not calls_super:   # (an override's own super().train())
        func = generated_text(site.rw.imports, "cells", "_msmigrate_overrides_set_train", "msmigrate_set_train")
        return cst.Call(func, [cst.Arg(site.receiver), cst.Arg(mode)])
    return site.expr("{r}.set_train({m})", r=site.receiver, m=mode)


def _buffer_value(site, arg: str, missing: str):
    """A buffer's tensor (argument `arg`) and whether it is persistent (a literal)."""
    value = site.arg(arg)
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        raise Unconvertible(missing)
    try:
        return value, site.literal("persistent", True)
    except ValueError:
        raise Unconvertible("persistent= is not a literal") from None


def _buffer_parameter(site, value, name: str | None):
    """A persistent buffer in MindSpore: a Parameter that is not trained (saved in checkpoints)."""
    if name is None:
        return site.expr("{P}({v}, requires_grad=False)", P="@mindspore.Parameter", v=value)
    return site.expr("{P}({v}, name={n}, requires_grad=False)", P="@mindspore.Parameter", v=value,
                     n=cst.SimpleString(repr(name)))


def register_buffer(site):
    """`self.register_buffer('name', t)` -> a non-trainable Parameter (saved in checkpoints, as a
    persistent buffer is); `persistent=False` -> a plain Tensor attribute (not saved)."""
    name = site.literal("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise Unconvertible("buffer name is not a literal identifier")
    value, persistent = _buffer_value(site, "tensor", "a None buffer has no MindSpore equivalent")
    rhs = _buffer_parameter(site, value, name) if persistent else value
    site.before(cst.SimpleStatementLine([cst.Assign(
        targets=[cst.AssignTarget(site.expr("{r}." + name, r=site.receiver))], value=rhs)]))
    if persistent:
        site.before(_buffer_named(site, site.receiver, name))
    return site.REMOVED


def _buffer_named(site, cell, name: str) -> cst.BaseStatement:
    """`cell.msmigrate_buffers = (..., 'name')`: the Cell's list of its buffers, which the generated
    parameters() / named_parameters() leave out and buffers() / named_buffers() give, as torch's
    do (an instance attribute: a deep copy of the Cell keeps it)."""
    attr = cells.BUFFERS
    return site.stmt(f"{{c}}.{attr} = (*getattr({{c}}, {attr!r}, ()), {name!r})\n", c=cell)


_BUFFERS = ("torch.nn.Buffer", "torch.nn.parameter.Buffer")


def buffer(site):
    """`self.name = nn.Buffer(t)` is `self.register_buffer('name', t)` (torch >= 2.5): a
    non-trainable Parameter named after the attribute; `persistent=False` -> the Tensor itself.
    Anywhere else (`b = nn.Buffer(t)`, then `self.b = b`), the Parameter takes the attribute's
    name when a Cell is given it."""
    if not site.is_call:
        raise Unconvertible("nn.Buffer as a value (isinstance, annotation): MindSpore has no buffer type; "
                            "a converted buffer is a Parameter with requires_grad=False")
    value, persistent = _buffer_value(site, "data", "a buffer without data (torch: an empty tensor): pass the tensor")
    if not persistent:
        return value
    stmt = site.statement
    name = None
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        target = assign.targets[0].target if len(assign.targets) == 1 else None
        if isinstance(target, cst.Attribute) and isinstance(assign.value, cst.Call) and \
                site.rw.scopes.resolve(assign.value.func) in _BUFFERS:
            name = target.attr.value
            site.after(_buffer_named(site, target.value, name))
    return _buffer_parameter(site, value, name)


def parameters(site):
    """`m.parameters()` -> torch's set: get_parameters() would add BatchNorm's moving statistics
    and register_buffer's Parameters."""
    func = generated(site, cells.msmigrate_named_parameters, cells.msmigrate_parameters)
    args = [cst.Arg(site.receiver)]
    if site.has("recurse"):
        args.append(cst.Arg(site.arg("recurse"), keyword=cst.Name("expand")))
    return cst.Call(func, args)


def named_parameters(site):
    """`m.named_parameters()` -> torch's set: parameters_and_names() would add BatchNorm's moving
    statistics and register_buffer's Parameters."""
    func = generated(site, cells.msmigrate_named_parameters)
    args = [cst.Arg(site.receiver)]
    for torch_name, ms_name in (("prefix", "name_prefix"), ("recurse", "expand")):
        if site.has(torch_name):
            args.append(cst.Arg(site.arg(torch_name), keyword=cst.Name(ms_name)))
    return cst.Call(func, args)


def buffers(site):
    """`m.buffers()` / `m.named_buffers()` -> generated functions over the Cell's register_buffer
    Parameters and BatchNorm's moving statistics."""
    named = site.qualname.endswith("named_buffers")
    func = generated(site, cells.msmigrate_named_buffers, *([] if named else [cells.msmigrate_buffers]))
    args = [cst.Arg(site.receiver)]
    for torch_name in ("prefix", "recurse"):
        if site.has(torch_name) and (named or torch_name == "recurse"):
            args.append(cst.Arg(site.arg(torch_name), keyword=cst.Name(torch_name)))
    if re.search(r"BatchNorm", site.rw.ctx.source) and not getattr(site.rw, "_buffers_marked", False):
        site.rw._buffers_marked = True   # once per file: the same for every call
        site.flag("review", f"{site.qualname}: BatchNorm's running statistics are its moving_mean and "
                            f"moving_variance; its num_batches_tracked has no MindSpore counterpart")
    return cst.Call(func, args)


def modules(site):
    return site.expr("(cell for _, cell in {r}.cells_and_names())", r=site.receiver)


def _in_module_subclass(site) -> bool:
    """`self.add_module(...)` in a class derived from nn.Module itself: a plain Cell."""
    if not (isinstance(site.receiver, cst.Name) and site.receiver.value == "self" and site.rw.class_nodes):
        return False
    bases = site.rw.class_nodes[-1][0].bases
    return bool(bases) and all(site.rw.scopes.resolve(b.value) in ("torch.nn.Module", "torch.nn.modules.module.Module")
                               for b in bases)


def add_module(site):
    """`seq.add_module('fc', m)`: a SequentialCell runs only the cells it was built with or that
    were appended (insert_child_to_cell adds a child its construct never calls: an identity,
    silently), so a Sequential's child is appended (its parameters are then named `0.weight`
    where torch says `fc.weight`); any other Cell gets the named child."""
    rec = site.instance_record(site.receiver)
    module = site.arg("module")
    if rec is not None and rec.torch == "torch.nn.Sequential":
        site.flag("review", "nn.Sequential.add_module(name, m) -> SequentialCell.append(m): the child runs "
                  "in order, but its parameters are named by position ('0.weight'), not by name")
        return site.expr("{r}.append({m})", r=site.receiver, m=module)
    if rec is None and not _in_module_subclass(site):
        site.flag("review", "add_module -> insert_child_to_cell: if the receiver is a SequentialCell, its "
                  "construct never calls this child; use .append(m) there")
    return site.expr("{r}.insert_child_to_cell({n}, {m})", r=site.receiver, n=site.arg("name"), m=module)


def named_children(site):
    return site.expr("{r}.name_cells().items()", r=site.receiver)


def train_inline(site):
    """A layer made and called in one expression (`nn.BatchNorm2d(3)(x)`): torch modules start
    in training mode, Cells in eval mode; set_train returns the Cell."""
    if isinstance(site.node.func, cst.Call):
        return site.node.with_changes(func=site.expr("{c}.set_train(True)", c=site.node.func))
    return site.node


# Module.half() & co: the dtype its floating-point parameters and buffers are stored in
_MODULE_DTYPES = {"half": "mindspore.float16", "float": "mindspore.float32", "double": "mindspore.float64",
                  "bfloat16": "mindspore.bfloat16"}


def cast_parameters(site):
    """`model.double()` -> msmigrate_cast_parameters(model, ms.float64): a Cell has no such
    method; torch stores the module's floating-point parameters and buffers in that dtype."""
    return cast_module(site, site.receiver, site.ref(_MODULE_DTYPES[site.record.method_name]))


def cast_module(site, module: cst.BaseExpression, dtype: cst.BaseExpression) -> cst.Call:
    """`module` with its floating-point parameters stored in `dtype` (generated
    msmigrate_cast_parameters); cast to float64, its RNN cells compute in float64 too
    (rules/generated/float64_cells.py: MindSpore's take float16/32 only)."""
    call = cst.Call(generated(site, cells.msmigrate_cast_parameters), [cst.Arg(module), cst.Arg(dtype)])
    if site.code(dtype).rsplit(".", 1)[-1] not in ("float64", "double"):
        return call
    # (only where the file names an RNN cell, or its model may come from another file)
    if not (re.search(r"(?:RNN|LSTM|GRU)Cell\b", site.rw.module_code) or site.rw.ctx.project):
        return call
    func = generated_text(site.rw.imports, "float64_cells", "msmigrate_RNNCell64", "msmigrate_LSTMCell64",
                          "msmigrate_GRUCell64", "msmigrate_float64_cells")
    return cst.Call(func, [cst.Arg(call)])


def requires_grad_(site):
    """`model.requires_grad_(False)` -> msmigrate_requires_grad_(model, False): a Cell has no
    such method; torch sets requires_grad on the module's parameters (not its buffers). Turning
    training back on in a program with one backward pass (unfreezing a backbone after some
    epochs) is left for manual work: an optimizer built while parameters were frozen holds only
    the trainable ones. With several (a GAN's `D.requires_grad_(True)` after freezing D for G's
    step) the toggles stay in step order (rules/training_loop.py) and each converted step
    differentiates its own optimizer's parameters, as the toggles arrange in torch."""
    flag = site.arg("requires_grad")
    freezing = isinstance(flag, cst.Name) and flag.value == "False"
    if not freezing and site.rw.ctx.source.count(".backward(") == 1:
        raise Unconvertible("requires_grad_ turning training back on in a program that trains: an optimizer "
                            "built while the parameters were frozen holds only the trainable ones (a "
                            "MindSpore optimizer's parameters are fixed when it is built); build it after "
                            "unfreezing, or convert by hand", "manual")
    func = generated(site, cells.msmigrate_named_parameters, cells.msmigrate_parameters,
                     cells.msmigrate_requires_grad_)
    return cst.Call(func, [cst.Arg(site.receiver), *([cst.Arg(site.arg("requires_grad"))]
                                                     if site.has("requires_grad") else [])])


def register_parameter(site):
    """`self.register_parameter('w', p)` -> setattr(self, 'w', p): a Cell registers a Parameter
    assigned to it (named after the attribute), and None as torch does."""
    return site.expr("setattr({r}, {n}, {p})", r=site.receiver, n=site.arg("name"), p=site.arg("param"))


def submodule_path(site):
    """`m.get_submodule('a.0')` / `m.get_parameter('a.0.weight')`: the attribute path, walked."""
    func = generated(site, cells.msmigrate_get_submodule) if site.record.method_name == "get_submodule" else \
        generated(site, cells.msmigrate_get_submodule, cells.msmigrate_get_parameter)
    return cst.Call(func, [cst.Arg(site.receiver), cst.Arg(site.arg("target"))])


def removed_on_network(site):
    """`model.zero_grad()` / `model.compile()` of a known network: MindSpore keeps no gradients
    between steps, and the converted training step is compiled by @ms.jit: the call goes. On any
    other receiver (an optimizer in a step left for manual work, another library's object) it
    stays."""
    rec = site.instance_record(site.receiver)
    if rec is not None and creates_cell(rec):
        return site.REMOVED
    return site.node
