"""torchvision.transforms.functional -> generated NumPy/PIL functions (rules/generated/vision_functional.py).

torchvision is not installable here, so a torch program applying the functions to a PIL image, a PIL
mask and tensors (float [N, C, H, W], uint8 [C, H, W]) is converted, the conversion run in a
subprocess, and its results compared with references computed here from torchvision's documented
semantics: PIL inputs through the PIL operations torchvision uses (Image.transpose, resize, crop,
rotate, ImageOps.expand, ImageEnhance, convert("L")), tensors through array math on the last two
dims (flips, slices, numpy.pad, per-channel normalize, luma, blends, index maps). The antialiased
tensor resize is compared with Pillow's resampling of a float ("F") image, the filter torch copies.
"""
from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from isolated import ENV
from msmigrate import convert_source

PIL = pytest.importorskip("PIL.Image")
from PIL import Image, ImageEnhance, ImageOps  # noqa: E402

PROGRAM = '''
import numpy as np
import torch
import torchvision.transforms.functional as TF
from torchvision.transforms import InterpolationMode
from PIL import Image

rng = np.random.default_rng(0)
rgb = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
image = Image.fromarray(rgb)
mask = Image.fromarray((rng.integers(0, 4, (12, 16)) * 60).astype(np.uint8))
batch = torch.from_numpy(rng.random((2, 3, 12, 16)).astype(np.float32))
pixels = torch.from_numpy(rng.integers(0, 256, (3, 12, 16), dtype=np.uint8))
out = {}


def keep(name, value):
    if isinstance(value, Image.Image):
        out[name + "__" + value.mode] = np.asarray(value)
    else:
        out[name] = np.asarray(value)


keep("to_tensor", TF.to_tensor(image))
keep("pil_to_tensor", TF.pil_to_tensor(mask))
keep("normalize", TF.normalize(batch, [0.5, 0.4, 0.3], [0.2, 0.25, 0.5]))
keep("to_pil_image", TF.to_pil_image(pixels))
written = batch.clone()
TF.normalize(written, [0.5, 0.4, 0.3], [0.2, 0.25, 0.5], inplace=True)
keep("normalize_inplace", written)
for name, img in [("image", image), ("mask", mask), ("batch", batch), ("pixels", pixels)]:
    keep("hflip_" + name, TF.hflip(img))
    keep("vflip_" + name, TF.vflip(img))
    keep("crop_" + name, TF.crop(img, 2, 3, 6, 7))
    keep("center_crop_" + name, TF.center_crop(img, [8, 10]))
    keep("pad_" + name, TF.pad(img, [1, 2, 3, 4], fill=7))
    keep("pad_reflect_" + name, TF.pad(img, [2, 1], padding_mode="reflect"))
    keep("nearest_" + name, TF.resize(img, [5, 7], interpolation=InterpolationMode.NEAREST))
    keep("resize_" + name, TF.resize(img, 6))
    keep("rotate_" + name, TF.rotate(img, 30))
    keep("shift_" + name, TF.affine(img, angle=0, translate=[2, 1], scale=1.0, shear=0))
    keep("dims_" + name, TF.get_dimensions(img))
for name, img in [("image", image), ("batch", batch), ("pixels", pixels)]:
    keep("brightness_" + name, TF.adjust_brightness(img, 1.3))
    keep("saturation_" + name, TF.adjust_saturation(img, 0.6))
    keep("contrast_" + name, TF.adjust_contrast(img, 0.7))
    keep("gray_" + name, TF.rgb_to_grayscale(img))
keep("blur_batch", TF.gaussian_blur(batch, [3, 5], [0.8, 1.2]))
keep("size_batch", TF.get_image_size(batch))
np.savez("out.npz", **out)
'''

