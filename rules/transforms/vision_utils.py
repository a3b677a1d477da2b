"""torchvision.utils.make_grid / save_image -> the functions of rules/generated/vision.py, copied
into the converted file (MindSpore has no counterpart); the call keeps its arguments, whose names
are torchvision's."""
from __future__ import annotations

from msmigrate.rules.generated import vision
from msmigrate.rules.transforms.common import generated


def make_grid(site):
    return site.node.with_changes(func=generated(site, vision.msmigrate_make_grid))


def save_image(site):
    return site.node.with_changes(func=generated(site, vision.msmigrate_make_grid, vision.msmigrate_save_image))
