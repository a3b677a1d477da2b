"""HF `accelerate` on one process is plain torch: `accelerator.prepare(a, b)` hands back its
arguments, `accelerator.backward(loss)` is `loss.backward()`, `accelerator.print` is `print`, and
so on. This structural pass (first, on torch names) rewrites such programs into the plain torch
they stand for, so that the training-loop and table passes convert them like any other program.

Only an `Accelerator(...)` whose arguments keep single-process semantics is rewritten; mixed
precision, gradient accumulation and the other features that change what a step computes are
left, marked, and the file then stops at its top (accelerate imports torch: MSC108)."""
from __future__ import annotations

import libcst as cst

from msmigrate.names import PathTransformer, bound_name, dotted

ACCELERATOR = "accelerate.Accelerator"
# Accelerator(...) arguments that do not change what a single-process program computes
NEUTRAL_ARGUMENTS = {"cpu", "log_with", "project_dir", "project_config", "device_placement", "split_batches",
                     "step_scheduler_with_optimizer", "even_batches", "dispatch_batches", "rng_types",
                     "kwargs_handlers", "dataloader_config"}
# ... and these with their no-op values
NEUTRAL_VALUES = {"mixed_precision": ("'no'", '"no"', "None"), "gradient_accumulation_steps": ("1",)}

RETURNS_ITS_ARGUMENT = {"unwrap_model", "gather", "gather_for_metrics", "reduce", "pad_across_processes",
                        "prepare_model", "prepare_optimizer", "prepare_scheduler", "prepare_data_loader"}
PYTHON_BUILTIN = {"print": "print"}
TORCH_FUNCTION = {"clip_grad_norm_": "nn.utils.clip_grad_norm_", "clip_grad_value_": "nn.utils.clip_grad_value_",
                  "save": "save"}
NO_OP_STATEMENTS = {"wait_for_everyone", "free_memory", "end_training", "init_trackers", "log",
                    "register_for_checkpointing"}
CONSTANTS = {"is_main_process": "True", "is_local_main_process": "True", "is_last_process": "True",
             "num_processes": "1", "process_index": "0", "local_process_index": "0", "sync_gradients": "True",
             "use_distributed": "False"}


class AcceleratePass(PathTransformer):
    @staticmethod
    def applies(source: str) -> bool:
        return "accelerate" in source and "Accelerator" in source

    def __init__(self, ctx) -> None:
        super().__init__()
        self.ctx = ctx
        imports = ctx.names.imports
        self.torch = bound_name(imports, "torch")
        self.classes = {b for b, q in imports.items() if q == ACCELERATOR}
        self.accelerators: set[str] = set()   # names holding an Accelerator this pass rewrites
        self.kept: set[str] = set()           # ... and those it leaves (marked)
        self.left: set[str] = set()           # rewritten accelerators still used some other way
        self._find_accelerators(ctx.module)
        # only the way to the accelerators' names is rebuilt (a rebuilt statement loses its position)
        names = self.accelerators | self.kept
        self.follow(ctx.module, lambda node, ancestors: isinstance(node, cst.Name) and node.value in names)

    # the Accelerator objects -----------------------------------------------------------
    def _find_accelerators(self, module: cst.Module) -> None:
        if not self.classes:
            return
        for stmt in _statements(module):
            target, call = _assigned_call(stmt)
            if target is None or dotted(call.func) not in self.classes:
                continue
            if all(_neutral(a) for a in call.args):
                self.accelerators.add(target)
            else:
                self.kept.add(target)
        self.ctx.not_tensors |= self.accelerators | self.kept   # `accelerator.backward(loss)` is no Tensor.backward

    # uses ------------------------------------------------------------------------------
    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        owner, method = _method(updated)
        if owner not in self.accelerators:
            return updated
        args = updated.args
        if method == "backward" and len(args) == 1 and args[0].keyword is None:
            return cst.Call(cst.Attribute(args[0].value, cst.Name("backward")))
        if method in RETURNS_ITS_ARGUMENT and args and args[0].keyword is None:
            return args[0].value
        if method in PYTHON_BUILTIN:
            return updated.with_changes(func=cst.Name(PYTHON_BUILTIN[method]))
        if method in TORCH_FUNCTION and self.torch is not None:
            return updated.with_changes(func=cst.parse_expression(f"{self.torch}.{TORCH_FUNCTION[method]}"))
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.BaseExpression:
        if dotted(updated.value) in self.accelerators:
            if updated.attr.value in CONSTANTS:
                return cst.parse_expression(CONSTANTS[updated.attr.value])
            if updated.attr.value == "device" and self.torch is not None:
                return cst.parse_expression(f'{self.torch}.device("cpu")')
        return updated

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        # model, optimizer = accelerator.prepare(model, optimizer) -> model, optimizer = model, optimizer
        owner, method = _method(updated.value) if isinstance(updated.value, cst.Call) else (None, None)
        if owner in self.accelerators and method == "prepare":
            values = [a.value for a in updated.value.args if a.keyword is None and not a.star]
            if len(values) == len(updated.value.args):
                value = values[0] if len(values) == 1 else cst.Tuple([cst.Element(v) for v in values])
                return updated.with_changes(value=value)
        return updated

    def leave_SimpleStatementLine(self, original, updated):
        body = []
        for small in updated.body:
            call = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
            owner, method = _method(call) if call is not None else (None, None)
            if owner in self.accelerators and method in NO_OP_STATEMENTS:
                continue
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and _same(small.targets[0].target, small.value):
                continue   # `model = model`, left by prepare()
            body.append(small)
        if not body:
            return cst.RemoveFromParent()
        if any(_assigned_call(small)[0] in self.kept for small in body):
            updated = self._flag(original, updated)
        return updated.with_changes(body=body) if len(body) != len(updated.body) else updated

    def _flag(self, original, stmt):
        found = self.ctx.positions.get(original)
        line, col = (found.start.line, found.start.column + 1) if found is not None else (1, 1)
        marker = self.ctx.reporter.flag(
            "manual", f"{ACCELERATOR}: its arguments (mixed precision, gradient accumulation, ...) change what "
                      "a training step computes: port the program to a plain MindSpore step by hand", line, col)
        if any(ln.comment is not None and ln.comment.value == marker for ln in stmt.leading_lines):
            return stmt
        return stmt.with_changes(leading_lines=[*stmt.leading_lines, cst.EmptyLine(comment=cst.Comment(marker))])

    def leave_Module(self, original: cst.Module, updated: cst.Module) -> cst.Module:
        if not self.accelerators:
            return updated
        still = _names_used(updated, self.accelerators) & self.accelerators
        # the Accelerator itself goes when nothing uses it any more (its import with it)
        done = self.accelerators - still
        return updated.visit(_DropDefinitions(updated, done, self.classes if not (still | self.kept) else set()))


