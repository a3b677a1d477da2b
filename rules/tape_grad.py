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
step: lint MSG119 leaves it in PyNative, MSC109.)"""
from __future__ import annotations

import libcst as cst

from msmigrate.dataflow import reads, writes
from msmigrate.names import PathTransformer, fresh_name, resolve

GRAD = "torch.autograd.grad"
_ARGS = ("outputs", "inputs", "grad_outputs", "retain_graph", "create_graph", "only_inputs", "allow_unused",
         "is_grads_batched", "materialize_grads")
# arguments that change what is computed: converted only at these values (source text)
_DEFAULTS = {"create_graph": ("False", "None"), "allow_unused": ("False", "None"), "is_grads_batched": ("False",),
             "materialize_grads": ("False",)}


class TapeGradPass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "grad(" in source and "autograd" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.imports = dict(ctx.names.imports)
        self.torch = next((name for name, q in self.imports.items() if q == "torch"), None)
        self.taken = set(ctx.names.taken) | set(self.imports)
        self.vjps: set[str] = set()   # names this pass gave vjp functions and the functions they differentiate
        self.fns: set[str] = set()
        # only blocks holding a grad call are visited (and rebuilt)
        self.follow(ctx.module, lambda node, ancestors: isinstance(node, cst.Call)
                    and resolve(node.func, self.imports) == GRAD)

    def leave_Module(self, original, updated):
        body = self._block(list(updated.body))
        return updated if body is None else updated.with_changes(body=body)

    def leave_IndentedBlock(self, original, updated):
        body = self._block(list(updated.body))
        return updated if body is None else updated.with_changes(body=body)

    # ---- one block ----------------------------------------------------------------------
    def _block(self, body: list) -> list | None:
        """The block with its grad calls converted; None when none is (nodes left as they are
        keep their source positions)."""
        if self.torch is None:
            return None
        in_step = any(_calls_method(s, "backward") for s in body)
        k, changed = 0, False
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
        if in_step and not create_graph:
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
        for i in between:   # statements left in place, run before the moved ones: independent of them
            if self._reads(body[i]) & moved_writes or writes(body[i]) & (moved_writes | moved_reads):
                return None
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
        new_body = [*body[:first], *rest, define, run, stmt, *body[k + 1:]]
        return new_body, first + len(rest) + 3

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
