"""torch.optim.LBFGS with a closure-driven step (rules/closure_steps.py, msmigrate_LBFGS in
rules/generated/optimizers.py): the closure handed to step() becomes a compiled loss-and-gradients
step whose gradients the closure hands to the generated optimizer, which runs torch's algorithm
(two-loop recursion, fixed step or strong-Wolfe line search, state kept across step() calls).
The converted programs print, evaluation by evaluation, the losses torch prints."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest

from conftest import FIXTURES
from msmigrate import convert_source

PROGRAMS = FIXTURES / "programs"
NUMBER = re.compile(r"-?\d+\.\d+e[-+]\d+")


def _convert(name: str) -> str:
    result = convert_source((PROGRAMS / name).read_text(), name)
    codes = [d.code for d in result.diagnostics]
    assert not {"MSC102", "MSC103", "MSC104", "MSC108"} & set(codes), result.diagnostics
    assert "msmigrate_LBFGS(" in result.code and "import torch" not in result.code
    return result.code


def _printed(path, cwd, *args) -> list[tuple[str, float]]:
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=600,
                          env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = []
    for line in proc.stdout.splitlines():
        numbers = NUMBER.findall(line)
        if numbers:
            out.append((NUMBER.sub("#", line), float(numbers[-1])))
    return out


def _compare(want, got, rtol, first=None):
    if first is None:
        assert [w for w, _ in want] == [g for g, _ in got], "evaluations differ"
    else:   # the same first evaluations (float32: later, a stopping test may decide otherwise)
        want, got = want[:first], got[:first]
        assert [w for w, _ in want] == [g for g, _ in got], "evaluations differ"
    np.testing.assert_allclose([v for _, v in got], [v for _, v in want], rtol=rtol)


@pytest.fixture(scope="module")
def fit_program(tmp_path_factory):
    out = tmp_path_factory.mktemp("lbfgs") / "lbfgs_closure_fit.py"
    out.write_text(_convert("lbfgs_closure_fit.py"))
    return out


@pytest.mark.framework
def test_float64_losses_match_torch_evaluation_by_evaluation(fit_program):
    # L-BFGS alone: a fixed step (3 step() calls, history carried over) then strong Wolfe
    want = _printed(PROGRAMS / "lbfgs_closure_fit.py", fit_program.parent, "float64", "0")
    got = _printed(fit_program, fit_program.parent, "float64", "0")
    assert sum("lbfgs eval" in w for w, _ in want) == 18 and sum("wolfe" in w for w, _ in want) > 25
    _compare(want, got, rtol=1e-8, first=40)
    # near the minimum a trial step of the line search amplifies the last bits (1e-12 at the
    # first Wolfe evaluations, ~1e-6 at the 56th of 61)
    _compare(want, got, rtol=1e-5)


@pytest.mark.framework
def test_after_adam_steps(fit_program):
    # Adam first (a PINN's schedule): MindSpore keeps Adam's lr and betas in float32 (~1e-9 on the
    # losses), which L-BFGS's steps amplify: the same evaluations, close losses
    want = _printed(PROGRAMS / "lbfgs_closure_fit.py", fit_program.parent, "float64", "3")
    got = _printed(fit_program, fit_program.parent, "float64", "3")
    _compare(want, got, rtol=3e-4)


@pytest.mark.framework
def test_float32(fit_program):
    # float32: the kernels differ in the last bits, which this problem amplifies: torch's own run
    # from weights moved by 3e-8 (relative) drifts as far (1e-4 at the 19th evaluation, 1e-3 at
    # the 30th, then another path): the fixed-step phase is compared
    want = _printed(PROGRAMS / "lbfgs_closure_fit.py", fit_program.parent, "float32", "0")
    got = _printed(fit_program, fit_program.parent, "float32", "0")
    _compare(want, got, rtol=1e-4, first=18)


@pytest.mark.framework
def test_method_closure_with_input_derivatives_and_strong_wolfe(tmp_path):
    code = _convert("lbfgs_pinn_method.py")
    assert "self.optimizer.msmigrate_set_gradients(grads)" in code
    out = tmp_path / "lbfgs_pinn_method.py"
    out.write_text(code)
    want = _printed(PROGRAMS / "lbfgs_pinn_method.py", tmp_path)
    got = _printed(out, tmp_path)
    assert len(want) > 12
    _compare(want, got, rtol=1e-6)


LOOP = """
import torch
model = torch.nn.Linear(3, 1)
opt = torch.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
for x, y in loader:
    def closure():
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        print(loss.item())
        loss.backward()
        return loss
    opt.step(closure)