class _DropDefinitions(PathTransformer):
    def __init__(self, module: cst.Module, names: set[str], classes: set[str]) -> None:
        super().__init__()
        self.names, self.classes = names, classes
        self.follow(module, lambda node, ancestors: isinstance(node, cst.SimpleStatementLine) and any(
            _assigned_call(small)[0] in names or
            (isinstance(small, cst.ImportFrom) and classes and dotted(small.module or cst.Name("_")) == "accelerate")
            for small in node.body))

    def leave_SimpleStatementLine(self, original, updated):
        body = []
        for small in updated.body:
            target, _ = _assigned_call(small)
            if target in self.names:
                continue
            if isinstance(small, cst.ImportFrom) and self.classes and not isinstance(small.names, cst.ImportStar) \
                    and dotted(small.module or cst.Name("_")) == "accelerate":
                kept = [a for a in small.names if (dotted(a.asname.name) if a.asname else dotted(a.name)) not in self.classes]
                if not kept:
                    continue
                if len(kept) != len(small.names):
                    kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
                    small = small.with_changes(names=kept)
            body.append(small)
        if not body:
            return cst.RemoveFromParent()
        return updated.with_changes(body=body) if body != list(updated.body) else updated


def _statements(module: cst.Module):
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            yield from stmt.body
        elif isinstance(stmt, (cst.If, cst.FunctionDef)) and isinstance(stmt.body, cst.IndentedBlock):
            for inner in stmt.body.body:   # `if __name__ == "__main__":` / def main(): one level down
                if isinstance(inner, cst.SimpleStatementLine):
                    yield from inner.body


def _assigned_call(small) -> tuple[str | None, cst.Call | None]:
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Call):
        return dotted(small.targets[0].target), small.value
    return None, None


def _same(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    code = cst.Module([]).code_for_node
    strip = str.maketrans("", "", " ()\n")
    return code(a).translate(strip) == code(b).translate(strip)


def _neutral(arg: cst.Arg) -> bool:
    if arg.keyword is None:
        return False
    name = arg.keyword.value
    if name in NEUTRAL_ARGUMENTS:
        return True
    code = cst.Module([]).code_for_node(arg.value)
    return code in NEUTRAL_VALUES.get(name, ())


def _method(call: cst.Call) -> tuple[str | None, str | None]:
    if isinstance(call.func, cst.Attribute):
        return dotted(call.func.value), call.func.attr.value
    return None, None


def _names_used(module: cst.Module, defined: set[str]) -> set[str]:
    """Names the module reads, not counting the assignments that define `defined`."""
    found: set[str] = set()

    class _Visitor(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            found.add(node.value)

        def visit_Assign(self, node: cst.Assign) -> bool:
            if _assigned_call(node)[0] in defined:
                node.value.visit(self)
                return False
            return True

    module.visit(_Visitor())
    return found
