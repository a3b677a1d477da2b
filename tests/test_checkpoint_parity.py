"""Checkpoints and nn.init: converted programs run against torch.

* checkpoints: a torch program (state_dict save/load, a checkpoint dict with model, optimizer and
  epoch, a strict load into a model with a renamed layer) and its conversion run in one
  subprocess. MindSpore side: the round trips restore every parameter and optimizer state
  bit-exactly; the strict load of mismatched names raises as torch's does.
* nn.init: each converted init call runs on large MindSpore Parameters; the sample statistics
  (bounds, mean, std, orthogonality) must match torch's on the same shapes.
"""
from __future__ import annotations

import ast

import math

import pytest

from conftest import FIXTURES
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
    torch.save(model.state_dict(), "weights.pkl")   # any name: MindSpore saves and loads '*.ckpt' only


def load_weights(model):
    model.load_state_dict(torch.load("weights.pkl"))


def load_weights_into_renamed():
    other = Renamed()
    other.load_state_dict(torch.load("weights.pkl", map_location="cpu"))


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
    tree = ast.parse(code)   # markers and docstrings may name torch APIs: only code counts
    assert not any(isinstance(n, ast.Name) and n.id == "torch" for n in ast.walk(tree)), code
    assert not any(isinstance(n, (ast.Import, ast.ImportFrom)) and "torch" in ast.unparse(n) for n in ast.walk(tree))
    assert "ops.assign(param, " in code and "raise RuntimeError" in code
    assert "load_param_into_net" not in code   # set_data: see the resume test below


@pytest.mark.framework
def test_state_dict_round_trip_is_bit_exact(ckpt_results):
    got = ckpt_results["weights"]
    assert not isinstance(got, str), got
    assert got["diff"] == 0.0
    assert "weights.pkl.ckpt" in got["files"]


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


def _same_losses(tmp_path, name: str, count: int) -> list[float]:
    """Run fixtures/programs/NAME and its conversion (each in its own directory); the losses
    both print, torch's."""
    import os
    import re
    import subprocess
    import sys

    from conftest import FIXTURES

    src = FIXTURES / "programs" / name
    code = convert_source(src.read_text(), src.name).code
    assert "load_param_into_net" not in code
    for side in ("torch", "ms"):
        (tmp_path / side).mkdir()
    (tmp_path / "torch" / src.name).write_text(src.read_text())
    (tmp_path / "ms" / src.name).write_text(code)
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    outs = [subprocess.run([sys.executable, src.name], cwd=tmp_path / side, capture_output=True, text=True,
                           timeout=300, env=env) for side in ("torch", "ms")]
    assert all(o.returncode == 0 for o in outs), outs[1].stderr[-2000:]
    want, got = ([float(v) for v in re.findall(r"loss (\S+)", o.stdout)] for o in outs)
    assert len(want) == count and got == pytest.approx(want, rel=1e-5, abs=1e-6), (want, got)
    return want


@pytest.mark.framework
def test_target_network_refreshed_between_compiled_steps_like_torch(tmp_path):
    """target_net.load_state_dict(eval_net.state_dict()) every second step, both networks in the
    compiled step: both are prefixed (they collided: 'fc.weight already exists'), so the copy
    matches parameters by path, as torch's state_dict keys are, and writes them in place."""
    _same_losses(tmp_path, "target_network_copy.py", 6)


@pytest.mark.framework
def test_target_network_made_with_to_device_trains_like_torch(tmp_path):
    """`target_net = DQN().to(device)` is a network too: prefixed like the trained one (the
    compiled step had refused their colliding parameter names)."""
    losses = _same_losses(tmp_path, "target_network_moved.py", 4)
    assert len(set(losses)) == 4


@pytest.mark.framework
def test_plain_objects_and_deepcopy_target_train_like_torch(tmp_path):
    """A replay buffer's own size()/put(), a learner's train(epochs=6) and a target network
    refreshed by deepcopy: the program's methods stay its own (train(epochs=...) had become
    set_train(True): nothing trained, silently), and the refresh copies into the Cell the step
    calls. Six losses, torch's."""
    losses = _same_losses(tmp_path, "learner_replay_deepcopy.py", 6)
    assert len(set(losses)) == 6


@pytest.mark.framework
def test_checkpoint_of_a_prefixed_network_reloads_into_a_fresh_one(tmp_path):
    """A student trained beside its teacher is prefixed ('student.weight'); its checkpoint loads
    into a network built afresh ('weight') and back into itself, as torch's does."""
    out = _run_converted_program(tmp_path, "train_distill_checkpoint_reload.py", "update_parameters_name('student.')")
    assert "reloaded equal: True" in out and "reloaded again: True" in out, out


