"""Values whose type changes in the conversion, read back by the program (issue 11 item 10):
`device.type` on a converted device (a string), `torch.LongTensor(n)` with an int size in a name,
numbers formatted with a spec (`'{:+.2f}'.format(tensor)`, f"{loss:.4f}"), the loss scaler's
state_dict / load_state_dict / get_scale. Converted, the program runs and prints torch's lines."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES
from msmigrate import convert_source

NUMBER = re.compile(r"[-+]?\d+\.\d+(?:e[-+]?\d+)?|[-+]?\d+")


def _same_line(a: str, b: str) -> bool:
    """Equal text around the numbers, numbers equal to the last printed digit (float32 ties may
    round either way: 0.43375 prints 0.4337 from torch's float, 0.4338 from MindSpore's)."""
    if NUMBER.sub("#", a) != NUMBER.sub("#", b):
        return False
    for x, y in zip(NUMBER.findall(a), NUMBER.findall(b)):
        digits = len(x.split(".")[1]) if "." in x and "e" not in x else 0
        if abs(float(x) - float(y)) > 1.01 * 10 ** -digits * (1 if digits else 0) + 1e-9 * abs(float(x)):
            return False
    return True


def _outputs(src: Path, converted_code: str, tmp_path: Path) -> list[list[str]]:
    """stdout lines of the torch program and of its conversion (written beside it in tmp_path)."""
    converted = tmp_path / f"{src.stem}_converted.py"
    converted.write_text(converted_code)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "GLOG_v": "3"}
    outs = []
    for path in (src, converted):
        proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300,
                              cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outs.append(proc.stdout.splitlines())
    return outs


@pytest.mark.framework
def test_values_that_change_type_are_read_like_torch(tmp_path):
    src = FIXTURES / "programs" / "values_change_type.py"
    result = convert_source(src.read_text(), src.name)
    assert "MSC108" not in {d.code for d in result.diagnostics}
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 9 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


@pytest.mark.framework
def test_objects_the_files_functions_make_convert_as_if_made_in_place(tmp_path):
    """`optimizer, scheduler = build(model)` and `criterion = make_loss()`: the loss took int64
    labels (TypeError), the scheduler's state was saved as a network's (AttributeError), and a
    checkpoint's `["scheduler"]` raised KeyError; converted, the program prints torch's lines."""
    src = FIXTURES / "programs" / "train_factory_made_objects.py"
    result = convert_source(src.read_text(), src.name)
    assert result.diagnostics == []
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 8 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_line_comparison_is_strict():
    assert _same_line("loss 0.4337 scale 1024.0", "loss 0.4338 scale 1024.0")
    assert not _same_line("loss 0.4337", "loss 0.4357")
    assert not _same_line("device cpu", "device CPU")
    assert not _same_line("correct   2", "correct   3")


@pytest.mark.framework
def test_device_checks_emptied_inside_the_step_go(tmp_path):
    """`if torch.cuda.is_available(): x = x.cuda()` inside the loop became `if ...: pass` in the
    compiled step, where the device query does not compile ('builtin_function_or_method' object
    has no attribute '__code__'); the emptied statement goes and the losses are torch's."""
    src = FIXTURES / "programs" / "device_checks_in_step.py"
    result = convert_source(src.read_text(), src.name)
    assert "is_available()" not in result.code.split("def forward_fn", 1)[1].split("for epoch", 1)[0]
    outs = [[ln for ln in out if ln.startswith("epoch")] for out in _outputs(src, result.code, tmp_path)]
    assert len(outs[0]) == 3 and all(_same_line(a, b) for a, b in zip(*outs)), outs


@pytest.mark.framework
def test_legacy_elementwise_mean_reduction_is_mean(tmp_path):
    """reduction='elementwise_mean' (vinhkhuc/PyTorch-Mini-Tutorials): torch takes it for 'mean',
    MindSpore's losses raised ValueError at construction."""
    src = tmp_path / "legacy.py"
    src.write_text("import torch\n"
                   "logits = torch.tensor([[0.2, 1.5, -0.3], [1.0, 0.1, 0.4]])\n"
                   "target = torch.tensor([1, 0])\n"
                   "ce = torch.nn.CrossEntropyLoss(reduction='elementwise_mean')\n"
                   "mse = torch.nn.MSELoss(reduction='elementwise_mean')\n"
                   "print('ce %.6f' % ce(logits, target).item())\n"
                   "print('mse %.6f' % mse(logits, logits * 0.5).item())\n")
    outs = [" ".join(out).split() for out in _outputs(src, convert_source(src.read_text(), src.name).code, tmp_path)]
    assert len(outs[0]) == 4 and outs[0] == outs[1], outs


LEGACY_REDUCTIONS = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
logits = torch.tensor([[0.2, 1.5, -0.3], [1.0, 0.1, 0.4]])
target = torch.tensor([1, 0])
probs = torch.sigmoid(logits)
half = logits * 0.5
cases = {
    'mse sum': nn.MSELoss(size_average=False)(logits, half),
    'mse none': nn.MSELoss(reduce=False)(logits, half),
    'mse mean': nn.MSELoss(size_average=True, reduce=True)(logits, half),
    'l1 none over reduction': nn.L1Loss(reduce=False, reduction='sum')(logits, half),
    'ce sum': nn.CrossEntropyLoss(size_average=False)(logits, target),
    'nll none': nn.NLLLoss(None, None, -100, False)(F.log_softmax(logits, 1), target),
    'bce sum': nn.BCELoss(size_average=False)(probs, torch.ones(2, 3)),
    'F mse sum': F.mse_loss(logits, half, size_average=False),
    'F ce none': F.cross_entropy(logits, target, reduce=False),
    'F l1 sum positional': F.l1_loss(logits, half, False),
    'F smooth l1 defaults': F.smooth_l1_loss(logits, half, size_average=None, reduce=None),
}
for name, value in cases.items():
    print(name, [round(v, 5) for v in value.reshape(-1).tolist()])
"""


@pytest.mark.framework
def test_legacy_size_average_and_reduce_become_reduction(tmp_path):
    """`size_average=False` / `reduce=False` (pre-1.0 torch, still accepted): MindSpore has only
    `reduction`; they were dropped with a marker, a sum becoming a mean. Now each call computes
    torch's numbers, positional legacy arguments included; `reduction=` given next to them is
    ignored, as torch does."""
    src = tmp_path / "legacy_reductions.py"
    src.write_text(LEGACY_REDUCTIONS)
    result = convert_source(src.read_text(), src.name)
    assert not [d for d in result.diagnostics if "size_average" in d.message or "reduce" in d.message]
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 11 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


def test_legacy_reduction_known_only_at_run_time_is_marked():
    result = convert_source("import torch\ndef f(avg):\n    return torch.nn.MSELoss(size_average=avg)\n", "m.py")
    assert any(d.code == "MSC105" and "size_average" in d.message for d in result.diagnostics)
    assert "nn.MSELoss()" in result.code   # dropped, with the marker
