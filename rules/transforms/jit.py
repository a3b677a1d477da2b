"""TorchScript (torch.jit): scripting and tracing compile the same computation, so the converted
program runs the object itself, eager (the training step is compiled by @ms.jit already); the
decorators that steer the TorchScript compiler go. What TorchScript writes or reads (.pt archives
of code + weights) has no MindSpore reader: those records are unsupported (rules/api/jit.toml)."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible


def uncompiled(site):
    """torch.compile(m) / torch.jit.script(fn) / trace(model, x) / freeze(m) -> the object itself,
    uncompiled (the converted training step is compiled by @ms.jit already); as a decorator
    (`@torch.compile(mode=...)`, `@torch.jit.script`, `@torch.jit.ignore(drop=True)`) it goes."""
    target = site.arg(site.record.args[0]) if site.is_call and site.record.args else None
    if isinstance(target, cst.Name) and target.value in ("True", "False"):
        target = None   # ignore's `drop` flag, not an object
    if target is not None:
        return target
    stmt = site.statement
    if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)) and any(
            site.rw.scopes.resolve(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator)
            == site.qualname for d in stmt.decorators):
        return site.REMOVED
    raise Unconvertible(f"{site.qualname} without the object it compiles: MindSpore runs the function as it "
                        f"is (or compile it with @ms.jit)", "manual")


def value_argument(site):
    """torch.jit.annotate(T, v) / wait(v): the value."""
    for name in ("the_value", "future"):
        if site.has(name):
            return site.arg(name)
    raise Unconvertible(f"{site.qualname} without its value")


def not_compiled(site):
    """torch.jit.is_scripting() / is_tracing(): the converted program is never TorchScript."""
    return cst.Name("False")