def _run_converted_program(tmp_path, name: str, expected: str) -> str:
    """fixtures/programs/NAME converted (its code holding `expected`) and run: its stdout."""
    import os
    import subprocess
    import sys

    from conftest import FIXTURES

    src = FIXTURES / "programs" / name
    code = convert_source(src.read_text(), src.name).code
    assert expected in code
    (tmp_path / src.name).write_text(code)
    out = subprocess.run([sys.executable, src.name], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "GLOG_v": "3"})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


@pytest.mark.framework
def test_checkpoint_of_a_prefixed_network_reloads_where_its_parameters_share_a_child(tmp_path):
    """The prefixed network's parameters all under one child ('model.layers.0.weight' saved,
    'layers.0.weight' in a fresh one): the reload raised, 'layers.' taken for the prefix."""
    out = _run_converted_program(tmp_path, "checkpoint_prefixed_single_child.py", "update_parameters_name('model.')")
    assert "reloaded equal: True" in out, out


def test_plain_objects_methods_are_not_torch_methods():
    """Receivers that are objects of plain classes (of the file, passed to a function, or held
    in `self.`) keep their methods; an unknown receiver whose call does not fit the torch
    signature (`learner.train(epochs=3)`) is not that torch method."""
    src = ("import torch\nfrom copy import deepcopy\n\n\nclass Buffer:\n    def size(self):\n        return 0\n\n\n"
           "class Agent(Buffer):\n    def __init__(self):\n        self.memory = Buffer()\n\n"
           "    def fill(self):\n        return self.memory.size()\n\n\n"
           "def report(memory):\n    return memory.size()\n\n\n"
           "b = Buffer()\nprint(b.size(), report(b), Agent().fill())\nlearner = make()\nlearner.train(epochs=3)\n"
           "x = torch.ones(2)\nprint(x.size())\nlearner.train()\n")
    code = convert_source(src, "plain.py").code
    assert "b.size()" in code and "return memory.size()" in code and "self.memory.size()" in code
    assert "learner.train(epochs=3)" in code and "learner.set_train(True)" in code
    assert "x.shape" in code


def test_a_network_method_named_train_of_another_meaning_keeps_its_name():
    """`def train(self, mode=True)` overrides torch's train() (it becomes the Cell's set_train);
    `def train(self, epochs=3)` of an agent network is the program's own method, and
    MindSpore's set_train(True) must not run it."""
    src = ("import torch\nimport torch.nn as nn\n\n\nclass Agent(nn.Module):\n"
           "    def __init__(self):\n        super().__init__()\n        self.fc = nn.Linear(2, 1)\n\n"
           "    def train(self, epochs=3):\n        return epochs\n\n"
           "    def forward(self, x):\n        return self.fc(x)\n\n\n"
           "agent = Agent()\nagent.eval()\n")
    code = convert_source(src, "agent.py").code
    assert "def train(self, epochs=3)" in code and "def set_train" not in code
    assert "agent.set_train(False)" in code and "msmigrate_set_train" not in code


def test_step_statements_around_a_continue_are_refused():
    """A `continue` between statements the compiled step would run together would run after
    the step (which torch may never reach): refused with a marker, never reordered."""
    from conftest import FIXTURES

    src = (FIXTURES / "programs" / "learner_replay_deepcopy.py").read_text()
    put = "0.5 * k))\n"
    assert put in src
    src = src.replace(put, put + "            if self.memory.size() < 4:\n                continue\n")
    result = convert_source(src, "jump.py")
    assert any(d.code == "MSC102" and "continue/break/return" in d.message for d in result.diagnostics)


def test_copy_refreshed_networks_copy_in_place():
    """`target = deepcopy(net)` made once and made again: the later ones copy in place (a new
    Cell is never seen by a compiled step); a single deepcopy, or one of a non-network, stays."""
    src = ("import copy\nimport torch\n\n\nclass Net(torch.nn.Module):\n    def __init__(self):\n"
           "        super().__init__()\n        self.fc = torch.nn.Linear(2, 1)\n\n\nnet = Net()\n"
           "target = copy.deepcopy(net)\nbest = copy.deepcopy(net)\nx = torch.ones(2)\ny = copy.deepcopy(x)\n"
           "for i in range(3):\n    target = copy.deepcopy(net)\n    y = copy.deepcopy(x)\n")
    code = convert_source(src, "copies.py").code
    assert code.count("copy.deepcopy(net)") == 2 and code.count("copy.deepcopy(x)") == 2
    assert "ops.assign(param" in code


