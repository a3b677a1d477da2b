"""Convolution and pooling: padding layouts and torch defaults MindSpore does not share."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import Unconvertible, kwarg, literal_value

_PAD_MODES = {"same": "'same'", "valid": "'valid'"}


def _padding(value, site, dims: int):
    try:
        v = literal_value(value)
    except ValueError:
        if dims > 1:
            site.flag("review", f"{site.qualname}: padding={site.code(value)} is not a literal; a "
                                f"per-dimension tuple must be written (before, after) for each dimension")
        return value
    if isinstance(v, str):
        return {"pad_mode": cst.parse_expression(_PAD_MODES[v])} if v in _PAD_MODES else value
    if isinstance(v, (tuple, list)):
        if dims == 1:
            return cst.parse_expression(repr(int(v[0])))
        if len(v) == dims:  # torch: one value per dimension; MindSpore: before and after each
            return cst.parse_expression(repr(tuple(p for p in v for _ in (0, 1))))
    return value


def padding1d(value, site):
    return _padding(value, site, 1)


def padding2d(value, site):
    return _padding(value, site, 2)


def padding3d(value, site):
    return _padding(value, site, 3)


def pool(site):
    """torch pools default `stride` to `kernel_size`; MindSpore's default stride is 1."""
    stride = site.arg("stride")
    if stride is None or (isinstance(stride, cst.Name) and stride.value == "None"):
        args = site.standard_args(skip=("stride",))
        kernel = site.arg("kernel_size")
        if kernel is not None:
            at = 1 if args and args[0].keyword is None else 0
            args.insert(at, kwarg("stride", kernel) if at == 0 else cst.Arg(kernel))
        return site.call(site.record.target, args)
    return site.call(site.record.target)


def _ints(value, site, name):
    try:
        v = literal_value(value)
    except ValueError:
        raise Unconvertible(f"{name}={site.code(value)} is not a literal: MindSpore needs it spelled "
                            f"out per side") from None
    return v


def conv_transpose(site):
    """ConvTranspose: MindSpore's `output_padding` with pad_mode='pad' gives the right shape but
    wrong values (semantics.md §1.1). Padding the trailing side of each dimension `op` less,
    `padding=(p, p - op, ...)`, gives torch's output exactly; p < op has no such mapping."""
    # MindSpore 2.10's CPU Conv1dTranspose gives torch's values and gradients (tests/test_layer_parity.py)
    return _conv_transpose(site, int(site.qualname[-2]))


def _conv_transpose(site, dims: int):
    dilation = site.arg("dilation")
    if dims == 3 and dilation is not None:
        try:
            d = literal_value(dilation)
        except ValueError:
            d = None
        if (d[0] if isinstance(d, (tuple, list)) else d) != 1:
            site.flag("review", f"{site.qualname}: dilation={site.code(dilation)}: MindSpore's Conv3dTranspose "
                                f"raises for a depth dilation other than 1")
    args = site.standard_args(skip=("padding", "output_padding"))
    pad = site.arg("padding")
    out_pad = site.arg("output_padding")
    if out_pad is None:
        if pad is not None:
            value = _padding(pad, site, dims)
            args.append(kwarg("padding", value))
        return site.call(site.record.target, args)
    p = _ints(pad, site, "padding") if pad is not None else 0
    op = _ints(out_pad, site, "output_padding")
    p = [p] * dims if isinstance(p, int) else list(p)
    op = [op] * dims if isinstance(op, int) else list(op)
    if any(o == 0 for o in op) and all(o == 0 for o in op):
        args.append(kwarg("padding", cst.parse_expression(repr(_padding_tuple(p, dims)))))
        return site.call(site.record.target, args)
    if dims == 1:
        raise Unconvertible("output_padding != 0: MindSpore's Conv1dTranspose padding is one int "
                            "for both sides, and its output_padding gives wrong values")
    if any(a < b for a, b in zip(p, op)):
        raise Unconvertible("padding < output_padding: no verified MindSpore mapping (its "
                            "output_padding gives wrong values)")
    pads = tuple(v for a, b in zip(p, op) for v in (a, a - b))
    args.append(kwarg("padding", cst.parse_expression(repr(pads))))
    return site.call(site.record.target, args)


def _padding_tuple(p, dims):
    if dims == 1:
        return p[0]
    return tuple(v for a in p for v in (a, a))
