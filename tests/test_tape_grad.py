"""torch.autograd.grad of outputs computed in the same block (rules/tape_grad.py): converted to
torch.func.vjp over a function of the inputs (ms.vjp), run against torch; inside a training step
(a block with a backward pass) a create_graph=True gradient (a PINN's derivatives, a gradient
penalty) converts and trains like torch, any other stays marked."""
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


def _assert_conversion_prints_torchs_values(program, tmp_path):
    """The program and its conversion each print one JSON dict (numbers or lists of them): equal."""
    out = tmp_path / program.name
    out.write_text(convert_source(program.read_text(), program.name).code)
    want, got = _run(program, tmp_path), _run(out, tmp_path)
    assert set(want) == set(got)
    for key in want:
        np.testing.assert_allclose(np.array(got[key], dtype=float), np.array(want[key], dtype=float),
                                   rtol=1e-4, atol=1e-5, err_msg=key)


@pytest.mark.framework
def test_converted_gradients_match_torch(tmp_path):
    _assert_conversion_prints_torchs_values(PROGRAM, tmp_path)


# torch's gradient is a constant in the step's graph (no create_graph): MindSpore's vjp would be
# differentiated again by the step
GRADIENT_WITHOUT_GRAPH = '''
import torch
critic = torch.nn.Linear(3, 1)
opt = torch.optim.SGD(critic.parameters(), lr=0.1)
for step in range(3):
    x = torch.randn(4, 3).requires_grad_(True)
    out = critic(x)
    g = torch.autograd.grad(out.sum(), x)[0]
    loss = out.mean() + (g * x).mean()
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


@pytest.mark.parametrize("source", [GRADIENT_WITHOUT_GRAPH, REBOUND_INPUT], ids=["step_gradient_without_graph",
                                                                                "input_rebound"])
def test_grad_calls_it_cannot_follow_stay_marked(source):
    result = convert_source(source, "t.py")
    assert "torch.autograd.grad(" in result.code
    assert any(d.code == "MSC108" for d in result.diagnostics), result.diagnostics


PINN = FIXTURES / "programs" / "train_input_derivatives.py"


def test_derivatives_in_a_training_step_convert_and_run_uncompiled():
    """A PINN's u_t and u_tt (create_graph=True, the second of the first) in the loss: each the vjp
    of a function of the input, the second's function computing the first (its vjp and function
    not handed back as auxiliary values); the step stays in PyNative (lint MSG119: MindSpore 2.10
    does not compile a gradient of a gradient). It trains like torch: test_parity_programs."""
    result = convert_source(PINN.read_text(), PINN.name)
    assert "import torch" not in result.code and "torch.autograd" not in result.code.split('"""', 2)[2]
    assert result.code.count("ms.vjp(") == 2
    assert "return u_t, (u,)" in result.code and "u_t, msmigrate_vjp_1, (u,) = ms.vjp(" in result.code
    assert [d.code for d in result.diagnostics] == ["MSC109"] and "MSG119" in result.diagnostics[0].message


GRADIENT_PENALTY = '''
import torch
torch.manual_seed(0)
critic = torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(critic.parameters(), lr=0.05)
real = torch.randn(16, 3)
fake = torch.randn(16, 3) + 1.0
for step in range(4):
    alpha = torch.linspace(0, 1, 16).view(-1, 1)
    mixed = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
    out = critic(mixed)
    g = torch.autograd.grad(outputs=out, inputs=mixed, grad_outputs=torch.ones_like(out), create_graph=True,
                            retain_graph=True)[0]
    penalty = ((g.norm(2, dim=1) - 1) ** 2).mean()
    loss = critic(fake).mean() - critic(real).mean() + 10 * penalty
    opt.zero_grad()
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.6f}")
'''


@pytest.mark.framework
def test_gradient_penalty_trains_like_torch(tmp_path):
    """WGAN-GP's penalty: the critic's gradient with respect to the mixed input (create_graph=True)
    in the loss, differentiated again by the backward pass (it was left marked: the file stopped
    at its top)."""
    from msmigrate.parity.check import Options, run_parity
    from msmigrate.parity.report import format_text

    script = tmp_path / "gp.py"
    script.write_text(GRADIENT_PENALTY)
    result = convert_source(GRADIENT_PENALTY, "gp.py")
    assert "import torch" not in result.code and [d.code for d in result.diagnostics] == ["MSC109"], result.diagnostics
    r = run_parity(script, None, Options(steps=4, timeout=300))
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == 4


def test_derivatives_with_respect_to_two_inputs_of_one_output_convert():
    """u_t, u_x and u_xx of one output u = net(hstack([x, t])) (a Burgers residual): u_x's function
    computes u_t's vjp (its function closes over x, now u_x's argument) and hands u_t back as an
    auxiliary value, u_xx's computes u_x's; nothing is left to torch. Trains like torch:
    test_parity_programs (fixtures/programs/train_pde_residual.py)."""
    program = FIXTURES / "programs" / "train_pde_residual.py"
    result = convert_source(program.read_text(), program.name)
    assert "import torch" not in result.code and result.code.count("ms.vjp(") == 3
    assert "u, msmigrate_vjp_1, (inp, u_t,) = ms.vjp(msmigrate_outputs_1, x, has_aux=True)" in result.code
    assert [d.code for d in result.diagnostics] == ["MSC109"]
    # an input the outputs may not read keeps torch's None for allow_unused=True: left marked
    unused = ("import torch\nnet = torch.nn.Linear(1, 1)\nopt = torch.optim.SGD(net.parameters(), lr=0.1)\n"
              "x = torch.ones(3, 1).requires_grad_(True)\nz = torch.ones(3, 1).requires_grad_(True)\n"
              "for i in range(2):\n    u = net(x)\n"
              "    g = torch.autograd.grad(u, z, torch.ones_like(u), create_graph=True, allow_unused=True)[0]\n"
              "    loss = u.mean()\n    opt.zero_grad()\n    loss.backward()\n    opt.step()\n")
    assert "torch.autograd.grad(" in convert_source(unused, "u.py").code


# ---- backward passes taken for an input's gradient (FGSM, saliency maps, adversarial training) ----
INPUT_GRADIENTS = FIXTURES / "programs" / "input_gradients.py"


def test_input_gradients_of_backward_passes_convert():
    """`loss.backward()` read through `x.grad` of a tensor the block made require grad (the
    attribute write, requires_grad_(), clone().detach().requires_grad_(True), requires_grad=True,
    backward(gradient), two inputs): each a vjp of a function of the input, the markings gone,
    model.zero_grad() dropped. They were refused (MSC102: a backward pass without an optimizer
    step), the file stopped at its top."""
    result = convert_source(INPUT_GRADIENTS.read_text(), INPUT_GRADIENTS.name)
    body = result.code.split('"""', 2)[2]
    assert "import torch" not in result.code and ".grad" not in body and "requires_grad" not in body
    assert result.code.count("ms.vjp(") == 5 and "zero_grad" not in body
    # a statement reading the network's output between it and the loss runs after the vjp
    assert "(output,) = ms.vjp(" in body and body.index("(output,) = ms.vjp(") < body.index("init_pred = ")
    assert not [d for d in result.diagnostics if d.code in ("MSC102", "MSC108")], result.diagnostics


@pytest.mark.framework
def test_input_gradients_match_torch(tmp_path):
    _assert_conversion_prints_torchs_values(INPUT_GRADIENTS, tmp_path)


@pytest.mark.parametrize("name", ["train_adversarial_fgsm.py", "train_adversarial_pgd.py"])
def test_adversarial_examples_are_computed_before_a_compiled_step(name):
    """The attack's input gradients (one FGSM pass, PGD's loop of them) are vjps run before the
    step, which is compiled and takes the perturbed batch: torch's input gradient is a constant
    of the update's graph. (Left in the step they were differentiated again, uncompiled.) Both
    train like torch: test_parity_programs."""
    program = FIXTURES / "programs" / name
    result = convert_source(program.read_text(), name)
    code = result.code
    assert "import torch" not in code and not result.diagnostics, result.diagnostics
    assert code.count("ms.vjp(") == 1 and "@ms.jit\ndef train_step(" in code
    forward = code[code.index("def forward_fn("):code.index("grad_fn = ")]
    assert "vjp" not in forward and "x_adv" in forward
    assert code.index("ms.vjp(") > code.index("for epoch in range(2):") and \
        code.index("ms.vjp(") < code.index("= train_step(")


ATTACK_THEN_UPDATE = '''
import torch
import torch.nn.functional as F
model = torch.nn.Linear(4, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 4), torch.randint(0, 3, (8,))
for step in range(3):
    opt.zero_grad()
    x.requires_grad = True
    loss0 = F.cross_entropy(model(x), y)
    loss0.backward()
    x_adv = (x + 0.1 * x.grad.sign()).detach()
    loss = F.cross_entropy(model(x_adv), y)
    loss.backward()
    opt.step()
