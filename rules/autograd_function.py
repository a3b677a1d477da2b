"""`torch.autograd.Function` (a custom forward with a hand-written backward) -> an `nn.Cell`
whose `bprop` MindSpore's autodiff uses instead of differentiating `construct`, in PyNative and
in compiled graphs alike:

    class Clamp(torch.autograd.Function):          class Clamp(torch.nn.Module):
        @staticmethod                                  def forward(self, x, lo):
        def forward(ctx, x, lo):                           return x.clamp(min=lo)
            ctx.save_for_backward(x)                   def bprop(self, x, lo, out, g):
            ctx.lo = lo                                    return (g * (x > lo).float(),
            return x.clamp(min=lo)                                 torch.zeros_like(lo) if ... else 0)
        @staticmethod                              msmigrate_Clamp = Clamp()
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return g * (x > ctx.lo).float(), None  # `Clamp.apply(t, 0.)` -> `msmigrate_Clamp(t, 0.)`

This pass runs on torch names, before the table pass, which then converts the module class,
its `forward` and the torch calls inside both methods. `bprop` receives the forward's inputs, its
output and the output gradient(s): what the backward read from `ctx` is rebuilt from those (a
saved input by name, the saved output as `out`, a saved intermediate by recomputing the forward's
statements); `ctx.needs_input_grad[i]` is true for a floating-point tensor input. A `None`
gradient (an input without one) becomes zeros. What this cannot express
faithfully (`mark_dirty`, `mark_non_differentiable`, `setup_context`,
`*args`, several returns in forward) leaves the class as it is, marked, and the file stops at its
top. Checked against torch by tests/test_autograd_function.py."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import FocusedTransformer, bound_name, dotted, resolve

FUNCTION = "torch.autograd.Function"


class Refused(Exception):
    pass


class AutogradFunctionPass(FocusedTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "Function" in source and "autograd" in source

    def __init__(self, ctx) -> None:
        super().__init__(ctx.statements_naming({"Function", "autograd", "apply"}))
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        self.torch = bound_name(self.imports, "torch")
        self.converted: set[str] = set()

    def _resolve(self, expr) -> str | None:
        return resolve(expr, self.imports)

    def leave_ClassDef(self, original: cst.ClassDef, updated: cst.ClassDef):
        if not any(self._resolve(b.value) == FUNCTION for b in updated.bases):
            return updated
        try:
            if self.torch is None:
                raise Refused("the file does not `import torch` (the Cell is written as torch.nn.Module first)")
            cls = _convert(updated, self.torch)
        except Refused as why:
            pos = self.ctx.positions.get(original)
            line, col = (pos.start.line, pos.start.column + 1) if pos is not None else (1, 1)
            self.ctx.reporter.flag("manual", f"{FUNCTION} {original.name.value}: {why}; convert it by hand to an "
                                             f"nn.Cell with a bprop method", line, col)
            return updated
        name = updated.name.value
        self.converted.add(name)
        self.changes += 1
        instance = cst.parse_statement(f"msmigrate_{name} = {name}()\n")
        return cst.FlattenSentinel([cls, instance])

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute):
        # `Clamp.apply(...)`, `clamp = Clamp.apply`: the shared Cell object
        if updated.attr.value == "apply" and isinstance(updated.value, cst.Name) \
                and updated.value.value in self.converted:
            self.changes += 1
            return cst.Name(f"msmigrate_{updated.value.value}")
        return updated


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    return next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _plain_params(fn: cst.FunctionDef) -> list[str]:
    p = fn.params
    if p.star_arg not in (None, cst.MaybeSentinel.DEFAULT) or p.star_kwarg is not None or p.kwonly_params \
            or p.posonly_params:
        raise Refused(f"{fn.name.value} takes *args, **kwargs or keyword-only parameters")
    return [param.name.value for param in p.params]


def _ctx_call(stmt, ctx: str) -> tuple[str, cst.Call] | None:
    """`ctx.method(...)` as a whole statement: (method, call)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr):
        call = stmt.body[0].value
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and dotted(call.func.value) == ctx:
            return call.func.attr.value, call
    return None


