"""NumPy's seeded global random state drawn from after a network is built: MindSpore's weight
initialisers draw from it too, so the converted program's draws differ from torch's. The seeding
statement is marked (rules/numpy_random.py); the marker's advice (a generator of the program's
own) gives torch's numbers."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from conftest import FIXTURES
from msmigrate import convert_source
from msmigrate.rules.numpy_random import MESSAGE

PROGRAM = FIXTURES / "programs" / "numpy_draws_after_network.py"
HEAD = "import numpy as np\nimport torch\nimport torch.nn as nn\nnp.random.seed(0)\n"


def marked(source: str) -> bool:
    return any(d.message == MESSAGE for d in convert_source(source, "t.py").diagnostics)


def test_draws_after_a_network_is_built_are_marked_and_draws_before_are_not():
    assert marked(HEAD + "net = nn.Linear(2, 2)\nx = np.random.rand(3)\n")
    assert marked(HEAD + "def batch():\n    return np.random.rand(3)\nnet = nn.Linear(2, 2)\n")
    assert not marked(HEAD + "x = np.random.rand(3)\nnet = nn.Linear(2, 2)\n")
    # a network built in main(), drawn after in it or in another function
    assert marked(HEAD + "def main():\n    net = nn.Linear(2, 2)\n    x = np.random.rand(3)\nmain()\n")
    assert marked(HEAD + "def mix():\n    return np.random.beta(1, 1)\ndef main():\n    net = nn.Linear(2, 2)\n    mix()\n")
    # layers a class makes when called: not a network built before the module-level draw
    assert not marked(HEAD + "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                             "        self.fc = nn.Linear(2, 2)\nx = np.random.rand(3)\nnet = Net()\n")
    assert not marked(HEAD.replace("np.random.seed(0)", "rng = np.random.RandomState(0)")
                      + "net = nn.Linear(2, 2)\nx = rng.rand(3)\n")


def _losses(path, cwd, **env) -> list[float]:
    proc = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "GLOG_v": "3", **env})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [float(v) for v in re.findall(r"loss ([-\d.]+)", proc.stdout)]


@pytest.mark.framework
def test_the_marked_divergence_is_real_and_the_advice_removes_it(tmp_path):
    result = convert_source(PROGRAM.read_text(), PROGRAM.name)
    assert [d.line for d in result.diagnostics if d.message == MESSAGE] == [13]
    converted = tmp_path / PROGRAM.name
    converted.write_text(result.code)
    want, got = _losses(PROGRAM, tmp_path), _losses(converted, tmp_path)
    assert len(want) == len(got) == 3 and got[0] != pytest.approx(want[0], abs=1e-4), (want, got)
    want, got = _losses(PROGRAM, tmp_path, RNG="own"), _losses(converted, tmp_path, RNG="own")
    assert len(want) == 3 and got == pytest.approx(want, abs=2e-5), (want, got)
