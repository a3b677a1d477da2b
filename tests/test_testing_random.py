"""torch.testing.assert_close / assert_allclose and torch.random.fork_rng become functions of
rules/generated/testing.py copied into the converted file; the per-API suite
(tests/api_suite/cases/testing_random.toml) compares each argument form with torch. Here: the
copied code is left alone when a converted file is converted again, and torch.GradScaler (the
object torch.amp.GradScaler is) scales the loss of a converted training step as its other names do."""
from __future__ import annotations

from pathlib import Path

from msmigrate import convert_source


def test_generated_testing_code_converts_to_itself():
    from msmigrate.rules.generated import testing
    text = Path(testing.__file__).read_text()
    again = convert_source(text, "testing.py", force=True)
    assert again.code == text and not again.diagnostics, [d.to_text() for d in again.diagnostics]


LOOP = '''
import torch
import torch.nn as nn

model = nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = {scaler}("cpu", init_scale=1024.0)
x, y = torch.randn(8, 4), torch.randn(8, 1)
for step in range(3):
    opt.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
'''


def test_torch_grad_scaler_scales_the_converted_step_as_torch_amp_grad_scaler():
    short = convert_source(LOOP.format(scaler="torch.GradScaler"), "loop.py")
    full = convert_source(LOOP.format(scaler="torch.amp.GradScaler"), "loop.py")
    assert not short.diagnostics, [d.to_text() for d in short.diagnostics]
    assert short.code == full.code
    assert "DynamicLossScaler" in short.code and "scaler.unscale(grads)" in short.code