def _ctx_store(stmt, ctx: str) -> tuple[str, cst.BaseExpression] | None:
    """`ctx.attr = value`: (attr, value)."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        assign = stmt.body[0]
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Attribute) \
                and dotted(assign.targets[0].target.value) == ctx:
            return assign.targets[0].target.attr.value, assign.value
    return None


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _names(node) -> set[str]:
    v = _Names()
    node.visit(v)
    return v.names


class _CtxReads(cst.CSTTransformer):
    """In backward: `ctx.saved_tensors` -> the tuple of what was saved, `ctx.attr` -> its value,
    `ctx.needs_input_grad[i]` -> whether input i is a floating-point tensor (see _needs_grad)."""
    def __init__(self, ctx: str, saved: cst.Tuple, attrs: dict, inputs: list[str], torch: str) -> None:
        super().__init__()
        self.ctx, self.saved, self.attrs = ctx, saved, attrs
        self.inputs, self.torch = inputs, torch
        self.left: list[str] = []

    def leave_Subscript(self, original, updated):
        # `ctx.needs_input_grad[1]`: the flag of that input itself (a tuple indexed by a literal)
        if isinstance(updated.value, cst.Tuple) and original.value is not updated.value \
                and isinstance(original.value, cst.Attribute) and original.value.attr.value == "needs_input_grad" \
                and dotted(original.value.value) == self.ctx \
                and len(updated.slice) == 1 and isinstance(updated.slice[0].slice, cst.Index) \
                and isinstance(updated.slice[0].slice.value, cst.Integer):
            i = int(updated.slice[0].slice.value.value, 0)
            if 0 <= i < len(updated.value.elements):
                return updated.value.elements[i].value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return updated

    def leave_Attribute(self, original, updated):
        if dotted(updated.value) != self.ctx:
            return updated
        attr = updated.attr.value
        if attr in ("saved_tensors", "saved_variables"):
            return self.saved
        if attr == "needs_input_grad":
            return cst.Tuple([cst.Element(_needs_grad(x, self.torch)) for x in self.inputs])
        if attr in self.attrs:
            value = self.attrs[attr]
            return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) \
                if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BaseNumber,
                                          cst.SimpleString, cst.Tuple)) else value
        self.left.append(attr)
        return updated


def _needs_grad(x: str, torch: str) -> cst.BaseExpression:
    """torch's ctx.needs_input_grad[i]: input i is a tensor that requires grad. bprop cannot know
    which inputs MindSpore differentiates; it computes the gradient of every floating-point
    tensor input (MindSpore drops those nobody asked for) and none for the others (integer
    tensors and Python values never require grad in torch): the gradients used are torch's."""
    return cst.parse_expression(f"isinstance({x}, {torch}.Tensor) and {torch}.is_floating_point({x})")


def _convert(cls: cst.ClassDef, torch: str) -> cst.ClassDef:
    forward, backward = _method(cls, "forward"), _method(cls, "backward")
    if forward is None or backward is None:
        raise Refused("no forward/backward pair (setup_context or vmap style)")
    if _method(cls, "setup_context") is not None or _method(cls, "jvp") is not None:
        raise Refused("setup_context / jvp have no bprop equivalent")
    fparams, bparams = _plain_params(forward), _plain_params(backward)
    if not fparams or not bparams:
        raise Refused("forward/backward without ctx")
    ctx, inputs = fparams[0], fparams[1:]
    bctx, grads = bparams[0], bparams[1:]

    # forward: ctx statements out, the rest is the Cell's forward
    body = list(forward.body.body)
    if not body or not isinstance(body[-1], cst.SimpleStatementLine) or not isinstance(body[-1].body[-1], cst.Return):
        raise Refused("forward does not end in one return")
    result = body[-1].body[-1].value
    saved: list[cst.BaseExpression] = []
    attrs: dict[str, cst.BaseExpression] = {}
    kept: list[cst.BaseStatement] = []
    for stmt in body[:-1]:
        call = _ctx_call(stmt, ctx)
        store = _ctx_store(stmt, ctx)
        if call is not None:
            method, node = call
            if method != "save_for_backward" or any(a.star or a.keyword for a in node.args):
                raise Refused(f"ctx.{method}(...) in forward")
            saved.extend(a.value for a in node.args)
        elif store is not None:
            attrs[store[0]] = store[1]
        else:
            if ctx in _names(stmt):
                raise Refused("forward uses ctx other than save_for_backward / ctx.attr = value")
            kept.append(stmt)
    if ctx in _names(body[-1]) or any(isinstance(s, cst.Return) for s in _returns(kept)):
        raise Refused("forward returns early or returns ctx")

    # what bprop knows: the inputs, `out` (the forward's result) and the output gradients
    outputs = result.elements if isinstance(result, cst.Tuple) else None
    out_of = {}
    if outputs is None and isinstance(result, cst.Name):
        out_of[result.value] = cst.Name("out")
    for i, el in enumerate(outputs or ()):
        if isinstance(el.value, cst.Name):
            out_of[el.value.value] = cst.parse_expression(f"out[{i}]")

    def rebuilt(expr):
        return out_of.get(expr.value, expr) if isinstance(expr, cst.Name) else expr

    saved_tuple = cst.Tuple([cst.Element(rebuilt(e)) for e in saved]) if saved else cst.Tuple([])
    reads = _CtxReads(bctx, saved_tuple, {k: rebuilt(v) for k, v in attrs.items()}, inputs, torch)
    bbody = backward.body.visit(reads)
    if reads.left or bctx in _names(bbody):
        what = f"ctx.{reads.left[0]}" if reads.left else "ctx"
        raise Refused(f"backward reads {what}, which bprop has no equivalent of")
    # `a, b = ctx.saved_tensors` saving inputs or recomputed values of the same names reads
    # `a, b = (a, b)`: dropped, so later rules see where `a` was made
    bbody = bbody.with_changes(body=[s for s in bbody.body if not _self_assignment(s)])
    # a saved intermediate of forward (neither input nor output) is recomputed first
    needed = (_names(saved_tuple) | set().union(*(_names(v) for v in attrs.values()))) - set(inputs) - {"out"}
    locals_ = set().union(*(_assigned(s) for s in kept)) if kept else set()
    prelude = kept if needed & locals_ else []

    # backward's returns: one gradient per input, None -> zeros
    gradients = _Gradients(inputs, torch)
    bbody = bbody.visit(gradients)
    if gradients.bad:
        raise Refused(gradients.bad)
    if len(grads) == 1:
        dout, unpack = grads[0], []
    else:
        dout = "dout"
        unpack = [cst.parse_statement(f"{', '.join(grads)}, = dout\n")]
    if "out" in inputs or "out" in grads or dout in inputs:
        raise Refused("a parameter named out/dout collides with bprop's")

    def params(names):
        return cst.Parameters([cst.Param(cst.Name(n)) for n in names])

    new_forward = forward.with_changes(decorators=[], params=params(["self", *inputs]),
                                       body=forward.body.with_changes(body=[*kept, body[-1]]))
    bprop = backward.with_changes(name=cst.Name("bprop"), decorators=[],
                                  params=params(["self", *inputs, "out", dout]),
                                  body=bbody.with_changes(body=[*prelude, *unpack, *bbody.body]))
    members = []
    for stmt in cls.body.body:
        if stmt is forward:
            members.append(new_forward)
        elif stmt is backward:
            members.append(bprop)
        else:
            members.append(stmt)
    base = cst.Arg(cst.parse_expression(f"{torch}.nn.Module"))
    return cls.with_changes(bases=[base], body=cls.body.with_changes(body=members))


