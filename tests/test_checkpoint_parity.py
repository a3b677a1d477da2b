"""Checkpoints and nn.init: converted programs run against torch.

* checkpoints: a torch program (state_dict save/load, a checkpoint dict with model, optimizer and
  epoch, a strict load into a model with a renamed layer) and its conversion run in one
  subprocess. MindSpore side: the round trips restore every parameter and optimizer state
  bit-exactly; the strict load of mismatched names raises as torch's does.
* nn.init: each converted init call runs on large MindSpore Parameters; the sample statistics
  (bounds, mean, std, orthogonality) must match torch's on the same shapes.
"""
from __future__ import annotations

import pytest

from isolated import run_script
from msmigrate import convert_source

CKPT_TORCH = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(self.fc(x))


class Renamed(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.bn = nn.BatchNorm1d(3)

    def forward(self, x):
        return self.bn(self.proj(x))


def make():
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    return model, optimizer


def save_weights(model):
    torch.save(model.state_dict(), "weights.pt")


def load_weights(model):
    model.load_state_dict(torch.load("weights.pt"))


def load_weights_into_renamed():
    other = Renamed()
    other.load_state_dict(torch.load("weights.pt", map_location="cpu"))


def save_all(model, optimizer, epoch):
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch},
               f"ckpt_{epoch}.pth")


def resume(model, optimizer, epoch):
    ckpt = torch.load(f"ckpt_{epoch}.pth")
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    return int(ckpt["epoch"]) + 1
'''

_CKPT_RUNNER = r'''
import json, os, traceback
import numpy as np
import mindspore as ms
import ms_prog, torch_prog

rng = np.random.default_rng(0)


def randomize(table):
    for name, p in table.items():
        if p.dtype in (ms.float32, ms.float16):
            p.set_data(ms.Tensor(rng.standard_normal(p.shape).astype(np.float32)))


def snapshot(table):
    return {k: v.asnumpy().copy() for k, v in table.items()}


def max_diff(a, b):
    assert sorted(a) == sorted(b), (sorted(a), sorted(b))
    return max(float(np.abs(a[k].astype(np.float64) - b[k].astype(np.float64)).max()) for k in a)


res = {}
try:
    model, _ = ms_prog.make()
    randomize(model.parameters_dict())
    want = snapshot(model.parameters_dict())
    ms_prog.save_weights(model)
    fresh, _ = ms_prog.make()
    ms_prog.load_weights(fresh)
    res["weights"] = {"diff": max_diff(want, snapshot(fresh.parameters_dict())), "files": sorted(os.listdir("."))}
except Exception:
    res["weights"] = traceback.format_exc()[-2000:]
for name, prog in (("ms", ms_prog), ("torch", torch_prog)):
    try:
        if name == "torch":
            prog.save_weights(prog.make()[0])
        prog.load_weights_into_renamed()
        res["renamed_" + name] = "loaded without an error"
    except RuntimeError as exc:
        res["renamed_" + name] = "RuntimeError: " + str(exc)[:300]
    except Exception:
        res["renamed_" + name] = traceback.format_exc()[-2000:]
try:
    model, optimizer = ms_prog.make()
    randomize(model.parameters_dict())
    randomize(optimizer.parameters_dict())  # exp_avg, exp_avg_sq, ...: nonzero states
    want_m, want_o = snapshot(model.parameters_dict()), snapshot(optimizer.parameters_dict())
    ms_prog.save_all(model, optimizer, 7)
    model2, optimizer2 = ms_prog.make()
    start = ms_prog.resume(model2, optimizer2, 7)
    res["resume"] = {"model": max_diff(want_m, snapshot(model2.parameters_dict())),
                     "optimizer": max_diff(want_o, snapshot(optimizer2.parameters_dict())),
                     "n_optimizer_entries": len(want_o), "start": start}
except Exception:
    res["resume"] = traceback.format_exc()[-2000:]
print(json.dumps(res))
'''


def _convert(code: str) -> str:
    return convert_source(code, "prog.py").code


@pytest.fixture(scope="module")
def ckpt_results():
    return run_script(_CKPT_RUNNER, files={"torch_prog.py": CKPT_TORCH, "ms_prog.py": _convert(CKPT_TORCH)},
                      timeout=240)


def test_converted_checkpoint_code_has_no_torch():
    code = _convert(CKPT_TORCH)
    code_lines = [line.split("#")[0] for line in code.splitlines()]  # markers name torch APIs
    assert not any("torch" in line for line in code_lines), code
    assert "ms.load_param_into_net" in code and "raise RuntimeError" in code


@pytest.mark.framework
def test_state_dict_round_trip_is_bit_exact(ckpt_results):
    got = ckpt_results["weights"]
    assert not isinstance(got, str), got
    assert got["diff"] == 0.0
    assert "weights.ckpt" in got["files"]


@pytest.mark.framework
def test_strict_load_of_mismatched_names_raises_like_torch(ckpt_results):
    assert ckpt_results["renamed_torch"].startswith("RuntimeError"), ckpt_results["renamed_torch"]
    got = ckpt_results["renamed_ms"]
    assert got.startswith("RuntimeError"), got
    assert "proj.weight" in got and "fc.weight" in got  # both lists are reported


@pytest.mark.framework
def test_checkpoint_dict_restores_model_optimizer_and_epoch(ckpt_results):
    got = ckpt_results["resume"]
    assert not isinstance(got, str), got
    assert got["model"] == 0.0 and got["optimizer"] == 0.0
    assert got["n_optimizer_entries"] > 4  # the Adam moments were saved, not just the weights
    assert got["start"] == 8
