"""torch.autograd.grad of outputs computed in the same block (rules/tape_grad.py): converted to
torch.func.vjp over a function of the inputs (ms.vjp), run against torch; a gradient taken
inside a training step (a block with a backward pass) stays marked."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES
from msmigrate import convert_source

PROGRAM = FIXTURES / "programs" / "tape_grad.py"


def _run(path, cwd):
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_grad_call_of_the_program_is_converted():
    result = convert_source(PROGRAM.read_text(), PROGRAM.name)
    assert "import torch" not in result.code and "torch.autograd" not in result.code.split('"""', 2)[2], result.code
    assert result.code.count("ms.vjp(") == 4
    assert not [d for d in result.diagnostics if d.code in ("MSC102", "MSC108")], result.diagnostics


@pytest.mark.framework
def test_converted_gradients_match_torch(tmp_path):
    out = tmp_path / PROGRAM.name
    out.write_text(convert_source(PROGRAM.read_text(), PROGRAM.name).code)
    want, got = _run(PROGRAM, tmp_path), _run(out, tmp_path)
    assert set(want) == set(got)
    for key in want:
        np.testing.assert_allclose(np.array(got[key]), np.array(want[key]), rtol=1e-4, atol=1e-5, err_msg=key)


GRADIENT_PENALTY = '''
import torch
critic = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(critic.parameters(), lr=0.1)
real = torch.randn(4, 3)
x = real.clone().requires_grad_(True)
out = critic(x)
g = torch.autograd.grad(out.sum(), x, create_graph=True)[0]
loss = out.mean() + ((g.norm(dim=1) - 1) ** 2).mean()
opt.zero_grad()
loss.backward()
opt.step()
'''

REBOUND_INPUT = '''
import torch
x = torch.randn(3, requires_grad=True)
x = x * 2
y = (x ** 2).sum()
x = x + 1
g, = torch.autograd.grad(y, x)
'''


@pytest.mark.parametrize("source", [GRADIENT_PENALTY, REBOUND_INPUT], ids=["gradient_penalty", "input_rebound"])
def test_grad_calls_it_cannot_follow_stay_marked(source):
    result = convert_source(source, "t.py")
    assert "torch.autograd.grad(" in result.code
    assert any(d.code == "MSC108" for d in result.diagnostics), result.diagnostics
