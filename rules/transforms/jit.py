"""TorchScript (torch.jit): scripting and tracing compile the same computation, so the converted
program runs the object itself, eager (the training step is compiled by @ms.jit already); the
decorators that steer the TorchScript compiler go. What TorchScript writes or reads (.pt archives
of code + weights) has no MindSpore reader: those records are unsupported (rules/api/jit.toml)."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible


def uncompiled(site):
    """torch.jit.script(fn) / trace(model, x) / freeze(m) -> the object itself; a decorator
    (`@torch.jit.script`, `@torch.jit.ignore(drop=True)`) goes."""
    target = site.arg(site.record.args[0]) if site.is_call and site.record.args else None
    if target is None or isinstance(target, cst.Name) and target.value in ("True", "False"):
        return site.REMOVED     # no object: a decorator, or ignore's `drop` flag
    return target


def value_argument(site):
    """torch.jit.annotate(T, v) / wait(v): the value."""
    for name in ("the_value", "future"):
        if site.has(name):
            return site.arg(name)
    raise Unconvertible(f"{site.qualname} without its value")


def not_compiled(site):
    """torch.jit.is_scripting() / is_tracing(): the converted program is never TorchScript."""
    return cst.Name("False")