@pytest.mark.framework
def test_checkpoint_loaded_after_compiled_steps_resumes_like_torch(tmp_path):
    """2 steps, a checkpoint, 2 steps, the checkpoint loaded back, 2 steps: the last two losses
    repeat steps 2 and 3 in both frameworks. load_param_into_net (set_data) there left the
    compiled step on the weights it had before the load and the updates went elsewhere (steps
    5 and 6 went on from step 4's weights, silently); the conversion assigns in place."""
    import os
    import re
    import subprocess
    import sys

    from conftest import FIXTURES

    src = FIXTURES / "programs" / "resume_checkpoint.py"
    code = convert_source(src.read_text(), src.name).code
    assert "load_param_into_net" not in code
    for side in ("torch", "ms"):
        (tmp_path / side).mkdir()
    (tmp_path / "torch" / src.name).write_text(src.read_text())
    (tmp_path / "ms" / src.name).write_text(code)
    env = {**os.environ, "GLOG_v": "3", "OMP_NUM_THREADS": "1"}
    outs = [subprocess.run([sys.executable, src.name], cwd=tmp_path / side, capture_output=True, text=True,
                           timeout=300, env=env) for side in ("torch", "ms")]
    assert all(o.returncode == 0 for o in outs), outs[1].stderr[-2000:]
    want, got = ([float(v) for v in re.findall(r"loss (\S+)", o.stdout)] for o in outs)
    assert len(want) == 6 and want[4:] == want[2:4], want   # torch resumed
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6), (want, got)


# ---- nn.init ------------------------------------------------------------------------------
# (shape, torch call on `w`, kind): "bounded" = uniform-like (min/max compared), "normal",
# "trunc" (bounded normal), "exact" (every value compared), "orthogonal" (W W^T compared)
INITS = {
    "xavier_uniform": ((300, 400), "nn.init.xavier_uniform_(w)", "bounded"),
    "xavier_uniform_gain": ((300, 400), "nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain('tanh'))", "bounded"),
    "xavier_normal": ((32, 16, 5, 5), "nn.init.xavier_normal_(w, gain=2.0)", "normal"),
    "kaiming_uniform_default": ((300, 400), "nn.init.kaiming_uniform_(w, a=5 ** 0.5)", "bounded"),
    "kaiming_uniform_relu": ((32, 16, 5, 5), "nn.init.kaiming_uniform_(w, nonlinearity='relu')", "bounded"),
    "kaiming_normal_fan_out": ((32, 16, 5, 5), "nn.init.kaiming_normal_(w, mode='fan_out', nonlinearity='relu')", "normal"),
    "kaiming_normal_leaky": ((300, 400), "nn.init.kaiming_normal_(w, 0.2)", "normal"),
    "normal_default": ((300, 400), "nn.init.normal_(w)", "normal"),
    "normal": ((300, 400), "nn.init.normal_(w, mean=0.5, std=0.02)", "normal"),
    "trunc_normal": ((300, 400), "nn.init.trunc_normal_(w, std=0.02, a=-0.04, b=0.04)", "trunc"),
    "trunc_normal_default": ((300, 400), "nn.init.trunc_normal_(w)", "trunc"),
    "uniform_default": ((300, 400), "nn.init.uniform_(w)", "bounded"),
    "uniform_ab": ((300, 400), "nn.init.uniform_(w, -0.3, 0.1)", "bounded"),
    "uniform_symmetric": ((300, 400), "nn.init.uniform_(w, a=-0.2, b=0.2)", "bounded"),
    "constant": ((7, 5), "nn.init.constant_(w, 0.25)", "exact"),
    "zeros": ((7, 5), "nn.init.zeros_(w)", "exact"),
    "ones": ((7, 5), "nn.init.ones_(w)", "exact"),
    "eye": ((7, 5), "nn.init.eye_(w)", "exact"),
    "orthogonal": ((64, 128), "nn.init.orthogonal_(w)", "orthogonal"),
    "orthogonal_gain": ((64, 128), "nn.init.orthogonal_(w, gain=2.0)", "orthogonal"),
}

