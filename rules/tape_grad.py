"""`torch.autograd.grad(outputs, inputs)` of outputs the same block computes from the inputs
(saliency maps, adversarial examples, derivatives of a function at points): torch reads the
recorded operations; MindSpore differentiates a function. The statements computing the outputs
from the inputs become a function of the inputs, run once through torch.func.vjp (its table
conversion is ms.vjp), and the call becomes the vjp of the cotangents (grad_outputs, or ones for
torch's scalar outputs):

    h = model(x)                              def msmigrate_outputs(x):
    loss = F.cross_entropy(h, y)     ->           h = model(x)
    g, = torch.autograd.grad(loss, x)              loss = F.cross_entropy(h, y)
                                                  return loss, (h,)
                                              loss, msmigrate_vjp, (h,) = torch.func.vjp(msmigrate_outputs, x, has_aux=True)
                                              g, = msmigrate_vjp(torch.ones_like(loss))

The names the moved statements bind come back as the auxiliary values, so later code reads them
as before. A structural pass on torch names, before the table pass and before the training-loop
pass. In a block with a backward pass (a training step) only `create_graph=True` gradients
convert: a derivative with respect to the input that the loss is built from (a PINN's residual
u_t + u*u_x - nu*u_xx, a second derivative taken of the first, a gradient penalty). MindSpore
differentiates the vjp again, in the second grad call and in the step's gradient with respect
to the weights; without create_graph torch's gradient is a constant there, and is left marked.
A second derivative's function computes the first one (its own vjp), so the first vjp's
function is not handed back as an auxiliary value. (MindSpore 2.10 does not compile such a
step: lint MSG119 leaves it in PyNative, MSC109.)

`loss.backward()` read through the `.grad` of a tensor the block made require grad (an FGSM
step's `data.requires_grad = True`, a saliency map's `x.requires_grad_()`) is first written as the
grad call it stands for (_input_backward), then converted the same way; torch's gradient is a
constant there, so this one converts inside a training step too (its vjp is data for the step:
ctx.input_gradients, rules/training_loop.py)."""
from __future__ import annotations

import libcst as cst

from msmigrate.dataflow import reads, writes
from msmigrate.names import PathTransformer, dotted, fresh_name, resolve, walk
from msmigrate.rules.bare_tensors import TrainableTensors, grad_uses, requires_grad_call, zeroed

GRAD = "torch.autograd.grad"
_ARGS = ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs", "allow_unused",
         "is_grads_batched", "materialize_grads")
# arguments that change what is computed: converted only at these values (source text)
_DEFAULTS = {"create_graph": ("False", "None"), "allow_unused": ("False", "None"), "is_grads_batched": ("False",),
             "materialize_grads": ("False",)}


class TapeGradPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return ("grad(" in source and "autograd" in source) or \
            (".backward(" in source and "requires_grad" in source and ".grad" in source)

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        self.imports = dict(ctx.names.imports)
        self.torch = next((name for name, q in self.imports.items() if q == "torch"), None)
        self.taken = set(ctx.names.taken) | set(self.imports)
        self.vjps: set[str] = set()   # names this pass gave vjp functions and the functions they differentiate
        self.fns: set[str] = set()
        self.constant: set[int] = set()   # grad calls written for a backward pass: torch's gradient is a constant
        # names some statement of the file makes a leaf requiring grad (an input whose .grad is read)
        # (not a loop's `p` over a network's parameters: `p.requires_grad = True` unfreezes them)
        looped = {t for n in walk(ctx.module) if isinstance(n, (cst.For, cst.CompFor)) for t in writes(n.target)}
        self.marked = {m[0] for n in walk(ctx.module) if isinstance(n, cst.SimpleStatementLine)
                       and (m := _marking(n, self.imports)) is not None} - looped
        self.scopes = [ctx.module]
        self._steps_guarded = None
        # only blocks holding a grad call (or a backward pass, where the file marks a tensor
        # requiring grad) are visited (and rebuilt)
        self.follow(ctx.module, lambda node, ancestors: isinstance(node, cst.Call) and (
            resolve(node.func, self.imports) == GRAD or (self.marked and isinstance(node.func, cst.Attribute)
                                                         and node.func.attr.value == "backward")))

    def visit_FunctionDef(self, node) -> None:
        self.scopes.append(node)

    def leave_FunctionDef(self, original, updated):
        self.scopes.pop()
        return updated

    def leave_Module(self, original, updated):
        body = self._block(list(updated.body), top=True)
        return updated if body is None else updated.with_changes(body=body)

    def leave_IndentedBlock(self, original, updated):
        body = self._block(list(updated.body))
        return updated if body is None else updated.with_changes(body=body)

    # ---- one block ----------------------------------------------------------------------
    def _block(self, body: list, top: bool = False) -> list | None:
        """The block with its grad calls converted; None when none is (nodes left as they are
        keep their source positions)."""
        if self.torch is None:
            return None
        changed = False
        k = 0
        while self.marked and k < len(body):
            new = self._input_backward(body, k, top)
            # converted with its vjp, or left as it was (the training-loop pass marks it)
            plan = self._plan(*new) if new is not None else None
            if plan is None:
                k += 1
                continue
            (body, k), changed = plan, True
        in_step = any(_calls_method(s, "backward") for s in body)
        k = 0
        while k < len(body):
            plan = self._plan(body, k, in_step)
            if plan is None:
                k += 1
                continue
            (body, k), changed = plan, True
        return body if changed else None

    def _grad_call(self, stmt) -> cst.Call | None:
        """The torch.autograd.grad call a simple statement evaluates (`g = grad(...)`,
        `g, = grad(...)`, `g = grad(...)[0]`, `return grad(...)[0]`)."""
        if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1
                and isinstance(stmt.body[0], (cst.Assign, cst.Expr, cst.Return))):
            return None
        value = stmt.body[0].value
        if isinstance(value, cst.Subscript):
            value = value.value
        if isinstance(value, cst.Call) and resolve(value.func, self.imports) == GRAD:
            return value
        return None

    def _plan(self, body: list, k: int, in_step: bool = False):
        call = self._grad_call(body[k])
        if call is None or any(a.star for a in call.args):
            return None
        bound = {}
        for i, a in enumerate(call.args):
            name = a.keyword.value if a.keyword else (_ARGS[i] if i < len(_ARGS) else None)
            if name is None:
                return None
            bound[name] = a.value
        if "outputs" not in bound or "inputs" not in bound:
            return None
        code = cst.Module([]).code_for_node
        create_graph = "create_graph" in bound and code(bound["create_graph"]) == "True"
        constant = id(body[k]) in self.constant
        if in_step and not create_graph and not constant:
            return None   # a constant in torch's graph: MindSpore's vjp would be differentiated
        # allow_unused=True: torch's None for an input the outputs do not read; checked below
        unused_ok = "allow_unused" in bound and code(bound["allow_unused"]) == "True"
        if any(name in bound and code(bound[name]) not in ok and not (name == "create_graph" and create_graph)
               and not (name == "allow_unused" and unused_ok) for name, ok in _DEFAULTS.items()):
            return None
        inputs = _names(bound["inputs"])
        outputs = bound["outputs"]
        several = isinstance(outputs, (cst.Tuple, cst.List))
        if inputs is None or not inputs:
            return None
        chosen = self._slice(body[:k], inputs, reads(outputs))
        if not chosen:
            return None
        if unused_ok and not all(any(name in self._reads(body[i]) for i in chosen) for name in inputs):
            return None   # an input the outputs may not read: torch gives None, a vjp zeros
        # the function of a first derivative moved in goes with its vjp (nothing else calls it)
        called = set().union(*(self._reads(body[i]) for i in chosen))
        chosen = sorted(set(chosen) | {i for i, s in enumerate(body[:k]) if isinstance(s, cst.FunctionDef)
                                       and s.name.value in self.fns and s.name.value in called})
        first = chosen[0]
        if self.vjps & set().union(*(self._reads(body[i]) | writes(body[i]) for i in chosen)):
            # a derivative of a derivative: the plain assignments reading what an earlier grad's
            # statements bound (a sibling derivative, u_t beside u_x of the same u) move in too,
            # their values handed back as auxiliary values
            grown = True
            while grown:
                moved_writes = set().union(*(writes(body[i]) for i in chosen))
                extra = {i for i in range(first, k) if i not in chosen and self._reads(body[i]) & moved_writes
                         and _plain_assignment(body[i]) and not writes(body[i]) & set(inputs)}
                grown = bool(extra)
                chosen = sorted(set(chosen) | extra)
        between = [i for i in range(first, k) if i not in chosen]
        moved_writes = set().union(*(writes(body[i]) for i in chosen))
        moved_reads = set().union(*(self._reads(body[i]) for i in chosen))
        # statements left in place run before the moved ones when independent of them; for an
        # input's gradient of a backward pass, those reading what the moved ones compute (`pred =
        # out.argmax(1)` between the network call and the loss) run after them, reading the values
        # handed back, when the moved ones read nothing they change and nothing they do can leave
        # the block
        after, after_reads, after_writes = [], set(), set()
        for i in between:
            r, w = self._reads(body[i]), writes(body[i])
            if w & (moved_writes | moved_reads):
                return None
            if not (r & (moved_writes | after_writes) or w & (after_reads | after_writes)):
                continue
            if not constant or _leaves_block(body[i]) or r & set().union(*(writes(body[j]) for j in chosen if j > i)):
                return None   # (a create_graph gradient's: only as before)
            after.append(i)
            after_reads |= r
            after_writes |= w
        between = [i for i in between if i not in after]
        # the vjps (and their functions) of grads moved in (a second derivative's): used there only
        aux = sorted(moved_writes - set(_names(outputs) or ()) - self.vjps - self.fns)
        fn = fresh_name("msmigrate_outputs", self.taken)
        vjp = fresh_name("msmigrate_vjp", self.taken | {fn})
        self.taken |= {fn, vjp}
        self.vjps.add(vjp)
        self.fns.add(fn)
        moved = [body[i] for i in chosen]
        result = code(cst.Tuple(outputs.elements) if isinstance(outputs, cst.List) else outputs)
        aux_tuple = "(" + "".join(f"{n}, " for n in aux).rstrip(" ") + ")"
        returned, aux_target, has_aux = (f"{result}, {aux_tuple}", f", {aux_tuple}", ", has_aux=True") if aux else (result, "", "")
        template = cst.parse_statement(f"def {fn}({', '.join(inputs)}):\n    return {returned}\n")
        define = template.with_changes(leading_lines=moved[0].leading_lines, body=template.body.with_changes(
            body=[moved[0].with_changes(leading_lines=[]), *moved[1:], template.body.body[-1]]))
        out_names = _names(outputs)
        if several and out_names is None:
            return None
        if out_names is not None:
            target = ("(" + ", ".join(out_names) + ",)") if several else out_names[0]
        else:
            target = fresh_name("msmigrate_outputs_value", self.taken)
            self.taken.add(target)
        run = cst.parse_statement(f"{target}, {vjp}{aux_target} = {self.torch}.func.vjp({fn}, "
                                  f"{', '.join(inputs)}{has_aux})\n")
        if "grad_outputs" in bound and code(bound["grad_outputs"]) != "None":
            cotangents = code(bound["grad_outputs"])
            if several and not isinstance(bound["grad_outputs"], (cst.Tuple, cst.List)):
                return None
        elif several:
            cotangents = "(" + "".join(f"{self.torch}.ones_like({n}), " for n in out_names).rstrip(" ") + ")"
        else:
            cotangents = f"{self.torch}.ones_like({target})"
        if several and isinstance(bound.get("grad_outputs"), cst.List):
            cotangents = f"tuple({cotangents})"
        new_call = cst.parse_expression(f"{vjp}({cotangents})")
        stmt = body[k]
        value = stmt.body[0].value
        value = value.with_changes(value=new_call) if isinstance(value, cst.Subscript) else new_call
        stmt = stmt.with_changes(body=[stmt.body[0].with_changes(value=value)])
        rest = [body[i] for i in between]
        later = [body[i] for i in after]
        if constant:   # data for a training step of the block: computed before it (rules/training_loop.py)
            self.ctx.input_gradients |= {fn, vjp}
        new_body = [*body[:first], *rest, define, run, *later, stmt, *body[k + 1:]]
        return new_body, first + len(rest) + len(later) + 3

    # ---- backward passes taken for an input's gradient ----------------------------------
    def _input_backward(self, body: list, k: int, top: bool = False) -> tuple[list, int] | None:
        """`loss.backward()` whose gradients the block reads from tensors it made leaves that
        require grad (an FGSM step's `data.requires_grad = True` ... `data.grad.sign()`, a
        saliency map's `x.grad.abs()`): the block with the pass written as the grad call it
        stands for, `data_grad, = torch.autograd.grad(loss, data)`, which _plan turns into a vjp.
        The markings go (a vjp differentiates with respect to its function's arguments), the
        reads of `data.grad` become the gradient's name, detached (a constant in torch's graph).
        None when something else may see what the pass leaves behind: another read of the
        tensor's gradient, the parameters' gradients reaching an update, arguments other than
        the gradient. Returned with the grad call's index."""
        call = _backward_call(body[k])
        if call is None:
            return None
        cotangent = None
        for i, a in enumerate(call.args):
            if (a.keyword.value if a.keyword else ("gradient" if i == 0 else None)) != "gradient" or a.star:
                return None   # retain_graph, create_graph, inputs: left to the training-loop pass
            cotangent = a.value
        end = next((j for j in range(k + 1, len(body)) if _calls_method(body[j], "backward")), len(body))
        region = body[k + 1:end]
        marks: dict[str, list[int]] = {}
        for j in range(k):
            m = _marking(body[j], self.imports)
            if m is not None:
                marks.setdefault(m[0], []).append(j)
        inputs = [n for n in marks if n in self.marked and any(grad_uses(s, {n: 0}) for s in region)]
        if not inputs or not self._parameter_gradients_dropped(body, k, inputs):
            return None
        if top and self.ctx.module.code.count(".backward(") == 1 and set(inputs) <= set(self._trainable()):
            return None   # the file's one backward pass, at its top level: tensors trained by hand (rules/bare_tensors.py)
        scope = self.scopes[-1]
        drop: set[int] = set()
        for n in inputs:
            if any(n in writes(body[j]) for j in range(marks[n][-1] + 1, k)):
                return None   # rebound after it was made a leaf: torch reads another tensor's .grad
            if grad_uses(scope, {n: 0})[n] != sum(grad_uses(s, {n: 0})[n] for s in region):
                return None   # its gradient read elsewhere too
            attrs = sum(1 for x in walk(scope) if isinstance(x, cst.Attribute) and x.attr.value == "requires_grad"
                        and dotted(x.value) == n)
            if attrs != sum(1 for j in range(k) if _marking(body[j], self.imports) == (n, None)
                            and isinstance(body[j].body[0], cst.Assign)):
                return None   # `if x.requires_grad:` reads the marking
            if any(_changes_in_place(s, n) for s in region):
                return None   # updated by hand: a tensor trained by hand (rules/bare_tensors.py)
            cleared = rebound = False
            for j, s in enumerate(region):
                if zeroed(s, {n: 0}) == n:
                    cleared = True
                    drop.add(j)
                    continue
                if grad_uses(s, {n: 0})[n] and (cleared or rebound or _changes_grad(s, n)):
                    return None
                rebound = rebound or n in writes(s)
        taken = lambda base: fresh_name(base, self.taken)  # noqa: E731
        targets = {n: taken(f"{n}_grad") for n in inputs}
        self.taken |= set(targets.values())
        # `data_grad = data.grad.data` right after the pass: the gradient's own name
        first = region[0] if region and 0 not in drop else None
        if len(inputs) == 1 and first is not None and sum(grad_uses(s, {inputs[0]: 0})[inputs[0]] for s in region) == 1:
            named = _grad_named(first, inputs[0])
            if named is not None:
                targets[inputs[0]] = named
                drop.add(0)
        code = cst.Module([]).code_for_node
        receiver = call.func.value
        outputs = code(receiver) if isinstance(receiver, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) \
            else f"({code(receiver)})"
        wrt = inputs[0] if len(inputs) == 1 else "(" + ", ".join(inputs) + ")"
        extra = f", grad_outputs={code(cotangent)}" if cotangent is not None else ""
        names = ", ".join(targets[n] for n in inputs) + ("," if len(inputs) == 1 else "")
        grad = cst.parse_statement(f"{names} = {self.torch}.autograd.grad({outputs}, {wrt}{extra})\n")
        grad = grad.with_changes(leading_lines=body[k].leading_lines)
        detach = [cst.parse_statement(f"{targets[n]} = {targets[n]}.detach()\n") for n in inputs]
        reads_ = _GradReads({n: targets[n] for n in inputs})
        # (statements reading no gradient stay the original nodes, with their positions)
        new_region = [None if j in drop else s.visit(reads_) if any(grad_uses(s, {n: 0}) for n in inputs) else s
                      for j, s in enumerate(region)]
        before = list(body[:k])
        for n in inputs:
            for j in marks[n]:
                before[j] = _marking(before[j], self.imports)[1]
        for j in range(min(marks[n][0] for n in inputs), k):   # `model.zero_grad()` beside the pass: no
            if before[j] is not None and _zero_grad_call(before[j]):   # gradients kept in MindSpore
                before[j] = None
        before = _without(before, body[:k], grad)
        grad = before.pop()
        self.constant.add(id(grad))
        following = body[end] if end < len(body) else None
        new_region = _without(new_region, region, following)
        after = [new_region.pop(), *body[end + 1:]] if following is not None else []
        return [*before, grad, *detach, *new_region, *after], len(before)

    def _trainable(self) -> dict:
        if getattr(self, "_trainable_scan", None) is None:
            self._trainable_scan = TrainableTensors(self.imports)
            self.ctx.module.visit(self._trainable_scan)
        return self._trainable_scan.bindings

    def _parameter_gradients_dropped(self, body: list, k: int, inputs: list[str]) -> bool:
        """Whether the gradients the backward pass at body[k] leaves on the parameters reach
        nothing: a zero_grad() follows it in the block before any update or read of another
        gradient; or, when the block ends first, every optimizer step of the
        file comes after a zero_grad() of its own block with no call of a function of the file
        taking a backward pass between them, and the file reads no other tensor's .grad."""
        for s in body[k + 1:]:
            if _backward_call(s) is None and _zero_grad_call(s):
                return True
            text = cst.Module([]).code_for_node(s)
            if ".step(" in text or _other_grads(s, self.marked):
                return False   # (a backward pass alone adds up gradients the next zero_grad clears)
        if self._steps_guarded is None:
            self._steps_guarded = self._every_step_guarded()
        return self._steps_guarded

    def _every_step_guarded(self) -> bool:
        module = self.ctx.module
        if _other_grads(module, self.marked):
            return False
        code = module.code_for_node
        backward_fns = {f.name.value for f in walk(module) if isinstance(f, cst.FunctionDef)
                        and ".backward(" in code(f.body)}
        schedulers = {dotted(t.target) for n in walk(module) if isinstance(n, cst.Assign) and isinstance(n.value, cst.Call)
                      and (resolve(n.value.func, self.imports) or "").startswith("torch.optim.lr_scheduler.")
                      for t in n.targets}
        stepped = lambda call: isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and \
            call.func.attr.value == "step" and dotted(call.func.value) not in schedulers  # noqa: E731
        blocks = [module.body] + [n.body for n in walk(module) if isinstance(n, cst.IndentedBlock)]
        top_steps = 0
        for block in blocks:
            for i, s in enumerate(block):
                if not (_step_call(s) and stepped(s.body[0].value)):
                    continue
                top_steps += 1
                z = next((j for j in range(i - 1, -1, -1) if _zero_grad_call(block[j])), None)
                if z is None:
                    return False
                for between in block[z + 1:i]:
                    if any(isinstance(c, cst.Call) and (dotted(c.func) or "").rsplit(".", 1)[-1] in backward_fns
                           for c in walk(between)):
                        return False
        # a step under an `if` (accumulation) or in an expression: not followed
        return top_steps == sum(1 for c in walk(module) if stepped(c))

    def _slice(self, before: list, inputs: list[str], needed: set[str]) -> list[int] | None:
        """Indices of the statements computing `needed` from the inputs (in order), or None when
        one of them is not a plain assignment or rebinds an input."""
        tainted = set(inputs)
        depends = []
        for stmt in before:
            hit = bool(self._reads(stmt) & tainted)
            if hit:
                tainted |= writes(stmt)
            depends.append(hit)
        chosen = []
        need = set(needed)
        for i in range(len(before) - 1, -1, -1):
            w = writes(before[i])
            if not (w & need):
                continue
            if not depends[i]:
                need -= w   # a value that does not change with the inputs: read as it is
                continue
            generated = isinstance(before[i], cst.FunctionDef) and before[i].name.value in self.fns
            if not (_plain_assignment(before[i]) or generated) or w & set(inputs):
                return None
            chosen.append(i)
            need = (need - w) | (self._reads(before[i]) - set(inputs))
        return sorted(chosen)


    def _reads(self, stmt) -> set[str]:
        """The names a statement reads; for a function this pass wrote (a first derivative's,
        moved into a second's), the names its body reads from outside (`x` of
        `def f(t): u = model(hstack([x, t]))`): a derivative with respect to `x` depends on it."""
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.fns:
            params = {p.name.value for p in stmt.params.params}
            inner = stmt.body.body
            return set().union(*(reads(b) for b in inner)) - params - set().union(*(writes(b) for b in inner))
        return reads(stmt)


