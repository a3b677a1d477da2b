"""nn.Module -> nn.Cell: class bodies, training mode, buffers, module traversal."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible


def module_subclass(cls: cst.ClassDef, site) -> cst.ClassDef:
    """`forward` is called `construct` in a Cell."""
    body = []
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward":
            stmt = stmt.with_changes(name=cst.Name("construct"))
        body.append(stmt)
    return cls.with_changes(body=cls.body.with_changes(body=body))


def set_train_after_construction(site, name: str) -> None:
    """torch modules start in training mode, Cells in eval mode: say so where the model is made
    (children follow their parent, so `self.x = ...`, and locals of `__init__` that become
    children, need nothing)."""
    if name.startswith("self.") or site.rw.functions[-1:] == ["__init__"]:
        return
    site.after(f"{name}.set_train(True)", implicit=True)


def train(site):
    mode = site.arg("mode", cst.Name("True"))
    return site.expr("{r}.set_train({m})", r=site.receiver, m=mode)


def eval_(site):
    return site.expr("{r}.set_train(False)", r=site.receiver)


def register_buffer(site):
    """`self.register_buffer('name', t)` -> a non-trainable Parameter (saved in checkpoints, as a
    persistent buffer is); `persistent=False` -> a plain Tensor attribute (not saved)."""
    name = site.literal("name")
    if not isinstance(name, str) or not name.isidentifier():
        raise Unconvertible("buffer name is not a literal identifier")
    value = site.arg("tensor")
    if value is None or (isinstance(value, cst.Name) and value.value == "None"):
        raise Unconvertible("a None buffer has no MindSpore equivalent")
    try:
        persistent = site.literal("persistent", True)
    except ValueError:
        raise Unconvertible("persistent= is not a literal") from None
    if persistent:
        rhs = site.expr("{P}({v}, name={n}, requires_grad=False)", P="@mindspore.Parameter", v=value,
                        n=cst.SimpleString(repr(name)))
    else:
        rhs = value
    site.before(cst.SimpleStatementLine([cst.Assign(
        targets=[cst.AssignTarget(site.expr("{r}." + name, r=site.receiver))], value=rhs)]))
    return site.REMOVED


def modules(site):
    return site.expr("(cell for _, cell in {r}.cells_and_names())", r=site.receiver)


def named_children(site):
    return site.expr("{r}.name_cells().items()", r=site.receiver)
