"""A checkpoint file the program also names outside torch.save / torch.load (owenliang/mnist-vit:
`torch.save(sd, '.model.pth')` then `os.replace('.model.pth', 'model.pth')`, resumed from
'model.pth' at start; rules/transforms/checkpoint.py): renamed to '.ckpt' in the save and load
calls only, the os.replace raised FileNotFoundError (and a load of the renamed name would never
find the file). Such names are kept exactly, as for names held in variables; run in both
frameworks, twice (the second run resumes)."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from msmigrate import convert_source

PROGRAM = '''
import os
import torch
import torch.nn as nn

model = nn.Linear(3, 1)
with torch.no_grad():
    model.weight.fill_(0.5)
    model.bias.fill_(0.0)
try:
    model.load_state_dict(torch.load('model.pth'))
    print("resumed")
except FileNotFoundError:
    pass
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.ones(4, 3)
for step in range(2):
    loss = ((model(x) - 1) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"{loss.item():.6f}")
    torch.save(model.state_dict(), '.model.pth')
    os.replace('.model.pth', 'model.pth')
torch.save(model.state_dict(), 'last.pth')
print(sorted(f for f in os.listdir('.') if f.endswith(('.pth', '.ckpt'))))
'''


def _run(path):
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=path.parent)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.split("\n")


@pytest.mark.framework
def test_a_checkpoint_moved_by_name_is_saved_and_resumed_under_that_name(tmp_path):
    code = convert_source(PROGRAM, "t.py").code
    assert "'.model.pth'" in code and "'model.pth')" in code and "'last.ckpt'" in code, code   # only 'last' renamed
    (tmp_path / "torch").mkdir()
    (tmp_path / "ms").mkdir()
    src, out = tmp_path / "torch" / "t.py", tmp_path / "ms" / "t.py"
    src.write_text(PROGRAM)
    out.write_text(code)
    for _ in range(2):   # the second run resumes from model.pth
        want, got = _run(src), _run(out)
        assert got[:-2] == want[:-2]
    assert "resumed" in got
    assert got[-2] == "['last.ckpt', 'model.pth']" and want[-2] == "['last.pth', 'model.pth']"
