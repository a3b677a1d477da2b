"""A value `forward` caches on the module (`if self.src_mask is None or ...: self.src_mask = ...`,
then `self.src_mask` handed to nn.TransformerEncoder; rules/forward_caches.py): compiled with the
attribute written in `construct`, MindSpore read a join of None and a Tensor and the step failed
to compile. Converted, forward reads the cache through a local; run against torch."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from msmigrate import convert_source

PROGRAM = '''
import torch
import torch.nn as nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(1, 8)
        self.src_mask = None
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(d_model=8, nhead=2, dropout=0.0), num_layers=1)
        self.dec = nn.Linear(8, 1)

    def forward(self, src):
        if self.src_mask is None or self.src_mask.size(0) != len(src):
            self.src_mask = self._mask(len(src))
        return self.dec(self.enc(self.emb(src), self.src_mask))

    def _mask(self, sz):
        mask = (torch.triu(torch.ones(sz, sz)) == 1).transpose(0, 1)
        return mask.float().masked_fill(mask == 0, float('-inf')).masked_fill(mask == 1, float(0.0))


model = M()
for p in model.parameters():
    with torch.no_grad():
        p.copy_(torch.sin(torch.arange(p.numel(), dtype=torch.float32)).reshape(p.shape) * 0.3)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.sin(torch.arange(18, dtype=torch.float32)).reshape(6, 3, 1)
y = torch.cos(torch.arange(18, dtype=torch.float32)).reshape(6, 3, 1)
for step in range(3):
    opt.zero_grad()
    loss = nn.MSELoss()(model(x), y)
    loss.backward()
    opt.step()
    print(f"{loss.item():.6f}")
'''


def _losses(path):
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [float(v) for v in proc.stdout.split()]


@pytest.mark.framework
def test_a_mask_cached_in_forward_trains_like_torch(tmp_path):
    result = convert_source(PROGRAM, "t.py")
    assert "src_mask = self.src_mask" in result.code and "self.src_mask = " in result.code   # __init__'s stays
    src, out = tmp_path / "t.py", tmp_path / "t_ms.py"
    src.write_text(PROGRAM)
    out.write_text(result.code)
    assert "@ms.jit" in result.code
    want, got = _losses(src), _losses(out)
    assert len(got) == len(want) == 3
    assert got == pytest.approx(want, rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("source, cached", [
    (PROGRAM, True),
    # also written by another method: a state, not a cache
    (PROGRAM.replace("    def _mask(self, sz):", "    def reset(self):\n        self.src_mask = None\n\n"
                     "    def _mask(self, sz):"), False),
    # read by another method: it would stay None there
    (PROGRAM.replace("    def _mask(self, sz):", "    def cached(self):\n        return self.src_mask\n\n"
                     "    def _mask(self, sz):"), False),
    # read from outside the class
    (PROGRAM + "print(model.src_mask)\n", False),
    # not None at first
    (PROGRAM.replace("self.src_mask = None", "self.src_mask = torch.zeros(6, 6)"), False),
])
def test_only_a_cache_is_read_through_a_local(source, cached):
    code = convert_source(source, "t.py").code
    assert ("src_mask = self.src_mask" in code) == cached, code
