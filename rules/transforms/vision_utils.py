"""torchvision.utils.make_grid / save_image -> the functions of rules/generated/vision.py, copied
into the converted file (MindSpore has no counterpart); the call keeps its arguments, whose names
are torchvision's."""
from __future__ import annotations

import inspect
import textwrap

from msmigrate.rules.generated import vision


def _define(site, function) -> None:
    site.rw.imports.define(function.__name__, textwrap.dedent(inspect.getsource(function)))


def make_grid(site):
    _define(site, vision.msmigrate_make_grid)
    return site.node.with_changes(func=site.rw.imports.define(vision.msmigrate_make_grid.__name__, ""))


def save_image(site):
    _define(site, vision.msmigrate_make_grid)
    _define(site, vision.msmigrate_save_image)
    return site.node.with_changes(func=site.rw.imports.define(vision.msmigrate_save_image.__name__, ""))
