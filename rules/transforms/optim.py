"""Optimizers and LR schedulers: parameter arguments, torch Adam, OneCycleLR, momentum cycling."""
from __future__ import annotations

import re

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg, literal_value
from msmigrate.names import dotted, walk
from msmigrate.rules.generated import cells
from msmigrate.rules.transforms.common import generated_text
from msmigrate.rules.training_loop import _ParameterHolders, prefix_statement, prefixed_networks


class _TrainableParams(cst.CSTTransformer):
    """`m.parameters()` (rewritten by models.parameters) -> `m.trainable_params()`: eoptim must
    only see trainable parameters (BN statistics are Parameters too)."""

    def leave_Call(self, original, updated):
        func = updated.func
        if isinstance(func, cst.Name) and len(updated.args) == 1 and func.value in cells.NAMES:
            # models.parameters' rewrites of m.parameters() / m.named_parameters()
            cell = updated.args[0].value
            if func.value == "msmigrate_parameters":
                return cst.Call(cst.Attribute(cell, cst.Name("trainable_params")), [])
            updated = cst.Call(cst.Attribute(cell, cst.Name("parameters_and_names")), [])
            func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "get_parameters" and not updated.args:
            return updated.with_changes(func=func.with_changes(attr=cst.Name("trainable_params")))
        if isinstance(func, cst.Attribute) and func.attr.value == "parameters_and_names" and not updated.args:
            # named_parameters(): torch yields no buffers; MindSpore also yields BN statistics
            return cst.parse_expression("((n, p) for n, p in X if p.requires_grad)").with_changes(
                for_in=cst.parse_expression("((n, p) for n, p in X if p.requires_grad)").for_in.with_changes(
                    iter=updated))
        return updated


def trainable_params(value: cst.BaseExpression, site):
    """The optimizer's `params`: a parameter iterable or a list of param-group dicts."""
    name = dotted(value)
    if name is not None:
        built = _assignment_code(site, name)
        # (converted, named_parameters() leaves BatchNorm statistics out as torch does; a frozen
        # parameter in a MindSpore optimizer gets a zero gradient, which weight decay still acts
        # on: only a file that freezes some, and does not filter them out there, says so)
        if built and ("named_parameters(" in built or ".parameters(" in built) and \
                "requires_grad" not in built and re.search(r"requires_grad(_\(|\s*=[^=])", site.rw.module_code):
            site.flag("review", f"{site.qualname}: {name} is built from (named_)parameters(), which "
                                f"also yield frozen parameters: a MindSpore optimizer gives them a zero "
                                f"gradient, and its weight decay still shrinks them (torch skips them): keep "
                                f"only p.requires_grad ones")
    if "parameters_and_names()" in site.code(value) or "msmigrate_named_parameters(" in site.code(value):
        site.flag("review", f"{site.qualname}: parameter groups chosen by name: MindSpore names norm-layer "
                            f"parameters gamma/beta (torch: weight/bias) and Embedding's embedding_table")
    _prefix_networks(value, site)
    return value.visit(_TrainableParams())


def _prefix_networks(value: cst.BaseExpression, site) -> None:
    """Parameters of several networks in one optimizer (`list(enc.parameters()) +
    list(dec.parameters())`, `itertools.chain(...)`, one param group each, or a name bound to
    such a value): each network gets its path as a parameter-name prefix before the optimizer is
    made (prefixed_networks), else two `embedding.embedding_table` make it raise ValueError."""
    scan = getattr(site.rw, "_parameter_holders", None)
    if scan is None:
        scan = site.rw._parameter_holders = _ParameterHolders()
        site.rw.module.visit(scan)
    holders = set(_ParameterHolders._roots(value))
    for n in walk(value):
        if isinstance(n, (cst.Name, cst.Attribute)) and dotted(n) in scan.by_name:
            holders |= scan.by_name[dotted(n)]
    if site.record.torch.endswith(".add_param_group") and site.receiver is not None:
        holders |= scan.by_name.get(dotted(site.receiver) or "", set())
    for h in prefixed_networks(sorted(holders)):
        site.before(prefix_statement(h))


def _assignment_code(site, name: str) -> str | None:
    found = []

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node):
            if any(dotted(t.target) == name for t in node.targets):
                found.append(site.rw.module.code_for_node(node.value))

    site.rw.module.visit(Finder())
    return " ".join(found) or None


def optimizer(site):
    return site.call(site.record.target)


