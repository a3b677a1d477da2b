"""A distribution MindSpore lacks (rules/generated/distributions.py's classes, copied into the
file) made once in `__init__` and called in `forward` (a normalizing flow's prior): the compiled
training step calls its log_prob, so the copied class must hold no import statement (MindSpore's
compiler rejected the function-local imports: "Unsupported statement 'Import'"); its imports
are the file's. Run under both frameworks, the losses compared."""
from __future__ import annotations

import ast

import numpy as np
import pytest

from isolated import run_script
from msmigrate import convert_source

PROGRAM = '''
import json
import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Laplace, MultivariateNormal


class Flow(nn.Module):
    def __init__(self):
        super().__init__()
        self.prior = MultivariateNormal(torch.zeros(2), torch.eye(2))
        self.noise = Laplace(torch.zeros(2), torch.ones(2))
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        z = self.lin(x)
        return self.prior.log_prob(z) + self.noise.log_prob(z).sum(-1)


rng = np.random.RandomState(0)
model = Flow()
with torch.no_grad():
    model.lin.weight.copy_(torch.from_numpy(rng.randn(2, 2).astype(np.float32)))
    model.lin.bias.zero_()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x = torch.from_numpy(rng.randn(32, 2).astype(np.float32))
losses = []
for step in range(3):
    loss = -model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    losses.append(loss.item())
print(json.dumps(losses))
'''


@pytest.mark.framework
def test_generated_distribution_in_a_compiled_step():
    result = convert_source(PROGRAM, "flow.py")
    code = result.code
    assert "msmigrate_MultivariateNormal" in code and "msmigrate_Laplace" in code
    assert "@ms.jit" in code and "MSC109" not in [d.code for d in result.diagnostics]
    # the copied classes' imports are the file's: none is left indented in a function
    functions = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.FunctionDef)]
    assert not [n for f in functions for n in ast.walk(f) if isinstance(n, (ast.Import, ast.ImportFrom))]
    np.testing.assert_allclose(run_script(code), run_script(PROGRAM), rtol=1e-5)
