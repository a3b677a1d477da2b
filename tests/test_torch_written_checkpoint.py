"""A program that loads a checkpoint it never saves (`model.load_state_dict(torch.load(path))` of
pretrained weights) reads a file torch.save wrote, a pickle MindSpore cannot read: the conversion
marks the load, and the converted program stops with the command that converts the file; once
`msmigrate weights` wrote the .ckpt beside it, the same program runs and computes torch's outputs."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from msmigrate import convert_source

NET = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x)
'''
PRETRAIN = NET + '''
torch.manual_seed(3)
torch.save(Net().state_dict(), "pretrained.pt")
'''
PROGRAM = NET + '''
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "pretrained.pt"
model = Net()
model.load_state_dict(torch.load(path))
print([round(v, 5) for v in model(torch.ones(1, 3))[0].tolist()])
'''


def _run(args, cwd):
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, timeout=300,
                          env=env, cwd=cwd)


@pytest.mark.framework
def test_a_checkpoint_torch_wrote_is_marked_and_read_once_converted(tmp_path):
    result = convert_source(PROGRAM, "use.py")
    assert [d.line for d in result.diagnostics if "saves no checkpoint" in d.message] == [18]
    (tmp_path / "pretrain.py").write_text(PRETRAIN)
    (tmp_path / "use.py").write_text(PROGRAM)
    (tmp_path / "use_ms.py").write_text(result.code)
    assert _run(["pretrain.py"], tmp_path).returncode == 0
    want = _run(["use.py"], tmp_path)
    assert want.returncode == 0, want.stderr
    stopped = _run(["use_ms.py"], tmp_path)
    assert stopped.returncode != 0 and "msmigrate weights pretrained.pt -o pretrained.ckpt" in stopped.stderr
    converted = _run(["-m", "msmigrate.cli", "weights", "pretrained.pt", "-o", "pretrained.ckpt",
                      "--torch-model", f"{tmp_path / 'use.py'}:Net"], tmp_path)
    assert converted.returncode == 0, converted.stderr
    got = _run(["use_ms.py"], tmp_path)
    assert got.returncode == 0, got.stderr
    assert got.stdout.split("\n")[-2] == want.stdout.split("\n")[-2]


SAVED_BY_A_HELPER = '''
import torch
import torch.nn as nn


def save_checkpoint(state, filename="c.pth.tar"):
    torch.save(state, filename)


torch.manual_seed(0)
model = nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.ones(4, 3)
for _ in range(2):
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
save_checkpoint({"epoch": 2, "state_dict": model.state_dict(), "optimizer": opt.state_dict()})
fresh = nn.Linear(3, 2)
ck = torch.load("c.pth.tar")
fresh.load_state_dict(ck["state_dict"])
print(ck["epoch"], bool((fresh(x) - model(x)).abs().max() < 1e-6), bool((fresh(x) - model(x)).abs().max() == 0))
'''


@pytest.mark.framework
def test_a_checkpoint_saved_through_a_helper_function_loads_back(tmp_path):
    """`torch.save(state, f)` inside a helper (what `state` holds is not visible there: pickled)
    and `torch.load` of the file: the load read it as a MindSpore checkpoint and failed; it reads
    the pickle, and the checkpoint dict's tables are found by parameter name."""
    (tmp_path / "t").mkdir()
    (tmp_path / "m").mkdir()
    (tmp_path / "t" / "p.py").write_text(SAVED_BY_A_HELPER)
    (tmp_path / "m" / "p.py").write_text(convert_source(SAVED_BY_A_HELPER, "p.py").code)
    want, got = _run(["p.py"], tmp_path / "t"), _run(["p.py"], tmp_path / "m")
    assert want.returncode == 0 and got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split("\n")[-2] == want.stdout.split("\n")[-2] == "2 True True"