def sgd(site):
    """eoptim.SGD has no default lr (torch: 0.001). Not a `pin`: lr is often positional. In a
    file that casts to float64, msmigrate_SGD (rules/generated/optimizers.py): eoptim.SGD's
    kernel takes float16/32 parameters only."""
    args = site.standard_args()
    if not site.has("lr"):
        args.append(kwarg("lr", cst.Float("0.001")))
    if re.search(r"\.double\(\)|\bfloat64\b|\btorch\.double\b", site.rw.module_code):
        return site.call(generated_text(site.rw.imports, "optimizers", "msmigrate_sgd_step", "msmigrate_SGD"), args)
    return site.call(site.record.target, args)


def _is_zero(node) -> bool:
    try:
        return float(literal_value(node)) == 0.0
    except (ValueError, TypeError):
        return False


def adam(site):
    """torch Adam / AdamW -> msmigrate_Adam (rules/generated/optimizers.py): torch's update on
    MindSpore's fused Adam kernel, weight decay coupled (Adam: an L2 term in the gradient) or
    decoupled (AdamW). amsgrad=True, which the kernel lacks, and a file whose names hide
    MindSpore's keep eoptim.AdamW (whose Adam scales eps by the bias correction)."""
    decoupled = site.record.torch.endswith("AdamW")
    try:
        amsgrad = site.literal("amsgrad", False)
        if not decoupled:
            decoupled = bool(site.literal("decoupled_weight_decay", False))
    except ValueError:
        raise Unconvertible("amsgrad= or decoupled_weight_decay= is not a literal: which update?",
                            "manual") from None
    if amsgrad:
        return _eoptim_adamw(site, decoupled)
    fused = generated_text(site.rw.imports, "optimizers", "msmigrate_l2", "msmigrate_adam_step", "msmigrate_Adam")
    args = site.standard_args(skip=("amsgrad", "decoupled_weight_decay"))
    if decoupled:
        if not site.has("weight_decay"):
            args.append(kwarg("weight_decay", cst.Float("0.01")))
        args.append(kwarg("decoupled_weight_decay", cst.Name("True")))
    return site.call(fused, args)


def namespace(site):
    """torch.optim as a value (`getattr(torch.optim, args.optim)`): msmigrate_TorchOptim(), whose
    attributes are the classes torch's optimizers convert to."""
    if site.is_call:
        raise Unconvertible("torch.optim called")
    cls = generated_text(site.rw.imports, "optimizers", "msmigrate_l2", "msmigrate_adam_step", "msmigrate_Adam",
                         "msmigrate_TorchOptim")
    return cst.Call(cls, [])


def lbfgs(site):
    """torch LBFGS -> msmigrate_LBFGS (rules/generated/optimizers.py), torch's algorithm over the
    Parameters; the closure handed to its step() is converted by rules/training_loop.py."""
    return site.call(generated_text(site.rw.imports, "optimizers", "msmigrate_LBFGS"), site.standard_args())


def _eoptim_adamw(site, decoupled: bool):
    """torch Adam == eoptim.AdamW(weight_decay=0.0) (eoptim.Adam scales eps by the bias
    correction); torch Adam's weight_decay, an L2 term added to the gradient, is left to the user."""
    target = "mindspore.experimental.optim.AdamW"
    if decoupled:
        args = site.standard_args(skip=("decoupled_weight_decay",))
        if site.record.torch.endswith(".Adam") and not site.has("weight_decay"):
            args.append(kwarg("weight_decay", cst.Float("0.0")))   # torch Adam's default, not AdamW's
        return site.call(target, args)
    wd = site.arg("weight_decay")
    args = site.standard_args(skip=("weight_decay", "decoupled_weight_decay"))
    args.append(kwarg("weight_decay", cst.Float("0.0")))
    if wd is not None and not _is_zero(wd):
        w = site.code(wd)
        opt = site.assigned_name or "optimizer"
        site.flag("review", f"{site.qualname}: weight_decay={w} is an L2 term in torch Adam (added to the "
                            f"gradient), not AdamW's decoupled decay; converted with weight_decay=0.0: add it "
                            f"before the update: grads = tuple(g + {w} * p for g, p in "
                            f"zip(grads, {opt}.parameters))")
    return site.call(target, args)


def int_step(value: cst.BaseExpression, site):
    """MindSpore calls lr_lambda with its float32 Tensor step (torch: an int), which breaks list
    indexing and range(); each function gets int(step) back."""
    if isinstance(value, (cst.List, cst.Tuple)):
        return value.with_changes(elements=[e.with_changes(value=int_step(e.value, site)) for e in value.elements])
    params = value.params if isinstance(value, cst.Lambda) else None
    if params is not None and len(params.params) == 1 and not params.posonly_params and \
            not params.kwonly_params and not isinstance(params.star_arg, cst.Param) and params.star_kwarg is None:
        name = value.params.params[0].name.value   # lambda s: ... -> lambda s: (lambda s: ...)(int(s))
        wrapped = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return site.expr("lambda " + name + ": {f}(int(" + name + "))", f=wrapped)
    return site.expr("lambda step, fn={f}: fn(int(step))", f=value)


