"""Convolution and pooling: padding layouts and torch defaults MindSpore does not share."""
from __future__ import annotations

import libcst as cst

from msmigrate.engine import kwarg, literal_value

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