_INIT_RUNNER = r'''
import json, traceback
import numpy as np
import torch
import torch.nn as tnn
import mindspore as ms

CASES = json.loads(CASES_JSON)


def stats(a, kind):
    a = a.astype(np.float64)
    out = {"mean": float(a.mean()), "std": float(a.std()), "min": float(a.min()), "max": float(a.max())}
    if kind == "exact":
        out["values"] = a.tolist()
    if kind == "orthogonal":
        m = a.reshape(a.shape[0], -1)
        out["gram"] = (m @ m.T).tolist() if m.shape[0] <= m.shape[1] else (m.T @ m).tolist()
    return out


res = {}
for name, case in CASES.items():
    try:
        torch.manual_seed(0)
        tw = tnn.Parameter(torch.zeros(case["shape"]))
        exec(case["torch"], {"nn": tnn, "w": tw, "torch": torch})
        mw = ms.Parameter(ms.Tensor(np.zeros(case["shape"], np.float32)), name="w")
        exec(case["ms"], {"w": mw})
        res[name] = {"torch": stats(tw.detach().numpy(), case["kind"]), "ms": stats(mw.asnumpy(), case["kind"])}
    except Exception:
        res[name] = {"error": traceback.format_exc()[-2000:]}
print(json.dumps(res))
'''


@pytest.fixture(scope="module")
def init_results():
    import json
    cases = {}
    for name, (shape, call, kind) in INITS.items():
        ms_code = _convert(f"import torch.nn as nn\n{call}\n")
        cases[name] = {"shape": list(shape), "torch": call, "ms": ms_code, "kind": kind}
    return run_script(_INIT_RUNNER.replace("CASES_JSON", repr(json.dumps(cases))), timeout=240)


@pytest.mark.framework
@pytest.mark.parametrize("name", list(INITS))
def test_init_distribution_matches_torch(init_results, name):
    import numpy as np
    got = init_results[name]
    assert "error" not in got, got["error"]
    t, m = got["torch"], got["ms"]
    kind = INITS[name][2]
    if kind == "exact":
        assert m["values"] == t["values"]
        return
    if kind == "orthogonal":
        assert np.abs(np.array(m["gram"]) - np.array(t["gram"])).max() < 1e-4
        return
    # sampling noise of two independent samples of n values: sd(mean diff) = std * sqrt(2 / n),
    # sd(std diff) <= std * sqrt(1 / n) (normal: sqrt(1 / n); uniform: less); 5 sigma each
    n = math.prod(INITS[name][0])
    assert abs(m["std"] - t["std"]) <= 5 * t["std"] * math.sqrt(1 / n), (m, t)
    assert abs(m["mean"] - t["mean"]) <= 5 * t["std"] * math.sqrt(2 / n), (m, t)
    if kind in ("bounded", "trunc"):  # the support: both reach the same bounds
        spread = t["max"] - t["min"]
        assert abs(m["min"] - t["min"]) <= 0.01 * spread and abs(m["max"] - t["max"]) <= 0.01 * spread, (m, t)


def test_calculate_gain_values():
    code = _convert("import torch.nn as nn\ng1 = nn.init.calculate_gain('leaky_relu', 0.2)\n"
                    "g2 = nn.init.calculate_gain('relu')\ng3 = nn.init.calculate_gain('tanh')\n")
    ns: dict = {}
    exec(code, ns)
    assert ns["g1"] == pytest.approx(math.sqrt(2.0 / (1 + 0.2 ** 2)))
    assert ns["g2"] == pytest.approx(math.sqrt(2.0)) and ns["g3"] == pytest.approx(5.0 / 3)


# ---- torch.save of plain data --------------------------------------------------------------
PICKLED_DATA = '''
import json
import numpy as np
import torch
import torch.nn as nn

model = nn.Linear(3, 2)
torch.save(model.state_dict(), 'model.pt')
stats = {'mean': np.array([0.5, 1.5]), 'losses': [0.25, 0.125], 'vocab': {'a': 0, 'b': 1}}
torch.save(stats, 'stats.pt')
torch.save(np.arange(6).reshape(2, 3), 'array.pt')
torch.save(torch.tensor([[1.0, 2.0], [3.0, 4.5]]), f'tensor_{1}.pt')
torch.save({'model': model.state_dict(), 'epoch': 4}, 'ckpt.pt')

back = torch.load('stats.pt', weights_only=False)   # numpy inside: torch >= 2.6 needs it
arr = torch.load('array.pt', weights_only=False)
t = torch.load(f'tensor_{1}.pt')
ckpt = torch.load('ckpt.pt')
model.load_state_dict(torch.load('model.pt'))
print(json.dumps({'mean': back['mean'].tolist(), 'losses': back['losses'], 'vocab': back['vocab'],
                  'array': arr.tolist(), 'tensor': t.tolist(), 'epoch': int(ckpt['epoch'])}))
'''