def scheduler(site):
    return site.call(site.record.target)


def cyclic_lr(site):
    """eoptim CyclicLR cycles the lr only; torch also cycles momentum unless told not to."""
    try:
        cycle = site.literal("cycle_momentum", True)
    except ValueError:
        cycle = True
    if cycle is not False:
        site.flag("review", f"{site.qualname}: torch also cycles the optimizer's momentum "
                            f"(cycle_momentum=True by default); MindSpore's CyclicLR keeps it constant")
    return site.call(site.record.target)


_ONE_CYCLE_DEF = '''
def {name}(step, total_steps={total}, pct_start={pct}, anneal_strategy={anneal}, div_factor={div}, final_div_factor={final_div}, three_phase={three}):
    """torch OneCycleLR's learning rate at `step`, as a fraction of max_lr."""
    step = float(step)
    initial = 1.0 / div_factor
    phases = [(float(pct_start * total_steps) - 1, initial, 1.0)]
    if three_phase:
        phases.append((float(2 * pct_start * total_steps) - 2, 1.0, initial))
    phases.append((total_steps - 1.0, phases[-1][2], initial / final_div_factor))
    start_step = 0.0
    for i, (end_step, start, end) in enumerate(phases):
        if step <= end_step or i == len(phases) - 1:
            pct = (step - start_step) / (end_step - start_step)
            if anneal_strategy == "linear":
                return (end - start) * pct + start
            return end + (start - end) / 2.0 * ({cos}({pi} * pct) + 1)
        start_step = end_step
'''


def one_cycle_lr(site):
    """OneCycleLR is missing in MindSpore 2.10: LambdaLR over torch's formula, with every group's
    lr set to max_lr first (LambdaLR scales the lr the optimizer starts from)."""
    opt, max_lr = site.arg("optimizer"), site.arg("max_lr")
    if opt is None or max_lr is None:
        raise Unconvertible("OneCycleLR without optimizer and max_lr", "manual")
    if isinstance(max_lr, (cst.List, cst.Tuple)):
        raise Unconvertible("a per-group max_lr list: convert to one LambdaLR per group by hand", "manual")
    total = site.arg("total_steps")
    if total is None or (isinstance(total, cst.Name) and total.value == "None"):
        epochs, per_epoch = site.arg("epochs"), site.arg("steps_per_epoch")
        if epochs is None or per_epoch is None:
            raise Unconvertible("OneCycleLR needs total_steps or epochs and steps_per_epoch", "manual")
        total = site.expr("{e} * {s}", e=epochs, s=per_epoch)
    if site.has("last_epoch") and site.code(site.arg("last_epoch")) != "-1":
        raise Unconvertible("resuming OneCycleLR (last_epoch=) needs initial_lr set by hand", "manual")
    try:
        cycle = site.literal("cycle_momentum", True)
    except ValueError:
        cycle = True
    if cycle is not False:
        site.flag("review", f"{site.qualname}: torch OneCycleLR also cycles momentum/beta1 between "
                            f"{site.code(site.arg('max_momentum', cst.Float('0.95')))} and "
                            f"{site.code(site.arg('base_momentum', cst.Float('0.85')))} by default; the "
                            f"LambdaLR that replaces it keeps momentum constant (parity: cycle_momentum=False)")
    nodes = dict(
        total=total,
        pct=site.arg("pct_start", cst.Float("0.3")),
        anneal=site.arg("anneal_strategy", cst.SimpleString('"cos"')),
        div=site.arg("div_factor", cst.Float("25.0")),
        final_div=site.arg("final_div_factor", cst.Float("1e4")),
        three=site.arg("three_phase", cst.Name("False")),
        cos=site.ref("math.cos"), pi=site.ref("math.pi"),
    )
    target = site.assigned_name
    name = f"{target.rsplit('.', 1)[-1]}_factor" if target else "one_cycle_factor"
    fdef = site.stmt(_ONE_CYCLE_DEF.strip("\n").replace("{name}", name), **nodes)
    site.before(fdef.with_changes(leading_lines=[cst.EmptyLine(indent=False)]))
    site.before(site.stmt(
        "for group in {opt}.param_groups:  # OneCycleLR schedules relative to max_lr\n"
        "    {assign}(group['lr'], {T}({m}, {f32}))\n",
        opt=opt, m=max_lr, T=site.ref("mindspore.Tensor"), f32=site.ref("mindspore.float32"),
        assign=site.ref("mindspore.ops.assign")))   # in place: set_data after a step is lost (MSG209)
    return site.expr("{L}({opt}, " + name + ")",
                     L=site.ref("mindspore.experimental.optim.lr_scheduler.LambdaLR"), opt=opt)
