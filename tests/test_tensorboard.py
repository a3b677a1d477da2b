"""torch.utils.tensorboard.SummaryWriter -> mindspore.SummaryRecord, run: the converted program
trains as torch's does and its event file holds the scalars torch's writer was given (read back
with MindSpore's own Event protobuf). tensorboard is not installed here, so the torch program runs
with a recording stand-in for torch.utils.tensorboard (the values it is handed are what matters)."""
from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest

from isolated import ENV, run_script
from msmigrate import convert_source

PROGRAM = '''
import torch
import torch.nn as nn
from torch.utils.tensorboard import SummaryWriter

torch.manual_seed(0)


class Trainer:
    def __init__(self, writer):
        self.writer = writer

    def log(self, step, acc):
        self.writer.add_scalar('acc', acc, global_step=step)


writer = SummaryWriter(log_dir='tb_runs')
trainer = Trainer(writer)
model = nn.Linear(3, 1)
nn.init.constant_(model.weight, 0.1)   # the same start in both frameworks
nn.init.zeros_(model.bias)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.linspace(-1, 1, 24).reshape(8, 3)
y = x.sum(1, keepdim=True) * 0.5
writer.add_graph(model, x)
for step in range(3):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    writer.add_scalar('loss/train', loss.item(), step)
    writer.add_scalars('lr', {'g0': 0.1, 'g1': 0.25}, global_step=step)
    writer.add_histogram('weight', model.weight, step)
    writer.add_image('img', torch.ones(3, 4, 4) * step, step)
    writer.add_text('note', f'step {step}', step)
    trainer.log(step, 1.0 / (step + 1))
    print(f'step {step} loss {loss.item():.6f}')
writer.flush()
writer.close()
'''

# torch side: a stand-in module records what the program hands the writer
TORCH_RUNNER = '''
import json, runpy, sys, types
logged = []


class SummaryWriter:
    def __init__(self, log_dir=None, **kw):
        pass

    def add_scalar(self, tag, value, global_step=None):
        logged.append([int(global_step), tag, float(value)])

    def add_scalars(self, main, values, global_step=None):
        for k, v in values.items():
            logged.append([int(global_step), main + '/' + k, float(v)])

    def __getattr__(self, name):
        return lambda *a, **k: None


module = types.ModuleType('torch.utils.tensorboard')
module.SummaryWriter = SummaryWriter
sys.modules['torch.utils.tensorboard'] = module
runpy.run_path('prog.py', run_name='__main__')
print(json.dumps(sorted(logged)))
'''


def _events(directory: Path) -> tuple[list, set]:
    """(step, tag, value) of every scalar in the directory's event files, and the other plugins'
    (tag, kind) pairs. Records: u64 length, u32 crc, Event bytes, u32 crc."""
    from mindspore.train.summary_pb2 import Event
    scalars, other = [], set()
    for path in directory.iterdir():
        data, i = path.read_bytes(), 0
        while i < len(data):
            (n,) = struct.unpack("<Q", data[i:i + 8])
            event = Event()
            event.ParseFromString(data[i + 12:i + 12 + n])
            i += 12 + n + 4
            for v in event.summary.value:
                kind = v.WhichOneof("value")
                if kind == "scalar_value":
                    scalars.append([event.step, v.tag, v.scalar_value])
                else:
                    other.add((v.tag, kind))
    return sorted(scalars), other


@pytest.mark.framework
def test_summary_writer_becomes_summary_record(tmp_path):
    result = convert_source(PROGRAM, "prog.py")
    code = result.code
    assert "torch" not in "".join(line.split("#")[0] for line in code.splitlines()), code
    assert "MSC108" not in {d.code for d in result.diagnostics}
    dropped = sorted(d.message.split(":")[0] for d in result.diagnostics if "dropped" in d.message)
    assert dropped == ["torch.utils.tensorboard.SummaryWriter.add_graph",
                       "torch.utils.tensorboard.SummaryWriter.add_text"], result.diagnostics
    want = run_script(TORCH_RUNNER, files={"prog.py": PROGRAM})
    (tmp_path / "prog.py").write_text(code)
    proc = subprocess.run([sys.executable, "prog.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    scalars, other = _events(tmp_path / "tb_runs")
    assert [s[:2] for s in scalars] == [w[:2] for w in want], (scalars, want)
    assert all(abs(s[2] - w[2]) <= 1e-5 * max(1, abs(w[2])) for s, w in zip(scalars, want)), (scalars, want)
    assert other == {("weight", "histogram"), ("img", "image")}, other


def test_several_writers_are_marked():
    """MindSpore allows one open SummaryRecord per process: train/val writers are marked."""
    result = convert_source("from torch.utils.tensorboard import SummaryWriter\n"
                            "train_log = SummaryWriter('runs/train')\nval_log = SummaryWriter('runs/val')\n", "m.py")
    assert sum("one open SummaryRecord" in d.message for d in result.diagnostics) == 2