'''

GRAD_READ_ELSEWHERE = '''
import torch


def show():
    print(x.grad.sum())


model = torch.nn.Linear(4, 1)
x = torch.randn(2, 4)
x.requires_grad_()
out = model(x).sum()
out.backward()
g = x.grad
show()
'''

RETAINED = '''
import torch
model = torch.nn.Linear(4, 1)
x = torch.randn(2, 4)
x.requires_grad_()
out = model(x).sum()
out.backward(retain_graph=True)
print(x.grad.sum())
'''

OPTIMIZED_INPUT_GRAD_READ = '''
import torch
net = torch.nn.Linear(6, 1)
img = torch.randn(1, 6)
img.requires_grad = True
opt = torch.optim.Adam([img], lr=0.1)
for it in range(3):
    opt.zero_grad()
    loss = net(img).sum()
    loss.backward()
    opt.step()
    print(img.grad.norm())
'''


@pytest.mark.parametrize("source", [ATTACK_THEN_UPDATE, GRAD_READ_ELSEWHERE, RETAINED, OPTIMIZED_INPUT_GRAD_READ],
                         ids=["parameter_gradients_added_to_the_update", "input_gradient_read_elsewhere",
                              "retain_graph", "optimized_tensor_gradient_read_after_its_step"])
def test_input_gradients_it_cannot_follow_stay_marked(source):
    """No zero_grad between the attack's backward pass and the update's (torch adds the attack's
    parameter gradients to the update's), the input's gradient read in another block too, a
    retained graph, and an optimizer's own tensor's gradient read after its step: marked, the file
    stops at its top (none converted in silence). (`x.grad` read under an `if` after the pass
    is read in its block: converted.)"""
    result = convert_source(source, "t.py")
    assert "ms.vjp(" not in result.code
    assert any(d.code == "MSC102" for d in result.diagnostics), result.diagnostics
    assert any(d.code == "MSC108" for d in result.diagnostics), result.diagnostics
