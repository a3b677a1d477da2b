"""torch.signal.windows (rules/api/signal.toml): the windows MindSpore 2.10 has an op for become
ops.hann_window / hamming_window / blackman_window / bartlett_window / kaiser_window, whose
`periodic` is torch's `not sym` (torch.signal.windows are symmetric by default, the ops
periodic); the others call the functions of rules/generated/signal.py, copied into the file.
Checked against torch by tests/api_suite/cases/signal_windows.toml."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, literal_value
from msmigrate.rules.transforms.dtypes import kind
from msmigrate.rules.transforms.torch_functions import (_astype, _generated_needs, _is_none, _module_imports,
                                                        _trainable)

# ops.*_window that return float64 for a window of length 0 or 1 whatever the dtype asked
_FLOAT64_WHEN_SHORT = {"mindspore.ops.hann_window", "mindspore.ops.hamming_window", "mindspore.ops.kaiser_window"}

_ORDER = ["window_length", "periodic", "alpha", "beta", "dtype"]   # the ops' signature order


def periodic(value, site):
    """torch's `sym` -> MindSpore's `periodic`: its negation."""
    try:
        sym = literal_value(value)
    except ValueError:
        if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not) and not value.lpar:
            return value.expression   # sym=not periodic
        if not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return site.expr("not {s}", s=value)
    return cst.Name("False" if sym else "True")


def hamming_alpha(value, site):
    """general_hamming's alpha: ops.hamming_window takes alpha and beta (torch: 1 - alpha), both
    Python floats only (an int raises)."""
    try:
        alpha = float(literal_value(value))
    except (ValueError, TypeError):
        if kind(site.rw, value) != "pyfloat":
            value = site.expr("float({a})", a=value)
        elif not isinstance(value, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        return {"alpha": value, "beta": site.expr("1 - {a}", a=value)}
    return {"alpha": cst.parse_expression(repr(alpha)), "beta": cst.parse_expression(repr(round(1 - alpha, 12)))}


def _common(site) -> None:
    """What every window call needs first: a call with visible arguments and M."""
    if site.unbound:
        raise Unconvertible("arguments passed through * / ** or beyond the torch signature: "
                            "convert by hand", "review")
    if "M" not in site.bound:
        raise Unconvertible("missing M", "review")


def window(site):
    """A window MindSpore has an op for: ops.*_window(M, periodic=not sym, dtype=...), float32
    pinned (hann and kaiser are float64 by default); hann, hamming and kaiser windows of length
    0 or 1 are float64 whatever the dtype, so where M is not visibly above 1 the result is cast.
    requires_grad=True makes a Parameter, as torch's other factories."""
    _common(site)   # a bare reference is the engine's: the op, marked
    if site.has("dtype") and _is_none(site.arg("dtype")):
        site.bound.pop("dtype")   # the pinned float32
    args = site.standard_args()
    # keywords in MindSpore's order (the pinned periodic after the length, dtype last)
    args.sort(key=lambda a: -1 if a.keyword is None else _ORDER.index(a.keyword.value)
              if a.keyword.value in _ORDER else len(_ORDER))
    call = site.call(site.record.target, args)
    if site.record.target in _FLOAT64_WHEN_SHORT:
        try:
            n = site.literal("M")
        except ValueError:
            n = None
        if not (isinstance(n, int) and not isinstance(n, bool) and n > 1):
            dtype = site.arg("dtype")
            call = _astype(site, call, site.ref("mindspore.float32") if dtype is None else dtype)
    return _trainable(site, call)


def generated(site):
    """A window MindSpore has no op for: rules/generated/signal.py's msmigrate_<torch name>,
    copied into the file with the functions it calls and called with torch's arguments (a bare
    reference: the function)."""
    import inspect
    import textwrap

    from msmigrate.rules.generated import signal as module

    name = "msmigrate_" + site.record.torch.rsplit(".", 1)[1]
    for function in _generated_needs(module, name):
        func = site.rw.imports.define(function.__name__,
                                      _module_imports(site, textwrap.dedent(inspect.getsource(function))))
    if not site.is_call:
        return func
    _common(site)
    return _trainable(site, site.call(func))