def _self_assignment(stmt) -> bool:
    """`a, b = (a, b)` / `a, = (a,)` / `a = a`: names assigned to themselves."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
            and isinstance(stmt.body[0], cst.Assign) and len(stmt.body[0].targets) == 1):
        return False
    target, value = stmt.body[0].targets[0].target, stmt.body[0].value

    def names(node):
        if isinstance(node, cst.Name):
            return [node.value]
        if isinstance(node, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) and isinstance(e.value, cst.Name)
                                                           for e in node.elements):
            return [e.value.value for e in node.elements]
        return None

    left, right = names(target), names(value)
    return left is not None and left == right


def _returns(stmts):
    class V(cst.CSTVisitor):
        def __init__(self):
            self.found = []

        def visit_Return(self, node):
            self.found.append(node)

        def visit_FunctionDef(self, node):
            return False

    v = V()
    for s in stmts:
        s.visit(v)
    return v.found


def _assigned(stmt) -> set[str]:
    class V(cst.CSTVisitor):
        def __init__(self):
            self.names = set()

        def visit_AssignTarget(self, node):
            self.names |= _names(node.target)

        def visit_AugAssign(self, node):
            self.names |= _names(node.target)

    v = V()
    stmt.visit(v)
    return v.names


class _Gradients(cst.CSTTransformer):
    """`return g1, None` -> `return (g1, zeros for the second input)`: bprop returns a tuple with
    one gradient per input."""
    def __init__(self, inputs: list[str], torch: str) -> None:
        super().__init__()
        self.inputs, self.torch = inputs, torch
        self.bad = ""

    def visit_FunctionDef(self, node):
        return False

    def leave_Return(self, original, updated):
        value = updated.value
        values = [e.value for e in value.elements] if isinstance(value, cst.Tuple) else [value]
        if value is None or len(values) != len(self.inputs):
            self.bad = f"backward returns {len(values) if value is not None else 0} gradients for " \
                             f"{len(self.inputs)} inputs"
            return updated
        out = []
        for x, g in zip(self.inputs, values):
            if isinstance(g, cst.Name) and g.value == "None":
                g = cst.parse_expression(f"{self.torch}.zeros_like({x}) if isinstance({x}, {self.torch}.Tensor) else 0")
            out.append(cst.Element(g))
        return updated.with_changes(value=cst.Tuple(out))