def _names(node) -> list[str] | None:
    """`x` -> ['x']; `(x, w)` / `[x, w]` -> ['x', 'w']; anything else -> None."""
    if isinstance(node, cst.Name):
        return [node.value]
    if isinstance(node, (cst.Tuple, cst.List)):
        found = [e.value.value for e in node.elements if isinstance(e, cst.Element) and isinstance(e.value, cst.Name)]
        return found if len(found) == len(node.elements) else None
    return None


def _plain_assignment(stmt) -> bool:
    """`a = ...` / `a, b = ...` / `a += ...` on names: nothing else changes."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return False
    small = stmt.body[0]
    if isinstance(small, cst.Assign):   # `a, vjp, (b,) = ...` (a vjp with auxiliary values) too
        return all(_target_names(t.target) for t in small.targets)
    if isinstance(small, (cst.AugAssign, cst.AnnAssign)):
        return isinstance(small.target, cst.Name)
    return False


def _calls_method(stmt, name: str) -> bool:
    found = []

    class _V(cst.CSTVisitor):
        def visit_Call(self, node) -> None:
            if isinstance(node.func, cst.Attribute) and node.func.attr.value == name:
                found.append(node)

    stmt.visit(_V())
    return bool(found)


def _target_names(node) -> bool:
    """Whether an assignment target binds names only (`a`, `a, b`, `a, f, (b, c)`)."""
    if isinstance(node, cst.Name):
        return True
    if isinstance(node, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and _target_names(e.value) for e in node.elements)
    return False


def _backward_call(stmt) -> cst.Call | None:
    """The call of a statement `<tensor>.backward(...)`."""
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr):
        value = stmt.body[0].value
        if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value == "backward":
            return value
    return None


def _method_call_stmt(stmt, method: str) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and \
        isinstance(stmt.body[0], cst.Expr) and isinstance(stmt.body[0].value, cst.Call) and \
        isinstance(stmt.body[0].value.func, cst.Attribute) and stmt.body[0].value.func.attr.value == method


def _zero_grad_call(stmt) -> bool:
    """`optimizer.zero_grad()` / `model.zero_grad(set_to_none=True)` as a statement."""
    return _method_call_stmt(stmt, "zero_grad")


def _step_call(stmt) -> bool:
    return _method_call_stmt(stmt, "step")


def _other_grads(node, names: set[str]) -> bool:
    """Whether `node` names the `.grad` of anything but these tensors (`p.grad` of a parameter)."""
    return any(isinstance(n, cst.Attribute) and n.attr.value == "grad" and not
               (isinstance(n.value, cst.Name) and n.value.value in names) and
               not (dotted(n.value) or "").endswith("autograd") for n in walk(node))


def _marking(stmt, imports: dict) -> tuple[str, object] | None:
    """(name, the statement without it: None when nothing is left) for a statement making a
    tensor a leaf that requires grad: `x.requires_grad = True`, `x.requires_grad_()`,
    `x = y.clone().detach().requires_grad_(True)`, `x = torch.tensor(..., requires_grad=True)`."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Expr) and requires_grad_call(small.value) and isinstance(small.value.func.value, cst.Name):
        return small.value.func.value.value, None
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    target = small.targets[0].target
    if isinstance(target, cst.Attribute) and target.attr.value == "requires_grad" and \
            isinstance(target.value, cst.Name) and isinstance(small.value, cst.Name) and small.value.value == "True":
        return target.value.value, None
    if not isinstance(target, cst.Name):
        return None
    value = small.value
    if requires_grad_call(value):
        return target.value, stmt.with_changes(body=[small.with_changes(value=value.func.value)])
    if isinstance(value, cst.Call) and (resolve(value.func, imports) or "").startswith("torch."):
        keep = [a for a in value.args if not (a.keyword is not None and a.keyword.value == "requires_grad"
                                              and isinstance(a.value, cst.Name) and a.value.value == "True")]
        if len(keep) < len(value.args):
            if keep:
                keep[-1] = keep[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
            return target.value, stmt.with_changes(body=[small.with_changes(value=value.with_changes(args=keep))])
    return None


def _grad_access(node, name: str) -> bool:
    """`name.grad`, `name.grad.data`."""
    while isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == "grad" and isinstance(node.value, cst.Name) \
        and node.value.value == name


def _grad_named(stmt, name: str) -> str | None:
    """`g = x.grad` (`.data`, `.detach()`, `.clone()` after it) as a statement: g."""
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign)):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    value = assign.value
    while isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) and \
            value.func.attr.value in ("detach", "clone"):
        value = value.func.value
    return assign.targets[0].target.value if _grad_access(value, name) else None