rng = np.random.default_rng(0)
RGB = rng.integers(0, 256, (12, 16, 3), dtype=np.uint8)
MASK = (rng.integers(0, 4, (12, 16)) * 60).astype(np.uint8)
BATCH = rng.random((2, 3, 12, 16)).astype(np.float32)
PIXELS = rng.integers(0, 256, (3, 12, 16), dtype=np.uint8)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    result = convert_source(PROGRAM, "augment.py")
    code = result.code
    assert not result.diagnostics, result.diagnostics
    assert not re.search(r"^\s*(import|from) torch|TF\.", code, re.M), code
    tmp = tmp_path_factory.mktemp("vision_functional")
    (tmp / "augment.py").write_text(code)
    proc = subprocess.run([sys.executable, "augment.py"], cwd=tmp, capture_output=True, text=True, timeout=300,
                          env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(tmp / "out.npz") as data:
        return dict(data)


def same(got, want, tol=0.0):
    want = np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=0, atol=tol), \
        np.abs(got.astype(np.float64) - want).max()


def pil_in(name):
    return Image.fromarray(RGB) if name == "image" else Image.fromarray(MASK)


def test_pil_inputs_stay_pil_images_computed_by_pil(results):
    for name in ("image", "mask"):
        img, mode = pil_in(name), "RGB" if name == "image" else "L"
        same(results[f"hflip_{name}__{mode}"], np.asarray(img.transpose(Image.Transpose.FLIP_LEFT_RIGHT)))
        same(results[f"vflip_{name}__{mode}"], np.asarray(img.transpose(Image.Transpose.FLIP_TOP_BOTTOM)))
        same(results[f"crop_{name}__{mode}"], np.asarray(img.crop((3, 2, 10, 8))))
        same(results[f"center_crop_{name}__{mode}"], np.asarray(img.crop((3, 2, 13, 10))))   # round((16-10)/2)
        fill = (7, 7, 7) if mode == "RGB" else 7
        same(results[f"pad_{name}__{mode}"], np.asarray(ImageOps.expand(img, border=(1, 2, 3, 4), fill=fill)))
        widths = ((1, 1), (2, 2)) + ((0, 0),) * (np.asarray(img).ndim - 2)
        same(results[f"pad_reflect_{name}__{mode}"], np.pad(np.asarray(img), widths, mode="reflect"))
        same(results[f"nearest_{name}__{mode}"], np.asarray(img.resize((7, 5), Image.Resampling.NEAREST)))
        same(results[f"resize_{name}__{mode}"], np.asarray(img.resize((8, 6), Image.Resampling.BILINEAR)))
        same(results[f"rotate_{name}__{mode}"], np.asarray(img.rotate(30, Image.Resampling.NEAREST)))
        # translate (2, 1): Pillow's affine map sends output (x, y) to input (x - 2, y - 1)
        same(results[f"shift_{name}__{mode}"],
             np.asarray(img.transform(img.size, Image.Transform.AFFINE, (1, 0, -2, 0, 1, -1), Image.Resampling.NEAREST)))
        same(results[f"dims_{name}"], [len(img.getbands()), 12, 16])
    img = Image.fromarray(RGB)
    same(results["brightness_image__RGB"], np.asarray(ImageEnhance.Brightness(img).enhance(1.3)))
    same(results["saturation_image__RGB"], np.asarray(ImageEnhance.Color(img).enhance(0.6)))
    same(results["contrast_image__RGB"], np.asarray(ImageEnhance.Contrast(img).enhance(0.7)))
    same(results["gray_image__L"], np.asarray(img.convert("L")))


def test_conversions_between_pil_images_and_tensors(results):
    same(results["to_tensor"], RGB.transpose(2, 0, 1).astype(np.float32) / np.float32(255))
    same(results["pil_to_tensor"], MASK[None])
    same(results["to_pil_image__RGB"], PIXELS.transpose(1, 2, 0))


