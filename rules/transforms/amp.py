"""GradScaler -> mindspore.amp loss scalers; autocast regions."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg


def grad_scaler(site):
    """GradScaler(init_scale=2**16, growth_factor=2, backoff_factor=0.5, growth_interval=2000).
    MindSpore's DynamicLossScaler has a single factor: it grows by it and backs off by 1/it."""
    try:
        growth = site.literal("growth_factor", 2.0)
        backoff = site.literal("backoff_factor", 0.5)
        if growth * backoff != 1:
            site.flag("MSC105", f"GradScaler growth_factor={growth} with backoff_factor={backoff}: "
                                f"MindSpore backs off by 1/{growth}")
    except (ValueError, TypeError):
        site.flag("review", "GradScaler factors are not literals: MindSpore backs off by 1/growth_factor")
    args = [kwarg("scale_value", site.arg("init_scale", cst.parse_expression("2.0 ** 16"))),
            kwarg("scale_factor", site.arg("growth_factor", cst.Integer("2"))),
            kwarg("scale_window", site.arg("growth_interval", cst.Integer("2000")))]
    dynamic = cst.Call(func=site.ref("mindspore.amp.DynamicLossScaler"), args=args)
    enabled = site.arg("enabled")
    if enabled is None:
        return dynamic
    static = site.expr("{S}(1.0)", S="@mindspore.amp.StaticLossScaler")
    try:
        on = site.literal("enabled")
    except ValueError:
        # a disabled GradScaler is the identity; StaticLossScaler(1.0) scales by 1 (the compiled
        # step still skips updates whose gradients are not finite)
        return site.expr("{d} if {e} else {s}", d=dynamic, e=enabled, s=static)
    return dynamic if on else static


def autocast_region(site):
    """Outside a training step the region cannot be kept: mixed precision in MindSpore is a
    property of the network (auto_mixed_precision), so the `with` goes and the line is flagged.
    A region kept as a value (`ctx = nullcontext() if cpu else torch.autocast(...)`, entered
    later with `with ctx:`) becomes a region that does nothing: the training step that enters it
    casts the network (rules/training_loop.py), and the evaluation code entering it runs too."""
    site.flag("review", site.record.note)
    if isinstance(site.statement, cst.With):
        return site.REMOVED
    return site.expr("{null}()", null=site.ref("contextlib.nullcontext"))


def _scaler(site):
    if site.receiver is None:
        raise Unconvertible("a GradScaler method called without its object")
    return site.receiver


def scaler_state_dict(site):
    """scaler.state_dict() -> the dict torch's GradScaler returns, read from the
    DynamicLossScaler: scale (scale_value), growth/backoff factors (scale_factor, 1/it),
    growth_interval (scale_window), _growth_tracker (counter). Plain Python numbers, as torch's."""
    return site.expr("{'scale': float({s}.scale_value), 'growth_factor': float({s}.scale_factor), "
                     "'backoff_factor': 1.0 / {s}.scale_factor, 'growth_interval': int({s}.scale_window), "
                     "'_growth_tracker': int({s}.counter)}", s=_scaler(site))


def scaler_load_state_dict(site):
    """scaler.load_state_dict(sd) -> the scale and growth tracker written into the scaler's
    Parameters in place (ops.assign: set_data would detach them from a compiled step that has
    run), factor and window set (the keys torch's state_dict has)."""
    sd = site.arg("state_dict")
    if sd is None:
        raise Unconvertible("load_state_dict without its state dict")
    return site.expr("({A}({s}.scale_value, {T}({d}['scale'], {f32})), "
                     "{A}({s}.counter, {T}({d}['_growth_tracker'], {i32})), "
                     "setattr({s}, 'scale_factor', {d}['growth_factor']), "
                     "setattr({s}, 'scale_window', {d}['growth_interval']))",
                     s=_scaler(site), d=sd, T="@mindspore.Tensor", f32="@mindspore.float32",
                     i32="@mindspore.int32", A="@mindspore.ops.assign")


def scaler_get_scale(site):
    """scaler.get_scale() -> the current scale as a Python float (as torch's)."""
    return site.expr("float({s}.scale_value)", s=_scaler(site))