def _changes_grad(stmt, name: str) -> bool:
    """Whether a statement writes `name.grad` (assigned, changed in place)."""
    for n in walk(stmt):
        if isinstance(n, (cst.AssignTarget, cst.AugAssign)) and any(_grad_access(t, name) for t in walk(n.target)):
            return True
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value.endswith("_") \
                and not n.func.attr.value.endswith("__") and _grad_access(n.func.value, name):
            return True
    return False


def _without(stmts: list, originals: list, following) -> list:
    """`stmts` without its Nones (statements that go), their comments and blank lines kept on
    the next statement left (`following` last: returned at the end, with them, when given)."""
    out, carried = [], []
    for stmt, original in zip(stmts, originals):
        if stmt is None:
            carried += list(original.leading_lines)
            continue
        out.append(stmt.with_changes(leading_lines=[*carried, *stmt.leading_lines]) if carried else stmt)
        carried = []
    if following is not None:
        out.append(following.with_changes(leading_lines=[*carried, *following.leading_lines]) if carried else following)
    return out


def _changes_in_place(stmt, name: str) -> bool:
    """Whether a statement updates the tensor `name` in place (`name -= ...`, `name.data = ...`,
    `name.sub_(...)`, `name.data.add_(...)`); rebinding the name (`x = x + ...`) is no update."""
    for n in walk(stmt):
        if isinstance(n, cst.AugAssign) and isinstance(n.target, cst.Name) and n.target.value == name:
            return True
        if isinstance(n, (cst.AssignTarget, cst.AugAssign)) and isinstance(n.target, cst.Attribute) and \
                n.target.attr.value == "data" and dotted(n.target.value) == name:
            return True
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value.endswith("_") and \
                not n.func.attr.value.endswith("__") and dotted(n.func.value) in (name, f"{name}.data"):
            return True
    return False


def _leaves_block(stmt) -> bool:
    return any(isinstance(n, (cst.Return, cst.Break, cst.Continue, cst.Raise, cst.Yield)) for n in walk(stmt))


class _GradReads(cst.CSTTransformer):
    """`x.grad` / `x.grad.data` -> the gradient's name."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def leave_Attribute(self, original, updated):
        for name, grad in self.names.items():
            if _grad_access(original, name):
                return cst.Name(grad)
        return updated
