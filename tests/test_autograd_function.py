"""torch.autograd.Function -> nn.Cell with bprop (rules/autograd_function.py), run against torch:
fixtures/programs/autograd_function.py trains a model through four custom Functions (a
straight-through sign whose autodiff gradient would be zero, a ctx attribute with a None
gradient, a saved output, a saved intermediate) and prints losses and a weight sum per step."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from test_values_change_type import _outputs, _same_line


@pytest.mark.framework
def test_custom_functions_train_like_torch(tmp_path):
    src = FIXTURES / "programs" / "autograd_function.py"
    result = convert_source(src.read_text(), src.name)
    code = result.code
    assert "torch" not in "".join(line.split("#")[0] for line in code.splitlines()), code
    assert code.count("def bprop(") == 4 and "@ms.jit" in code
    want, got = _outputs(src, code, tmp_path)
    assert len(want) == 4 and len(got) == 4, (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))
    assert want[0].split("w1")[1] != want[-1].split("w1")[1]   # the sign's hand-written gradient trains fc1


@pytest.mark.framework
@pytest.mark.parametrize("made_before", [
    # the Cell instance the pass adds after the class is read by the loss
    "class Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
    "        ctx.save_for_backward(x)\n        return x ** 3\n\n    @staticmethod\n    def backward(ctx, g):\n"
    "        x, = ctx.saved_tensors\n        return 3 * g * x ** 2\n\n\nf = Cube.apply\n",
    # the same without a Function: a constant, a layer, a helper (whose `return` leaves no block)
    "k = 3.0\nact = torch.nn.Tanh()\n\n\ndef f(t):\n    return act(t) * k\n",
])
def test_a_tensor_trained_after_what_the_loss_reads_is_made_before_the_step(tmp_path, made_before):
    """`x = torch.ones(3, requires_grad=True)` after a statement the loss reads (the Function's
    `msmigrate_Cube = Cube()`): that statement began the step, and x, left out of it, came after
    `grad_fn = ms.value_and_grad(..., (x,))` (NameError). x is made before the step now."""
    src = tmp_path / "trained_after.py"
    src.write_text(f"import torch\n\n{made_before}\n\nx = torch.ones(3, requires_grad=True)\n"
                   "y = f(x * 0.5).sum()\ny.backward()\nprint(y.item(), x.grad.tolist())\n")
    result = convert_source(src.read_text(), src.name)
    assert not result.diagnostics, result.diagnostics
    code = result.code
    assert code.index("x = ms.Parameter(") < code.index("ms.value_and_grad("), code
    want, got = _outputs(src, code, tmp_path)
    assert len(want) == 1 and len(got) == 1, (want, got)
    assert _same_line(want[0], got[0]), (want, got)


@pytest.mark.parametrize("body", [
    "ctx.mark_non_differentiable(x)\n        return x\n    @staticmethod\n    def backward(ctx, g):\n"
    "        return g\n",
    "ctx.save_for_backward(x)\n        return x\n    @staticmethod\n    def backward(ctx, g):\n"
    "        return g if ctx.materialize_grads else None\n",
    "ctx.mark_dirty(x)\n        return x\n    @staticmethod\n    def backward(ctx, g):\n        return g\n",
    "return x, x\n    @staticmethod\n    def backward(ctx, g1, g2):\n        return g1, g2\n",
])
def test_what_bprop_cannot_express_stops_the_file(body):
    src = ("import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n"
           f"        {body}")
    result = convert_source(src, "f.py")
    codes = {d.code for d in result.diagnostics}
    assert "MSC102" in codes and "MSC108" in codes, result.diagnostics
    assert any("nn.Cell with a bprop" in d.message for d in result.diagnostics)


def test_needs_input_grad_is_each_input_s_own_flag():
    """ctx.needs_input_grad[i] -> whether input i is a floating-point tensor: bprop computes those
    gradients (MindSpore drops the ones not asked for), none for integers and Python values.
    Run against torch by tests/test_corpus_classes.py (fixtures/programs/gat_layers.py)."""
    src = ("import torch\nclass F(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, k):\n"
           "        ctx.save_for_backward(x)\n        return x * k\n    @staticmethod\n    def backward(ctx, g):\n"
           "        x, = ctx.saved_tensors\n        gx = None\n        if ctx.needs_input_grad[0]:\n"
           "            gx = g * 2\n        return gx, None\n")
    result = convert_source(src, "f.py")
    assert not result.diagnostics, result.diagnostics
    assert "if (isinstance(x, ms.Tensor) and ops.is_floating_point(x)):" in result.code, result.code
    assert "x, = (x,)" not in result.code and "needs_input_grad" not in result.code