def test_plain_data_saved_with_torch_save_stays_a_pickle():
    """torch.save of an array, a dict of lists or a Tensor pickles it; MindSpore checkpoints hold
    only parameters and scalars: such saves were refused (MSC102, the file stopped). They pickle,
    and the loads of the paths the file pickled to unpickle; parameter tables stay checkpoints."""
    code = _convert(PICKLED_DATA)
    assert "torch" not in "".join(line.split("#")[0] for line in code.splitlines()), code
    program = code[code.index("\nclass msmigrate_Checkpoint"):] if "class msmigrate_Checkpoint" in code else code
    program = program[program.index("\n\n\n", program.index("def msmigrate_checkpoint_dict")):] \
        if "def msmigrate_checkpoint_dict" in program else program   # the program's own lines
    assert program.count("pickle.loads(") == 3 and "ms.load_checkpoint('model.ckpt')" in code, code
    want = run_script(PICKLED_DATA)
    got = run_script(code)
    assert got == want


@pytest.mark.framework
def test_init_through_apply_and_data_matches_torch(tmp_path):
    """`net.apply(weights_init)` with `nn.init.normal_(m.weight.data, ...)` picked by class name
    (DCGAN's initialisation): `.data` is a copy in MindSpore (no set_data), so the parameter
    itself is initialised; BatchNorm's weight/bias are its gamma/beta."""
    from conftest import FIXTURES
    from test_values_change_type import _outputs
    src = FIXTURES / "programs" / "weights_init_apply.py"
    want, got = _outputs(src, _convert(src.read_text()), tmp_path)
    assert len(want) == 2 and want == got


@pytest.mark.framework
def test_checkpoint_under_a_variable_name_keeps_the_programs_file_name(tmp_path):
    """fixtures/programs/checkpoint_variable_path.py: saved, found and resumed under its own
    '.pth' name, with no marker; the converted program prints torch's lines."""
    from test_values_change_type import _outputs, _same_line
    src = FIXTURES / "programs" / "checkpoint_variable_path.py"
    result = convert_source(src.read_text(), src.name)
    assert not result.diagnostics, [d.to_text() for d in result.diagnostics]
    want, got = _outputs(src, result.code, tmp_path)
    assert len(want) == 6 and len(got) == len(want), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))


@pytest.mark.framework
def test_language_model_carries_its_state_and_reloads_the_module_it_saved(tmp_path):
    """fixtures/programs/lm_hidden_reload.py: the step takes the batch (not its offset, a Python
    int) and the carried (h, c) as a mutable tuple, so MindSpore compiles it once (a plain tuple's
    Tensors are graph constants: MindSpore warns and compiles again every call); the module saved
    to an open file loads back from it into a copy of the Cell. Torch's lines, no marker."""
    import os
    import subprocess
    import sys
    from test_values_change_type import _same_line
    src = FIXTURES / "programs" / "lm_hidden_reload.py"
    result = convert_source(src.read_text(), src.name)
    assert not result.diagnostics, result.diagnostics
    converted = tmp_path / "lm_converted.py"
    converted.write_text(result.code)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    runs = [subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env, timeout=300,
                           cwd=tmp_path) for path in (src, converted)]
    assert all(r.returncode == 0 for r in runs), runs[1].stderr[-3000:]
    want, got = (r.stdout.splitlines() for r in runs)
    assert len(want) == 15 and len(got) == len(want) and want[-1].startswith("test loss"), (want, got)
    assert all(_same_line(a, b) for a, b in zip(want, got)), list(zip(want, got))
    assert "Constant value tensor" not in runs[1].stderr   # compiled once, not every call


PYTHON_VALUES = '''
import json
import torch
import torch.nn as nn
model = nn.Linear(3, 2)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
vocab = sorted({"good", "bad", "plot"})
cfg = {"hidden": 8, "names": ["a", "b"]}
torch.save({"epoch": 2, "model": model.state_dict(), "optimizer": opt.state_dict(), "vocab": vocab,
            "cfg": cfg, "best": 0.5, "tag": "x"}, "checkpoint.pt")
ck = torch.load("checkpoint.pt")
model.load_state_dict(ck["model"])
print(json.dumps([ck["epoch"], ck["vocab"], ck["cfg"], ck["best"], ck["tag"]]))
'''


@pytest.mark.framework
def test_python_values_of_a_checkpoint_dict_come_back():
    """A checkpoint dict holding a vocabulary list and a config dict beside the tables: its
    conversion raised in ms.save_checkpoint (append_dict takes numbers, str and Tensors), unmarked;
    they are pickled into str entries and read back as saved."""
    want = run_script(PYTHON_VALUES)
    got = run_script(_convert(PYTHON_VALUES))
    assert got == want == [2, ["bad", "good", "plot"], {"hidden": 8, "names": ["a", "b"]}, 0.5, "x"]
