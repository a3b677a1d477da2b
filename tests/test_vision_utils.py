"""torchvision.utils.make_grid / save_image -> generated NumPy/PIL functions (rules/generated/vision.py).
torchvision is not installable here, so the converted program is checked against values derived by
hand from torchvision's definition: tiles placed `nrow` per row after `padding` pixels of
`pad_value`, one channel repeated to three, a single image returned without padding, `normalize`
mapping [min, max] to [0, 1], pixels written as floor(x * 255 + 0.5)."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from isolated import ENV
from msmigrate import convert_source

PROGRAM = '''
import json
import numpy as np
import torch
import torchvision.utils as vutils
from PIL import Image

gray = torch.stack([torch.full((1, 2, 2), (k + 1) / 4, dtype=torch.float32) for k in range(3)])   # 3 images, 1 channel
grid = vutils.make_grid(gray, nrow=2, padding=1, pad_value=0.5)
single = vutils.make_grid(torch.zeros(1, 3, 2, 2))
spread = vutils.make_grid([torch.full((1, 2, 2), -1.0), torch.full((1, 2, 2), 3.0)], padding=0, normalize=True)
vutils.save_image(gray, 'grid.png', nrow=2, padding=1, pad_value=0.5)
png = np.asarray(Image.open('grid.png'))
print(json.dumps({"grid": grid.tolist(), "single": list(single.shape), "spread": spread[0].tolist(),
                  "png": png[:, :, 0].tolist(), "png_shape": list(png.shape)}))
'''


@pytest.mark.framework
def test_make_grid_and_save_image_compute_torchvisions_layout(tmp_path):
    result = convert_source(PROGRAM, "grid.py")
    code = result.code
    assert not result.diagnostics, result.diagnostics
    assert not re.search(r"^\s*(import|from) torch|vutils\.", code, re.M), code
    (tmp_path / "grid.py").write_text(code)
    proc = subprocess.run([sys.executable, "grid.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    p, a, b, c = 0.5, 0.25, 0.5, 0.75   # pad value, the three images
    rows = [[p] * 7, [p, a, a, p, b, b, p], [p, a, a, p, b, b, p], [p] * 7,
            [p, c, c, p, p, p, p], [p, c, c, p, p, p, p], [p] * 7]
    assert got["grid"] == [rows] * 3                 # gray repeated to three channels
    assert got["single"] == [3, 2, 2]                # one image: itself, no padding
    assert got["spread"] == [[0.0, 0.0, 1.0, 1.0]] * 2   # min -1 -> 0, max 3 -> 1, side by side
    px = {0.5: 128, 0.25: 64, 0.75: 191}             # floor(x * 255 + 0.5)
    assert got["png_shape"] == [7, 7, 3]
    assert got["png"] == [[px[v] for v in row] for row in rows]
