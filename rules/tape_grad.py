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
as before. A structural pass on torch names, before the table pass (and before the training-loop
pass, which leaves blocks with a backward pass to itself: a gradient taken inside a training
step, such as a gradient penalty, is left as it was and stays marked)."""
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
        if self.torch is None or any(_calls_method(s, "backward") for s in body):
            return None
        k, changed = 0, False
        while k < len(body):
            plan = self._plan(body, k)
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

    def _plan(self, body: list, k: int):
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
        if any(name in bound and code(bound[name]) not in ok for name, ok in _DEFAULTS.items()):
            return None
        inputs = _names(bound["inputs"])
        outputs = bound["outputs"]
        several = isinstance(outputs, (cst.Tuple, cst.List))
        if inputs is None or not inputs:
            return None
        chosen = self._slice(body[:k], inputs, reads(outputs))
        if not chosen:
            return None
        first = chosen[0]
        between = [i for i in range(first, k) if i not in chosen]
        moved_writes = set().union(*(writes(body[i]) for i in chosen))
        moved_reads = set().union(*(reads(body[i]) for i in chosen))
        for i in between:   # statements left in place, run before the moved ones: independent of them
            if reads(body[i]) & moved_writes or writes(body[i]) & (moved_writes | moved_reads):
                return None
        aux = sorted(moved_writes - set(_names(outputs) or ()))
        fn = fresh_name("msmigrate_outputs", self.taken)
        vjp = fresh_name("msmigrate_vjp", self.taken | {fn})
        self.taken |= {fn, vjp}
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
            hit = bool(reads(stmt) & tainted)
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
            if not _plain_assignment(before[i]) or w & set(inputs):
                return None
            chosen.append(i)
            need = (need - w) | (reads(before[i]) - set(inputs))
        return sorted(chosen)


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
    if isinstance(small, cst.Assign):
        return all(_names(t.target) is not None for t in small.targets)
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