def test_tensor_inputs_computed_on_the_last_two_dims(results):
    for name, x in (("batch", BATCH), ("pixels", PIXELS)):
        same(results[f"hflip_{name}"], x[..., ::-1])
        same(results[f"vflip_{name}"], x[..., ::-1, :])
        same(results[f"crop_{name}"], x[..., 2:8, 3:10])
        same(results[f"center_crop_{name}"], x[..., 2:10, 3:13])
        widths = ((0, 0),) * (x.ndim - 2) + ((2, 4), (1, 3))
        same(results[f"pad_{name}"], np.pad(x, widths, constant_values=7))
        widths = ((0, 0),) * (x.ndim - 2) + ((1, 1), (2, 2))
        same(results[f"pad_reflect_{name}"], np.pad(x, widths, mode="reflect"))
        # nearest: source index floor(i * in / out)
        rows, cols = np.floor(np.arange(5) * 12 / 5).astype(int), np.floor(np.arange(7) * 16 / 7).astype(int)
        same(results[f"nearest_{name}"], x[..., rows[:, None], cols[None, :]])
        # rotating 30 degrees about the centre, nearest source pixel, zeros outside
        yy, xx = np.mgrid[0:12, 0:16] + 0.5
        cx, cy = xx - 8, yy - 6
        a = np.radians(30)
        sx, sy = np.cos(a) * cx - np.sin(a) * cy + 8, np.sin(a) * cx + np.cos(a) * cy + 6
        ix, iy = np.rint(sx - 0.5).astype(int), np.rint(sy - 0.5).astype(int)
        inside = (ix >= 0) & (ix < 16) & (iy >= 0) & (iy < 12)
        want = np.where(inside, x[..., iy.clip(0, 11), ix.clip(0, 15)], 0).astype(x.dtype)
        got = results[f"rotate_{name}"]
        assert got.shape == want.shape and (got != want).mean() < 0.01   # a tie at a half pixel may differ
        shifted = np.zeros_like(x)
        shifted[..., 1:, 2:] = x[..., :-1, :-2]
        same(results[f"shift_{name}"], shifted)
        same(results[f"dims_{name}"], [3, 12, 16])
        bound = 255 if x.dtype == np.uint8 else 1
        same(results[f"brightness_{name}"], np.clip(1.3 * x.astype(np.float32), 0, bound).astype(x.dtype))
        luma = (0.2989 * x[..., 0, :, :].astype(np.float32) + 0.587 * x[..., 1, :, :] + 0.114 * x[..., 2, :, :])
        luma = luma.astype(x.dtype)[..., None, :, :]
        same(results[f"gray_{name}"], luma, tol=1e-6)
        blend = np.clip(0.6 * x.astype(np.float32) + 0.4 * luma, 0, bound).astype(x.dtype)
        same(results[f"saturation_{name}"], blend, tol=1e-6 if x.dtype == np.float32 else 1)
        mean = luma.astype(np.float32).mean(axis=(-3, -2, -1), keepdims=True)
        blend = np.clip(0.7 * x.astype(np.float32) + 0.3 * mean, 0, bound).astype(x.dtype)
        same(results[f"contrast_{name}"], blend, tol=1e-6 if x.dtype == np.float32 else 1)
    std, mean = np.float32([0.2, 0.25, 0.5])[:, None, None], np.float32([0.5, 0.4, 0.3])[:, None, None]
    same(results["normalize"], (BATCH - mean) / std)
    same(results["normalize_inplace"], (BATCH - mean) / std)
    same(results["size_batch"], [16, 12])


def test_tensor_resize_antialiases_as_pillow_and_blur_is_a_reflect_padded_gaussian(results):
    # resize(6): the shorter side to 6 (12 x 16 -> 6 x 8), bilinear with antialiasing = Pillow's filter
    want = np.stack([[np.asarray(Image.fromarray(channel, "F").resize((8, 6), Image.Resampling.BILINEAR))
                      for channel in image] for image in BATCH])
    same(results["resize_batch"], want, tol=1e-5)
    want = np.stack([np.asarray(Image.fromarray(c.astype(np.float32), "F").resize((8, 6), Image.Resampling.BILINEAR))
                     for c in PIXELS])
    same(results["resize_pixels"], np.round(want).astype(np.uint8), tol=1)

    def kernel(size, sigma):
        x = np.arange(size) - (size - 1) / 2
        k = np.exp(-0.5 * (x / sigma) ** 2)
        return k / k.sum()

    kx, ky = kernel(3, 0.8), kernel(5, 1.2)   # kernel_size (x, y), sigma (x, y)
    padded = np.pad(BATCH.astype(np.float64), ((0, 0), (0, 0), (2, 2), (1, 1)), mode="reflect")
    rows = sum(ky[i] * padded[:, :, i:i + 12, :] for i in range(5))
    want = sum(kx[j] * rows[:, :, :, j:j + 16] for j in range(3))
    same(results["blur_batch"], want.astype(np.float32), tol=1e-6)