"""


def test_a_closure_in_a_loop_takes_the_batch_and_is_compiled_once():
    code = convert_source(LOOP, "t.py").code
    assert "opt = msmigrate_LBFGS(model.trainable_params(), line_search_fn=\"strong_wolfe\")" in code
    # built before the loop; what the loop binds comes in as arguments
    assert code.index("def train_step(x, y):") < code.index("for x, y in loader:")
    assert "grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)" in code
    body = code[code.index("    def closure():"):]
    assert body.splitlines()[1:4] == ["        loss, grads = train_step(x, y)",
                                      "        opt.msmigrate_set_gradients(grads)",
                                      "        print(loss.item())"]
    program = code[code.index("model = "):]
    assert "zero_grad" not in program and "backward" not in program


@pytest.mark.parametrize("source, message", [
    # no zero_grad: torch adds the evaluations' gradients up
    (LOOP.replace("        opt.zero_grad()\n", ""), "does not clear the gradients"),
    # step() without the closure
    ("import torch\nm = torch.nn.Linear(2, 1)\nopt = torch.optim.LBFGS(m.parameters())\nfor x in xs:\n"
     "    opt.zero_grad()\n    loss = m(x).sum()\n    loss.backward()\n    opt.step()\n", "without a closure"),
])
def test_what_cannot_be_converted_is_marked(source, message):
    result = convert_source(source, "t.py")
    assert any(d.code == "MSC102" and message in d.message for d in result.diagnostics), result.diagnostics


def test_a_closure_defined_before_its_optimizer_gets_its_step_after_it():
    source = ("import torch\n\ndef closure():\n    opt.zero_grad()\n    loss = (net(torch.ones(3, 2)) ** 2).sum()\n"
              "    loss.backward()\n    return loss\n\nnet = torch.nn.Linear(2, 1)\n"
              "opt = torch.optim.LBFGS(net.parameters())\nopt.step(closure)\n")
    code = convert_source(source, "t.py").code
    assert code.index("opt = msmigrate_LBFGS(") < code.index("grad_fn = ms.value_and_grad(forward_fn, None, opt.parameters)") \
        < code.index("opt.step(closure)")
    assert "    loss, grads = train_step()\n    opt.msmigrate_set_gradients(grads)\n" in code


def test_a_method_calling_a_network_built_with_to_device_is_no_data_method():
    # `self.net = nn.Sequential(...).to(device)`: the residual method calls the network, so it is
    # computed inside the step (before, it ran outside as data preparation: zero gradients)
    source = ("import torch\nimport torch.nn as nn\n\nclass PINN:\n    def __init__(self, x):\n        self.x = x\n"
              "        self.net = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 1)).to('cpu')\n"
              "        self.opt = torch.optim.Adam(self.net.parameters())\n\n    def residual(self, x):\n"
              "        return self.net(x) - torch.sin(x)\n\n    def fit(self, n):\n        for i in range(n):\n"
              "            self.opt.zero_grad()\n            r = self.residual(self.x)\n            loss = (r ** 2).mean()\n"
              "            loss.backward()\n            self.opt.step()\n")
    code = convert_source(source, "t.py").code
    assert "def forward_fn():\n                r = self.residual(self.x)\n" in code, code[code.index("def fit"):]
