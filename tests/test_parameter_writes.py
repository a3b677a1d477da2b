"""In-place writes to Parameters outside the compiled step (an EMA of the weights, also written
with `v *= d` over the state dict, a target network's soft update) after the step has used them: MindSpore's compiled code keeps reading a
Parameter's old values when setitem / copy_ / set_data write it, so a loop variable over a
network's parameters is written with ops.assign there. Converted, the program prints torch's
numbers at every step (fixtures/programs/ema_parameter_writes.py)."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from test_values_change_type import _outputs, _same_line


@pytest.mark.framework
def test_ema_and_target_updates_reach_the_compiled_networks(tmp_path):
    src = FIXTURES / "programs" / "ema_parameter_writes.py"
    result = convert_source(src.read_text(), src.name)
    assert not result.diagnostics, [d.to_text() for d in result.diagnostics]
    assert "ops.assign(e, " in result.code and "ops.assign(v, v.mul(decay))" in result.code
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 5 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_only_loop_names_over_parameters_are_assigned():
    code = ("import torch\nmodel = torch.nn.Linear(2, 2)\nx = torch.ones(2)\n"
            "for p in model.parameters():\n    p.mul_(0.5)\nfor t in [x]:\n    t.mul_(0.5)\n")
    out = convert_source(code, "m.py").code
    assert "ops.assign(p, p.mul(0.5))" in out and "t[...] = t.mul(0.5)" in out


def test_operators_on_loop_tensors_of_a_network_become_in_place_writes():
    code = ("import torch\nmodel = torch.nn.Linear(2, 2)\nscores = {'a': 1.0}\n"
            "for k, v in model.state_dict().items():\n    v *= 0.5\n"
            "for k, v in scores.items():\n    v *= 0.5\n")
    out = convert_source(code, "m.py").code
    assert "ops.assign(v, v.mul(0.5))" in out and out.rstrip().endswith("v *= 0.5")
