"""Device logic (torch.accelerator, torch.backends flags, `.type` of a device) converts so that
the program runs and decides as torch did: both versions print the same lines."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import FIXTURES
from msmigrate import convert_source

ENV = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}


@pytest.mark.framework
def test_converted_device_logic_prints_what_torch_prints(tmp_path):
    source = FIXTURES / "programs" / "device_logic.py"
    result = convert_source(source.read_text(), source.name)
    assert "import torch" not in result.code and "MSC108" not in result.code
    script = tmp_path / source.name
    script.write_text(result.code)

    def run(path):
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [line for line in proc.stdout.splitlines() if line.split(" ")[0] in
                ("accelerator", "count", "kind", "built", "deterministic", "out", "cudnn")]

    expected = run(source)
    assert len(expected) == 8
    assert run(script) == expected


@pytest.mark.framework
def test_models_moved_on_construction_train_like_torchs(tmp_path):
    """`nn.Sequential(...).to(device)` / `.cpu()`: the model is the constructor's, so it starts in
    training mode as torch's does (it stayed in eval mode: dropout off, silently; corpus dz-xor),
    and `.eval()` on construction keeps it in eval mode."""
    code = (
        "import torch\nimport torch.nn as nn\n"
        "device = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
        "model = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5)).to(device)\n"
        "net = nn.Linear(2, 2).cpu()\n"
        "frozen = nn.Linear(2, 2).eval()\n"
        "print('modes', model.training, net.training, frozen.training)\n")
    result = convert_source(code, "t.py")
    src, dst = tmp_path / "src.py", tmp_path / "dst.py"
    src.write_text(code)
    dst.write_text(result.code)
    outs = []
    for path in (src, dst):
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=ENV)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append([ln for ln in proc.stdout.splitlines() if ln.startswith("modes")])
    assert outs[0] == ["modes True True False"]
    assert outs[1] == outs[0], result.code
