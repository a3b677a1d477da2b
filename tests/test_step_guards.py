"""What the code around a converted train step reads or decides, which a compiled step would
silently change (the runs against torch are fixture programs in test_parity_programs:
train_loss_reads_annealed_global.py, train_forward_sets_loss_term.py):

* a loss function of the file reading a value the program changes between steps, and a
  network attribute its forward sets: the step is left uncompiled (MSC109);
* a test of the loss that skips the batch before torch's backward pass: marked (MSC101), since
  the converted step has applied the update when it runs."""
from __future__ import annotations

from msmigrate import convert_source

LOOP = ("import torch\nimport torch.nn as nn\nmodel = nn.Linear(2, 1)\n"
        "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nx = torch.ones(4, 2)\n")


def _codes(code: str) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in convert_source(code, "m.py").diagnostics]


def test_a_loss_function_reading_a_changing_global_leaves_the_step_uncompiled():
    code = LOOP + ("w = 0.0\n\n\ndef loss_fn(out):\n    return out.mean() * w\n\n\n"
                   "for step in range(3):\n    w = float(step)\n    loss = loss_fn(model(x))\n"
                   "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    found = _codes(code)
    assert any(c == "MSC109" and "'loss_fn', which reads 'w'" in m for c, m in found), found
    steady = code.replace("    w = float(step)\n", "")
    assert not any(c == "MSC109" for c, _ in _codes(steady)), _codes(steady)


def test_a_skip_of_the_batch_before_backward_is_marked():
    code = LOOP + ("for step in range(3):\n    loss = model(x).mean()\n    if not torch.isfinite(loss):\n"
                   "        continue\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    found = _codes(code)
    assert any(c == "MSC101" and "a skipped batch still trains" in m for c, m in found), found
    after = code.replace("    if not torch.isfinite(loss):\n        continue\n", "") + \
        "    if not torch.isfinite(loss):\n        continue\n"
    assert not any("a skipped batch" in m for _, m in _codes(after))


def test_zero_grad_before_a_conditional_update_is_marked_not_accumulated():
    """`opt.zero_grad()` every batch and `if epoch >= 1: opt.step()`: torch applies one batch's
    gradients; the converted accumulation would apply every batch's since the last update."""
    code = LOOP + ("for epoch in range(2):\n    for i in range(2):\n        opt.zero_grad()\n"
                   "        loss = model(x).mean()\n        loss.backward()\n        if epoch >= 1:\n"
                   "            opt.step()\n")
    result = convert_source(code, "m.py")
    assert any(d.code == "MSC101" and "zero_grad() before this backward pass" in d.message
               for d in result.diagnostics), result.diagnostics
    assert "# msmigrate: MSC101 zero_grad() before" in result.code
    accumulating = code.replace("        opt.zero_grad()\n", "").replace("            opt.step()\n",
                                                                        "            opt.step()\n            opt.zero_grad()\n")
    assert not any("zero_grad() before" in d.message for d in convert_source(accumulating, "a.py").diagnostics)
