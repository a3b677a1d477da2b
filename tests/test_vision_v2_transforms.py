"""torchvision.transforms.v2 (and v1's PILToTensor): the converted program computes torchvision's
values, shapes and dtypes.

torchvision does not import here: the torch program is converted, run where `import torch` fails,
and compared with what torchvision defines, computed with NumPy: PILToTensor / ToImage give the
image's CHW uint8 values unscaled ((1, H, W) for a greyscale image), ToDtype(float32) casts,
ToDtype(float32, scale=True) after them is x * float32(1/255) (torchvision's int -> float), the
v2 classes taking v1's arguments (Compose, RandomHorizontalFlip, Normalize) compute v1's.
(Checked against torchvision 0.28 by hand: the same printout, bit for bit.)
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from isolated import run_script
from msmigrate import convert_source

PROGRAM = '''
import json
import numpy as np
import torch
from PIL import Image
from torchvision import transforms
from torchvision.transforms import v2
from torchvision.transforms.v2 import Compose, PILToTensor, ToDtype, Normalize, RandomHorizontalFlip

rng = np.random.default_rng(0)
rgb = Image.fromarray(rng.integers(0, 256, (4, 5, 3), dtype=np.uint8))
gray = Image.fromarray(rng.integers(0, 256, (6, 7), dtype=np.uint8))
arr = rng.integers(0, 256, (3, 2, 3), dtype=np.uint8)

to_float = v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])
norm = Compose([RandomHorizontalFlip(p=1.0), PILToTensor(), ToDtype(torch.float32, scale=True),
                Normalize((0.5, 0.25, 0.125), (0.5, 0.5, 2.0))])
raw = Compose([PILToTensor()])
v1_raw = transforms.PILToTensor()
image = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])
cast = v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32)])


def show(t):
    return [list(t.shape), str(t.dtype).lower().replace("torch.", ""), t.reshape(-1).tolist()]


res = {"to_float_rgb": show(to_float(rgb)), "to_float_gray": show(to_float(gray)),
       "norm": show(norm(rgb)), "raw_gray": show(raw(gray)), "raw_scaled": show(raw(gray) / 255.0),
       "v1_raw": show(v1_raw(rgb)), "image_pil": show(image(rgb)), "image_arr": show(image(arr)),
       "cast": show(cast(gray))}
print(json.dumps(res))
'''

NO_TORCH = "import sys\nsys.modules['torch'] = None  # the converted program must not need torch\n"


def _expected() -> dict:
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (4, 5, 3), dtype=np.uint8).transpose(2, 0, 1)   # CHW, as PILToTensor
    gray = rng.integers(0, 256, (6, 7), dtype=np.uint8)[None]
    arr = rng.integers(0, 256, (3, 2, 3), dtype=np.uint8).transpose(2, 0, 1)
    scale = lambda x: x.astype(np.float32) * np.float32(1.0 / 255)   # torchvision's to_dtype_image
    mean, std = np.array([0.5, 0.25, 0.125], np.float32), np.array([0.5, 0.5, 2.0], np.float32)
    normed = (scale(rgb[:, :, ::-1]) - mean[:, None, None]) / std[:, None, None]
    return {"to_float_rgb": scale(rgb), "to_float_gray": scale(gray), "norm": normed, "raw_gray": gray,
            "raw_scaled": gray.astype(np.float32) / np.float32(255.0), "v1_raw": rgb, "image_pil": scale(rgb),
            "image_arr": scale(arr), "cast": gray.astype(np.float32)}


def test_v2_names_convert():
    result = convert_source(PROGRAM, "prog.py")
    code = result.code
    assert "MSC104" not in code and "MSC102" not in code, code
    assert not re.search(r"^\s*(import|from) (torch|torchvision)", code, re.M), code
    # ToImage is marked (a tensor input, kept CHW by torch, would be transposed); nothing else is
    assert [m for m in re.findall(r"MSC10\d \S+", code)] == ["MSC101 torchvision.transforms.v2.ToImage:"], code


def test_to_dtype_scale_marked_where_the_input_dtype_is_not_visible():
    code = convert_source("import torch\nfrom torchvision.transforms import v2\n"
                          "a = v2.ToDtype(torch.float32, scale=True)\n"
                          "b = v2.Compose([v2.ToTensor(), v2.ToDtype(torch.float32, scale=True)])\n"
                          "c = v2.ToDtype(torch.uint8, scale=True)\n", "f.py").code
    assert code.count("MSC101 torchvision.transforms.v2.ToDtype(scale=True): scales as from uint8") == 2, code
    assert "MSC102 torchvision.transforms.v2.ToDtype: scale=True to ms.uint8" in code, code


@pytest.mark.framework
def test_converted_v2_program_gives_torchvisions_values():
    code = convert_source(PROGRAM, "prog.py").code
    got = run_script(NO_TORCH + code, timeout=240)
    for key, want in _expected().items():
        shape, dtype, values = got[key]
        assert shape == list(want.shape), (key, shape, want.shape)
        assert dtype == str(want.dtype), (key, dtype, want.dtype)
        np.testing.assert_allclose(np.array(values, dtype=want.dtype), want.reshape(-1), rtol=1e-6, atol=1e-7,
                                   err_msg=key)
    # the unscaled ones exactly
    for key in ("raw_gray", "v1_raw", "cast", "to_float_rgb", "image_arr"):
        assert np.array_equal(np.array(got[key][2], dtype=_expected()[key].dtype), _expected()[key].reshape(-1)), key
