"""torch.* utilities MindSpore needs no op for (rules/api/utilities.toml): torch's sym_* helpers,
which on plain Python numbers are Python's own builtins, torch.cond (a Python conditional),
slice_copy (a subscript), typename, and queries about torch state or objects the conversion
removes or turns into MindSpore's (anomaly mode, storages)."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, atom, literal_value
from msmigrate.rules.transforms.common import fixed_answer
from msmigrate.rules.transforms.torch_functions import _calls, generated_function, _no_out, call_generated
from msmigrate.rules.transforms.torch_functions import _original_kind as _kind


# ---- the sym_* helpers: SymInt-aware in torch, Python's builtins on plain numbers -------------

# torch's own code for a plain value (torch/__init__.py); sym_int truncates toward zero as int()
_PYTHON = {
    "sym_float": "float({a})",
    "sym_int": "int({a})",
    "sym_not": "(not {a})",
    "sym_sqrt": "{sqrt}({a})",
    "sym_ite": "({t} if {b} else {f})",   # torch checks that t and f have one type: it ran so
}


@_calls()
def python_value(site):
    """torch.sym_float(a) is float(a), sym_int int(a), sym_not `not a`, sym_sqrt math.sqrt(a)
    (a float, ValueError below 0), sym_ite(b, t, f) `t if b else f`: torch's own code for values
    that are not symbolic (torch.fx tracing's SymInt / SymFloat)."""
    missing = [a for a in site.record.args if a not in site.bound]
    if missing:
        raise Unconvertible(f"missing {', '.join(missing)}", "review")
    template = _PYTHON[site.record.method_name]
    nodes = {name: atom(site.arg(name)) for name in site.record.args}
    return site.expr(template, **nodes, **({"sqrt": "@math.sqrt"} if "{sqrt}" in template else {}))


_INTS = ("pyint", "pybool")


@_calls("a", "b")
def sym_extreme(site):
    """torch.sym_max(a, b) / sym_min: builtins.max / min, a float where either is a float (torch
    promotes: sym_max(4, 3.5) is 4.0). Where both are visibly ints (or one visibly a float) the
    builtin says it; else rules/generated/functions.py's msmigrate_sym_max / sym_min decides at
    run time."""
    name = site.record.method_name
    kinds = {_kind(site, "a"), _kind(site, "b")}
    builtin = site.expr("{f}({a}, {b})", f=cst.Name(name.removeprefix("sym_")), a=site.arg("a"), b=site.arg("b"))
    if kinds <= set(_INTS):
        return builtin
    if "pyfloat" in kinds and kinds <= {"pyfloat", *_INTS, None}:
        return site.expr("float({m})", m=builtin)
    return call_generated(site, "msmigrate_" + name)


@_calls(splats=True)
def sym_sum(site):
    """torch.sym_sum([a, b, c]) / sym_sum(a, b, c): builtins.sum of the numbers (int where all
    are ints). A single argument that is not a visible list or tuple: rules/generated/functions.py's
    msmigrate_sym_sum, which tells a sequence from one number at run time as torch does."""
    args = list(site.node.args)
    if any(a.keyword is not None for a in args):
        raise Unconvertible("sym_sum takes its numbers by position", "review")
    if not any(a.star for a in args):
        if not args:
            return cst.Integer("0")
        if len(args) > 1:
            elements = [cst.Element(a.value) for a in args]
            return site.expr("sum({s})", s=cst.Tuple(elements))
        if isinstance(args[0].value, (cst.List, cst.Tuple, cst.ListComp)):
            return site.expr("sum({s})", s=args[0].value)
    return site.node.with_changes(func=generated_function(site, "msmigrate_sym_sum"))


# ---- control flow ---------------------------------------------------------------------------

@_calls("pred", "true_fn", "false_fn")
def cond(site):
    """torch.cond(pred, true_fn, false_fn, operands): `true_fn(*operands) if pred else
    false_fn(*operands)`, torch's eager cond (pred a bool, a number or a one-element tensor, which
    MindSpore converts to bool in PyNative; only the branch taken evaluates the operands). Each
    branch calls its function: under @ms.jit a function chosen by a tensor condition and called
    after (`(t if p else f)(x)`) fails to compile (measured: "Get func graphs from abstract
    failed"), a call in each branch compiles to a graph branch."""
    operands = site.arg("operands")
    if operands is None:
        args = []
    elif isinstance(operands, (cst.Tuple, cst.List)) and not any(
            isinstance(e, cst.StarredElement) for e in operands.elements):
        args = [cst.Arg(e.value) for e in operands.elements]
    else:
        args = [cst.Arg(operands, star="*")]
    calls = [cst.Call(func=atom(site.arg(name), attribute=True), args=args) for name in ("true_fn", "false_fn")]
    return site.expr("({t} if {p} else {f})", t=calls[0], p=atom(site.arg("pred")), f=calls[1])


# ---- slices ---------------------------------------------------------------------------------

@_calls("input")
def slice_copy(site):
    """torch.slice_copy(x, dim=0, start=None, end=None, step=1): x[..., start:end:step, ...] along
    dim (torch clamps start and end as Python's slices do): a subscript for a literal dim, a
    tuple of slice objects otherwise."""
    _no_out(site)
    x = atom(site.arg("input"), attribute=True)
    part = cst.Slice(_given(site.arg("start")), _given(site.arg("end")), _given(site.arg("step"), skip="1"))
    dim = site.arg("dim", cst.Integer("0"))
    try:
        d = literal_value(dim)
    except ValueError:
        d = None
    if isinstance(d, int) and not isinstance(d, bool):
        if d >= 0:
            lead = [cst.SubscriptElement(cst.Slice(None, None)) for _ in range(d)]
            return cst.Subscript(value=x, slice=[*lead, cst.SubscriptElement(part)])
        tail = [cst.SubscriptElement(cst.Slice(None, None)) for _ in range(-d - 1)]
        return cst.Subscript(value=x, slice=[cst.SubscriptElement(cst.Index(cst.Ellipsis())),
                                             cst.SubscriptElement(part), *tail])
    if not isinstance(site.arg("input"), (cst.Name, cst.Attribute)):
        raise Unconvertible("slice_copy with a dim that is not a literal, of an expression: name the "
                            "tensor, or write the subscript", "review")
    return site.expr("{x}[(slice(None),) * ({d} % {x}.ndim) + (slice({s}, {e}, {t}),)]", x=x, d=atom(dim),
                     s=site.arg("start", cst.Name("None")), e=site.arg("end", cst.Name("None")),
                     t=site.arg("step", cst.Integer("1")))


def _given(value, skip: str = "None"):
    """A slice bound as written, or nothing where torch's default (`None`, step `1`) is given."""
    if value is None or isinstance(value, (cst.Name, cst.Integer)) and getattr(value, "value", None) == skip:
        return None
    return value


# ---- queries of torch state the conversion removes ------------------------------------------

_ANOMALY = ("the conversion removes torch.autograd.set_detect_anomaly / set_anomaly_enabled and "
            "detect_anomaly() blocks (MindSpore has no anomaly mode): branches on it take torch's default")

# torch's answer by default, and what makes torch answer otherwise
_ANSWERS = {
    "is_anomaly_enabled": ("False", f"torch: True after set_detect_anomaly(True) or inside detect_anomaly(); {_ANOMALY}"),
    "is_anomaly_check_nan_enabled": ("True", f"torch: False after set_detect_anomaly(..., check_nan=False); {_ANOMALY}"),
}


def removed_state(site):
    """torch.is_anomaly_enabled() / is_anomaly_check_nan_enabled(): torch's default answer,
    marked: the program may have set the mode before (the calls that set it are removed)."""
    return fixed_answer(site, *_ANSWERS[site.record.method_name])


_VISIBLE_KINDS = ("int", "bool", "float", "float64", "pyint", "pyfloat", "pybool")


@_calls("obj")
def is_storage(site):
    """torch.is_storage(obj): False for a tensor or a number. torch's storages convert to
    tensors (x.storage() -> x.reshape(-1)), so an argument not visibly a tensor or a number is
    marked."""
    if _kind(site, "obj") not in _VISIBLE_KINDS:
        site.flag("review", f"{site.qualname}(...) -> False: torch says True for a storage (x.storage(), "
                            f"x.untyped_storage()), which the converted code holds as a tensor")
    return cst.Name("False")


@_calls("obj")
def typename(site):
    """torch.typename(obj): rules/generated/functions.py's msmigrate_typename, torch's name of a
    tensor's type by its dtype as on CPU, or of a Python value's type. Marked where the argument
    is not visibly a Python number: a tensor's name is another on a GPU (torch.cuda.FloatTensor),
    and objects the conversion makes MindSpore's (layers, dtypes) have MindSpore's type names."""
    seen = _kind(site, "obj")
    try:
        literal_value(site.arg("obj"))
        seen = "pyint"   # a Python literal ('x', [1, 2], None): its own type, under either framework
    except ValueError:
        pass
    if seen in ("int", "bool", "float", "float64"):
        site.flag("review", f"{site.qualname}: torch's name for a CPU tensor (a CUDA tensor's is "
                            f"torch.cuda.FloatTensor ...)")
    elif seen not in ("pyint", "pyfloat", "pybool"):
        site.flag("review", f"{site.qualname}: a tensor's name is torch's for a CPU tensor; an object the "
                            f"conversion made MindSpore's (a layer, a dtype) has MindSpore's type name")
    return call_generated(site, "msmigrate_typename")
